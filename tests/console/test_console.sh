#!/usr/bin/env bash
# tests/console/test_console.sh BUILD_ROOT SOURCE_ROOT: drive the real
# fusebox console in tmux (private socket fbtest-$$: send-keys,
# capture-pane) against a real fuseboxd + fusebox-mockllm. Each screen
# shows the expected routes / backends / states; forcing a level, weights
# and breakers from the console change /v1/state; deciding a review
# changes the DB; a viewer cannot force; a stopped daemon shows
# "daemon unreachable since ..." and the console recovers when it returns
# ("reconnected at ..."), also on another port that the address file names
# (--addr-file; a missing file: it keeps waiting); a hung daemon does not
# hold key handling; 80x24, resize, NO_COLOR, the ASCII fallback, UTF-8
# (Chinese) text; issue 23: the adaptive concurrency limit, rate limits and
# hedges on the Breakers and Routes screens at 80x24 and 200x50; issue 21:
# the Why panel (w) and the Overview's "why:" line, diagnosed off the UI
# thread through a proxy that answers 503 diagnose_busy and is slow. See
# lib.sh for the fixture.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh" "${1:-}" "${2:-}"

if ! command -v tmux >/dev/null; then
	echo "tmux is not installed" >&2
	exit 77
fi

FB_TAIL=1 # primary-v2: adaptive concurrency; intent: hedge after 800 ms
fixture_start
for i in 1 2 3; do call_route intent "我要退款 $i" >/dev/null; done

# A proxy in front of the daemon for the Why panel's tests: every odd
# GET /v1/diagnose is answered 503 diagnose_busy (Retry-After: 1), every
# even one waits DELAY seconds and goes through; each is logged
# ("TIME N STATUS PATH"). Everything else goes through at once.
cat >"$T/diagproxy.py" <<'PY'
import http.server, socketserver, sys, threading, time, urllib.error, urllib.request
upstream, logf, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
n = [0]
lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def reply(self, code, ctype, data, extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def fwd(self):
        ln = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(ln) if ln else None
        if self.path.startswith("/v1/diagnose"):
            with lock:
                n[0] += 1
                k = n[0]
            busy = k % 2 == 1
            with open(logf, "a") as f:
                f.write("%.3f %d %s %s\n" % (time.time(), k, "503" if busy else "200", self.path))
            if busy:
                self.reply(503, "application/json",
                           b'{"error":{"code":"diagnose_busy","message":"a diagnosis is running"}}',
                           [("Retry-After", "1")])
                return
            time.sleep(delay)
        req = urllib.request.Request(upstream + self.path, data=body, method=self.command)
        for h in ("Authorization", "Content-Type", "Accept"):
            if self.headers.get(h):
                req.add_header(h, self.headers[h])
        try:
            r = urllib.request.urlopen(req, timeout=10)
            code, data, ctype = r.status, r.read(), r.headers.get("Content-Type", "application/json")
        except urllib.error.HTTPError as e:
            code, data, ctype = e.code, e.read(), e.headers.get("Content-Type", "application/json")
        except Exception:
            self.reply(502, "text/plain", b"proxy: upstream down")
            return
        self.reply(code, ctype, data)
    do_GET = do_POST = do_PUT = do_DELETE = fwd
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
s = S(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
PROXY_PID=
trap 'proxy_stop; cleanup' EXIT
proxy_start() { # DELAY
	: >"$T/diag.log"
	: >"$T/proxy.port" # not the last proxy's port (wait_until may look before python3 opens it)
	python3 "$T/diagproxy.py" "$URL" "$T/diag.log" "$1" >"$T/proxy.port" &
	PROXY_PID=$!
	wait_until 5 test -s "$T/proxy.port"
	PROXY_URL=http://127.0.0.1:$(cat "$T/proxy.port")
}
proxy_stop() {
	if [ -n "$PROXY_PID" ]; then
		kill "$PROXY_PID" 2>/dev/null
		wait "$PROXY_PID" 2>/dev/null
		PROXY_PID=
	fi
}

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
	# shellcheck disable=SC2034 # poll_start and poll_next (lib.sh) set them
	local POLL_END POLL_N POLL_PAST NOW_US
	poll_start 4
	while :; do
		if ! screen "$2" | grep -Eq -- "$3"; then
			ok "$1"
			return
		fi
		poll_next || break
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

# --- issue 21: every route healthy, so no diagnosis is asked in the background ---
proxy_start 0
console_start hl 80x24 -- --url "$PROXY_URL" --token-file "$T/op.token"
check healthy_up hl '^ticket +L0 ' 8
sleep 3
if [ -s "$T/diag.log" ]; then
	not_ok why_never_for_healthy "diagnoses asked: $(cat "$T/diag.log")"
else
	ok why_never_for_healthy
fi
check_gone healthy_no_why_line hl '^    why: '
tm kill-session -t hl
proxy_stop

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

# --- issue 23 at 80x24: the new columns are left out (marker); INFLT shows
# the limit in force (~ adaptive), the panel says the rest ---
check tail_breakers_marker_80 $OP '^BACKEND +STATE +FAIL% +SLOW% +CALLS +PROBE +INFLT +HEALTH +P90 ›$'
check tail_inflt_adaptive_80 $OP '^primary-v2 +closed .* 0/~[0-9]+ +[0-9.]+ +[0-9a-z.-]+$'
check tail_inflt_fixed_80 $OP '^canary-v3 +closed .* 0/60 +[0-9.]+ +[0-9a-z.-]+$'
keys $OP g
check tail_panel_limit_80 $OP '^ limit ~[0-9]+ adaptive of max 60  in flight 0  waiting 0  latency'
check tail_panel_rate_80 $OP '^ rate limit left: requests -, tokens -  skipped 0   hedges [0-9.-]+/min \(1 route\)$'
keys $OP G
check tail_panel_fixed_80 $OP '^ limit 60 fixed  in flight 0  waiting 0$'
check tail_panel_no_hedge_80 $OP '^ rate limit left: requests -, tokens -  skipped 0   hedging off$'
keys $OP g

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
# issue 23 at 80x24: the hedge columns are left out; the panel has the delay
check tail_routes_marker_80 $OP '^ROUTE +LEVEL +TARGET +WEIGHT +NEW +SHARE +CANARY +BREAKER +›$'
keys $OP g
check tail_routes_hedge_80 $OP '^ hedge 800ms \(max 1, (same|other) backend\)  won [0-9.-]+ lost [0-9.-]+ failed [0-9.-]+ denied [0-9.-]+/min$'
keys $OP G
check tail_routes_no_hedge_80 $OP '^ hedge off$'

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
check disconnected $OP '^ daemon unreachable since [0-9]{2}:[0-9]{2}:[0-9]{2} \(cannot reach 127\.0\.0\.1:[0-9]+: ' 5
check disconnected_keeps_data $OP '^intent +L0 '
if wait_until 3 grey_row $OP; then
	ok disconnected_greyed
else
	not_ok disconnected_greyed "the last data are not greyed: $(tm capture-pane -p -e -t $OP | grep ticket | cat -v)"
fi
start_daemon
check reconnected $OP '^ reconnected at [0-9]{2}:[0-9]{2}:[0-9]{2}  fuseboxd' 10
# issue 24: a restart is flagged (uptime went back), with what did not survive
check restart_flagged $OP '^ reconnected at [0-9:]{8}  fuseboxd .* inflight [0-9]+  RESTARTED [0-9]{2}:[0-9]{2}:[0-9]{2}' 5
check restart_said $OP '^fuseboxd restarted \(uptime went back\) at [0-9:]+: '
# The 3 s in which the row must not turn grey again are watched in the
# background while the viewers, the hung daemon, NO_COLOR and the C locale
# are checked in sessions of their own (nothing there touches $OP or the
# daemon's reachability); the verdict is taken before $OP quits.
( if wait_until 3 grey_row $OP; then echo grey; else echo fine; fi >"$T/grey.op" ) &
GREY_PID=$!
reconnected_colours_verdict() {
	wait "$GREY_PID"
	if [ "$(cat "$T/grey.op")" = fine ]; then
		ok reconnected_colours
	else
		not_ok reconnected_colours "still grey after reconnecting"
	fi
	# --- q quits with status 0 ---
	keys $OP q
	check quit $OP 'EXITED-0' 5
}

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
reconnected_colours_verdict

# --- issue 24: the console tells the truth at 3 a.m. ---
# TERM=dumb (no cursor addressing): refused, pointing at the CLI.
console_start dumb 80x24 TERM=dumb -- --url "$URL" --token-file "$T/op.token"
check dumb_refused dumb 'needs a terminal that can move the cursor \(TERM=dumb' 5
check dumb_points_cli dumb 'The CLI works anywhere: fusebox status'
check dumb_exit dumb 'EXITED-1' 5

console_start t3 80x24 -- --url "$URL" --token-file "$T/op.token"
check t3_up t3 '^ticket +L0 ' 8
# A breaker opens while traffic flows: the Overview says why within 2 s.
mock_set flaky-v1 '{"status": 500}'
( for i in $(seq 1 40); do call_route ticket "ticket t$i" >/dev/null; sleep 0.25; done ) &
TRAFFIC_PID=$!
wait_until 10 state_has '"name":"flaky-v1","version":"v1","breaker":{"state":"open"'
check cause_line_2s t3 '^  ! no model target admits calls: flaky-v1 OPEN \(3× http_5xx\)' 2
check header_degraded_calls t3 '^ routes 2  off L0 [0-9]+  forced 0  degraded calls [1-9][0-9]*/min' 8
check spark_labelled t3 '^ rps +.*now [0-9.]+ \([0-9.]+–[0-9.]+\)'
check spark_daemon_history t3 '^ degr/min +.*now [0-9.]+ \([0-9.]+–[0-9.]+\)' 8
# Breakers: the window as at opening, the cause kept, "probe in", outcomes.
keys t3 2
check breaker_window_at_opening t3 '^flaky-v1 +OPEN +100\.0% +[0-9.]+% +3 +in [0-9]+m[0-9]+s '
keys t3 G
check breaker_cause_kept t3 '^ OPEN since [0-9:]+: 3 consecutive failures \(http_5xx\)'
check breaker_outcomes t3 '^ outcomes 5m: .*http_5xx [0-9]+'
check breaker_p90_at_80 t3 '^BACKEND +STATE +FAIL% +SLOW% +CALLS +PROBE +INFLT +HEALTH +P90 ›$'
kill "$TRAFFIC_PID" 2>/dev/null
wait "$TRAFFIC_PID" 2>/dev/null
mock_set flaky-v1 '{"status": 200}'
# Help never swallows a key: the key after ? acts.
keys t3 '?'
check help_up t3 'switch screen'
keys t3 1
check help_key_acts t3 '^ROUTE +LVL +RPS'
check_gone help_gone t3 'switch screen'

# The first-time user's task in <= 8 keys besides the reason: the Overview
# names the failing backend and selects its route; L (L2 preselected),
# Enter, reason, Enter, Enter, y; then 3 a y approves the top review.
ntask=0
task() { # keys...: send, counting
	ntask=$((ntask + $#))
	keys t3 "$@"
}
check task_finds_backend t3 '^  ! .*flaky-v1 OPEN'
task L
check level_default_l2 t3 'Level +< L2  rule engine only >'
task Enter
type_text t3 'flaky-v1 down'
task Enter Enter
check level_confirm_says t3 'Force route ticket to L2 +rule engine only, until released\.'
task y
check_state task_forced '"name":"ticket","level":2,"auto_level":0,"forced_level":{"level":2,"actor":"alice","reason":"flaky-v1 down"'
# the answer has its own line; the key hints stay
check hints_after_action t3 '^j/k move  Enter routes  w why  / filter  L level  \? help  q quit$'
check answer_own_line t3 '^force ticket to L2: done \(200\): ticket now L2, forced by alice'
top=$(db "SELECT id FROM reviews WHERE state = 'pending' ORDER BY due_at, id LIMIT 1")
task 3 a
check review_confirm_shows_input t3 'Input: 我要退款'
check review_confirm_shows_result t3 'Result: \{'
task y
review_state_is() { # ID STATE
	test "$(db "SELECT state FROM reviews WHERE id = $1")" = "$2"
}
if wait_until 5 review_state_is "$top" approved; then
	ok task_review_approved
else
	not_ok task_review_approved "review $top: $(db "SELECT state FROM reviews WHERE id = $top")"
fi
[ "$ntask" -le 8 ] && ok "task_in_${ntask}_keys" || not_ok task_keys "$ntask keys"
# The daemon's side: GET /v1/slo/history and GET /v1/audit (docs/CONSOLE.md).
json_check() { # NAME PYTHON-EXPRESSION over j (the last api body)
	if python3 -c "import json,sys; j=json.load(open('$T/api.body')); sys.exit(0 if ($2) else 1)"; then
		ok "$1"
	else
		not_ok "$1" "$(status): $(head -c 600 "$T/api.body")"
	fi
}
api GET '/v1/slo/history?minutes=0' >/dev/null
[ "$(status)" = 400 ] && ok history_minutes_400 || not_ok history_minutes_400 "$(status)"
api GET '/v1/slo/history?minutes=1&route=nope' >/dev/null
[ "$(status)" = 404 ] && ok history_route_404 || not_ok history_route_404 "$(status)"
api GET '/v1/slo/history?minutes=3&route=ticket' >/dev/null
json_check history_shape 'j["minutes"] == 3 and [r["route"] for r in j["routes"]] == ["ticket"] and all(len(j["routes"][0][k]) == 3 for k in ("calls", "degraded", "service", "smart", "p99_ms"))'
json_check history_degraded 'sum(x or 0 for x in j["routes"][0]["degraded"]) >= 3 and sum(j["routes"][0]["calls"]) >= sum(x or 0 for x in j["routes"][0]["degraded"])'
json_check history_outcomes '[b["outcomes"].get("http_5xx", 0) for b in j["backends"] if b["backend"] == "flaky-v1"][0] >= 3'
api GET '/v1/audit?after=0&limit=1' >/dev/null
json_check audit_limit 'len(j["audit"]) == 1 and j["audit"][0]["id"] >= 1 and j["audit"][0]["actor"] == "alice" and j["audit"][0]["action_id"] is None'
api GET "/v1/audit?limit=1&after=$(db "SELECT max(id) - 1 FROM audit WHERE target = 'route:ticket'")" >/dev/null
json_check audit_after 'len(j["audit"]) == 1 and j["audit"][0]["action"] == "level.force" and j["audit"][0]["target"] == "route:ticket" and j["audit"][0]["after"]["forced_level"]["reason"] == "flaky-v1 down"'
api GET '/v1/audit?after=-1' >/dev/null
[ "$(status)" = 400 ] && ok audit_after_400 || not_ok audit_after_400 "$(status)"
# A review decision is an event.
keys t3 6
check review_decision_event t3 " review +intent +review $top: pending -> approved by ali"
# Audit rows and the overrides in force, in one place.
keys t3 a
check audit_view t3 '^[0-9:]+ +alice +level\.force +route:ticket +\{'
keys t3 o
check overrides_view t3 '^level +ticket +L2 \(auto L0\) +no TTL +alice +flaky-v1 down'
keys t3 e
# q warns while a level forced without TTL stays; another key stays.
keys t3 q
check quit_warns t3 'still in force after you leave: ticket L2 forced, no TTL\. q again quits'
keys t3 Escape
sleep 0.5
if screen t3 | grep -q 'EXITED-'; then
	not_ok quit_warn_stays "the console quit"
else
	ok quit_warn_stays
fi
# L3 asks twice ("async: callers get 202").
keys t3 1 L 3 Enter
type_text t3 'drill'
keys t3 Enter Enter y
check level3_asks_again t3 'L3 is the async queue: callers get 202'
check_state level3_not_yet '"name":"ticket","level":2,'
keys t3 n
check_gone level3_cancelled t3 'Press y again'
api DELETE /v1/routes/ticket/level >/dev/null
# Events: cut text ends with "…", Enter shows it whole.
keys t3 6 e G
check events_cut_ellipsis t3 'closed -> open \(3 consecutive fail[a-z]*…$'
keys t3 g Enter
check events_whole t3 '^ breaker flaky-v1: closed -> open \(3 consecutive failures \(http_5xx\)\)'
keys t3 Enter
check events_marker t3 '^TIME +KIND +SUBJECT +DETAIL +›$'
keys t3 q
check t3_quits t3 'EXITED-0' 5

# --- issue 21: the Why panel and the Overview's why line at 80x24 ---
# flaky-v1 stays OPEN (open_ms 10 min): ticket is degraded, intent is not.
console_start why 80x24 -- --url "$URL" --token-file "$T/op.token"
check why_cause_line why '^  ! .*flaky-v1 OPEN' 8
check why_line why '^    why: [0-9]+% [a-z0-9_]+ on flaky-v1( \(.*)?$' 8
keys why w
check why_panel why '^ Why: ticket  last 15m  [0-9]{2}:[0-9]{2}:[0-9]{2}–[0-9]{2}:[0-9]{2}:[0-9]{2}' 8
check why_figures why '^ service [0-9.]+%  smart [0-9.]+%  [0-9]+ of [0-9]+ calls degraded *$'
check why_first_cause why '^── first cause *$'
check why_share why '^ [0-9]+% [a-z0-9_]+ on flaky-v1 *$'
check why_phase why '^   phase [a-z_]+  backend flaky-v1  since [0-9]{2}:[0-9]{2}:[0-9]{2} *$'
check why_evidence why '^   evidence: [^ ]'
check why_cut_ellipsis why '^   proof \(sqlite3\): SELECT .*…$'
check why_contrasts why '^── failing vs succeeding attempts *$'
check why_hints why '^j/k move  Enter whole line  r diagnose again  Esc close  \? help  q quit$'
# Enter shows the selected line whole: the proof line (its place depends
# on the cause's evidence lines), wrapped, its end visible.
# The proof line's place, read off the pane (line i of the panel is on the
# row i + 1 below its header), is tried first; then the others of 6..10.
whole=
order="6 7 8 9 10"
hrow=$(screen why | grep -n '^ Why: ticket ' | head -1 | cut -d: -f1)
prow=$(screen why | grep -n '^   proof (sqlite3): SELECT ' | head -1 | cut -d: -f1)
if [ -n "$hrow" ] && [ -n "$prow" ]; then
	guess=$((prow - hrow - 1))
	case " $order " in
	*" $guess "*)
		rest=
		for n in $order; do
			[ "$n" = "$guess" ] || rest="$rest $n"
		done
		order="$guess$rest"
		;;
	esac
fi
for n in $order; do
	keys why g
	for _ in $(seq 1 "$n"); do keys why j; done
	keys why Enter
	if wait_screen why 'ORDER BY c\.id' 1; then
		whole=$n
		break
	fi
	keys why Enter
done
[ -n "$whole" ] && ok why_enter_whole || {
	dump why
	not_ok why_enter_whole "no line showed the whole query"
}
keys why G
check why_scroll_advice why '^── advice \(never applied by fusebox\) *$'
check why_scroll_changes why '^── changes( before the episode)? *$'
keys why '?'
check why_help why 'Why panel: the daemon'
keys why Escape
check_gone why_help_closes why 'Why panel: the daemon'
check why_still_up why '^ Why: ticket '
keys why Escape
check_gone why_esc_closes why '^ Why: ticket '
check why_overview_back why '^ROUTE +LVL +RPS'
# On Routes: w on the selected route (intent, the first row); a key the
# panel does not use closes it and acts.
keys why 5 g w
check why_routes why '^ Why: intent  last 15m' 8
check why_routes_text why '^ (no degraded call in the window|[0-9]+% [a-z0-9_]+)' 8
keys why 6
check_gone why_key_closes_acts why '^ Why: intent'
check why_key_acted why '^ *(ID +)?TIME +KIND +SUBJECT'
keys why q
check why_quits why 'EXITED-0' 5

# --- issue 21: the diagnosis never holds the UI: busy, then slow ---
# Through the proxy every diagnosis is first 503 diagnose_busy, and its
# retry a second later takes 2.5 s.
proxy_start 2.5
console_start busy 80x24 -- --url "$PROXY_URL" --token-file "$T/op.token"
check busy_up busy '^ticket +L' 8
check busy_why_line busy '^    why: [0-9]+% ' 15
keys busy w
check busy_asks_again busy 'daemon busy, asking again…' 8
check busy_diagnosing busy 'diagnosing…' 4
start_ms=$(date +%s%3N)
keys busy '?'
if wait_screen busy 'Why panel: the daemon' 2; then
	took=$(($(date +%s%3N) - start_ms))
	[ "$took" -lt 1000 ] && ok busy_keys_responsive || not_ok busy_keys_responsive "keys took ${took} ms"
else
	dump busy
	not_ok busy_keys_responsive "no reaction to keys while diagnosing"
fi
keys busy Escape
check busy_panel busy '^── first cause *$' 8
check_gone busy_done busy 'diagnosing…'
# Each 503 was asked once more, about a second later, and that went through.
if python3 - "$T/diag.log" <<'PY'; then
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
assert len(rows) >= 4, rows
for i in range(0, len(rows) - 1, 2):
    a, b = rows[i], rows[i + 1]
    assert a[2] == "503" and b[2] == "200", (a, b)
    assert a[3] == b[3], (a, b)
    dt = float(b[0]) - float(a[0])
    assert 0.9 <= dt <= 2.6, (a, b, dt)
PY
	ok busy_retried_once
else
	not_ok busy_retried_once "$(cat "$T/diag.log")"
fi
keys busy Escape q
check busy_quits busy 'EXITED-0' 5
proxy_stop

# 200x50: every column, no marker; the cause line whole.
console_start wide 200x50 -- --url "$URL" --token-file "$T/op.token"
check wide_up wide '^ticket +L' 8
keys wide 6
check wide_events_id wide '^ +ID +TIME +KIND +SUBJECT +DETAIL *$'
keys wide 3
check wide_reviews wide '^ +ID PRI +ROUTE +STATE +DUE IN REASON +CONF INPUT *$'
# issue 23 at 200x50: every new column, no marker.
keys wide 2
check wide_breakers_header wide '^BACKEND +STATE +FAIL% +SLOW% +CALLS +PROBE +INFLT +HEALTH +P90 +LIMIT +WAIT +LATENCY +HEDGE/m +RL-REQ +RL-TOK +SKIP *$'
check wide_breakers_adaptive wide '^primary-v2 +closed .* 0/~[0-9]+ +[0-9.]+ +[0-9a-z.-]+ +~[0-9]+/60 +0 +[0-9a-z.→-]+ +[0-9.-]+ +- +- +0 *$'
check wide_breakers_fixed wide '^flaky-v1 .* 0/60 .* 60 +0 +- +off +- +- +0 *$'
keys wide 5
check wide_routes_header wide '^ROUTE +LEVEL +TARGET +WEIGHT +NEW +SHARE +CANARY +HEDGE +WON/m +LOST/m +BREAKER *$'
check wide_routes_hedge wide '^intent +L[0-9] [a-z]+ +primary-v2 +[0-9]+ +[0-9]+% +800ms +[0-9.-]+ +[0-9.-]+ [a-z]'
check wide_routes_no_hedge wide '^ticket +L[0-9] [a-z]+ +flaky-v1 +100 +100% +off +[a-zA-Z]'
# Hedged traffic: primary-v2 answers after 1.2 s, so intent hedges at 800 ms
# (to canary-v3, which announces its rate limit): won per minute, hedges per
# minute of both backends, requests left.
mock_set primary-v2 '{"delay_ms": 1200}'
mock_set canary-v3 '{"ratelimit_requests": 50, "ratelimit_reset_ms": 60000}'
pids=
for i in 1 2 3 4 5 6; do
	call_route intent "hedge $i" >/dev/null &
	pids="$pids $!"
	sleep 0.2
done
# shellcheck disable=SC2086
wait $pids
api GET /v1/state >/dev/null
json_check tail_state_hedged 'sum(r["hedge"]["won"] + r["hedge"]["lost"] for r in j["routes"] if r["name"] == "intent") >= 1'
nz='([1-9][0-9]*\.[0-9]|0\.[1-9])' # a rate above 0.0
check wide_routes_hedges_per_min wide "^intent +L[0-9] [a-z]+ +primary-v2 .* 800ms +($nz +[0-9]+\.[0-9]|0\.0 +$nz) [a-z]" 6
keys wide 2
check wide_breakers_hedges_per_min wide "^primary-v2 +closed .* ~[0-9]+/60 .* $nz +- +- +0 *\$"
check wide_breakers_rate_limit wide "^canary-v3 +closed .* $nz +[0-9]+ +- +0 *\$"
mock_set primary-v2 '{"status": 200}'
mock_set canary-v3 '{"status": 200}'
# issue 21 at 200x50: the Why panel on the Overview's degraded route.
keys wide 1 w
check wide_why wide '^ Why: ticket  last 15m' 8
check wide_why_first wide '^── first cause *$' 8
check wide_why_evidence wide '^   evidence: [^ ]'
check wide_why_advice wide '^── advice \(never applied by fusebox\) *$'
keys wide Escape
check_gone wide_why_closes wide '^ Why: ticket'
keys wide q
check wide_quits wide 'EXITED-0' 5

# Monochrome: the selection is reverse video, warnings bold / underlined.
console_start mono2 80x24 NO_COLOR=1 -- --url "$URL" --token-file "$T/op.token"
check mono2_up mono2 '^ticket +L' 8
keys mono2 2
check mono2_breakers mono2 '^primary-v2 '
sel=$(tm capture-pane -p -e -t mono2 | grep 'primary-v2' | head -1)
if printf '%s' "$sel" | grep -Eq $'\e\\[([0-9;]*;)?7m' &&
	! printf '%s' "$sel" | grep -Eq $'\e\\[([0-9;]*;)?1m'; then
	ok mono_selection_reverse
else
	not_ok mono_selection_reverse "$(printf '%s' "$sel" | cat -v)"
fi
keys mono2 q
check mono2_quits mono2 'EXITED-0' 5

# --- issue 24: a daemon that comes back on another port is found again ---
# The console reads the address file (--addr-file) while the daemon does
# not answer; fuseboxd writes it beside its database once it listens
# (fuseboxd.addr: "http://HOST:PORT PID") and removes it at a clean exit.
if [ "$(cat "$T/fuseboxd.addr" 2>/dev/null)" = "$URL $D_PID" ]; then
	ok daemon_writes_addr_file
else
	not_ok daemon_writes_addr_file "$(cat "$T/fuseboxd.addr" 2>&1) (want $URL $D_PID)"
fi
old_port=$D_PORT
console_start mv 80x24 -- --url "$URL" --addr-file "$T/fuseboxd.addr" --token-file "$T/op.token"
console_start mv0 80x24 -- --url "$URL" --addr-file "$T/missing.addr" --token-file "$T/op.token"
check mv_up mv '^ticket +L' 8
check mv0_up mv0 '^ticket +L' 8
stop_daemon
if [ -e "$T/fuseboxd.addr" ]; then
	not_ok addr_file_removed_at_exit "$(cat "$T/fuseboxd.addr")"
else
	ok addr_file_removed_at_exit
fi
check mv_unreachable mv "^ daemon unreachable since [0-9]{2}:[0-9]{2}:[0-9]{2} \(cannot reach 127\.0\.0\.1:$old_port: " 5
write_config "127.0.0.1:0"
start_daemon
write_config "127.0.0.1:$D_PORT"
if [ "$D_PORT" = "$old_port" ]; then
	not_ok mv_new_port "the daemon came back on the same port $D_PORT"
fi
check mv_reconnected mv "^ reconnected at [0-9]{2}:[0-9]{2}:[0-9]{2} on 127\.0\.0\.1:$D_PORT  fuseboxd " 10
check mv_data_back mv '^ticket +L'
if wait_until 3 grey_row mv; then
	not_ok mv_colours "still grey after reconnecting on the new port"
else
	ok mv_colours
fi
# Without the file it keeps asking where it was told (today's behaviour).
sleep 2
check mv0_still_waiting mv0 "^ daemon unreachable since [0-9:]{8} \(cannot reach 127\.0\.0\.1:$old_port: "
keys mv q
keys mv0 q
check mv_quits mv 'EXITED-0' 5
check mv0_quits mv0 'EXITED-0' 5

# --- ^C leaves cleanly too ---
console_start intr 80x24 -- --url "$URL" --token-file "$T/op.token"
check intr_up intr '^intent +L0 '
keys intr C-c
check intr_clean_exit intr 'EXITED-0' 5

finish
