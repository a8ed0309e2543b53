#!/usr/bin/env bash
# console: the cost of the console (build/tui/fusebox) refreshing at 1 Hz
# against a daemon with 200 routes and 200 backends, with light traffic
# (so rates and percentiles are non-zero). The console runs in a detached
# tmux session (200x60); its CPU (all threads, /proc/<pid>/stat) is
# measured over BENCH_CONSOLE_SECS (default 20) on the Overview screen
# (200 routes) and on the Breakers screen (200 backends). The daemon's
# CPU for serving those snapshots is reported too.
# Target: < 3 % of one core.
#   tests/bench/console.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
bench_init "${1:-}" "${2:-}" console
console=$build/tui/fusebox
[ -x "$console" ] || bench_skip "$console is not built (the console is not in this tree yet)"
[ -x "$fuseboxd" ] || bench_skip "$fuseboxd is not built"
bench_need tmux curl
secs=${BENCH_CONSOLE_SECS:-20}
n=200
bench_header

# 200 backends (all on one mock), 200 routes each on its own backend.
bench_spawn MOCK MOCK_PORT "$tmp/mock.log" "$mockllm" --listen 127.0.0.1:0 --quiet
echo "bench-operator-token operator bench" >"$tmp/tokens"
chmod 600 "$tmp/tokens"
{
	printf '{"listen":"127.0.0.1:0","database":"%s","tokens_file":"%s",\n' "$tmp/fusebox.db" "$tmp/tokens"
	printf '"log":{"level":"warn"},\n"backends":['
	for ((i = 0; i < n; i++)); do
		[ "$i" -eq 0 ] || printf ','
		printf '\n{"name":"backend-%03d","url":"http://127.0.0.1:%s/b/b%03d/v1/chat/completions","model":"m","max_concurrent":50}' \
			"$i" "$MOCK_PORT" "$i"
	done
	printf '],\n"routes":['
	for ((i = 0; i < n; i++)); do
		[ "$i" -eq 0 ] || printf ','
		printf '\n{"name":"route-%03d","budget_ms":3000,"targets":[{"backend":"backend-%03d","weight":100}],' "$i" "$i"
		printf '"output":{"schema":{"type":"object"}},"rules":{"match":[],"default":{"result":{"intent":"other"},"confidence":0.3}}}'
	done
	printf ']}\n'
} >"$tmp/fusebox.json"
"$fuseboxd" --check-config -c "$tmp/fusebox.json" >/dev/null
bench_daemon FBD FBD_PORT "$tmp/fusebox.json"
url=http://127.0.0.1:$FBD_PORT

# Light traffic on every route (about 20 calls/s in all) while we measure.
(
	end=$((SECONDS + 2 * secs + 30))
	while [ "$SECONDS" -lt "$end" ]; do
		for ((i = 0; i < n; i += 10)); do
			curl -s -o /dev/null -H 'Content-Type: application/json' -d '{"input":"hello"}' "$url/v1/routes/route-$(printf %03d $((i + RANDOM % 10)))/call" || true
		done
		sleep 0.5
	done
) &
TRAFFIC=$!
BENCH_PIDS+=("$TRAFFIC")

sock=$tmp/tmux.sock
tmux -S "$sock" new-session -d -x 200 -y 60 -s bench \
	"TERM=xterm-256color exec '$console' --url '$url' --token-file '$tmp/tokens'"
TMUX_SERVER=$(tmux -S "$sock" display-message -p '#{pid}')
BENCH_PIDS+=("$TMUX_SERVER")
sleep 1
CON=$(tmux -S "$sock" display-message -p '#{pane_pid}')
kill -0 "$CON" 2>/dev/null || { echo "bench: the console did not start" >&2; exit 1; }
sleep 3 # first snapshots, screen set-up

measure() { # screen-name key
	local name=$1 c0 c1 d0 d1 t0 t1 pct dpct
	tmux -S "$sock" send-keys -t bench "$2"
	sleep 2
	c0=$(bench_cpu_us "$CON") d0=$(bench_cpu_us "$FBD") t0=$(date +%s%N)
	sleep "$secs"
	c1=$(bench_cpu_us "$CON") d1=$(bench_cpu_us "$FBD") t1=$(date +%s%N)
	pct=$(calc "($c1 - $c0) * 100000 / ($t1 - $t0)")
	dpct=$(calc "($d1 - $d0) * 100000 / ($t1 - $t0)")
	tmux -S "$sock" capture-pane -p -t bench >"$tmp/screen-$name.txt"
	target "console.$name.cpu_pct_of_one_core" "$pct" % lt 3
	result "console.$name.daemon_cpu_pct" "$dpct" "% (daemon, incl. the traffic)"
	note "$name screen, first lines: $(head -4 "$tmp/screen-$name.txt" | tr -s ' ' | tr '\n' '|')"
}
measure overview 1
measure breakers 2
note "console RSS $(($(bench_rss_kb "$CON") / 1024)) MB, threads $(bench_threads "$CON"); load after: $(bench_load)"
tmux -S "$sock" kill-server 2>/dev/null || true
