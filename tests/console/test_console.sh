#!/usr/bin/env bash
# tests/console/test_console.sh BUILD_ROOT SOURCE_ROOT: drive the real
# fusebox console in tmux (private socket fbtest-$$: send-keys,
# capture-pane) against a real fuseboxd + fusebox-mockllm. Each screen
# shows the expected routes / backends / states; forcing a level, weights
# and breakers from the console change /v1/state; deciding a review
# changes the DB; a viewer cannot force; a stopped daemon shows
# "disconnected, retrying" and the console recovers when it returns; a hung
# daemon does not hold key handling; 80x24, resize, NO_COLOR, the ASCII
# fallback, UTF-8 (Chinese) text. See lib.sh for the fixture.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh" "${1:-}" "${2:-}"

if ! command -v tmux >/dev/null; then
	echo "tmux is not installed" >&2
	exit 77
fi

fixture_start
for i in 1 2 3; do call_route intent "我要退款 $i" >/dev/null; done

# check NAME SESSION PATTERN [SECONDS] [REASON]: the pane shows PATTERN.
check() {
	if wait_screen "$2" "$3" "${4:-6}"; then
		ok "$1"
	else
		dump "$2"
		not_ok "$1" "${5:-pane never matched /$3/}"
	fi
}

# check_gone NAME SESSION PATTERN: the pane stops showing PATTERN.
check_gone() {
	local i
	for i in $(seq 1 40); do
		if ! screen "$2" | grep -Eq -- "$3"; then
			ok "$1"
			return
		fi
		sleep 0.1
	done
	dump "$2"
	not_ok "$1" "pane still shows /$3/"
}

state_has() { # fixed string in GET /v1/state
	api GET /v1/state | grep -qF -- "$1"
}

check_state() { # NAME STRING
	if wait_until 5 state_has "$2"; then
		ok "$1"
	else
		not_ok "$1" "/v1/state lacks $2: $(api GET /v1/state)"
	fi
}

OP=op
console_start $OP 80x24 -- --url "$URL" --token-file "$T/op.token"

# --- Overview at 80x24 ---
check overview_routes $OP '^intent +L0 .*' 8
check overview_ticket $OP '^ticket +L0 '
check overview_header $OP '^ROUTE +LVL +RPS +P50 +P99 +SVC5m +SMART5m +ALRT +REV'
check overview_connected $OP '^ connected  fuseboxd [0-9.]+ '
lines=$(screen $OP | wc -l)
[ "$lines" -eq 24 ] && ok overview_80x24 || not_ok overview_80x24 "pane has $lines lines"
# the rps history builds up (1 Hz snapshots) into a sparkline
check overview_sparkline $OP '^ rps +.*[▁▂▃▄▅▆▇█]' 8

# --- help and filter ---
keys $OP '?'
check help_shows $OP 'switch screen'
keys $OP Escape
check_gone help_closes $OP 'switch screen'
keys $OP /
type_text $OP tick
keys $OP Enter
check_gone filter_hides $OP '^intent +L'
check filter_keeps $OP '^ticket +L0'
keys $OP Escape
check filter_clears $OP '^intent +L'

# --- Breakers ---
keys $OP 2
check breakers_closed $OP '^primary-v2 +closed +'
check breakers_all $OP '^flaky-v1 +closed +'
mock_set flaky-v1 '{"status": 500}'
for i in 1 2 3; do call_route ticket "ticket $i" >/dev/null; done
mock_set flaky-v1 '{"status": 200}'
check breakers_open_shown $OP '^flaky-v1 +OPEN +[0-9.]+% .*[0-9]+m[0-9]+s'

if endpoint_exists PUT /v1/backends/nope/breaker '{"state":"auto"}'; then
	keys $OP j j c
	check breaker_form $OP 'Breaker flaky-v1'
	keys $OP Enter
	check breaker_confirm $OP 'Set the breaker of backend flaky-v1 to CLOSED \(forced\)'
	keys $OP y
	check breaker_answer $OP 'breaker flaky-v1 -> forced_closed: done \(200\)'
	check_state breaker_forced_state '"name":"flaky-v1","version":"v1","breaker":{"state":"forced_closed"'
	check breaker_forced_shown $OP '^flaky-v1 +forced closed '
	keys $OP r Enter y
	check_state breaker_auto_state '"name":"flaky-v1","version":"v1","breaker":{"state":"closed"'
else
	not_ok breaker_force "endpoint missing: PUT /v1/backends/{b}/breaker"
fi

# --- Routes: weights ---
keys $OP 5
check routes_primary $OP '^intent +L0 auto +primary-v2 +95 +95%'
check routes_canary $OP '^ +canary-v3 +5 +5% canary'
if endpoint_exists PUT /v1/routes/nope/weights '{"weights":{"a":1}}'; then
	keys $OP g j +
	check weights_pending $OP '^intent .*primary-v2 +95 +90 '
	keys $OP Enter
	check weights_confirm $OP 'primary-v2 95 -> 90 canary-v3 5 -> 10'
	keys $OP y
	check weights_answer $OP 'weights intent: done \(200\)'
	check_state weights_state '{"backend":"canary-v3","weight":10,"canary":true}'
	keys $OP - Enter y
	check_state weights_back '{"backend":"canary-v3","weight":5,"canary":true}'
else
	not_ok weights "endpoint missing: PUT /v1/routes/{r}/weights"
fi

# --- Routes: force a level (Chinese reason), then release ---
if endpoint_exists PUT /v1/routes/nope/level '{"level":1,"reason":"probe"}'; then
	keys $OP g L
	check level_form $OP 'Force level: intent'
	keys $OP 2 Enter
	type_text $OP '厂商故障 vendor incident'
	keys $OP Enter
	type_text $OP 1h
	keys $OP Enter
	check level_confirm $OP 'Force route intent to L2 +rule engine only, for 1h00m'
	keys $OP y
	check level_answer $OP 'force intent to L2: done \(200\): intent now L2, forced by alice'
	check_state level_state '"forced_level":{"level":2,"actor":"alice","reason":"厂商故障 vendor incident"'
	keys $OP 1
	check level_overview $OP '^intent +L2\* '
	check level_overview_cjk $OP '↳ forced L2 by alice: 厂商故障 vendor incident, [0-9]+m[0-9]+s left'
	keys $OP 5 g A
	check release_confirm $OP 'Release route intent to automatic level control'
	keys $OP y
	check release_answer $OP 'release intent to auto: done \(200\): intent now L0 \(auto\)'
	check_state release_state '"name":"intent","level":0,"auto_level":0,"forced_level":null'
	# a level without a reason is refused client-side
	keys $OP L 3 Enter Enter Enter
	check level_needs_reason $OP 'a reason is required'
	keys $OP Escape
	check_gone level_cancel $OP 'Enter next / done'
else
	not_ok level "endpoint missing: PUT /v1/routes/{r}/level"
fi

# --- Events ---
keys $OP 6
if endpoint_exists GET '/v1/events?after=0&limit=1'; then
	check events_tail $OP ' (breaker|level) +(flaky-v1|intent) ' 6
else
	check events_missing_shown $OP 'GET /v1/events: 404'
	not_ok events "endpoint missing: GET /v1/events"
fi

# --- SLO ---
keys $OP 4
if endpoint_exists GET /v1/slo; then
	check slo_table $OP '^WINDOW +TOTAL +SERVICE +BURN +SMART +BURN'
	check slo_5m $OP '^5m +[0-9]+ '
	check slo_budget $OP '^ (service|smart) '
else
	check slo_missing_shown $OP 'GET /v1/slo: 404'
	not_ok slo "endpoint missing: GET /v1/slo"
fi

# --- Reviews: open, approve (DB), correct with the daemon's 400 ---
keys $OP 3
if endpoint_exists GET /v1/reviews; then
	check reviews_list $OP '^ +[0-9]+ +[a-z]+ +intent +pending '
	id=$(db "SELECT id FROM reviews WHERE state = 'pending' ORDER BY due_at, id LIMIT 1")
	keys $OP g Enter
	check review_detail $OP '── Input'
	check review_detail_cjk $OP '我要退款 [0-9]'
	keys $OP a
	check review_confirm $OP "Approve review #$id"
	keys $OP y
	check review_answer $OP "approve review #$id: done"
	if wait_until 5 test "$(db "SELECT state FROM reviews WHERE id = $id")" = approved; then
		ok review_approved_in_db
	else
		not_ok review_approved_in_db "$(db "SELECT state FROM reviews WHERE id = $id")"
	fi
	keys $OP Escape n Enter c
	check review_correct_form $OP 'Correct review #'
	keys $OP C-u
	type_text $OP banana
	keys $OP Enter Enter Enter Enter
	check review_correct_confirm $OP 'the result becomes'
	keys $OP y
	check review_correct_400 $OP 'refused: 400 '
	check review_correct_reopened $OP 'Correct review #'
	keys $OP Escape Escape
else
	check reviews_missing_shown $OP 'GET /v1/reviews: 404'
	not_ok reviews "endpoint missing: GET /v1/reviews"
fi

# --- resize ---
keys $OP 1 Escape
tm resize-window -t $OP -x 100 -y 30
check resize_bigger $OP '^intent +L0 '
lines=$(screen $OP | wc -l)
[ "$lines" -eq 30 ] && ok resize_30_rows || not_ok resize_30_rows "pane has $lines lines"
check resize_footer $OP 'q quit$'
tm resize-window -t $OP -x 60 -y 15
check resize_narrow_tabs $OP '^ fusebox  1 Overview  2  3  4  5  6'
check resize_narrow_rows $OP '^intent +L0 '
tm resize-window -t $OP -x 80 -y 24
check resize_back $OP '2 Breakers  3 Reviews'

# --- the daemon goes away and comes back ---
grey_row() { # session: the ticket row is drawn in grey (bright black or dim)
	tm capture-pane -p -e -t "$1" | grep 'ticket' | grep -Eq $'\e\\[(90|2)m'
}
if grey_row $OP; then
	not_ok not_grey_when_connected "the ticket row is grey while connected"
else
	ok not_grey_when_connected
fi
stop_daemon
check disconnected $OP '^ disconnected, retrying' 5
check disconnected_keeps_data $OP '^intent +L0 '
if wait_until 3 grey_row $OP; then
	ok disconnected_greyed
else
	not_ok disconnected_greyed "the last data are not greyed: $(tm capture-pane -p -e -t $OP | grep ticket | cat -v)"
fi
start_daemon
check reconnected $OP '^ connected  fuseboxd' 10
if wait_until 3 grey_row $OP; then
	not_ok reconnected_colours "still grey after reconnecting"
else
	ok reconnected_colours
fi

# --- q quits with status 0 ---
keys $OP q
check quit $OP 'EXITED-0' 5

# --- viewers ---
console_start vw 80x24 -- --url "$URL" --token-file "$T/view.token"
keys vw 5
check viewer_routes vw '^intent +L0 auto'
check viewer_footer vw '\(read-only token\)'
keys vw L
check viewer_refused_locally vw 'read-only: this token is a viewer'
if screen vw | grep -q 'Force level'; then
	not_ok viewer_no_form "a form opened for a viewer"
else
	ok viewer_no_form
fi
keys vw q
check viewer_quits vw 'EXITED-0' 5
if endpoint_exists PUT /v1/routes/nope/level '{"level":1,"reason":"probe"}'; then
	# role not in the token file: the console asks, the daemon answers 403
	console_start vn 80x24 -- --url "$URL" --token-file "$T/view-norole.token"
	keys vn 5
	check viewer2_routes vn '^intent +L0 auto'
	keys vn g L 2 Enter
	type_text vn 'should not work'
	keys vn Enter Enter y
	check viewer_refused_by_daemon vn 'refused: 403 '
	check_state viewer_state_unchanged '"name":"intent","level":0,"auto_level":0,"forced_level":null'
	keys vn L
	check viewer_learned vn 'read-only: this token is a viewer'
	keys vn q
	check viewer2_quits vn 'EXITED-0' 5
else
	not_ok viewer_daemon_403 "endpoint missing: PUT /v1/routes/{r}/level"
fi

# --- a hung daemon: requests time out at 800 ms, keys stay responsive ---
python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
print(s.getsockname()[1], flush=True)
time.sleep(120)
' >"$T/blackhole.port" &
BH_PID=$!
wait_until 5 test -s "$T/blackhole.port"
console_start slow 80x24 -- --url "http://127.0.0.1:$(cat "$T/blackhole.port")" --token-file "$T/op.token"
check slow_timeout slow 'no answer within 800 ms' 6
start_ms=$(date +%s%3N)
keys slow 2 '?'
if wait_screen slow 'Breakers: one circuit breaker per backend' 2; then
	took=$(($(date +%s%3N) - start_ms))
	if [ "$took" -lt 1000 ]; then
		ok slow_keys_responsive
	else
		not_ok slow_keys_responsive "keys took ${took} ms"
	fi
else
	dump slow
	not_ok slow_keys_responsive "no reaction to keys"
fi
keys slow Escape q
check slow_quits slow 'EXITED-0' 5
kill "$BH_PID" 2>/dev/null
wait "$BH_PID" 2>/dev/null

# --- NO_COLOR: attributes only; with colours: colour codes ---
console_start mono 80x24 NO_COLOR=1 -- --url "$URL" --token-file "$T/op.token"
check mono_up mono '^intent +L0 '
console_start colour 80x24 -- --url "$URL" --token-file "$T/op.token"
check colour_up colour '^intent +L0 '
if tm capture-pane -p -e -t mono | grep -Eq $'\e\\[([34][0-7]|[34]8;5;[0-9]+)m'; then
	not_ok no_color "colour codes with NO_COLOR"
elif ! tm capture-pane -p -e -t mono | grep -Eq $'\e\\[(0;)?(1|7)m'; then
	not_ok no_color "no bold / reverse with NO_COLOR"
else
	ok no_color
fi
if tm capture-pane -p -e -t colour | grep -Eq $'\e\\[[34][0-7]m'; then
	ok colour
else
	not_ok colour "no colour codes"
fi
keys mono q
keys colour q
check mono_quits mono 'EXITED-0' 5
check colour_quits colour 'EXITED-0' 5

# --- a locale that is not UTF-8: ASCII only ---
console_start ascii 80x24 LC_ALL=C -- --url "$URL" --token-file "$T/op.token"
check ascii_up ascii '^ rps ' 8
sleep 2
if screen ascii | LC_ALL=C grep -q $'[\x80-\xff]'; then
	dump ascii
	not_ok ascii_fallback "non-ASCII output in the C locale"
else
	ok ascii_fallback
fi
keys ascii q
check ascii_quits ascii 'EXITED-0' 5

# --- ^C leaves cleanly too ---
console_start intr 80x24 -- --url "$URL" --token-file "$T/op.token"
check intr_up intr '^intent +L0 '
keys intr C-c
check intr_clean_exit intr 'EXITED-0' 5

finish
