#!/usr/bin/env bash
# facade: what a guard in front of one fast upstream costs, side by side in
# one run. The upstream is nginx answering a canned chat.completion at once
# (bench_nginx); in front of it, each configured here on 127.0.0.1:
#   haproxy  HAProxy as a reverse proxy (one thread)
#   nginx    nginx as a reverse proxy (one worker)
#   bare     tests/bench/barerelay: libmicrohttpd and libcurl's multi
#            interface on one epoll loop, as fuseboxd's engine runs them,
#            relaying and nothing else: the floor of fuseboxd's libraries
#   call     fuseboxd, POST /v1/routes/intent/call (the native path)
#   chat     fuseboxd, POST /v1/chat/completions (the OpenAI facade)
# The peers: upstream keep-alive, one retry, connect 1 s / read 6 s, access
# logs off. fuseboxd: the bench config (validation, full logging). wrk sends
# the same chat request to the upstream directly and through each,
# interleaved, BENCH_REPS rounds of BENCH_SECS s per point:
#   - added latency at c=1: p50(through) - p50(direct), per round
#   - CPU per request at c=64: utime+stime of the whole process tree (from
#     /proc: every thread and child) over the run / requests served
#   - req/s at c=64 vs direct; RSS of the process tree after the run
#   - the ratios to HAProxy's figures, and what each daemon path costs
#     above bare (the guard itself: parse, validation, routing, logging,
#     spans, the SLO book)
# With valgrind, the daemon's instructions per request on both paths, bare's
# and HAProxy's (callgrind, user space, start-up excluded, divided by the
# requests wrk had answered; BENCH_CALLGRIND=0 skips it).
# Targets (issue 28): chat CPU <= 1.1x call's; both <= 1.5x HAProxy's;
# added latency <= HAProxy's + 20 us.
#   tests/bench/facade.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
bench_init "${1:-}" "${2:-}" facade
bench_need wrk nginx haproxy curl
[ -x "$fuseboxd" ] || bench_skip "$fuseboxd is not built"
bare=$build/tests/bench/barerelay
[ -x "$bare" ] || bench_skip "$bare is not built (ninja -C $build tests/bench/barerelay)"
bench_header
note "wrk: c=1 with 1 thread, c=64 with 2 threads; $BENCH_REPS rounds of ${BENCH_SECS}s per point, every target in each round; figures are medians"

CHAT_BODY='{"model":"intent","messages":[{"role":"user","content":"Hello, I ordered shoes last week and they arrived damaged. I want my money back, please tell me how to return them."}]}'

bench_nginx NGX NGX_PORT
direct=http://127.0.0.1:$NGX_PORT/v1/chat/completions

# HAProxy and nginx as reverse proxies in front of the same upstream (lib.sh).
bench_haproxy HAP HAP_PORT $NGX_PORT
bench_nginx_proxy PXY PXY_PORT $NGX_PORT
bench_spawn BARE BARE_PORT "$tmp/barerelay.log" "$bare" --upstream "$direct"

bench_config "$tmp/fusebox.json" "$direct"
bench_daemon FBD FBD_PORT "$tmp/fusebox.json"

declare -A url pid body
url[direct]=$direct pid[direct]=$NGX body[direct]=$CHAT_BODY
url[haproxy]=http://127.0.0.1:$HAP_PORT/v1/chat/completions pid[haproxy]=$HAP body[haproxy]=$CHAT_BODY
url[nginx]=http://127.0.0.1:$PXY_PORT/v1/chat/completions pid[nginx]=$PXY body[nginx]=$CHAT_BODY
url[bare]=http://127.0.0.1:$BARE_PORT/v1/chat/completions pid[bare]=$BARE body[bare]=$CHAT_BODY
url[call]=http://127.0.0.1:$FBD_PORT/v1/routes/intent/call pid[call]=$FBD body[call]=$CALL_BODY
url[chat]=http://127.0.0.1:$FBD_PORT/v1/chat/completions pid[chat]=$FBD body[chat]=$CHAT_BODY
targets=(direct haproxy nginx bare call chat)

# Each answers: the peers relay the canned reply, the daemon a validated
# model answer (not a fallback).
for t in "${targets[@]}"; do
	a=$(curl -s --max-time 5 -H 'Content-Type: application/json' -d "${body[$t]}" "${url[$t]}" || true)
	case $t in
	call | chat) grep -q '"source":"llm"' <<<"$a" ;;
	*) grep -q '"chat.completion"' <<<"$a" ;;
	esac || { echo "bench: $t: unexpected answer: $a" >&2; exit 1; }
done

# Every pid of the tree rooted at $1 (the process, its children, theirs).
tree_pids() {
	local p c
	echo "$1"
	for p in /proc/"$1"/task/*/children; do
		for c in $(cat "$p" 2>/dev/null); do
			tree_pids "$c"
		done
	done
}
tree_cpu_us() { # utime + stime of every process of the tree, in us
	local s=0 p
	for p in $(tree_pids "$1"); do
		s=$((s + $(bench_cpu_us "$p" || echo 0)))
	done
	echo "$s"
}
tree_rss_kb() {
	local s=0 p
	for p in $(tree_pids "$1"); do
		s=$((s + $(bench_rss_kb "$p" || echo 0)))
	done
	echo "$s"
}

# Warm-up: connections, caches, the allocators.
for t in "${targets[@]}"; do
	wrk_run W 2 64 1 "${url[$t]}" "${body[$t]}"
done

for t in "${targets[@]}"; do
	: >"$tmp/p50.$t" >"$tmp/added.$t" >"$tmp/rps.$t" >"$tmp/ratio.$t" >"$tmp/cpu.$t"
done
bad=0
for ((rep = 1; rep <= BENCH_REPS; rep++)); do
	line="round $rep:"
	for t in "${targets[@]}"; do
		wrk_run R1 1 1 "$BENCH_SECS" "${url[$t]}" "${body[$t]}"
		c0=$(tree_cpu_us "${pid[$t]}")
		wrk_run R64 2 64 "$BENCH_SECS" "${url[$t]}" "${body[$t]}"
		c1=$(tree_cpu_us "${pid[$t]}")
		[ "$t" = direct ] || bad=$((bad + $(kv0 non2xx "$R1") + $(kv0 errors "$R1") +
			$(kv0 non2xx "$R64") + $(kv0 errors "$R64")))
		kv p50_us "$R1" >>"$tmp/p50.$t"
		kv rps "$R64" >>"$tmp/rps.$t"
		calc "($c1 - $c0) / $(kv requests "$R64")" >>"$tmp/cpu.$t"
		line+=" $t $(kv p50_us "$R1")us $(kv rps "$R64")/s $(tail -1 "$tmp/cpu.$t")us;"
	done
	for t in "${targets[@]}"; do
		calc "$(tail -1 "$tmp/p50.$t") - $(tail -1 "$tmp/p50.direct")" >>"$tmp/added.$t"
		calc "$(tail -1 "$tmp/rps.$t") / $(tail -1 "$tmp/rps.direct")" >>"$tmp/ratio.$t"
	done
	note "$line load $(bench_load)"
done

med() { bench_median <"$tmp/$1"; }
result facade.direct_p50_c1_us "$(med p50.direct)" us
result facade.direct_rps_c64 "$(med rps.direct)" req/s
result facade.direct_cpu_per_req_c64_us "$(med cpu.direct)" us
hap_added=$(med added.haproxy) hap_cpu=$(med cpu.haproxy)
for t in haproxy nginx bare call chat; do
	added=$(med added.$t) cpu=$(med cpu.$t)
	result "facade.$t.added_latency_c1_us" "$added" us
	result "facade.$t.cpu_per_req_c64_us" "$cpu" us
	result "facade.$t.rps_c64" "$(med rps.$t)" req/s
	result "facade.$t.rps_vs_direct_c64" "$(med ratio.$t)" x
	result "facade.$t.rss_kb" "$(tree_rss_kb "${pid[$t]}")" KB
	[ "$t" = haproxy ] && continue
	result "facade.$t.added_latency_minus_haproxy_us" "$(calc "$added - $hap_added")" us
	result "facade.$t.cpu_vs_haproxy" "$(calc "$cpu / $hap_cpu")" x
	case $t in
	call | chat)
		# the guard's own cost: the daemon path over the bare relay
		result "facade.$t.added_latency_minus_bare_us" "$(calc "$added - $(med added.bare)")" us
		result "facade.$t.cpu_minus_bare_us" "$(calc "$cpu - $(med cpu.bare)")" us
		;;
	esac
done
target facade.call.added_latency_vs_haproxy_us "$(calc "$(med added.call) - $hap_added")" us le 20
target facade.chat.added_latency_vs_haproxy_us "$(calc "$(med added.chat) - $hap_added")" us le 20
target facade.call.cpu_ratio_to_haproxy "$(calc "$(med cpu.call) / $hap_cpu")" x le 1.5
target facade.chat.cpu_ratio_to_haproxy "$(calc "$(med cpu.chat) / $hap_cpu")" x le 1.5
target facade.chat.cpu_ratio_to_call "$(calc "$(med cpu.chat) / $(med cpu.call)")" x le 1.1
target facade.failed_requests "$bad" requests eq 0
note "the daemon's RSS is one process serving both paths; threads $(bench_threads "$FBD"); haproxy $(haproxy -v | head -1 | cut -d' ' -f3), nginx $(nginx -v 2>&1 | cut -d/ -f2)"
bench_stop "$FBD"

# Instructions per request of each path (exact, not disturbed by load).
# cg_by_object CALLGRIND_FILE REQUESTS: the instructions a request by
# library (self cost, largest first), "libcurl 84k, libc 76k, ..."
cg_by_object() {
	callgrind_annotate --inclusive=no --threshold=100 "$1" 2>/dev/null |
		awk -v n="$2" '
		/^ *[0-9,]+ +\(.*\[.*\] *$/ {
			v = $1; gsub(",", "", v)
			o = $0; sub(/.*\[/, "", o); sub(/\].*/, "", o); sub(/.*\//, "", o); sub(/\.so.*/, "", o)
			by[o] += v
		}
		END { for (o in by) printf "%d %s\n", by[o] / n, o }' |
		sort -rn | head -8 | awk '{ printf "%s%s %.1fk", (NR > 1 ? ", " : ""), $2, $1 / 1000 }'
}

# cg_count NAME PID URL BODY OUTFILE_PREFIX [SETTLE]: NAME's user-space
# instructions per request under callgrind (PID started with
# --instr-atstart=no), wrk c=4 after a warm-up that is not counted; sets
# ipr[NAME] and prints the result and the split by library. SETTLE: seconds
# to wait before the dump (the daemon's writer commits the last rows).
cg_count() {
	local name=$1 vg=$2 u=$3 b=$4 prefix=$5 settle=${6:-0} n f total
	# warm-up, not counted: connections, caches, the allocator
	WRK_BODY=$b timeout 60 wrk -t1 -c4 -d3s --timeout 10s \
		-s "$src/tests/bench/post.lua" "$u" >/dev/null 2>&1 || true
	sleep 1
	callgrind_control -z "$vg" >/dev/null
	callgrind_control -i on "$vg" >/dev/null
	WRK_BODY=$b timeout 90 wrk -t1 -c4 -d"$cg_secs"s --timeout 10s \
		-s "$src/tests/bench/post.lua" "$u" >"$tmp/wrk.cg" 2>&1 || true
	callgrind_control -i off "$vg" >/dev/null
	sleep "$settle"
	callgrind_control -d "$name" "$vg" >/dev/null
	n=$(kv0 requests "$(wrk_parse <"$tmp/wrk.cg")")
	f=$(ls -t "$prefix".* 2>/dev/null | head -1)
	[ "$n" -gt 0 ] && [ -n "$f" ] || { note "callgrind $name: no request answered"; return 0; }
	total=$(callgrind_annotate "$f" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
	ipr[$name]=$(calc "$total / $n")
	result "facade.$name.instructions_per_req" "${ipr[$name]}" instructions
	note "callgrind $name: $n requests under wrk c=4; by library: $(cg_by_object "$f" "$n")"
}

if [ "${BENCH_CALLGRIND:-1}" != 0 ] && command -v valgrind >/dev/null 2>&1 &&
	command -v callgrind_annotate >/dev/null 2>&1; then
	rm -f "$tmp/fusebox.db" "$tmp/fusebox.db-wal" "$tmp/fusebox.db-shm"
	bench_spawn VG VG_PORT "$tmp/valgrind.log" valgrind --tool=callgrind --instr-atstart=no \
		--callgrind-out-file="$tmp/callgrind.out" "$fuseboxd" -c "$tmp/fusebox.json"
	declare -A ipr
	cg_secs=$((BENCH_SECS > 10 ? BENCH_SECS : 10))
	for t in call chat; do
		cg_count "$t" "$VG" "http://127.0.0.1:$VG_PORT${url[$t]#http://127.0.0.1:"$FBD_PORT"}" \
			"${body[$t]}" "$tmp/callgrind.out" 1
	done
	[ -z "${ipr[call]:-}" ] || [ -z "${ipr[chat]:-}" ] ||
		result facade.chat.instructions_ratio_to_call "$(calc "${ipr[chat]} / ${ipr[call]}")" x
	bench_stop "$VG"
	# HAProxy under the same load and count: what a relay costs in user
	# space, beside which libraries the daemon's instructions go to.
	bench_stop "$HAP"
	valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$tmp/callgrind.hap" \
		haproxy -db -f "$tmp/haproxy/haproxy.cfg" >"$tmp/valgrind-hap.log" 2>&1 </dev/null &
	VGH=$!
	BENCH_PIDS+=("$VGH")
	for _ in $(seq 100); do
		curl -s -o /dev/null -m 2 -H 'Content-Type: application/json' -d "$CHAT_BODY" "${url[haproxy]}" && break
		sleep 0.1
	done
	cg_count haproxy "$VGH" "${url[haproxy]}" "$CHAT_BODY" "$tmp/callgrind.hap"
	if [ -n "${ipr[haproxy]:-}" ]; then
		for t in call chat; do
			[ -z "${ipr[$t]:-}" ] ||
				result "facade.$t.instructions_ratio_to_haproxy" "$(calc "${ipr[$t]} / ${ipr[haproxy]}")" x
		done
	fi
	bench_stop "$VGH"
	# The bare relay under the same load and count: the libraries' share.
	bench_stop "$BARE"
	bench_spawn VGB VGB_PORT "$tmp/valgrind-bare.log" valgrind --tool=callgrind \
		--instr-atstart=no --callgrind-out-file="$tmp/callgrind.bare" "$bare" --upstream "$direct"
	cg_count bare "$VGB" "http://127.0.0.1:$VGB_PORT/v1/chat/completions" "$CHAT_BODY" \
		"$tmp/callgrind.bare"
	if [ -n "${ipr[bare]:-}" ]; then
		[ -z "${ipr[haproxy]:-}" ] ||
			result facade.bare.instructions_ratio_to_haproxy "$(calc "${ipr[bare]} / ${ipr[haproxy]}")" x
		for t in call chat; do
			[ -z "${ipr[$t]:-}" ] ||
				result "facade.$t.instructions_minus_bare" "$(calc "${ipr[$t]} - ${ipr[bare]}")" instructions
		done
	fi
	bench_stop "$VGB"
fi
note "load after: $(bench_load)"
