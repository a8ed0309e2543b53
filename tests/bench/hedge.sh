#!/usr/bin/env bash
# hedge: hedged attempts against a heavy latency tail (issue 23). The
# upstream is fusebox-mockllm: 95 % of the answers after 100 ms, 5 % after
# 3 s (tail_pct 5, tail_delay_ms 3000; the draw is the mock's seeded
# generator, the delay comes before the first byte). Two routes of one
# daemon on two mock backends with the same behaviour, run one after the
# other with the same load (holdcalls: BENCH_HEDGE_CALLS calls, default
# 2,000, at BENCH_HEDGE_CONC in flight, default 8, each call its own
# connection):
#   plain:  no hedging;
#   hedged: "retry": {"hedge": {"after": "p95", "min_ms": 50, "max_ms": 1000,
#           "max_hedges": 1, "targets": "same"}} (CONFIG.md).
# Each route gets BENCH_HEDGE_WARMUP calls first (default 200; the p95 needs
# samples), not measured. Figures: p50/p99 at the caller for both, the ratio
# p99 hedged / p99 plain (target <= 0.4) and the extra upstream requests of
# the hedged route, (requests the mock received - calls) / calls, from the
# mock's per-backend counter (GET /_mock/stats; target <= 8 %).
#   tests/bench/hedge.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
bench_init "${1:-}" "${2:-}" hedge
holdcalls=$build/tests/bench/holdcalls
[ -x "$fuseboxd" ] || bench_skip "$fuseboxd is not built"
[ -x "$mockllm" ] || bench_skip "$mockllm is not built"
[ -x "$holdcalls" ] || bench_skip "$holdcalls is not built (ninja -C BUILD tests/bench/holdcalls)"
bench_need curl
calls=${BENCH_HEDGE_CALLS:-2000}
conc=${BENCH_HEDGE_CONC:-8}
warmup=${BENCH_HEDGE_WARMUP:-200}
behaviour='{"delay_ms": 100, "tail_pct": 5, "tail_delay_ms": 3000}'
hedge='"hedge": {"after": "p95", "min_ms": 50, "max_ms": 1000, "max_hedges": 1, "targets": "same"}'
bench_header
note "upstream: $behaviour; $calls calls at $conc in flight per route after $warmup warm-up calls; budget 6000 ms"

bench_mock "$behaviour" plain hedged

# backend NAME: one backend on the mock's /b/NAME.
backend() {
	cat <<EOF
    {"name": "$1", "url": "$mock/b/$1/v1/chat/completions", "model": "bench-model",
     "timeouts": {"connect_ms": 1000, "first_byte_ms": 5000, "total_ms": 5500},
     "max_concurrent": 1000, "queue_ms": 0,
     "breaker": {"mode": "consecutive", "failure_threshold": 100000, "open_ms": 60000}}
EOF
}

# route NAME BACKEND RETRY_EXTRA: bench_config's route (validation, rules).
route() { bench_route "$1" "$2" 6000 "$3"; }

echo "bench-operator-token operator bench" >"$tmp/tokens"
chmod 600 "$tmp/tokens"
cat >"$tmp/fusebox.json" <<EOF
{
  "listen": "127.0.0.1:0",
  "database": "$tmp/fusebox.db",
  "tokens_file": "$tmp/tokens",
  "max_inflight": 20000,
  "log": {"level": "warn", "inputs": true, "raw_output_bytes": 4096},
  "backends": [
$(backend plain),
$(backend hedged)
  ],
  "routes": [
$(route plain plain ""),
$(route hedged hedged ", $hedge")
  ]
}
EOF
if ! "$fuseboxd" --check-config -c "$tmp/fusebox.json" >"$tmp/check.out" 2>&1; then
	note "fuseboxd refuses the hedge config: $(head -3 "$tmp/check.out" | tr '\n' ' ')"
	echo "bench: fuseboxd refuses the config (routes[1].retry.hedge not supported?)" >&2
	cat "$tmp/check.out" >&2
	exit 1
fi
bench_daemon FBD FBD_PORT "$tmp/fusebox.json"
base=http://127.0.0.1:$FBD_PORT

# ratio A B: A / B, "nan" when either is missing or B is 0.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "nan" || b == "nan" || b + 0 == 0) print "nan"; else printf "%.6g\n", a / b }'; }

run() { # route: warm-up, then the measured calls; figures into $tmp/<route>.out
	local r=$1 req0 req1 ab0 ab1 out
	"$holdcalls" --port "$FBD_PORT" --path "/v1/routes/$r/call" -n "$warmup" --conc "$conc" \
		--body "$CALL_BODY" --timeout-ms 10000 --max-s 120 >/dev/null 2>&1 || true
	req0=$(bench_mock_stat "$r" requests)
	ab0=$(bench_mock_stat "$r" aborted)
	"$holdcalls" --port "$FBD_PORT" --path "/v1/routes/$r/call" -n "$calls" --conc "$conc" \
		--body "$CALL_BODY" --timeout-ms 10000 --max-s 600 --expect-source llm \
		--csv "$tmp/$r.csv" >"$tmp/$r.out" 2>&1 || true
	# The losing attempts of the last calls are closed by now, give the
	# mock a moment to count them.
	sleep 0.5
	req1=$(bench_mock_stat "$r" requests)
	ab1=$(bench_mock_stat "$r" aborted)
	out=$(cat "$tmp/$r.out")
	echo "upstream=$((req1 - req0))" >>"$tmp/$r.out"
	echo "cancelled=$((ab1 - ab0))" >>"$tmp/$r.out"
	note "$r: $(grep -E '^(ok|failed|wrong_source|status_other|wall_s)=' <<<"$out" | tr '\n' ' ')upstream requests $((req1 - req0)), closed early $((ab1 - ab0)); load $(bench_load)"
}

run plain
run hedged
P=$(cat "$tmp/plain.out")
H=$(cat "$tmp/hedged.out")
result hedge.plain.p50_ms "$(kv client_p50_ms "$P")" ms
result hedge.plain.p99_ms "$(kv client_p99_ms "$P")" ms
result hedge.hedged.p50_ms "$(kv client_p50_ms "$H")" ms
result hedge.hedged.p99_ms "$(kv client_p99_ms "$H")" ms
target hedge.p99_ratio "$(ratio "$(kv client_p99_ms "$H")" "$(kv client_p99_ms "$P")")" x le 0.4
result hedge.plain.extra_upstream_pct "$(ratio "$((100 * ($(kv upstream "$P") - calls)))" "$calls")" %
target hedge.hedged.extra_upstream_pct "$(ratio "$((100 * ($(kv upstream "$H") - calls)))" "$calls")" % le 8
target hedge.hedged.answered_by_model "$(kv0 ok "$H")" calls eq "$calls"
result hedge.plain.answered_by_model "$(kv0 ok "$P")" calls
hm=$(curl -s -H "Authorization: Bearer bench-operator-token" "$base/metrics" |
	grep '^fusebox_hedges_total' | tr '\n' ' ' || true)
note "daemon metrics: ${hm:-no fusebox_hedges_total}"
note "load after: $(bench_load)"
