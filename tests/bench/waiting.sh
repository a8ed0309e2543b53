#!/usr/bin/env bash
# waiting: 10,000 calls held at once against an upstream that answers after
# 5 s. The upstream is slowupstream (answers each request exactly 5 s after
# it arrived, O(1) per request; fusebox-mockllm itself adds up to ~2.4 s
# at 10,000 waiting requests on this machine, which would be measured
# instead of the daemon). The client is holdcalls (one epoll thread, one
# connection per call, all started at once).
#   1. baseline, same run: holdcalls -> slowupstream directly;
#   2. holdcalls -> fuseboxd -> slowupstream, budget 8 s: every call must be
#      answered by the model (source llm), none after its budget, with the
#      daemon's thread count constant and its RSS <= 150 MB.
# The daemon needs 2 descriptors per call (+ ~30): with a hard open-file
# limit of 20,000 (this sandbox; root without CAP_SYS_RESOURCE cannot raise
# it) at most ~9,980 calls fit. Levels: BENCH_WAIT_LEVELS (default
# "1000 3000 10000"); the targets are judged at the last (largest) level.
#   tests/bench/waiting.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
bench_init "${1:-}" "${2:-}" waiting
holdcalls=$build/tests/bench/holdcalls
slowup=$build/tests/bench/slowupstream
[ -x "$fuseboxd" ] || bench_skip "$fuseboxd is not built"
[ -x "$holdcalls" ] || bench_skip "$holdcalls is not built"
[ -x "$slowup" ] || bench_skip "$slowup is not built"
levels=${BENCH_WAIT_LEVELS:-1000 3000 10000}
calls=${levels##* }
delay=5000
budget=8000
bench_header
need_fds=$((2 * calls + 40))
if [ "$(ulimit -Hn)" -lt "$need_fds" ]; then
	note "open-file hard limit $(ulimit -Hn) < $need_fds that the daemon needs for $calls calls (2 per call): the last calls cannot get a descriptor (this is the machine's limit, not the daemon's)"
fi
note "levels: $levels calls started at once (at most 256 connects pending), upstream delay ${delay} ms, budget ${budget} ms, open-file limit $(ulimit -n)"

bench_spawn UP UP_PORT "$tmp/slowup.log" "$slowup" --delay-ms "$delay" --max-s 600
chat='{"model":"m","messages":[{"role":"user","content":"I want my money back"}]}'

level() { # calls judge(0|1)
	local n=$1 judge=$2 out threads0 rss0 cpu0 cpu1 hwm tmin tmax rssmax fdmax t r f k
	k=waiting.$n
	# 1. Baseline: the client and the upstream alone.
	"$holdcalls" --port "$UP_PORT" --path /v1/chat/completions -n "$n" --body "$chat" \
		--timeout-ms $((budget + 5000)) --max-s 60 >"$tmp/direct.out" 2>&1 || true
	out=$(cat "$tmp/direct.out")
	note "$n direct: $(grep -E '^(ok|failed|client_p50_ms|client_p99_ms|client_max_ms)=' <<<"$out" | tr '\n' ' ')"
	result "$k.direct_client_p50_ms" "$(kv client_p50_ms "$out")" ms
	result "$k.direct_client_max_ms" "$(kv client_max_ms "$out")" ms
	sleep 1

	# 2. Through the daemon (a fresh one per level).
	rm -f "$tmp"/fusebox.db*
	bench_config "$tmp/fusebox.json" "http://127.0.0.1:$UP_PORT/v1/chat/completions" \
		"$budget" 20000 "$((budget - 500))"
	bench_daemon FBD FBD_PORT "$tmp/fusebox.json"
	curl -s -o /dev/null -d "$CALL_BODY" --max-time 10 "http://127.0.0.1:$FBD_PORT/v1/routes/intent/call"
	threads0=$(bench_threads "$FBD")
	rss0=$(bench_rss_kb "$FBD")
	cpu0=$(bench_cpu_us "$FBD")
	"$holdcalls" --port "$FBD_PORT" -n "$n" --body "$CALL_BODY" --timeout-ms $((budget + 5000)) \
		--max-s 60 --late-ms "$budget" --expect-source llm --csv "$tmp/calls.$n.csv" >"$tmp/hold.out" 2>&1 &
	HOLD=$!
	BENCH_PIDS+=("$HOLD")
	tmin=$threads0 tmax=$threads0 rssmax=$rss0 fdmax=0
	while kill -0 "$HOLD" 2>/dev/null; do
		t=$(bench_threads "$FBD") r=$(bench_rss_kb "$FBD")
		f=$(ls "/proc/$FBD/fd" 2>/dev/null | wc -l)
		[ "$t" -lt "$tmin" ] && tmin=$t
		[ "$t" -gt "$tmax" ] && tmax=$t
		[ "$r" -gt "$rssmax" ] && rssmax=$r
		[ "$f" -gt "$fdmax" ] && fdmax=$f
		sleep 0.2
	done
	wait "$HOLD" || true
	cpu1=$(bench_cpu_us "$FBD")
	hwm=$(bench_hwm_kb "$FBD")
	out=$(cat "$tmp/hold.out")
	note "$n through fuseboxd: $(tr '\n' ' ' <<<"$out")"
	bench_stop "$FBD"
	if command -v sqlite3 >/dev/null 2>&1; then
		note "$n daemon's rows: $(sqlite3 "$tmp/fusebox.db" "SELECT group_concat(source || '/' || coalesce(reason, '-') || ': ' || n, ', ') FROM (SELECT source, reason, count(*) n FROM calls GROUP BY 1, 2)") | attempts: $(sqlite3 "$tmp/fusebox.db" "SELECT group_concat(outcome || ': ' || n, ', ') FROM (SELECT outcome, count(*) n FROM attempts GROUP BY 1)")"
		note "$n engine lag: attempt started after its call by $(sqlite3 "$tmp/fusebox.db" "SELECT printf('avg %.0f ms, max %d ms; connect avg %.0f ms', avg(a.started_at - c.started_at), max(a.started_at - c.started_at), avg(a.connect_ms)) FROM calls c JOIN attempts a ON a.call_id = c.id")"
	fi
	if [ "$judge" = 1 ]; then
		target "$k.answered_by_model" "$(kv0 ok "$out")" calls eq "$n"
		target "$k.failed" "$(kv0 failed "$out")" calls eq 0
		target "$k.answered_late" "$(kv0 late "$out")" calls eq 0
	else
		result "$k.answered_by_model" "$(kv0 ok "$out")/$n" calls
		result "$k.answered_late" "$(kv0 late "$out")" calls
	fi
	result "$k.client_p50_ms" "$(kv client_p50_ms "$out")" ms
	result "$k.client_max_ms" "$(kv client_max_ms "$out")" ms
	result "$k.daemon_elapsed_max_ms" "$(kv daemon_max_ms "$out")" ms
	if [ "$judge" = 1 ]; then
		result "$k.threads" "$threads0" threads
		target "$k.threads_change" "$((tmax - tmin))" threads eq 0
		target "$k.rss_peak_mb" "$(calc "$rssmax / 1024")" MB le 150
	else
		result "$k.threads_change" "$((tmax - tmin))" threads
		result "$k.rss_peak_mb" "$(calc "$rssmax / 1024")" MB
	fi
	result "$k.fds_peak" "$fdmax" fds
	result "$k.cpu_per_call_us" "$(calc "($cpu1 - $cpu0) / $n")" us
	note "load after level $n: $(bench_load)"
	sleep 2
}

for n in $levels; do
	level "$n" "$([ "$n" = "$calls" ] && echo 1 || echo 0)"
done
