#!/usr/bin/env bash
# profile: where fuseboxd spends its time under the overhead load (nginx
# upstream, validation and full logging on).
#  - perf (sampling, user + kernel): wrk at 64 connections; the daemon's
#    samples split per thread (engine / HTTP / SQLite writer), then the top
#    functions by self time and the engine thread's inclusive tree.
#  - callgrind (exact instruction counts, user space only): wrk at 4
#    connections; instrumentation switched on after start-up, so the counts
#    divide by the calls served; top functions by inclusive instructions
#    per call.
# Prints a plain-text report (contrib/bench.sh puts it in RESULTS.md).
#   tests/bench/profile.sh BUILD_ROOT SOURCE_ROOT
set -eu # no pipefail: report pipelines end in head
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
bench_init "${1:-}" "${2:-}" profile
bench_need wrk nginx curl sqlite3
[ -x "$fuseboxd" ] || bench_skip "$fuseboxd is not built"
bench_header
bench_nginx NGX NGX_PORT
bench_config "$tmp/fusebox.json" "http://127.0.0.1:$NGX_PORT/v1/chat/completions" 30000

if command -v perf >/dev/null 2>&1; then
	bench_daemon FBD FBD_PORT "$tmp/fusebox.json"
	url=http://127.0.0.1:$FBD_PORT/v1/routes/intent/call
	wrk_run W 2 64 2 "$url" "$CALL_BODY"
	WRK_BODY=$CALL_BODY timeout 60 wrk -t2 -c64 -d12s -s "$src/tests/bench/post.lua" "$url" \
		>"$tmp/wrk.perf" 2>&1 &
	WRK=$!
	BENCH_PIDS+=("$WRK")
	sleep 3
	perf record -F 999 --call-graph dwarf,8192 -p "$FBD" -o "$tmp/perf.data" -- sleep 6 \
		>/dev/null 2>&1 || true
	wait "$WRK" || true
	note "perf: wrk c=64: $(grep -E 'Requests/sec' "$tmp/wrk.perf" | tr -s ' ')"
	echo "## perf: share of the daemon's samples per thread"
	perf script -i "$tmp/perf.data" -F tid 2>/dev/null | sort | uniq -c | sort -rn >"$tmp/tids"
	total=$(awk '{ s += $1 } END { print s }' "$tmp/tids")
	while read -r cnt tid; do
		role=other
		perf report -i "$tmp/perf.data" --tid "$tid" --children -s sym --stdio -g none 2>/dev/null |
			grep -v '^#' >"$tmp/tid.$tid"
		grep -q 'engine_main' "$tmp/tid.$tid" && role="engine thread"
		grep -q 'store_writer_main' "$tmp/tid.$tid" && role="SQLite writer"
		grep -qi 'microhttpd\|MHD_\|http_access' "$tmp/tid.$tid" && [ "$role" = other ] && role="HTTP (MHD) thread"
		printf '%6.1f %%  %s (tid %s)\n' "$(calc "$cnt * 100 / $total")" "$role" "$tid"
		[ "$role" = "engine thread" ] && engine_tid=$tid
	done <"$tmp/tids"
	echo
	echo "## perf: top 25 by self time, whole daemon (% of its samples)"
	perf report -i "$tmp/perf.data" --no-children -s dso,sym --stdio -g none 2>/dev/null |
		grep -v '^#' | grep -v '^$' | head -25
	if [ -n "${engine_tid:-}" ]; then
		echo
		echo "## perf: engine thread, inclusive (children) % of that thread's samples, fuseboxd functions"
		grep -E '\[\.\] [a-z_]+ *$' "$tmp/tid.$engine_tid" | grep -vE '\] (start_thread|clone3|_start) *$' |
			awk '$1 + 0 >= 1.0' | head -30
	fi
	echo
	bench_stop "$FBD"
else
	note "perf not installed (Debian package linux-perf): no sampling profile"
fi

if command -v valgrind >/dev/null 2>&1 && command -v callgrind_annotate >/dev/null 2>&1; then
	rm -f "$tmp/fusebox.db" "$tmp/fusebox.db-wal" "$tmp/fusebox.db-shm"
	bench_spawn VG VG_PORT "$tmp/valgrind.log" valgrind --tool=callgrind --instr-atstart=no \
		--callgrind-out-file="$tmp/callgrind.out" "$fuseboxd" -c "$tmp/fusebox.json"
	url=http://127.0.0.1:$VG_PORT/v1/routes/intent/call
	curl -s -o /dev/null -H 'Content-Type: application/json' -d "$CALL_BODY" "$url"
	before=$(sqlite3 "$tmp/fusebox.db" "SELECT count(*) FROM calls" 2>/dev/null || echo 0)
	callgrind_control -i on "$VG" >/dev/null
	WRK_BODY=$CALL_BODY timeout 90 wrk -t1 -c4 -d20s --timeout 10s -s "$src/tests/bench/post.lua" "$url" \
		>"$tmp/wrk.cg" 2>&1 || true
	callgrind_control -i off "$VG" >/dev/null
	bench_stop "$VG"
	calls=$(( $(sqlite3 "$tmp/fusebox.db" "SELECT count(*) FROM calls") - before ))
	echo "## callgrind: instructions per call (inclusive), $calls calls under wrk c=4, start-up excluded"
	callgrind_annotate --inclusive=yes "$tmp/callgrind.out" 2>/dev/null |
		grep -E '^ *[0-9,]+ \(' | grep -v 'PROGRAM TOTALS' |
		awk -v n="$calls" '{ c = $1; gsub(",", "", c); f = $0; sub(/^ *[0-9,]+ \( *[0-9.]+%\) +/, "", f);
			sub(/ \[.*$/, "", f); sub(/^.*:/, "", f); printf "%9.0f  %s\n", c / n, f }' |
		grep -vE "0x0000|\\?\\?\\?|below main|start_thread|clone|_dl_|'|^ +[0-9]+  (main|libc_start)" |
		awk '!seen[$2]++' | head -45
	total=$(callgrind_annotate "$tmp/callgrind.out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
	echo
	echo "total: $(calc "$total / $calls") instructions per call"
else
	note "valgrind not installed: no instruction profile"
fi
