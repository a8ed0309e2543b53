#!/usr/bin/env bash
# fallback: the path taken when the model is out of reach. The route's
# only backend has its breaker forced open (PUT /v1/backends/primary/breaker),
# so /call is answered from the rule engine without any network: wrk at
# concurrency 1 measures it end to end (target p99 <= 200 us). Then
# bench_rules measures rules_eval() alone: 100 rules, a 200-character input
# (target <= 5 us per input; the median of 5 runs).
#   tests/bench/fallback.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
bench_init "${1:-}" "${2:-}" fallback
bench_rules=$build/tests/bench/bench_rules
bench_need wrk curl
[ -x "$fuseboxd" ] || bench_skip "$fuseboxd is not built"
bench_header
note "wrk c=1, 1 thread, $BENCH_REPS x ${BENCH_SECS}s; figures are medians of the repetitions"

# Nothing listens on port 9 of 127.0.0.1 (discard): the breaker keeps us away anyway.
bench_config "$tmp/fusebox.json" "http://127.0.0.1:9/v1/chat/completions"
bench_daemon FBD FBD_PORT "$tmp/fusebox.json"
base=http://127.0.0.1:$FBD_PORT
curl -sf -X PUT -H "Authorization: Bearer bench-operator-token" -H 'Content-Type: application/json' \
	-d '{"state":"forced_open","reason":"fallback benchmark"}' "$base/v1/backends/primary/breaker" >/dev/null
first=$(curl -s -H 'Content-Type: application/json' -d "$CALL_BODY" "$base/v1/routes/intent/call")
grep -q '"source":"rules"' <<<"$first" && grep -q '"reason":"breaker_open"' <<<"$first" ||
	{ echo "bench: unexpected answer: $first" >&2; exit 1; }

# Baseline in the same run: nginx answering at once, same client, same
# concurrency: what this machine's scheduling noise alone does to a p99.
ngx=""
if command -v nginx >/dev/null 2>&1; then
	bench_nginx NGX NGX_PORT
	ngx=http://127.0.0.1:$NGX_PORT/v1/chat/completions
fi

wrk_run W 1 1 2 "$base/v1/routes/intent/call" "$CALL_BODY"
: >"$tmp/p50" >"$tmp/p99" >"$tmp/rps" >"$tmp/cpu" >"$tmp/np50" >"$tmp/np99"
bad=0
for ((rep = 1; rep <= BENCH_REPS; rep++)); do
	if [ -n "$ngx" ]; then
		wrk_run N "1" 1 "$BENCH_SECS" "$ngx" "$CALL_BODY"
		kv p50_us "$N" >>"$tmp/np50"
		kv p99_us "$N" >>"$tmp/np99"
	fi
	c0=$(bench_cpu_us "$FBD")
	wrk_run R 1 1 "$BENCH_SECS" "$base/v1/routes/intent/call" "$CALL_BODY"
	c1=$(bench_cpu_us "$FBD")
	bad=$((bad + $(kv0 non2xx "$R") + $(kv0 errors "$R")))
	kv p50_us "$R" >>"$tmp/p50"
	kv p99_us "$R" >>"$tmp/p99"
	kv rps "$R" >>"$tmp/rps"
	calc "($c1 - $c0) / $(kv requests "$R")" >>"$tmp/cpu"
	note "rep $rep: nginx baseline p50 $(tail -1 "$tmp/np50" 2>/dev/null)us p99 $(tail -1 "$tmp/np99" 2>/dev/null)us; daemon p50 $(kv p50_us "$R")us p99 $(kv p99_us "$R")us $(kv rps "$R")/s cpu/call $(tail -1 "$tmp/cpu")us load $(bench_load)"
done
result fallback.call_p50_c1_us "$(bench_median <"$tmp/p50")" us
target fallback.call_p99_c1_us "$(bench_median <"$tmp/p99")" us le 200
if [ -n "$ngx" ]; then
	result fallback.baseline_nginx_p50_c1_us "$(bench_median <"$tmp/np50")" us
	result fallback.baseline_nginx_p99_c1_us "$(bench_median <"$tmp/np99")" us
fi
result fallback.call_rps_c1 "$(bench_median <"$tmp/rps")" calls/s
result fallback.cpu_per_call_us "$(bench_median <"$tmp/cpu")" us
target fallback.failed_calls "$bad" calls eq 0
bench_stop "$FBD"

if [ -x "$bench_rules" ]; then
	# 5 repetitions, the median per case (one run alone moves with the
	# machine's load: 3.9 us quiet, 7.0 us busy for the same case).
	: >"$tmp/rules.out"
	for rep in 1 2 3 4 5; do
		"$bench_rules" 200000 | grep '^bench_rules:' >>"$tmp/rules.out"
	done
	while read -r _ name rules _ bytes _; do
		ns=$(awk -v n="$name" '$2 == n { print $(NF - 1) }' "$tmp/rules.out" | bench_median)
		target "rules.$name.ns_per_eval" "$ns" ns le 5000
		note "rules $name: $rules rules, ${bytes%-byte} bytes of input; 5 runs: $(awk -v n="$name" '$2 == n { printf "%s%s", s, $(NF - 1); s = " " }' "$tmp/rules.out") ns"
	done < <(awk '!seen[$2]++' "$tmp/rules.out")
else
	note "bench_rules is not built (ninja -C BUILD tests/bench/bench_rules)"
fi
note "load after: $(bench_load)"
