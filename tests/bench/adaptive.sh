#!/usr/bin/env bash
# adaptive: adaptive concurrency against a model server with a knee
# (issue 23). The upstream is fusebox-mockllm with a base delay of
# 90..110 ms and "knee": 12, "knee_exp": 2: a request that finds n > 12
# requests of its backend in flight (itself included) waits
# base x (n / 12)^2, so past the knee the server's throughput itself falls
# (12^2 / (n x 100 ms): ~120 answers/s at 12 in flight, ~24/s at 60), the
# congestion collapse of a thrashing model server. (With knee_exp 1 the
# throughput would stay flat past the knee and no limit could raise the
# goodput; BENCH_KNEE_EXP overrides it.) One daemon, two routes on two mock
# backends with the same behaviour, each backend "max_concurrent": 60,
# "queue_ms": BENCH_QUEUE_MS (default 20), budget 3000 ms:
#   fixed:    no adaptive limit;
#   adaptive: "adaptive_concurrency": {"min_limit": 2, "initial_limit": 10,
#             "tolerance": BENCH_TOLERANCE (default 1.2; CONFIG.md's default is 1.5)}.
# Load (holdcalls, one connection per call, closed loop):
#   1. uncongested: 8 callers (below the knee), BENCH_ADAPTIVE_BASE_CALLS
#      calls (default 600) on the fixed route: the reference p99;
#   2. 60 callers (5x the knee) for BENCH_ADAPTIVE_SECS (default 20 s) on
#      the fixed route, then on the adaptive route.
# Figures: goodput (answers with source llm, i.e. valid model answers
# within the budget, per second of the run) for both, the ratio adaptive /
# fixed (target >= 1.5), and the p99 of the adaptive route's admitted calls
# (source llm) over the uncongested p99 (target <= 2).
#   tests/bench/adaptive.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
bench_init "${1:-}" "${2:-}" adaptive
holdcalls=$build/tests/bench/holdcalls
[ -x "$fuseboxd" ] || bench_skip "$fuseboxd is not built"
[ -x "$mockllm" ] || bench_skip "$mockllm is not built"
[ -x "$holdcalls" ] || bench_skip "$holdcalls is not built (ninja -C BUILD tests/bench/holdcalls)"
bench_need curl
secs=${BENCH_ADAPTIVE_SECS:-20}
base_calls=${BENCH_ADAPTIVE_BASE_CALLS:-600}
queue_ms=${BENCH_QUEUE_MS:-20}
# the limiter's tolerance (CONFIG.md default 1.5): how much latency may grow over its baseline
tolerance=${BENCH_TOLERANCE:-1.2}
knee_exp=${BENCH_KNEE_EXP:-2}
callers=60
max_calls=30000 # bound of one 60-caller run (holdcalls keeps every answer)
budget=3000
behaviour='{"delay_min_ms": 90, "delay_max_ms": 110, "knee": 12, "knee_exp": '$knee_exp'}'
bench_header
note "upstream: $behaviour; $callers callers for ${secs} s per route, at most $max_calls calls; max_concurrent 60, queue_ms $queue_ms, budget $budget ms, adaptive tolerance $tolerance"

bench_mock "$behaviour" fixed adaptive

# backend NAME EXTRA: one backend on the mock's /b/NAME.
backend() {
	cat <<EOF
    {"name": "$1", "url": "$mock/b/$1/v1/chat/completions", "model": "bench-model",
     "timeouts": {"connect_ms": 1000, "first_byte_ms": $budget, "total_ms": $((budget + 500))},
     "max_concurrent": $callers, "queue_ms": $queue_ms$2,
     "breaker": {"mode": "consecutive", "failure_threshold": 100000, "open_ms": 60000}}
EOF
}

# route NAME: bench_config's route (validation, rules) on backend NAME.
route() { bench_route "$1" "$1" "$budget" ""; }

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
$(backend fixed ""),
$(backend adaptive ", \"adaptive_concurrency\": {\"min_limit\": 2, \"initial_limit\": 10, \"tolerance\": $tolerance}")
  ],
  "routes": [
$(route fixed),
$(route adaptive)
  ]
}
EOF
if ! "$fuseboxd" --check-config -c "$tmp/fusebox.json" >"$tmp/check.out" 2>&1; then
	note "fuseboxd refuses the adaptive config: $(head -3 "$tmp/check.out" | tr '\n' ' ')"
	echo "bench: fuseboxd refuses the config (backends[1].adaptive_concurrency not supported?)" >&2
	cat "$tmp/check.out" >&2
	exit 1
fi
bench_daemon FBD FBD_PORT "$tmp/fusebox.json"
base=http://127.0.0.1:$FBD_PORT
auth="Authorization: Bearer bench-operator-token"

# pct FILE P: nearest-rank percentile of the numbers in FILE.
pct() { sort -g "$1" | awk -v p="$2" '{ v[NR] = $1 } END { if (NR == 0) { print "nan"; exit } i = int(p * NR + 0.999999); if (i < 1) i = 1; print v[i] }'; }

# ratio A B: A / B, "nan" when either is missing or B is 0.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "nan" || b == "nan" || b + 0 == 0) print "nan"; else printf "%.6g\n", a / b }'; }

drain() { # backend: wait (10 s) until the mock has nothing of it in flight
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(bench_mock_stat "$1" inflight)" = 0 ] && return 0
		sleep 0.1
	done
	note "$1: still $(bench_mock_stat "$1" inflight) in flight at the mock"
}

run() { # name route holdcalls-args...: figures into $tmp/<name>.out, llm latencies in $tmp/<name>.llm
	local name=$1 r=$2 out req0 req1
	shift 2
	req0=$(bench_mock_stat "$r" requests)
	"$holdcalls" --port "$FBD_PORT" --path "/v1/routes/$r/call" --body "$CALL_BODY" \
		--timeout-ms $((budget + 2000)) --expect-source llm --csv "$tmp/$name.csv" "$@" \
		>"$tmp/$name.out" 2>&1 || true
	drain "$r"
	req1=$(bench_mock_stat "$r" requests)
	awk -F, 'NR > 1 && $5 == 200 && $6 == "llm" && $3 >= 0 { print $3 }' "$tmp/$name.csv" >"$tmp/$name.llm"
	out=$(cat "$tmp/$name.out")
	echo "upstream=$((req1 - req0))" >>"$tmp/$name.out"
	echo "goodput=$(ratio "$(kv0 ok "$out")" "$(kv wall_s "$out")")" >>"$tmp/$name.out"
	note "$name: $(grep -E '^(calls|started|ok|failed|wrong_source|status_other|wall_s)=' <<<"$out" | tr '\n' ' ')upstream requests $((req1 - req0)), mock max in flight $(bench_mock_stat "$r" max_inflight), answers by source: $(awk -F, 'NR > 1 && $5 > 0 { n[$6]++ } END { for (s in n) printf "%s %d ", s, n[s] }' "$tmp/$name.csv")(calls not started or cut at the end count as failed)"
}

run uncongested fixed -n "$base_calls" --conc 8 --max-s 120
run fixed fixed -n "$max_calls" --conc "$callers" --max-s "$secs"
run adaptive adaptive -n "$max_calls" --conc "$callers" --max-s "$secs"
lim=$(curl -s -H "$auth" "$base/metrics" | grep '^fusebox_concurrency_limit' | tr '\n' ' ' || true)
note "daemon metrics after the adaptive run: ${lim:-no fusebox_concurrency_limit}"

U=$(cat "$tmp/uncongested.out")
F=$(cat "$tmp/fixed.out")
A=$(cat "$tmp/adaptive.out")
up99=$(pct "$tmp/uncongested.llm" 0.99)
result adaptive.uncongested.p50_ms "$(pct "$tmp/uncongested.llm" 0.50)" ms
result adaptive.uncongested.p99_ms "$up99" ms
result adaptive.fixed.goodput "$(kv goodput "$F")" answers/s
result adaptive.fixed.llm_p99_ms "$(pct "$tmp/fixed.llm" 0.99)" ms
result adaptive.adaptive.goodput "$(kv goodput "$A")" answers/s
result adaptive.adaptive.admitted_p50_ms "$(pct "$tmp/adaptive.llm" 0.50)" ms
result adaptive.adaptive.admitted_p99_ms "$(pct "$tmp/adaptive.llm" 0.99)" ms
target adaptive.goodput_ratio "$(ratio "$(kv goodput "$A")" "$(kv goodput "$F")")" x ge 1.5
target adaptive.admitted_p99_over_uncongested "$(ratio "$(pct "$tmp/adaptive.llm" 0.99)" "$up99")" x le 2
result adaptive.uncongested.answered_by_model "$(kv0 ok "$U")" calls
note "load after: $(bench_load)"
