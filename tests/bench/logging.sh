#!/usr/bin/env bash
# logging: the SQLite writer thread.
#  1. bench_store: sustained attempt rows/s with batching (target >= 50,000).
#  2. bench_lograte: the rows of N calls/s (one attempts + one calls row per
#     call, shaped like the daemon's) put exactly as the engine does (a row
#     the queue refuses is lost): 0 lost at 20,000 calls/s, then rising
#     rates until rows are lost (the highest loss-free rate is reported).
#  3. End to end: fuseboxd on a fast upstream (nginx) at the highest rate
#     this machine sustains (wrk, 64 connections), then a clean stop; every
#     call the daemon counted (fusebox_calls_total) has its calls row and
#     its attempts row, and no "log_rows_dropped" event was written.
#   tests/bench/logging.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
bench_init "${1:-}" "${2:-}" logging
bench_store=$build/db/bench_store
bench_lograte=$build/tests/bench/bench_lograte
bench_header

if [ -x "$bench_store" ]; then
	: >"$tmp/store"
	for ((rep = 1; rep <= 3; rep++)); do
		"$bench_store" 500000 1 "$tmp" >"$tmp/store.out"
		awk '/^throughput:/ { print $2 }' "$tmp/store.out" >>"$tmp/store"
		note "bench_store rep $rep: $(grep -E '^(throughput|cpu|batches|queue-full)' "$tmp/store.out" | tr -s ' ' | tr '\n' ';') load $(bench_load)"
	done
	target logging.store_rows_per_s "$(bench_median <"$tmp/store")" rows/s ge 50000
	result logging.commit_now_p50_ms "$(sed -n 's/^commit_now: *p50 \([0-9.]*\) ms.*/\1/p' "$tmp/store.out")" "ms (store_commit_now, synchronous=FULL)"
	result logging.commit_now_p99_ms "$(sed -n 's/^commit_now:.*p99 \([0-9.]*\) ms.*/\1/p' "$tmp/store.out")" ms
else
	note "bench_store is not built (ninja -C BUILD db/bench_store)"
fi

if [ -x "$bench_lograte" ]; then
	"$bench_lograte" 20000 10 "$tmp" >"$tmp/rate.out" || true
	out=$(cat "$tmp/rate.out")
	note "bench_lograte 20000/s x 10 s: $(tr '\n' ' ' <<<"$out")"
	target logging.rows_lost_at_20000_calls_per_s "$(kv rows_lost "$out")" rows eq 0
	result logging.rows_on_disk_at_20000 "$(kv rows_on_disk "$out")/$(kv rows_put "$out")" rows
	result logging.peak_queue_at_20000 "$(kv peak_queue "$out")/$(kv queue_cap "$out")" rows
	best=0
	if [ "$(kv rows_lost "$out")" = 0 ]; then
		best=20000
		for r in 30000 40000 50000 60000 80000 100000; do
			"$bench_lograte" "$r" 5 "$tmp" >"$tmp/rate.out" || true
			out=$(cat "$tmp/rate.out")
			note "bench_lograte ${r}/s x 5 s: lost $(kv rows_lost "$out"), peak queue $(kv peak_queue "$out"), avg batch $(kv avg_batch "$out")"
			[ "$(kv rows_lost "$out")" = 0 ] || break
			best=$r
		done
	fi
	result logging.highest_lossless_calls_per_s "$best" calls/s
else
	note "bench_lograte is not built (ninja -C BUILD tests/bench/bench_lograte)"
fi

if [ -x "$fuseboxd" ] && command -v wrk >/dev/null && command -v nginx >/dev/null &&
	command -v sqlite3 >/dev/null; then
	bench_nginx NGX NGX_PORT
	bench_config "$tmp/fusebox.json" "http://127.0.0.1:$NGX_PORT/v1/chat/completions"
	bench_daemon FBD FBD_PORT "$tmp/fusebox.json"
	secs=$((BENCH_SECS * 2))
	wrk_run R 2 64 "$secs" "http://127.0.0.1:$FBD_PORT/v1/routes/intent/call" "$CALL_BODY"
	sleep 1 # the calls in flight when wrk stopped are answered
	counted=$(curl -s -H "Authorization: Bearer bench-operator-token" "http://127.0.0.1:$FBD_PORT/metrics" |
		awk '/^fusebox_calls_total/ { s += $NF } END { printf "%d\n", s }')
	bench_stop "$FBD"
	db=$tmp/fusebox.db
	calls_rows=$(sqlite3 "$db" "SELECT count(*) FROM calls")
	att_rows=$(sqlite3 "$db" "SELECT count(*) FROM attempts")
	dropped=$(sqlite3 "$db" "SELECT count(*) FROM events WHERE kind = 'log_rows_dropped'")
	note "end to end: wrk $(kv requests "$R") answers in ${secs}s ($(kv rps "$R")/s), daemon counted $counted calls; rows: calls $calls_rows, attempts $att_rows"
	result logging.e2e_calls_per_s "$(kv rps "$R")" calls/s
	target logging.e2e_calls_rows_missing "$((counted - calls_rows))" rows eq 0
	target logging.e2e_attempt_rows_missing "$((counted - att_rows))" rows eq 0
	target logging.e2e_drop_events "$dropped" events eq 0
else
	note "end-to-end part skipped: needs fuseboxd, wrk, nginx, sqlite3"
fi
note "load after: $(bench_load)"
