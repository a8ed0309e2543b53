#!/usr/bin/env bash
# fusebox demo: a scripted LLM incident, watched live.
#
#   contrib/demo.sh [--no-tui] [--duration S] [--rps N] [--scenario FILE]
#   (usually through `contrib/dev.sh demo [--no-tui]`, which builds first)
#
# Starts, all on 127.0.0.1 with ports picked by the kernel:
#   fusebox-mockllm  playing contrib/demo-scenario.json (healthy, brown-out,
#                    outage, format and semantic drift, recovery: about
#                    three minutes)
#   fuseboxd         with contrib/examples/demo.json pointed at the mock
#   fusebox-traffic  intent + ticket calls for --duration seconds (200)
# then opens the console (BUILD_DIR/tui/fusebox) on the daemon; without a
# console binary, or with --no-tui, it prints a line of /v1/state every few
# seconds instead. When the traffic ends (headless) or the console quits, it
# stops what it started and prints a summary read from the SQLite log:
# calls by source, breaker transitions, level changes, alerts.
#
# Ctrl-C stops everything it started (by PID). The run directory,
# BUILD_DIR/demo-run/ (config, tokens, database, logs), is kept for a look
# with sqlite3 afterwards.
#
# Environment: BUILD_DIR (default build), relative to the repository root.
set -euo pipefail

orig=$PWD
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"

BUILD_DIR=${BUILD_DIR:-build}
tui=1
duration=200
rps=8
scenario=contrib/demo-scenario.json

usage() {
	echo "usage: contrib/demo.sh [--no-tui] [--duration S] [--rps N] [--scenario FILE]" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--no-tui) tui=0 ;;
	--duration)
		[ $# -ge 2 ] || usage
		duration=$2
		shift
		;;
	--rps)
		[ $# -ge 2 ] || usage
		rps=$2
		shift
		;;
	--scenario)
		[ $# -ge 2 ] || usage
		case $2 in
		/*) scenario=$2 ;;
		*) scenario=$orig/$2 ;;
		esac
		shift
		;;
	-h | --help) usage ;;
	*) usage ;;
	esac
	shift
done
case $duration in '' | *[!0-9]*) usage ;; esac

log() { printf '== %s\n' "$*" >&2; }
die() {
	printf 'demo: %s\n' "$*" >&2
	exit 1
}

mock_bin=$BUILD_DIR/contrib/fusebox-mockllm
daemon_bin=$BUILD_DIR/daemon/fuseboxd
traffic_bin=$BUILD_DIR/contrib/fusebox-traffic
console_bin=$BUILD_DIR/tui/fusebox
for b in "$mock_bin" "$daemon_bin" "$traffic_bin"; do
	[ -x "$b" ] || die "$b is not built (contrib/dev.sh build, or BUILD_DIR=...)"
done
for p in sqlite3 curl; do
	command -v "$p" >/dev/null || die "$p is missing (contrib/dev.sh deps)"
done
[ -r "$scenario" ] || die "no scenario $scenario"

run=$BUILD_DIR/demo-run
rm -rf "$run"
mkdir -p "$run/var"
chmod 700 "$run/var"
run=$(cd "$run" && pwd)

mock_pid=
daemon_pid=
traffic_pid=

# Stop one process we started: TERM, up to 10 s, then KILL.
stop_pid() { # pid
	local pid=$1 i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

cleanup() {
	trap - EXIT INT TERM
	stop_pid "$traffic_pid"
	traffic_pid=
	stop_pid "$daemon_pid"
	daemon_pid=
	stop_pid "$mock_pid"
	mock_pid=
}
trap cleanup EXIT
trap 'log "interrupted: stopping"; cleanup; exit 130' INT TERM

# Wait for "listening on HOST:PORT" in file, print PORT.
wait_port() { # file pid what
	local file=$1 pid=$2 what=$3 port i
	for ((i = 0; i < 100; i++)); do
		port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$file" 2>/dev/null | head -n 1)
		if [ -n "$port" ]; then
			echo "$port"
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	die "$what did not start; see $run"
}

# 1. The mock LLM plays the timeline from the moment it starts.
t0_ms=$(date +%s%3N)
"$mock_bin" --listen 127.0.0.1:0 --scenario "$scenario" \
	>"$run/mockllm.out" 2>"$run/mockllm.log" &
mock_pid=$!
echo "$t0_ms" >"$run/t0_ms" # the demo's clock, for tests/demo_timeline.sh
mock_port=$(wait_port "$run/mockllm.out" "$mock_pid" fusebox-mockllm)

# 2. The daemon: demo.json pointed at the mock, on a free port.
sed -e "s#http://127\.0\.0\.1:7800/#http://127.0.0.1:$mock_port/#g" \
	-e 's#"listen": "127\.0\.0\.1:7700"#"listen": "127.0.0.1:0"#' \
	contrib/examples/demo.json >"$run/fusebox.json"
if ! grep -q "127.0.0.1:$mock_port/b/primary-v2/" "$run/fusebox.json" ||
	! grep -q '"listen": "127.0.0.1:0"' "$run/fusebox.json"; then
	die "could not rewrite contrib/examples/demo.json (listen / backend URLs changed?)"
fi
token=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
(
	umask 077
	printf '%s operator demo\n' "$token" >"$run/var/tokens"
)
chmod 600 "$run/var/tokens"
"$daemon_bin" --check-config -c "$run/fusebox.json" >/dev/null
"$daemon_bin" -c "$run/fusebox.json" >"$run/fuseboxd.out" 2>"$run/fuseboxd.log" &
daemon_pid=$!
daemon_port=$(wait_port "$run/fuseboxd.out" "$daemon_pid" fuseboxd)
url=http://127.0.0.1:$daemon_port
curl -fsS --noproxy '*' "$url/healthz" >/dev/null || die "fuseboxd does not answer /healthz"

# 3. Traffic, bounded by --duration.
"$traffic_bin" --url "$url" --routes intent,ticket --rps "$rps" --duration "$duration" \
	--no-llm-ratio 0.02 --async-ratio 0.05 >"$run/traffic.txt" 2>"$run/traffic.log" &
traffic_pid=$!

log "run directory  $run"
log "mock LLM       http://127.0.0.1:$mock_port  (scenario $scenario)"
log "fuseboxd       $url  (config $run/fusebox.json, log $run/fuseboxd.log)"
log "traffic        ${rps}/s on intent,ticket for ${duration} s"
log "operator token $run/var/tokens"

# Quote a string for an SQL literal.
sqlq() { printf "'%s'" "${1//\'/\'\'}"; }

# Print the note of every scenario step the mock applied since last time.
phase_seen=0
phase_lines() {
	local n line
	n=$(grep -c 'scenario: step' "$run/mockllm.log" 2>/dev/null || true)
	while [ "$phase_seen" -lt "${n:-0}" ]; do
		line=$(sqlite3 -batch -noheader :memory: "
			WITH s(j) AS (SELECT CAST(readfile($(sqlq "$scenario")) AS TEXT))
			SELECT printf('-- t+%ds phase: %s',
				json_extract(j, '\$.timeline[$phase_seen].at_s'),
				json_extract(j, '\$.timeline[$phase_seen].note')) FROM s;" 2>/dev/null ||
			true)
		printf '%s\n' "${line:-"-- phase $phase_seen"}"
		phase_seen=$((phase_seen + 1))
	done
}

# One line of /v1/state: levels, load and breakers, at time t+N s.
state_line() {
	local f=$run/state.json t
	curl -fsS --noproxy '*' -m 3 -H "Authorization: Bearer $token" \
		"$url/v1/state" >"$f" 2>/dev/null || {
		echo "(state unavailable)"
		return 0
	}
	t=$((($(date +%s%3N) - t0_ms) / 1000))
	sqlite3 -batch -noheader :memory: "
		WITH s(j) AS (SELECT CAST(readfile($(sqlq "$f")) AS TEXT))
		SELECT printf('t+%3ds ', $t) || (
			SELECT group_concat(printf('%s L%d %.1f/s p50 %d ms rev %d',
				json_extract(r.value, '\$.name'), json_extract(r.value, '\$.level'),
				json_extract(r.value, '\$.rps_1m'),
				coalesce(json_extract(r.value, '\$.p50_ms_1m'), 0),
				json_extract(r.value, '\$.review_pending')), ' | ')
			FROM s, json_each(s.j, '\$.routes') r) || '  || ' || (
			SELECT group_concat(printf('%s %s', json_extract(b.value, '\$.name'),
				json_extract(b.value, '\$.breaker.state')), ', ')
			FROM s, json_each(s.j, '\$.backends') b);" 2>/dev/null ||
		echo "(state unreadable)"
}

watch_state() { # interval
	while kill -0 "$traffic_pid" 2>/dev/null; do
		phase_lines
		state_line
		sleep "$1" &
		wait $! || true
	done
}

if [ "$tui" -eq 1 ] && [ -x "$console_bin" ]; then
	log "console        $console_bin (quit it to stop the demo)"
	sleep 1
	"$console_bin" --url "$url" --token-file "$run/var/tokens" || true
else
	if [ "$tui" -eq 1 ]; then
		log "no console at $console_bin yet: printing /v1/state every 5 s (Ctrl-C stops)"
		watch_state 5
	else
		watch_state 5
	fi
fi

# 4. Stop, then read the log. The daemon is stopped first so that its last
# rows are committed.
if kill -0 "$traffic_pid" 2>/dev/null; then
	stop_pid "$traffic_pid"
else
	wait "$traffic_pid" || log "fusebox-traffic exited non-zero (see $run/traffic.log)"
fi
traffic_pid=
sleep 2
stop_pid "$daemon_pid"
daemon_pid=
stop_pid "$mock_pid"
mock_pid=

db=$run/var/fusebox.db
[ -f "$db" ] || die "no database at $db"

# The story of the run in at most 80 columns a line: breakers opening and
# closing (not every probe), level changes, what the review queue got, and
# where each route ended.
story() {
	echo "== what happened"
	sqlite3 -batch -noheader "$db" "
		WITH e(id, at, kind, subject, tr, why) AS (
			SELECT id, at, kind, subject,
				CASE WHEN instr(detail, ' (') > 0
				     THEN substr(detail, 1, instr(detail, ' (') - 1) ELSE detail END,
				CASE WHEN instr(detail, ' (') > 0
				     THEN substr(detail, instr(detail, ' (') + 2) ELSE '' END
			FROM events
			WHERE (kind = 'breaker' AND detail NOT LIKE '%-> half_open%'
			       AND detail NOT LIKE 'half_open -> open%') OR kind = 'level'),
		r(id, at, kind, subject, tr, why) AS (
			SELECT id, at, kind, subject, tr,
				replace(replace(replace(rtrim(replace(why, '; actor escalation', ''), ')'),
					' consecutive failures (', 'x '), ' consecutive ', 'x '),
					' over ', ' of ')
			FROM e),
		l(id, line) AS (
			SELECT id, printf('t+%3ds %s %s%s', (at - $t0_ms) / 1000, subject,
				CASE WHEN kind = 'breaker' AND tr LIKE '%-> open' THEN 'opened'
				     WHEN kind = 'breaker' AND tr LIKE '%-> closed' THEN 'closed'
				     WHEN kind = 'level' AND tr LIKE 'auto % -> %'
				     THEN 'L' || substr(tr, 6, 1) || ' -> L' || substr(tr, 11, 1)
				     ELSE tr END,
				CASE WHEN why = '' THEN '' ELSE ': ' || why END)
			FROM r)
		SELECT CASE WHEN length(line) > 80 THEN substr(line, 1, 79) || '~' ELSE line END
		FROM l ORDER BY id;"
	sqlite3 -batch -noheader "$db" "
		SELECT substr(printf('reviews: %d queued (%s); %d decided', count(*),
			(SELECT group_concat(n || ' ' || reason, ', ') FROM (SELECT reason, count(*) AS n
			 FROM reviews GROUP BY reason ORDER BY n DESC)),
			sum(state NOT IN ('pending', 'claimed'))), 1, 80) FROM reviews;"
	sqlite3 -batch -noheader "$db" "
		SELECT substr('ended: ' || group_concat(route || ' ' || coalesce((SELECT CASE
			WHEN e.detail LIKE '%-> forced L%' THEN 'forced L' || substr(e.detail,
				instr(e.detail, '-> forced L') + 11, 1)
			WHEN e.detail LIKE '%-> auto L%' THEN 'L' || substr(e.detail,
				instr(e.detail, '-> auto L') + 9, 1)
			ELSE 'L' || substr(e.detail, instr(e.detail, '-> ') + 3, 1) END
			FROM events e WHERE e.kind = 'level' AND e.subject = r.route
			ORDER BY e.id DESC LIMIT 1), 'L0'), ', '), 1, 80)
		FROM (SELECT DISTINCT route FROM calls ORDER BY route) r;"
}

echo
echo "== traffic (client side)"
cat "$run/traffic.txt"
echo
echo "== calls by source (server side, from $db)"
sqlite3 -batch -column -header "$db" "
	SELECT route, source, count(*) AS calls,
	       sum(degraded) AS degraded,
	       CAST(avg(elapsed_ms) AS INTEGER) AS avg_ms
	FROM calls GROUP BY route, source ORDER BY route, calls DESC;"
echo
sqlite3 -batch -column -header "$db" "
	SELECT source, count(*) AS calls,
	       printf('%.1f%%', 100.0 * count(*) / (SELECT count(*) FROM calls)) AS share
	FROM calls GROUP BY source ORDER BY calls DESC;"
echo
echo "== why calls degraded"
sqlite3 -batch -column -header "$db" "
	SELECT coalesce(reason, '-') AS reason, count(*) AS calls
	FROM calls WHERE degraded GROUP BY reason ORDER BY calls DESC;"
echo
echo "== validation failures"
sqlite3 -batch -column -header "$db" "
	SELECT route, stage, rule, count(*) AS failures
	FROM validation_failures GROUP BY route, stage, rule ORDER BY failures DESC LIMIT 10;"
echo
echo "== review queue"
sqlite3 -batch -column -header "$db" "
	SELECT route, reason, state, count(*) AS items
	FROM reviews GROUP BY route, reason, state ORDER BY items DESC;"
echo
echo "== attempts by backend and outcome"
sqlite3 -batch -column -header "$db" "
	SELECT backend, outcome, count(*) AS attempts
	FROM attempts GROUP BY backend, outcome ORDER BY backend, attempts DESC;"
for kind in breaker level alert; do
	echo
	echo "== events: $kind"
	sqlite3 -batch -column -header "$db" "
		SELECT printf('t+%ds', (at - $t0_ms) / 1000) AS at, subject, detail
		FROM events WHERE kind = '$kind' ORDER BY id;"
done
echo
echo "== totals"
sqlite3 -batch "$db" "
	SELECT printf('calls %d, attempts %d, validation failures %d, degradations %d, '
	              || 'breaker transitions %d, level changes %d, alert changes %d, '
	              || 'reviews pending %d',
		(SELECT count(*) FROM calls), (SELECT count(*) FROM attempts),
		(SELECT count(*) FROM validation_failures), (SELECT count(*) FROM degradations),
		(SELECT count(*) FROM events WHERE kind = 'breaker'),
		(SELECT count(*) FROM events WHERE kind = 'level'),
		(SELECT count(*) FROM events WHERE kind = 'alert'),
		(SELECT count(*) FROM reviews WHERE state IN ('pending', 'claimed')));"
echo
story
echo
log "run directory kept: $run (sqlite3 $db)"
