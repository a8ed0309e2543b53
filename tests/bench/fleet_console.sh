#!/usr/bin/env bash
# fleet_console: the cost of the fleet console (`fusebox --fleet FILE`,
# tui/fleet_console.c) polling 50 hosts at 1 Hz — GET /v1/state, /v1/slo,
# /v1/alerts and /v1/reviews per host per second on one curl multi. The 50 hosts are
# one fuseboxd on 127.0.0.1 named 50 times in the fleet file (fleet-01 …
# fleet-50, the same URL), so the console does the work of 50 daemons.
# The console runs in a detached tmux session (200x50) on the fleet
# overview; its CPU (all threads, /proc/<pid>/stat) is measured over
# BENCH_FLEET_SECS (default 30). The daemon's CPU is reported too.
# Target: < 5 % of one core.
#   tests/bench/fleet_console.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
bench_init "${1:-}" "${2:-}" fleet_console
console=$build/tui/fusebox
[ -x "$console" ] || bench_skip "$console is not built"
[ -x "$fuseboxd" ] || bench_skip "$fuseboxd is not built"
bench_need tmux curl
secs=${BENCH_FLEET_SECS:-30}
hosts=${BENCH_FLEET_HOSTS:-50}
bench_header

bench_spawn MOCK MOCK_PORT "$tmp/mock.log" "$mockllm" --listen 127.0.0.1:0 --quiet
bench_config "$tmp/fusebox.json" "http://127.0.0.1:$MOCK_PORT/v1/chat/completions"
bench_daemon FBD FBD_PORT "$tmp/fusebox.json"
url=http://127.0.0.1:$FBD_PORT
for i in $(seq 1 20); do
	curl -s -o /dev/null -H 'Content-Type: application/json' -d "$CALL_BODY" "$url/v1/routes/intent/call" || true
done
for ((i = 1; i <= hosts; i++)); do
	printf 'fleet-%02d %s\n' "$i" "$url"
done >"$tmp/fleet"

sock=$tmp/tmux.sock
tmux -S "$sock" -f /dev/null new-session -d -x 200 -y 50 -s bench \
	"TERM=xterm-256color LC_ALL=C.UTF-8 exec '$console' --fleet '$tmp/fleet' --token-file '$tmp/tokens'"
TMUX_SERVER=$(tmux -S "$sock" display-message -p '#{pid}')
BENCH_PIDS+=("$TMUX_SERVER")
sleep 1
CON=$(tmux -S "$sock" display-message -p '#{pane_pid}')
kill -0 "$CON" 2>/dev/null || {
	echo "bench: the console did not start" >&2
	exit 1
}
sleep 3 # first rounds, screen set-up
tmux -S "$sock" capture-pane -p -t bench >"$tmp/screen-start.txt"
grep -q "fleet: $hosts hosts, $hosts answering, 0 down" "$tmp/screen-start.txt" || {
	echo "bench: the fleet overview does not show $hosts answering hosts:" >&2
	cat "$tmp/screen-start.txt" >&2
	exit 1
}
c0=$(bench_cpu_us "$CON") d0=$(bench_cpu_us "$FBD") t0=$(date +%s%N)
sleep "$secs"
c1=$(bench_cpu_us "$CON") d1=$(bench_cpu_us "$FBD") t1=$(date +%s%N)
tmux -S "$sock" capture-pane -p -t bench >"$tmp/screen-end.txt"
pct=$(calc "($c1 - $c0) * 100000 / ($t1 - $t0)")
dpct=$(calc "($d1 - $d0) * 100000 / ($t1 - $t0)")
target "fleet_console.hosts_${hosts}.cpu_pct_of_one_core" "$pct" % lt 5
result "fleet_console.daemon_cpu_pct" "$dpct" "% (one daemon answering for $hosts hosts)"
grep -q "fleet: $hosts hosts, $hosts answering, 0 down" "$tmp/screen-end.txt" &&
	note "after ${secs}s: still $hosts answering" || note "after ${secs}s: $(sed -n 2p "$tmp/screen-end.txt")"
if command -v strace >/dev/null; then
	# The poll rate: the requests sent over 5 s (after the CPU
	# measurement, as strace slows the console).
	timeout -s INT 5 strace -f -qq -s 16 -e trace=sendto,write,writev -p "$CON" -o "$tmp/strace.txt" >/dev/null 2>&1 || true
	reqs=$(grep -c '"GET /v1/' "$tmp/strace.txt" 2>/dev/null || true)
	result "fleet_console.requests_per_s" "$(calc "${reqs:-0} / 5")" "(over 5 s, under strace; $((4 * hosts)) expected at 1 Hz)"
fi
note "overview, first lines: $(head -6 "$tmp/screen-end.txt" | tr -s ' ' | tr '\n' '|')"
note "console RSS $(($(bench_rss_kb "$CON") / 1024)) MB, threads $(bench_threads "$CON"); load after: $(bench_load)"
tmux -S "$sock" kill-server 2>/dev/null || true
