#!/usr/bin/env bash
# tests/console/test_cli.sh BUILD_ROOT SOURCE_ROOT: the CLI verbs of
# fusebox against a real fuseboxd + fusebox-mockllm — exact output where
# the output is deterministic, and exit codes (0 ok, 1 refused/failed,
# 2 usage). See lib.sh for the fixture.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh" "${1:-}" "${2:-}"

FB_TAIL=1 # issue 23: primary-v2 adaptive concurrency, intent hedges after 800 ms
fixture_start

# run NAME ARGS...: fusebox with the operator token; stdout in $OUT,
# stderr in $ERR, exit code in $RC.
run() {
	"$FUSEBOX" --url "$URL" --token-file "$T/op.token" "$@" >"$T/out" 2>"$T/err"
	RC=$?
	OUT=$(cat "$T/out")
	ERR=$(cat "$T/err")
}

run_as() { # token-file args...
	local tf=$1
	shift
	"$FUSEBOX" --url "$URL" --token-file "$tf" "$@" >"$T/out" 2>"$T/err"
	RC=$?
	OUT=$(cat "$T/out")
	ERR=$(cat "$T/err")
}

expect() { # name expected-rc expected-stdout
	if [ "$RC" -ne "$2" ]; then
		not_ok "$1" "exit $RC, expected $2; stderr: $ERR"
	elif [ "$OUT" != "$3" ]; then
		not_ok "$1" "stdout differs:
--- expected
$3
--- got
$OUT"
	else
		ok "$1"
	fi
}

expect_re() { # name expected-rc regex-on-stdout
	if [ "$RC" -ne "$2" ]; then
		not_ok "$1" "exit $RC, expected $2; stderr: $ERR"
	elif ! grep -Eq -- "$3" <<<"$OUT"; then
		not_ok "$1" "stdout does not match /$3/: $OUT"
	else
		ok "$1"
	fi
}

expect_err() { # name expected-rc regex-on-stderr
	if [ "$RC" -ne "$2" ]; then
		not_ok "$1" "exit $RC, expected $2; stdout: $OUT stderr: $ERR"
	elif ! grep -Eq -- "$3" <<<"$ERR"; then
		not_ok "$1" "stderr does not match /$3/: $ERR"
	else
		ok "$1"
	fi
}

# --- usage errors: exit 2, nothing sent ---
run frobnicate
expect_err usage_unknown_verb 2 'unknown verb "frobnicate"'
"$FUSEBOX" --bogus status >"$T/out" 2>"$T/err"
RC=$?
OUT=$(cat "$T/out")
ERR=$(cat "$T/err")
expect_err usage_unknown_flag 2 'unknown option'
run level intent
expect_err usage_level_args 2 'usage: level ROUTE N'
run level intent 2
expect_err usage_level_reason 2 -- '--reason is required'
run level intent two --reason x
expect_err usage_level_number 2 'N must be 0, 1, 2, 3 or auto'
run level intent 2 --reason x --ttl soon
expect_err usage_level_ttl 2 -- '--ttl'
run weights intent primary-v2
expect_err usage_weights 2 'is not BACKEND=WEIGHT'
run breaker flaky-v1 sideways
expect_err usage_breaker 2 'open, closed or auto'
run review 1 correct 'not json'
expect_err usage_review_json 2 'not a JSON object'
run review 1 maybe
expect_err usage_review_verdict 2 'approve, reject or correct'
run reviews --colour red
expect_err usage_option 2 'unknown option --colour'
run report
expect_err usage_report 2 -- '--db FILE is required'
run --help
expect_re help 0 '^usage: fusebox \[--url URL\] \[--token-file FILE\] \[--json\] \[VERB ARGS...\]'

# --- reads on a fresh daemon ---
run status
if [ "$RC" -eq 0 ] &&
	grep -Eq "^fuseboxd [0-9.]+ at $URL: up [0-9a-z]+, inflight 0\$" <<<"$(head -1 <<<"$OUT")" &&
	[ "$(sed -n 2,3p <<<"$OUT")" = "routes 2: L0 2, L1 0, L2 0, L3 0 (forced 0)
backends 3: closed 3, half_open 0, open 0, forced_open 0, forced_closed 0" ]; then
	ok status
else
	not_ok status "rc $RC: $OUT $ERR"
fi

run breakers
expect breakers_fresh 0 "BACKEND     STATE   FAIL%  SLOW%  CALLS  HALF-OPEN  INFLIGHT  HEALTH   LIMIT  WAIT  LATENCY  HEDGES  RL-REQ  RL-TOK  SKIPPED  LAST TRANSITION
primary-v2  closed   0.0%   0.0%      0          -     0/~10    1.00  ~10/60     0        -       0       -       -        0  -
canary-v3   closed   0.0%   0.0%      0          -      0/60    1.00      60     0        -       0       -       -        0  -
flaky-v1    closed   0.0%   0.0%      0          -      0/60    1.00      60     0        -     off       -       -        0  -"

run routes
if [ "$RC" -eq 0 ] &&
	[ "$(head -1 <<<"$OUT" | tr -s ' ')" = "ROUTE LEVEL AUTO RPS P50 P99 REVIEW HEDGE WON/LOST/FAILED/DENIED TARGETS FORCED" ] &&
	grep -Eq '^intent +L0 +L0 +[0-9.-]+ +[0-9a-z.-]+ +[0-9a-z.-]+ +[0-9-]+ +800ms +0/0/0/0 +primary-v2=95 canary-v3=5\(canary\) +-$' <<<"$OUT" &&
	grep -Eq '^ticket +L0 +L0 .* off +- +flaky-v1=100 +-$' <<<"$OUT"; then
	ok routes
else
	not_ok routes "rc $RC: $OUT $ERR"
fi

run --json routes
if [ "$RC" -eq 0 ] && python3 -c 'import json,sys; d=json.load(sys.stdin); assert [r["name"] for r in d["routes"]] == ["intent","ticket"]' <"$T/out"; then
	ok json_is_the_daemons
else
	not_ok json_is_the_daemons "rc $RC: $OUT"
fi

# --- control plane ---
if endpoint_exists PUT /v1/routes/nope/level '{"level":1,"reason":"probe"}'; then
	run level intent 2 --reason "vendor incident" --ttl 1h
	if [ "$RC" -eq 0 ] &&
		grep -Eq '^intent: L2 forced by alice until 20[0-9-]+T[0-9:.]+Z: vendor incident$' <<<"$(head -1 <<<"$OUT")" &&
		[ "$(sed -n 2p <<<"$OUT")" = "targets: primary-v2=95 canary-v3=5(canary)" ] &&
		api GET /v1/state | grep -q '"forced_level":{"level":2,"actor":"alice","reason":"vendor incident"'; then
		ok level_force
	else
		not_ok level_force "rc $RC: $OUT $ERR; state: $(api GET /v1/state)"
	fi
	run status
	expect_re level_shows_in_status 0 '^routes 2: L0 1, L1 0, L2 1, L3 0 \(forced 1\)$'
	run_as "$T/view.token" level intent 3 --reason nope
	expect_err level_viewer_refused 1 '^fusebox: PUT /v1/routes/intent/level: 403 '
	run level intent 7 --reason x
	expect_err level_out_of_range 1 '^fusebox: PUT /v1/routes/intent/level: 400 '
	run level nope 1 --reason x
	expect_err level_unknown_route 1 ' 404 '
	run level intent auto
	expect level_release 0 "intent: L0 (auto)
targets: primary-v2=95 canary-v3=5(canary)"
	api GET /v1/state | grep -q '"forced_level":null' && ok level_release_state || not_ok level_release_state "$(cat "$T/api.body")"
else
	not_ok level "endpoint missing: PUT /v1/routes/{r}/level"
fi

if endpoint_exists PUT /v1/routes/nope/weights '{"weights":{"a":1}}'; then
	run weights intent primary-v2=80 canary-v3=20
	expect weights_set 0 "intent: L0 (auto)
targets: primary-v2=80 canary-v3=20(canary)"
	run weights intent primary-v2=0 canary-v3=0
	expect_err weights_all_zero 1 ' 400 '
	run weights intent primary-v2=95 canary-v3=5
	expect weights_back 0 "intent: L0 (auto)
targets: primary-v2=95 canary-v3=5(canary)"
else
	not_ok weights "endpoint missing: PUT /v1/routes/{r}/weights"
fi

if endpoint_exists PUT /v1/backends/nope/breaker '{"state":"auto"}'; then
	run breaker flaky-v1 open --reason "drill"
	expect breaker_open 0 "flaky-v1: breaker forced_open"
	run breakers
	expect_re breaker_open_listed 0 '^flaky-v1 +forced_open +.* closed->forced_open: .*drill'
	run breaker flaky-v1 closed
	expect breaker_closed 0 "flaky-v1: breaker forced_closed"
	run breaker flaky-v1 auto
	expect breaker_auto 0 "flaky-v1: breaker closed"
	run_as "$T/view.token" breaker flaky-v1 open
	expect_err breaker_viewer_refused 1 ' 403 '
else
	not_ok breaker "endpoint missing: PUT /v1/backends/{b}/breaker"
fi

# --- data plane ---
run call intent "我要退款"
if [ "$RC" -eq 0 ] &&
	[ "$(head -1 <<<"$OUT")" = '{"intent":"refund","confidence":0.92,"summary":"customer wants a refund"}' ] &&
	grep -Eq '^source llm  backend (primary-v2|canary-v3)  level 0  reason -  review pending  attempts 1  [0-9]+ ms$' <<<"$(sed -n 2p <<<"$OUT")"; then
	ok call
else
	not_ok call "rc $RC: $OUT $ERR"
fi
run call nope "x"
expect_err call_unknown_route 1 ' 404 unknown_route'
# call -v: the answer's status and headers first (traceparent, X-Fusebox-*,
# Retry-After), then the result as without -v; a caller's traceparent is kept.
run call -v intent "我要退款"
if [ "$RC" -eq 0 ] &&
	[ "$(sed -n 1p <<<"$OUT")" = '< HTTP 200' ] &&
	grep -qx '< X-Fusebox-Source: llm' <<<"$OUT" &&
	grep -qx '< X-Fusebox-Level: 0' <<<"$OUT" &&
	grep -Eqx '< X-Fusebox-Duration-Ms: [0-9]+' <<<"$OUT" &&
	grep -Eqx '< traceparent: 00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]' <<<"$OUT" &&
	! grep -qi '^< content-type' <<<"$OUT" &&
	[ "$(grep -v '^< ' <<<"$OUT" | head -1)" = '{"intent":"refund","confidence":0.92,"summary":"customer wants a refund"}' ] &&
	grep -Eq '^source llm  backend ' <<<"$(grep -v '^< ' <<<"$OUT" | sed -n 2p)"; then
	ok call_verbose
else
	not_ok call_verbose "rc $RC: $OUT $ERR"
fi
run call intent "我要退款" --verbose --json
if [ "$RC" -eq 0 ] && [ "$(sed -n 1p <<<"$OUT")" = '< HTTP 200' ] &&
	grep -v '^< ' <<<"$OUT" | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["source"] == "llm"'; then
	ok call_verbose_json
else
	not_ok call_verbose_json "rc $RC: $OUT $ERR"
fi
# An error answer: its headers on stdout, the daemon's error on stderr.
run call -v nope "x"
if [ "$RC" -eq 1 ] && [ "$(sed -n 1p <<<"$OUT")" = '< HTTP 404' ] && grep -q ' 404 unknown_route' <<<"$ERR"; then
	ok call_verbose_error
else
	not_ok call_verbose_error "rc $RC: $OUT $ERR"
fi
# (Which headers are shown, Retry-After among them: tests/test_tui_model.c.)
run call --help
expect_re call_verbose_usage 0 'call ROUTE TEXT \[--budget MS\] \[-v\]'
# call -v then prints the call's attempts as the store has them (GET
# /v1/requests/{id}, asked again until the writer has committed them),
# each with the upstream headers its backend recorded.
python3 - "$T/fusebox.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
for b in c["backends"]:
    b["record_response_headers"] = ["X-Mock-Backend", "X-Not-Sent"]
json.dump(c, open(p, "w"), indent=1, ensure_ascii=False)
PY
run reload
run call -v intent "我要退款"
att=$(grep -E '^attempt ' <<<"$OUT")
be=$(awk '{ print $3 }' <<<"$att")
if [ "$RC" -eq 0 ] && [ "$(wc -l <<<"$att")" -eq 1 ] &&
	grep -Eqx 'attempt 1  (primary-v2|canary-v3)  ok  HTTP 200(  connect [0-9]+ ms)?  first byte [0-9]+ ms  total [0-9]+ ms  span [0-9a-f]{16}' <<<"$att" &&
	[ "$(grep -A1 -E '^attempt ' <<<"$OUT" | tail -1)" = "  < x-mock-backend: $be" ] &&
	! grep -q 'x-not-sent' <<<"$OUT"; then
	ok call_verbose_attempts
else
	not_ok call_verbose_attempts "rc $RC: $OUT $ERR"
fi
# the ticket route falls to its rules when flaky-v1 fails: degradations
mock_set flaky-v1 '{"status": 500}'
for i in 1 2 3 4; do call_route ticket "ticket $i" >/dev/null; done
mock_set flaky-v1 '{"status": 200}'
# a wrong enum from the model: a validation failure, answered by rules
mock_set primary-v2 '{"preset": "wrong_enum"}'
mock_set canary-v3 '{"preset": "wrong_enum"}'
call_route intent "refund please" >/dev/null
mock_set primary-v2 '{"preset": "good"}'
mock_set canary-v3 '{"preset": "good"}'
run breakers
expect_re breaker_opened_by_failures 0 '^flaky-v1 +open +'

# --- events, slo, alerts ---
if endpoint_exists GET '/v1/events?after=0&limit=1'; then
	run events
	if [ "$RC" -eq 0 ] && [ "$(head -1 <<<"$OUT" | tr -s ' ')" = "ID AT KIND SUBJECT DETAIL" ] &&
		grep -Eq '^ *[0-9]+  20[0-9T:.-]+Z  breaker +flaky-v1 ' <<<"$OUT"; then
		ok events
	else
		not_ok events "rc $RC: $OUT $ERR"
	fi
	run --json events
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["events"]) > 0' <"$T/out" &&
		ok events_json || not_ok events_json "$OUT"
	"$FUSEBOX" --url "$URL" --token-file "$T/op.token" events --follow >"$T/follow.out" 2>&1 &
	fpid=$!
	# the first page printed (its header): what follows comes from the polls
	wait_until 5 grep -Eq '^ *ID +AT +KIND +SUBJECT +DETAIL' "$T/follow.out"
	"$FUSEBOX" --url "$URL" --token-file "$T/op.token" level ticket 1 --reason follow-me >/dev/null 2>&1
	if wait_until 5 grep -q 'follow-me' "$T/follow.out"; then
		ok events_follow
	else
		not_ok events_follow "$(cat "$T/follow.out")"
	fi
	kill "$fpid" 2>/dev/null
	wait "$fpid" 2>/dev/null
	"$FUSEBOX" --url "$URL" --token-file "$T/op.token" level ticket auto >/dev/null 2>&1
else
	not_ok events "endpoint missing: GET /v1/events"
fi

if endpoint_exists GET /v1/slo; then
	run slo intent
	if [ "$RC" -eq 0 ] && grep -Eq '^intent: objectives service ' <<<"$OUT" &&
		grep -Eq '^WINDOW +TOTAL +SERVICE +SMART +LATENCY +TIMEOUT +RETRY +FORMAT$' <<<"$OUT" &&
		grep -Eq '^5m +[0-9]+ ' <<<"$OUT" && grep -Eq '^error budget left: service ' <<<"$OUT"; then
		ok slo
	else
		not_ok slo "rc $RC: $OUT $ERR"
	fi
else
	not_ok slo "endpoint missing: GET /v1/slo"
fi

if endpoint_exists GET /v1/alerts; then
	run alerts
	expect_re alerts 0 '^ID +RULE +ROUTE +SEVERITY +STATE +VALUE +THRESHOLD +SINCE$'
else
	not_ok alerts "endpoint missing: GET /v1/alerts"
fi

# --- reviews (every intent answer from the model goes to review) ---
if endpoint_exists GET /v1/reviews; then
	run reviews
	if [ "$RC" -eq 0 ] && [ "$(head -1 <<<"$OUT" | tr -s ' ')" = "ID ROUTE PRIORITY STATE DUE IN REASON CONFIDENCE INPUT" ] &&
		grep -Eq '^ *[0-9]+  intent +[a-z]+ +pending .*我要退款$' <<<"$OUT" &&
		grep -Eq '^pending [0-9]+, overdue 0$' <<<"$OUT"; then
		ok reviews
	else
		not_ok reviews "rc $RC: $OUT $ERR"
	fi
	id=$(db "SELECT id FROM reviews WHERE state = 'pending' ORDER BY id LIMIT 1")
	run review "$id" approve --note "looks right"
	expect review_approve 0 "review $id: approved"
	[ "$(db "SELECT state FROM reviews WHERE id = $id")" = approved ] &&
		ok review_approve_db || not_ok review_approve_db "$(db "SELECT * FROM reviews WHERE id = $id")"
	run review "$id" reject
	expect_err review_twice 1 ' 409 '
	id2=$(db "SELECT id FROM reviews WHERE state = 'pending' ORDER BY id LIMIT 1")
	if [ -n "$id2" ]; then
		run review "$id2" correct '{"intent":"banana","confidence":0.9}'
		expect_err review_correct_invalid 1 ' 400 '
		run review "$id2" correct '{"intent":"complaint","confidence":0.9}'
		expect review_correct 0 "review $id2: corrected"
		db "SELECT corrected_result FROM reviews WHERE id = $id2" | grep -q complaint &&
			ok review_correct_db || not_ok review_correct_db "$(db "SELECT * FROM reviews WHERE id = $id2")"
	fi
	run_as "$T/view.token" review 999999 approve
	expect_err review_viewer_refused 1 ' 403 '
	run --json reviews --state pending
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert "items" in d' <"$T/out" &&
		ok reviews_json || not_ok reviews_json "$OUT"
else
	not_ok reviews "endpoint missing: GET /v1/reviews"
fi

# --- auth and reachability ---
"$FUSEBOX" --url "$URL" routes >"$T/out" 2>"$T/err"
RC=$?
ERR=$(cat "$T/err")
expect_err no_token 1 ' 401 '
FUSEBOX_TOKEN=op-token "$FUSEBOX" --url "$URL" status >"$T/out" 2>"$T/err"
RC=$?
ERR=$(cat "$T/err")
[ "$RC" -eq 0 ] && ok token_from_env || not_ok token_from_env "$ERR"
FUSEBOX_TOKENS_FILE="$T/tokens" FUSEBOX_URL="$URL" "$FUSEBOX" status >"$T/out" 2>"$T/err"
RC=$?
ERR=$(cat "$T/err")
[ "$RC" -eq 0 ] && ok token_from_daemon_file_and_url_from_env || not_ok token_from_daemon_file_and_url_from_env "$ERR"
"$FUSEBOX" --url http://127.0.0.1:1 --token-file "$T/op.token" status >"$T/out" 2>"$T/err"
RC=$?
OUT=$(cat "$T/out")
ERR=$(cat "$T/err")
expect_err unreachable 1 '^fusebox: cannot reach http://127.0.0.1:1'

# --- flags anywhere, --help per verb, write errors, pipes ---
run status --json
if [ "$RC" -eq 0 ] && python3 -c 'import json,sys; d=json.load(sys.stdin); assert [r["name"] for r in d["routes"]] == ["intent","ticket"]' <"$T/out"; then
	ok flags_after_the_verb
else
	not_ok flags_after_the_verb "rc $RC: $OUT $ERR"
fi
"$FUSEBOX" routes --json --url "$URL" --token-file="$T/op.token" >"$T/out" 2>"$T/err"
RC=$?
python3 -c 'import json,sys; json.load(sys.stdin)' <"$T/out" 2>/dev/null && [ "$RC" -eq 0 ] &&
	ok url_and_token_after_the_verb || not_ok url_and_token_after_the_verb "rc $RC: $(cat "$T/err")"
run status --help
if [ "$RC" -eq 0 ] && grep -q '^usage: fusebox .* status' <<<"$OUT" &&
	grep -q '^  status  ' <<<"$OUT" && ! grep -q '^  events' <<<"$OUT"; then
	ok verb_help
else
	not_ok verb_help "rc $RC: $OUT"
fi
run help level
expect_re verb_help_via_help 0 '^  level ROUTE N --reason R'
run frobnicate --help
expect_err verb_help_unknown 2 'unknown verb "frobnicate"'
# A verb option's value is never taken for a global flag.
run level ticket 1 --reason --json
expect_re option_value_kept 0 '^ticket: L1 forced by alice until released: --json$'
run level ticket auto
run events -- --json
expect_err after_double_dash_is_the_verbs 2 'unexpected argument --json'
# Full cells when stdout is not a terminal (a table cell is cut at 60 on one).
long="a reason of more than sixty columns, kept whole when the output is piped: end"
run level ticket 1 --reason "$long"
run events
if [ "$RC" -eq 0 ] && grep -qF -- "$long" <<<"$OUT"; then
	ok table_full_width_when_piped
else
	not_ok table_full_width_when_piped "$(tail -3 <<<"$OUT")"
fi
run level ticket auto
"$FUSEBOX" --url "$URL" --token-file "$T/op.token" status >/dev/full 2>"$T/err"
RC=$?
ERR=$(cat "$T/err")
expect_err write_error_fails 1 '^fusebox: writing the output: No space left on device'
start=$(date +%s%N)
timeout 10 bash -c '"$1" --url "$2" --token-file "$3" events --follow | head -3 >/dev/null; exit "${PIPESTATUS[0]}"' \
	_ "$FUSEBOX" "$URL" "$T/op.token"
RC=$?
ms=$((($(date +%s%N) - start) / 1000000))
if [ "$RC" -eq 0 ] && [ "$ms" -lt 3000 ]; then
	ok follow_ends_with_its_reader
else
	not_ok follow_ends_with_its_reader "exit $RC after $ms ms (124: still running at 10 s)"
fi

# --- reload: exit 1 on the daemon's 400; the refusal is one log line ---
run reload
expect reload_ok 0 "configuration reloaded: 3 backends, 2 routes"
cp "$T/fusebox.json" "$T/fusebox.json.good"
printf '{"listen": "127.0.0.1:%s", "routes": [{"name": "x", "budget_ms": -5}], "bogus": 1}\n' \
	"$D_PORT" >"$T/fusebox.json"
run reload
expect_err reload_refused 1 '^fusebox: POST /v1/reload: 400 '
cp "$T/fusebox.json.good" "$T/fusebox.json"
refused=$(grep 'configuration refused' "$T/d.err")
if [ "$(grep -c 'configuration refused' "$T/d.err")" -eq 1 ] &&
	grep -Eq '^20[0-9-]+T[0-9:.]+Z error reload: configuration refused, keeping the running one: .+; .+' <<<"$refused"; then
	ok reload_refusal_is_one_line
else
	not_ok reload_refusal_is_one_line "$refused"
fi
if grep -Evq '^20[0-9-]+T[0-9:.]+Z (debug|info|warn|error) [a-z_]+: ' "$T/d.err"; then
	not_ok log_one_line_per_entry "$(grep -Ev '^20[0-9-]+T[0-9:.]+Z (debug|info|warn|error) [a-z_]+: ' "$T/d.err" | head -3)"
else
	ok log_one_line_per_entry
fi

# --- JSON logs with journald priorities; caller strings escaped ---
stop_daemon
python3 - "$T/fusebox.json" <<'PY'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
d["log"] = {"level": "debug", "format": "json"}
json.dump(d, open(p, "w"))
PY
: >"$T/d.err"
JOURNAL_STREAM=$(stat -c '%d:%i' "$T/d.err")
export JOURNAL_STREAM
start_daemon
unset JOURNAL_STREAM
printf '{"listen": "127.0.0.1:%s", "routes": [{}]}\n' "$D_PORT" >"$T/fusebox.json.bad"
cp "$T/fusebox.json" "$T/fusebox.json.good"
cp "$T/fusebox.json.bad" "$T/fusebox.json"
kill -HUP "$D_PID"
wait_until 5 grep -q 'configuration refused' "$T/d.err"
cp "$T/fusebox.json.good" "$T/fusebox.json"
forged=$(printf 'http://127.0.0.1:1/cb\r\n2026-01-01T00:00:00.000Z error main: FORGED\033[31m')
body=$(python3 -c 'import json,sys; print(json.dumps({"input": "refund", "mode": "async", "callback_url": sys.argv[1]}))' "$forged")
api POST /v1/routes/intent/call "$body" >/dev/null
accepted=$(status)
[ "$accepted" = 202 ] && wait_until 10 grep -q 'FORGED' "$T/d.err"
if python3 - "$T/d.err" "$accepted" <<'PY'; then
import json, re, sys
lines = open(sys.argv[1], "rb").read().split(b"\n")
assert lines[-1] == b"", "no final newline"
prio = {"debug": 7, "info": 6, "warn": 4, "error": 3}
seen = set()
for raw in lines[:-1]:
    assert not re.search(rb"[\x00-\x1f\x7f]", raw), "raw control byte: %r" % raw
    m = re.match(rb"<([0-7])>(\{.*\})$", raw)
    assert m, "not <N>{json}: %r" % raw
    o = json.loads(m.group(2))
    assert set(o) >= {"time", "level", "module", "msg"}, o
    assert int(m.group(1)) == prio[o["level"]], raw
    seen.add((o["level"], o["module"]))
    if "FORGED" in o["msg"]:
        assert "\\x0d\\x0a2026-01-01T00:00:00.000Z error main: FORGED\\x1b[31m" in o["msg"], o["msg"]
        seen.add("forged")
    if o["module"] == "jobs" and o.get("request_id") and o.get("route") == "intent":
        seen.add("job_ctx")
assert ("error", "reload") in seen and ("info", "main") in seen, seen
if sys.argv[2] == "202":
    assert "forged" in seen, "the callback URL never reached a log line"
    # the async job's lines carry the request and the route as fields
    assert "job_ctx" in seen, "no jobs line with request_id and route"
PY
	ok json_logs_journal_priorities_escaped
else
	not_ok json_logs_journal_priorities_escaped "$(head -c 2000 "$T/d.err")"
fi

# --- offline report, daemon stopped ---
stop_daemon
calls=$(db "SELECT count(*) FROM calls WHERE route = 'intent'")
run report --db "$T/fusebox.db" --since 1h
if [ "$RC" -eq 0 ] &&
	grep -Eq "^fusebox report: $T/fusebox.db since 20[0-9T:.-]+Z \(1h\)\$" <<<"$OUT" &&
	grep -Eq '^Availability \(from (slo_minutes|calls .*)\)$' <<<"$OUT" &&
	grep -Eq "^intent +$calls +[0-9.]+% +[0-9.]+%\$" <<<"$OUT" &&
	grep -Eq '^all +[0-9]+ ' <<<"$OUT" &&
	grep -Eq '^Degradations by reason$' <<<"$OUT" &&
	grep -Eq '^(http_5xx|breaker_open) +[0-9]+ +[0-9]+ +ticket' <<<"$OUT" &&
	grep -Eq '^Top validation failures$' <<<"$OUT" &&
	grep -Eq '^intent +schema +' <<<"$OUT"; then
	ok report_offline
else
	not_ok report_offline "rc $RC: $OUT $ERR"
fi
run --json report --db "$T/fusebox.db"
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["availability"]["routes"][0]["route"] == "intent"' <"$T/out" &&
	ok report_json || not_ok report_json "$OUT $ERR"
run report --db "$T/nope.db"
expect_err report_missing_db 1 'nope.db'
run report --db "$T/fusebox.db" --since yesterday
expect_err report_bad_since 2 -- '--since'

finish
