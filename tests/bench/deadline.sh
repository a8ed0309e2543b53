#!/usr/bin/env bash
# deadline: 1,000 calls with budget_ms 500 against an upstream that hangs
# (fusebox-mockllm, hang: true). Each answer should leave at the deadline
# (the daemon keeps 10 ms back to answer from the rules). Overshoot =
# answer time - 500 ms, measured by the client (request written -> answer
# read, holdcalls) and by the daemon itself (elapsed_ms in the answer).
# Two arrival patterns: "paced" (200 calls/s, 5 s) and "burst" (all 1,000
# at once: every deadline falls in the same few milliseconds).
# Targets: p99 overshoot <= 2 ms, max <= 10 ms.
#   tests/bench/deadline.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
bench_init "${1:-}" "${2:-}" deadline
holdcalls=$build/tests/bench/holdcalls
[ -x "$fuseboxd" ] || bench_skip "$fuseboxd is not built"
[ -x "$mockllm" ] || bench_skip "$mockllm is not built"
[ -x "$holdcalls" ] || bench_skip "$holdcalls is not built"
bench_need curl
calls=${BENCH_CALLS:-1000}
budget=500
bench_header

bench_spawn MOCK MOCK_PORT "$tmp/mock.log" "$mockllm" --listen 127.0.0.1:0 --quiet
curl -sf -X PUT -d '{"hang":true}' "http://127.0.0.1:$MOCK_PORT/_mock/backends/primary" >/dev/null
bench_config "$tmp/fusebox.json" "http://127.0.0.1:$MOCK_PORT/b/primary/v1/chat/completions" 6000 20000 5000
bench_daemon FBD FBD_PORT "$tmp/fusebox.json"
body='{"input":"Hello, I ordered shoes last week and they arrived damaged. I want my money back.","budget_ms":'$budget'}'

# pct FILE P: nearest-rank percentile of the numbers in FILE.
pct() { sort -g "$1" | awk -v p="$2" '{ v[NR] = $1 } END { i = int(p * NR + 0.999999); if (i < 1) i = 1; print v[i] }'; }

run() { # name holdcalls-args...
	local name=$1 out
	shift
	"$holdcalls" --port "$FBD_PORT" -n "$calls" --body "$body" --timeout-ms 5000 --max-s 60 \
		--expect-source rules --csv "$tmp/$name.csv" "$@" >"$tmp/$name.out" 2>&1 || true
	out=$(cat "$tmp/$name.out")
	note "$name: $(grep -E '^(ok|failed|wrong_source|wall_s|peak_open)=' <<<"$out" | tr '\n' ' ')"
	awk -F, -v b="$budget" 'NR > 1 && $3 >= 0 { print $3 - b }' "$tmp/$name.csv" >"$tmp/$name.client"
	awk -F, -v b="$budget" 'NR > 1 && $4 >= 0 { print $4 - b }' "$tmp/$name.csv" >"$tmp/$name.daemon"
	target "deadline.$name.answered_by_rules" "$(kv0 ok "$out")" calls eq "$calls"
	result "deadline.$name.client_overshoot_p50_ms" "$(pct "$tmp/$name.client" 0.50)" ms
	target "deadline.$name.client_overshoot_p99_ms" "$(pct "$tmp/$name.client" 0.99)" ms le 2
	target "deadline.$name.client_overshoot_max_ms" "$(pct "$tmp/$name.client" 1)" ms le 10
	result "deadline.$name.client_min_ms" "$(calc "$(pct "$tmp/$name.client" 0) + $budget")" ms
	result "deadline.$name.daemon_overshoot_p50_ms" "$(pct "$tmp/$name.daemon" 0.50)" ms
	target "deadline.$name.daemon_overshoot_p99_ms" "$(pct "$tmp/$name.daemon" 0.99)" ms le 2
	target "deadline.$name.daemon_overshoot_max_ms" "$(pct "$tmp/$name.daemon" 1)" ms le 10
}

# Warm-up (connections to the mock, allocator).
"$holdcalls" --port "$FBD_PORT" -n 50 --body "$body" --timeout-ms 5000 --max-s 30 >/dev/null 2>&1 || true
run paced --rate 200
note "load between runs: $(bench_load)"
run burst
note "load after: $(bench_load)"
