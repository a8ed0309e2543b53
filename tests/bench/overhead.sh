#!/usr/bin/env bash
# overhead: what the daemon adds to a call. A fast upstream (nginx answering
# a canned chat.completion at once, on 127.0.0.1, configured here) is
# called directly and through fuseboxd (output validation and full attempt
# logging on), both driven by wrk in the same run, interleaved:
#   - added latency at concurrency 1: median(daemon) - median(direct)
#   - throughput at concurrency 64: daemon / direct
#   - daemon CPU per call: /proc/<pid>/stat utime+stime delta / calls
# Targets: added latency <= 100 us, throughput >= 0.35x, CPU <= 80 us/call.
#   tests/bench/overhead.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
bench_init "${1:-}" "${2:-}" overhead
bench_need wrk nginx curl
[ -x "$fuseboxd" ] || bench_skip "$fuseboxd is not built"
bench_header
note "wrk: c=1 with 1 thread, c=64 with 2 threads; $BENCH_REPS repetitions of ${BENCH_SECS}s per point, direct and daemon interleaved; figures are medians"

bench_nginx NGX NGX_PORT
bench_config "$tmp/fusebox.json" "http://127.0.0.1:$NGX_PORT/v1/chat/completions"
bench_daemon FBD FBD_PORT "$tmp/fusebox.json"
direct=http://127.0.0.1:$NGX_PORT/v1/chat/completions
daemon=http://127.0.0.1:$FBD_PORT/v1/routes/intent/call

# The daemon's answer must be a validated model answer, not a fallback.
first=$(curl -s -H 'Content-Type: application/json' -d "$CALL_BODY" "$daemon")
grep -q '"source":"llm"' <<<"$first" || { echo "bench: unexpected answer: $first" >&2; exit 1; }

# Warm-up: connections, caches, the allocator.
wrk_run W 2 64 2 "$daemon" "$CALL_BODY"
wrk_run W 2 64 1 "$direct" "$CALL_BODY"

: >"$tmp/added" >"$tmp/ratio" >"$tmp/cpu64" >"$tmp/cpu1" >"$tmp/d1" >"$tmp/n1" \
	>"$tmp/d1p99" >"$tmp/n1p99" >"$tmp/d64" >"$tmp/n64" >"$tmp/d64p50"
bad=0
for ((rep = 1; rep <= BENCH_REPS; rep++)); do
	wrk_run N1 1 1 "$BENCH_SECS" "$direct" "$CALL_BODY"
	c0=$(bench_cpu_us "$FBD")
	wrk_run D1 1 1 "$BENCH_SECS" "$daemon" "$CALL_BODY"
	c1=$(bench_cpu_us "$FBD")
	wrk_run N64 2 64 "$BENCH_SECS" "$direct" "$CALL_BODY"
	c2=$(bench_cpu_us "$FBD")
	wrk_run D64 2 64 "$BENCH_SECS" "$daemon" "$CALL_BODY"
	c3=$(bench_cpu_us "$FBD")
	for v in "$D1" "$D64"; do
		bad=$((bad + $(kv0 non2xx "$v") + $(kv0 errors "$v")))
	done
	n1=$(kv p50_us "$N1") d1=$(kv p50_us "$D1")
	r64n=$(kv rps "$N64") r64d=$(kv rps "$D64")
	calc "$d1 - $n1" >>"$tmp/added"
	calc "$r64d / $r64n" >>"$tmp/ratio"
	calc "($c3 - $c2) / $(kv requests "$D64")" >>"$tmp/cpu64"
	calc "($c1 - $c0) / $(kv requests "$D1")" >>"$tmp/cpu1"
	echo "$d1" >>"$tmp/d1"
	echo "$n1" >>"$tmp/n1"
	kv p99_us "$D1" >>"$tmp/d1p99"
	kv p99_us "$N1" >>"$tmp/n1p99"
	echo "$r64d" >>"$tmp/d64"
	echo "$r64n" >>"$tmp/n64"
	kv p50_us "$D64" >>"$tmp/d64p50"
	note "rep $rep: c1 p50 direct ${n1}us daemon ${d1}us | c64 direct ${r64n}/s daemon ${r64d}/s | cpu/call c1 $(tail -1 "$tmp/cpu1")us c64 $(tail -1 "$tmp/cpu64")us | load $(bench_load)"
done

med() { bench_median <"$tmp/$1"; }
result overhead.direct_p50_c1_us "$(med n1)" us
result overhead.daemon_p50_c1_us "$(med d1)" us
result overhead.direct_p99_c1_us "$(med n1p99)" us
result overhead.daemon_p99_c1_us "$(med d1p99)" us
target overhead.added_latency_c1_us "$(med added)" us le 100
result overhead.direct_rps_c64 "$(med n64)" calls/s
result overhead.daemon_rps_c64 "$(med d64)" calls/s
result overhead.daemon_p50_c64_us "$(med d64p50)" us
target overhead.throughput_ratio_c64 "$(med ratio)" x ge 0.35
target overhead.cpu_per_call_c64_us "$(med cpu64)" us le 80
result overhead.cpu_per_call_c1_us "$(med cpu1)" us
target overhead.failed_calls "$bad" calls eq 0
note "threads in the daemon: $(bench_threads "$FBD"); RSS $(($(bench_rss_kb "$FBD") / 1024)) MB; load after: $(bench_load)"
