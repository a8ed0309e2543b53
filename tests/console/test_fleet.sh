#!/usr/bin/env bash
# tests/console/test_fleet.sh BUILD_ROOT SOURCE_ROOT: fusebox --fleet over
# three real fuseboxd on 127.0.0.1 (h1 forced to L2, h2 with the flaky-v1
# breaker forced open, h3 down): the status sums are the hosts' own
# counters added up and the down host is named; a fan-out level change
# with h3 down is 2 applied / 1 failed, exit 1, and its retry applies to
# h3 once it is back, with the same action id in every daemon's audit
# rows; the reviews of two daemons merged by due time, one decided on the
# daemon that owns it; the console's merged review queue (v) at 80x24 and
# 200x50 in the same order, an approve and a reject each landing on its
# owner only, a claim by another reviewer shown, h3 down named; the fleet console (fusebox --fleet F, no verb) in
# tmux at 80x24 and 200x50: host counts per level, the sums equal to the
# daemons' own /v1/slo counters added up, the down host named with its
# error, route -> hosts -> a host's screens -> Esc back; from the console,
# fan-out of a level (L / A), of weights (W, h3 down then retried) and of a
# breaker (B, one action id in every daemon's audit). See lib.sh for the
# fixture (one mock LLM for all).

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh" "${1:-}" "${2:-}"

declare -A HPID HPORT

stop_host() { # n
	if [ -n "${HPID[$1]:-}" ]; then
		kill "${HPID[$1]}" 2>/dev/null || true
		wait "${HPID[$1]}" 2>/dev/null || true
		HPID[$1]=
	fi
}

start_host() { # n (config in $T/h$n)
	: >"$T/h$1/d.out"
	"$FUSEBOXD" -c "$T/h$1/fusebox.json" >>"$T/h$1/d.out" 2>>"$T/h$1/d.err" &
	HPID[$1]=$!
	HPORT[$1]=$(wait_port "$T/h$1/d.out") || {
		echo "fuseboxd h$1 did not start" >&2
		cat "$T/h$1/d.err" >&2
		exit 1
	}
}

trap 'stop_host 1; stop_host 2; stop_host 3; cleanup' EXIT

write_tokens
start_mock
for n in 1 2 3; do
	mkdir -p "$T/h$n"
	write_config "127.0.0.1:0"
	mv "$T/fusebox.json" "$T/h$n/fusebox.json"
	cp "$T/tokens" "$T/h$n/tokens"
	# another reviewer, for a claim made elsewhere than the fleet console
	printf 'bob-token operator bob\n' >>"$T/h$n/tokens"
	start_host "$n"
	write_config "127.0.0.1:${HPORT[$n]}"
	mv "$T/fusebox.json" "$T/h$n/fusebox.json"
done

hurl() { echo "http://127.0.0.1:${HPORT[$1]}"; }
hapi() { # n method path [body]
	if [ -n "${4:-}" ]; then
		curl -s -X "$2" -H "Authorization: Bearer op-token" -H 'Content-Type: application/json' \
			-d "$4" "$(hurl "$1")$3"
	else
		curl -s -X "$2" -H "Authorization: Bearer op-token" "$(hurl "$1")$3"
	fi
}
hcall() { # n route input
	curl -s -o /dev/null -X POST -H 'Content-Type: application/json' \
		-d "{\"input\": \"$3\"}" "$(hurl "$1")/v1/routes/$2/call"
}
hdb() { sqlite3 -cmd '.timeout 5000' "$T/h$1/fusebox.db" "$2"; }
route_field() { # n route field: from GET /v1/state
	hapi "$1" GET /v1/state | python3 -S -c "import json,sys
print([r for r in json.load(sys.stdin)['routes'] if r['name'] == '$2'][0]['$3'])"
}

# h2 has no token file: --token-file gives it; h1 and h3 name op.token (relative to the fleet file)
printf '# three daemons on loopback\nh1 %s op.token eu\nh2 %s - eu\nh3 %s op.token us\n' \
	"$(hurl 1)" "$(hurl 2)" "$(hurl 3)" >"$T/fleet"

frun() { # args...
	"$FUSEBOX" --fleet "$T/fleet" --token-file "$T/op.token" "$@" >"$T/out" 2>"$T/err"
	RC=$?
	OUT=$(cat "$T/out")
	ERR=$(cat "$T/err")
}

check() { # name rc details
	if [ "$2" -eq 0 ]; then ok "$1"; else not_ok "$1" "$3"; fi
}

ok_re() { # name regex (on $OUT)
	grep -Eq -- "$2" <<<"$OUT"
	check "$1" $? "no /$2/ in: $OUT"
}

# --- the fleet file's errors name the line; $FUSEBOX_FLEET ---
printf 'h1 %s\nbroken\n' "$(hurl 1)" >"$T/bad.fleet"
"$FUSEBOX" --fleet "$T/bad.fleet" status >"$T/out" 2>"$T/err"
RC=$?
[ "$RC" -eq 2 ] && grep -q 'fleet line 2: "broken"' "$T/err"
check fleet_file_error $? "rc $RC: $(cat "$T/err")"
FUSEBOX_FLEET=$T/bad.fleet "$FUSEBOX" status >"$T/out" 2>"$T/err"
RC=$?
[ "$RC" -eq 2 ] && grep -q 'fleet line 2' "$T/err"
check fleet_env $? "rc $RC: $(cat "$T/err")"
FUSEBOX_FLEET=$T/bad.fleet "$FUSEBOX" --url "$(hurl 1)" --token-file "$T/op.token" status >"$T/out" 2>"$T/err"
RC=$?
[ "$RC" -eq 0 ] && grep -q '^fuseboxd ' "$T/out"
check fleet_env_url_wins $? "rc $RC: $(cat "$T/out" "$T/err")"

# --- the states: calls on h1 and h2, then h1 at L2, h2's flaky-v1 open, h3 down ---
hcall 1 intent "我要退款"
hcall 2 intent "refund please"
hcall 2 intent "complaint"
hcall 2 ticket "t1"
hapi 1 PUT /v1/routes/intent/level '{"level": 2, "reason": "vendor outage"}' >/dev/null
hcall 1 intent "after L2"
hapi 2 PUT /v1/backends/flaky-v1/breaker '{"state": "forced_open", "reason": "test"}' >/dev/null
hcall 2 ticket "t2"
stop_host 3

# slo_sums: the two live hosts' 1 h counters added up, read once from each
# host into SLO[ROUTE.FIELD] (total, service_good, smart_good of intent and
# ticket); one python3 for all of them (each start costs ~50-80 ms; -S: no
# site-packages, only json is needed, ~25 ms less).
declare -A SLO
slo_sums() {
	local j1 j2
	SLO=()
	j1=$(hapi 1 GET /v1/slo)
	j2=$(hapi 2 GET /v1/slo)
	eval "$(python3 -S -c "import json,sys
for route in ('intent', 'ticket'):
    for f in ('total', 'service_good', 'smart_good'):
        print('SLO[%s.%s]=%d' % (route, f, sum(r['windows']['1h'][f] for a in sys.argv[1:]
                                              for r in json.loads(a)['routes'] if r['route'] == route)))" "$j1" "$j2")"
}
slo_settled() { slo_sums && [ "${SLO[intent.total]:-}" = 4 ] && [ "${SLO[ticket.total]:-}" = 2 ]; }
wait_until 10 slo_settled

frun status
[ "$RC" -eq 1 ] && grep -q '^fleet: 3 hosts, 2 answering, 1 down$' <<<"$OUT"
check status_counts $? "rc $RC: $OUT $ERR"
ok_re status_down_named "^DOWN h3 \\(http://127\\.0\\.0\\.1:${HPORT[3]}\\) since [0-9T:.-]+Z: cannot reach "
ok_re status_levels '^intent +L0 1 · L2\* 1 '
ok_re status_levels_ticket '^ticket +L0 2 '
slo_sums
for route in intent ticket; do
	t=${SLO[$route.total]:-}
	sg=${SLO[$route.service_good]:-}
	sm=${SLO[$route.smart_good]:-}
	line=$(grep -E "^$route " <<<"$OUT")
	[ "$(grep -o '([0-9]*/[0-9]*)' <<<"$line" | sed -n 1p)" = "($sg/$t)" ] &&
		[ "$(grep -o '([0-9]*/[0-9]*)' <<<"$line" | sed -n 2p)" = "($sm/$t)" ]
	check "status_sums_$route" $? "expected service ($sg/$t) smart ($sm/$t): $line"
done
ok_re status_total_intent '^intent .*\(4/4\).*\([0-9]+/4\)'
ok_re status_total_ticket '^ticket .*\([0-9]+/2\).*\([0-9]+/2\)'
ok_re status_breaker_open '^flaky-v1 +1/2 +h2\(forced_open\)$'
ok_re status_breaker_closed '^primary-v2 +0/2 +-$'
pend=$(($(route_field 1 intent review_pending) + $(route_field 2 intent review_pending)))
[ "$pend" -ge 2 ] && grep -Eq "^intent .* $pend\$" <<<"$OUT"
check status_reviews_summed $? "pending $pend: $OUT"

# --- the fleet console (tmux, 80x24 and 200x50): overview, hosts, a host's screens ---
help_gone() { ! screen "$1" | grep -q 'good/total summed'; }
# route_line NAME ROUTE: the route's row on the overview
route_line() { screen "$1" | grep -E "^ ?$2 " | head -1; }
for size in 80x24 200x50; do
	name=fleet$size
	console_start "$name" "$size" -- --fleet "$T/fleet" --token-file "$T/op.token"
	wait_screen "$name" 'fleet: 3 hosts, 2 answering, 1 down' 8
	check "console_${size}_counts" $? "$(screen "$name")"
	wait_screen "$name" "host h3 down since [0-9:]+: cannot reach .*127\\.0\\.0\\.1:${HPORT[3]}" 4
	check "console_${size}_down_named" $? "$(screen "$name")"
	screen "$name" | grep -q 'sums over the 2 answering hosts of 3 (partial: 1 down)'
	check "console_${size}_partial" $? "$(screen "$name")"
	wait_screen "$name" '^ ?intent +L0 1 · L2\* 1 ' 4
	check "console_${size}_levels" $? "$(screen "$name")"
	route_line "$name" ticket | grep -Eq '^ ?ticket +L0 2 '
	check "console_${size}_levels_ticket" $? "$(screen "$name")"
	slo_sums
	for route in intent ticket; do
		t=${SLO[$route.total]:-}
		sg=${SLO[$route.service_good]:-}
		sm=${SLO[$route.smart_good]:-}
		line=$(route_line "$name" $route)
		[ "$(grep -Eo '[0-9]+/[0-9]+' <<<"$line" | sed -n 1p)" = "$sg/$t" ] &&
			[ "$(grep -Eo '[0-9]+/[0-9]+' <<<"$line" | sed -n 2p)" = "$sm/$t" ]
		check "console_${size}_sums_$route" $? "expected service $sg/$t smart $sm/$t: $line"
	done
	pend=$(($(route_field 1 intent review_pending) + $(route_field 2 intent review_pending)))
	route_line "$name" intent | grep -Eq " $pend *\$"
	check "console_${size}_reviews" $? "pending $pend: $(route_line "$name" intent)"
	screen "$name" | grep -Eq '^ ?flaky-v1 +1/2 +h2\(forced_open\)'
	check "console_${size}_breaker_open" $? "$(screen "$name")"
	screen "$name" | grep -Eq '^ ?primary-v2 +0/2 +-'
	check "console_${size}_breaker_closed" $? "$(screen "$name")"
	if [ "$size" = 80x24 ]; then
		screen "$name" | grep -Eq '^ ?ROUTE .*REV.*(›|>)$'
		check console_80x24_columns_dropped $? "$(screen "$name")"
	else
		screen "$name" | grep -Eq '^ ?ROUTE .*BRK +ALRT +REV'
		check console_200x50_all_columns $? "$(screen "$name")"
	fi
	[ "$(screen "$name" | wc -L)" -le "${size%x*}" ]
	check "console_${size}_fits" $? "$(screen "$name")"
	# Enter on intent: its hosts (the selection starts on the first route)
	nth=$(screen "$name" | awk '/^ ?ROUTE /{h=NR; next} h && /^ ?[a-z]/{n++; if ($1=="intent") {print n-1; exit}}')
	for _ in $(seq 1 "${nth:-0}"); do keys "$name" j; done
	keys "$name" Enter
	wait_screen "$name" 'route intent on 3 hosts: L0 1 · L2\* 1' 4
	check "console_${size}_hosts" $? "$(screen "$name")"
	screen "$name" | grep -Eq '^ ?h1 +L2\* +forced +[0-9.]+% [0-9]+/[0-9]+'
	check "console_${size}_host_h1" $? "$(screen "$name")"
	screen "$name" | grep -Eq '^ ?h2 +L0 +auto '
	check "console_${size}_host_h2" $? "$(screen "$name")"
	screen "$name" | grep -Eq '^ ?h3 +down since [0-9:]+: cannot reach '
	check "console_${size}_host_h3_down" $? "$(screen "$name")"
	[ "$size" = 80x24 ] && screen "$name" >"$T/capture-hosts-$size"
	# Enter on h1: the single-daemon screens for it; Esc back, Esc again the overview
	keys "$name" Enter
	wait_screen "$name" "^ fusebox h1 " 4 && wait_screen "$name" 'connected +fuseboxd' 4 &&
		screen "$name" | grep -q 'Esc fleet' &&
		{ [ "$size" = 80x24 ] || screen "$name" | head -1 | grep -q "127\\.0\\.0\\.1:${HPORT[1]}"; }
	check "console_${size}_host_screens" $? "$(screen "$name")"
	wait_screen "$name" '^ ?intent +L2\*' 4
	check "console_${size}_host_overview" $? "$(screen "$name")"
	keys "$name" Escape
	wait_screen "$name" 'route intent on 3 hosts' 4
	check "console_${size}_esc_hosts" $? "$(screen "$name")"
	# another host from the same list: h2, its own daemon
	keys "$name" j Enter
	wait_screen "$name" "^ fusebox h2 " 4 && wait_screen "$name" '^ ?intent +L0 ' 4
	check "console_${size}_host_h2_screens" $? "$(screen "$name")"
	keys "$name" Escape
	wait_screen "$name" 'route intent on 3 hosts' 4
	check "console_${size}_esc_hosts_again" $? "$(screen "$name")"
	keys "$name" '?'
	wait_screen "$name" 'good/total summed over the answering hosts' 4
	check "console_${size}_help" $? "$(screen "$name")"
	keys "$name" Escape
	wait_until 4 help_gone "$name" && screen "$name" | grep -q 'route intent on 3 hosts'
	check "console_${size}_help_closed" $? "$(screen "$name")"
	keys "$name" Escape
	wait_screen "$name" 'routes: sums over the 2 answering hosts of 3' 4
	check "console_${size}_esc_overview" $? "$(screen "$name")"
	[ "$size" = 80x24 ] && screen "$name" >"$T/capture-overview-$size"
	keys "$name" q
	wait_screen "$name" 'EXITED-0' 4
	check "console_${size}_quit" $? "$(screen "$name")"
	tm kill-session -t "$name" 2>/dev/null
done
if [ -n "${FB_FLEET_CAPTURES:-}" ]; then
	cp "$T"/capture-* "$FB_FLEET_CAPTURES"/ 2>/dev/null || true
fi

# --- fan-out with h3 down: 2 applied, 1 failed, exit 1 ---
frun level ticket 1 --reason "fleet drill"
[ "$RC" -eq 1 ] && grep -q '^2 applied, 1 failed$' <<<"$OUT" &&
	grep -Eq '^h1 +applied: L1 \(forced\)$' <<<"$OUT" &&
	grep -Eq '^h2 +applied: L1 \(forced\)$' <<<"$OUT" &&
	grep -Eq '^h3 +failed: cannot reach ' <<<"$OUT"
check fanout_partial $? "rc $RC: $OUT $ERR"
aid=$(sed -n 's/^action \([0-9a-f-]*\): force ticket on 3 hosts$/\1/p' <<<"$OUT")
[[ "$aid" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]]
check fanout_action_id $? "action id '$aid': $OUT"
grep -q -- "--hosts h3 --action-id $aid" <<<"$OUT"
check fanout_retry_hint $? "$OUT"
for n in 1 2; do
	row=$(hdb "$n" "SELECT action, target, actor, action_id FROM audit WHERE action_id IS NOT NULL")
	[ "$row" = "level.force|route:ticket|alice|$aid" ]
	check "fanout_audit_h$n" $? "h$n audit: $row"
done
[ "$(hdb 1 "SELECT count(*) FROM audit WHERE action = 'level.force' AND target = 'route:intent' AND action_id IS NULL")" = 1 ]
check audit_no_header_null $? "$(hdb 1 'SELECT * FROM audit')"
hapi 1 GET '/v1/audit?after=0' | python3 -S -c "
import json,sys
a=json.load(sys.stdin)['audit']
assert [x['action_id'] for x in a if x['target']=='route:ticket'] == ['$aid'], a
assert [x['action_id'] for x in a if x['target']=='route:intent'] == [None], a"
check audit_api_action_id $? "GET /v1/audit"

# --- the retry, h3 back: applied there only, with the same action id ---
start_host 3
frun level ticket 1 --reason "fleet drill" --hosts h3 --action-id "$aid"
[ "$RC" -eq 0 ] && grep -q '^1 applied, 0 failed$' <<<"$OUT" &&
	grep -Eq '^h3 +applied: L1 \(forced\)$' <<<"$OUT" && ! grep -q '^h1 ' <<<"$OUT"
check fanout_retry $? "rc $RC: $OUT $ERR"
row=$(hdb 3 "SELECT action, target, action_id FROM audit WHERE action_id IS NOT NULL")
[ "$row" = "level.force|route:ticket|$aid" ]
check fanout_audit_h3 $? "h3 audit: $row"
[ "$(hdb 1 "SELECT count(*) FROM audit WHERE action_id = '$aid'")" = 1 ]
check fanout_retry_not_resent $? "h1 audit: $(hdb 1 'SELECT * FROM audit')"

# a group: only eu (h1, h2) is released
frun level ticket auto --group eu
[ "$RC" -eq 0 ] && grep -q '^2 applied, 0 failed$' <<<"$OUT" && ! grep -q '^h3 ' <<<"$OUT" &&
	grep -Eq '^h1 +applied: L0 \(auto\)$' <<<"$OUT"
check fanout_group $? "rc $RC: $OUT $ERR"
[ "$(route_field 3 ticket level)" = 1 ] && [ "$(route_field 1 ticket level)" = 0 ]
check fanout_group_h3_untouched $? "levels h1 $(route_field 1 ticket level) h3 $(route_field 3 ticket level)"
frun level ticket 1
[ "$RC" -eq 2 ] && grep -q -- '--reason is required' <<<"$ERR"
check fanout_usage $? "rc $RC: $ERR"
frun level ticket 1 --reason x --hosts h9
[ "$RC" -eq 2 ] && grep -q 'no host named "h9"' <<<"$ERR"
check fanout_unknown_host $? "rc $RC: $ERR"
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H "Authorization: Bearer op-token" \
	-H 'X-Fusebox-Action-Id: bad id!' -H 'Content-Type: application/json' \
	-d '{"level":1,"reason":"x"}' "$(hurl 1)/v1/routes/ticket/level")
[ "$code" = 400 ] && [ "$(hdb 1 "SELECT count(*) FROM audit WHERE target = 'route:ticket'")" = 2 ]
check action_id_bad_400 $? "code $code, $(hdb 1 "SELECT count(*) FROM audit WHERE target = 'route:ticket'") ticket rows"

# breaker and weights fan-out, all three up
frun breaker flaky-v1 auto --reason "drill over"
[ "$RC" -eq 0 ] && grep -q '^3 applied, 0 failed$' <<<"$OUT" && grep -Eq '^h2 +applied: breaker closed$' <<<"$OUT"
check fanout_breaker $? "rc $RC: $OUT $ERR"
baid=$(sed -n 's/^action \([0-9a-f-]*\): breaker flaky-v1 auto on 3 hosts$/\1/p' <<<"$OUT")
same=0
for n in 1 2 3; do
	[ "$(hdb "$n" "SELECT action, target FROM audit WHERE action_id = '$baid'")" = "breaker.force|backend:flaky-v1" ] &&
		same=$((same + 1))
done
[ -n "$baid" ] && [ "$baid" != "$aid" ] && [ "$same" = 3 ]
check fanout_breaker_audit $? "action $baid: $(hdb 2 'SELECT * FROM audit')"
frun weights intent primary-v2=90 canary-v3=10 --hosts h1,h3
[ "$RC" -eq 0 ] && grep -q '^2 applied, 0 failed$' <<<"$OUT" &&
	grep -Eq '^h3 +applied: primary-v2=90 canary-v3=10\(canary\)$' <<<"$OUT" && ! grep -q '^h2 ' <<<"$OUT"
check fanout_weights $? "rc $RC: $OUT $ERR"
frun weights intent nope=1
[ "$RC" -eq 1 ] && grep -q '^0 applied, 3 failed$' <<<"$OUT" && grep -Eq '^h1 +failed: 400 ' <<<"$OUT"
check fanout_refused $? "rc $RC: $OUT $ERR"

# --- merged reviews: h1 and h2 (h3 has none), decided on the owner ---
frun reviews --state pending
n1=$(hdb 1 "SELECT count(*) FROM reviews WHERE state = 'pending'")
n2=$(hdb 2 "SELECT count(*) FROM reviews WHERE state = 'pending'")
[ "$RC" -eq 0 ] && [ "$(head -1 <<<"$OUT" | tr -s ' ')" = "HOST ID ROUTE PRIORITY STATE DUE IN REASON CONFIDENCE INPUT" ] &&
	[ "$(grep -c '^h1 ' <<<"$OUT")" = "$n1" ] && [ "$(grep -c '^h2 ' <<<"$OUT")" = "$n2" ] &&
	[ "$n1" -ge 1 ] && [ "$n2" -ge 2 ] &&
	grep -q "^$((n1 + n2)) items on 3 hosts$" <<<"$OUT" &&
	grep -Eq '^h1 +[0-9]+ +intent .*我要退款$' <<<"$OUT"
check reviews_merged $? "rc $RC (h1 $n1, h2 $n2): $OUT $ERR"
order=$(for n in 1 2; do hdb "$n" "SELECT due_at, 'h$n', id FROM reviews WHERE state = 'pending'"; done |
	sort -t'|' -k1,1n -k2,2 -k3,3n | cut -d'|' -f2,3 | tr '|' ' ')
got=$(grep '^h[0-9] ' <<<"$OUT" | awk '{print $1, $2}')
[ "$order" = "$got" ]
check reviews_by_due $? "expected
$order
got
$got"
id2=$(hdb 2 "SELECT id FROM reviews WHERE state = 'pending' ORDER BY id LIMIT 1")
before1=$(hdb 1 "SELECT state FROM reviews WHERE id = $id2")
frun --host h2 review "$id2" approve --note "fleet"
[ "$RC" -eq 0 ] && [ "$OUT" = "review $id2: approved" ] &&
	[ "$(hdb 2 "SELECT state FROM reviews WHERE id = $id2")" = approved ] &&
	[ "$(hdb 1 "SELECT state FROM reviews WHERE id = $id2")" = "$before1" ]
check review_decided_on_owner $? "rc $RC: $OUT $ERR"
frun --host h9 status
[ "$RC" -eq 2 ] && grep -q 'no host named "h9"' <<<"$ERR"
check host_unknown $? "rc $RC: $ERR"
frun routes
[ "$RC" -eq 2 ] && grep -q 'not a fleet verb' <<<"$ERR"
check not_a_fleet_verb $? "rc $RC: $ERR"

# --- the merged review queue in the fleet console (v), h3 down: both daemons' open
# items with their host, in due order (the CLI's); approve on h1 and reject on h2 from
# the one console land on the owner only; bob's claim through h2's API shows ---
hcall 2 intent "second look"
hcall 2 intent "third look"
open_q="state IN ('pending', 'claimed')"
h2_open3() { [ "$(hdb 2 "SELECT count(*) FROM reviews WHERE $open_q")" -ge 3 ]; }
wait_until 10 h2_open3
n1=$(hdb 1 "SELECT count(*) FROM reviews WHERE $open_q")
n2=$(hdb 2 "SELECT count(*) FROM reviews WHERE $open_q")
# rq_order: the DB's open items as "HOST ID" lines, by due time, host, id
rq_order() {
	for n in 1 2; do hdb "$n" "SELECT due_at, 'h$n', id FROM reviews WHERE $open_q"; done |
		sort -t'|' -k1,1n -k2,2 -k3,3n | cut -d'|' -f2,3 | tr '|' ' '
}
# rq_rows NAME: the view's rows as "HOST ID" lines, top to bottom
rq_rows() { screen "$1" | awk '$1 ~ /^h[0-9]+$/ && $2 ~ /^[0-9]+$/ {print $1, $2}'; }
# rq_select NAME HOST ID: the selection onto that row (g: the first row, then j)
rq_select() {
	local nth
	nth=$(rq_rows "$1" | awk -v h="$2" -v id="$3" '$1 == h && $2 == id {print NR - 1; exit}')
	[ -n "$nth" ] || return 1
	keys "$1" g
	for _ in $(seq 1 "$nth"); do keys "$1" j; done
}
rq_gone() { ! rq_rows "$1" | grep -q "^$2 $3\$"; } # name host id: no such row
rq_all() { hdb "$1" "SELECT id, state, coalesce(reviewer, '') FROM reviews ORDER BY id"; }
stop_host 3
for size in 80x24 200x50; do
	name=fleetrq$size
	console_start "$name" "$size" -- --fleet "$T/fleet" --token-file "$T/op.token"
	wait_screen "$name" 'fleet: 3 hosts, 2 answering, 1 down' 8 &&
		screen "$name" | grep -q 'v reviews'
	check "console_${size}_reviews_hint" $? "$(screen "$name")"
	keys "$name" v
	wait_screen "$name" " reviews: $((n1 + n2)) open on 2 of 3 hosts, oldest due first \\(partial\\)" 8 &&
		screen "$name" | grep -Eq '^ ?HOST +ID +PRI +ROUTE +STATE +DUE IN .*REVIEWER +INPUT'
	check "console_${size}_reviews_view" $? "h1 $n1 h2 $n2: $(screen "$name")"
	wait_screen "$name" "host h3 down since [0-9:]+: cannot reach .*127\\.0\\.0\\.1:${HPORT[3]}" 4
	check "console_${size}_reviews_h3_named" $? "$(screen "$name")"
	[ "$(rq_rows "$name" | grep -c '^h1 ')" = "$n1" ] && [ "$(rq_rows "$name" | grep -c '^h2 ')" = "$n2" ] &&
		[ "$n1" -ge 1 ] && [ "$n2" -ge 3 ] && ! rq_rows "$name" | grep -q '^h3 '
	check "console_${size}_reviews_hosts" $? "h1 $n1 h2 $n2: $(screen "$name")"
	want=$(rq_order)
	[ "$(rq_rows "$name")" = "$want" ]
	check "console_${size}_reviews_by_due" $? "expected
$want
got
$(rq_rows "$name")"
	[ "$(screen "$name" | wc -L)" -le "${size%x*}" ]
	check "console_${size}_reviews_fits" $? "$(screen "$name")"
	[ "$size" = 80x24 ] && screen "$name" >"$T/capture-reviews-$size"
	# the help names v and the review keys, whole (its last line, q, still in the box)
	keys "$name" '?'
	wait_screen "$name" "v +the review queue: all hosts' open items by due time" 4 &&
		screen "$name" | grep -Eq 'a c x C approve, correct, reject, claim' &&
		screen "$name" | grep -Eq 'q +quit +│|q +quit +\|'
	check "console_${size}_reviews_help" $? "$(screen "$name")"
	keys "$name" Escape
	wait_until 4 help_gone "$name" && screen "$name" | grep -q ' reviews: .* open on 2 of 3 hosts'
	check "console_${size}_reviews_help_closed" $? "$(screen "$name")"
	if [ "$size" = 200x50 ]; then
		# approve h1's first item: h1's DB has it approved by alice, h2's rows unchanged
		aid1=$(rq_order | awk '$1 == "h1" {print $2; exit}')
		h2_before=$(rq_all 2)
		rq_select "$name" h1 "$aid1"
		keys "$name" a
		wait_screen "$name" "Approve review #$aid1 on h1" 4
		check console_review_approve_form $? "$(screen "$name")"
		keys "$name" y
		wait_screen "$name" "h1: approve review #$aid1: done" 8 &&
			[ "$(hdb 1 "SELECT state, reviewer FROM reviews WHERE id = $aid1")" = "approved|alice" ] &&
			[ "$(rq_all 2)" = "$h2_before" ]
		check console_review_approved_on_h1 $? "h1 #$aid1: $(hdb 1 "SELECT state, reviewer FROM reviews WHERE id = $aid1"); h2 before
$h2_before
after
$(rq_all 2)
$(screen "$name")"
		wait_until 4 rq_gone "$name" h1 "$aid1" && rq_rows "$name" | grep -q '^h2 '
		check console_review_approved_gone $? "$(screen "$name")"
		# reject h2's first item with a note: on h2 only
		rid2=$(rq_order | awk '$1 == "h2" {print $2; exit}')
		h1_before=$(rq_all 1)
		rq_select "$name" h2 "$rid2"
		keys "$name" x
		wait_screen "$name" "Reject review #$rid2 on h2" 4
		check console_review_reject_form $? "$(screen "$name")"
		type_text "$name" "fleet says no"
		keys "$name" Enter
		wait_screen "$name" "Reject review #$rid2 of route intent" 4
		check console_review_reject_confirm $? "$(screen "$name")"
		keys "$name" y
		wait_screen "$name" "h2: reject review #$rid2: done" 8 &&
			[ "$(hdb 2 "SELECT state, reviewer, note FROM reviews WHERE id = $rid2")" = "rejected|alice|fleet says no" ] &&
			hapi 2 GET "/v1/reviews/$rid2" | grep -Eq '"state": *"rejected"' &&
			[ "$(rq_all 1)" = "$h1_before" ]
		check console_review_rejected_on_h2 $? "h2 #$rid2: $(hapi 2 GET "/v1/reviews/$rid2"); h1 before
$h1_before
after
$(rq_all 1)
$(screen "$name")"
		# correct the next h2 item: the corrected result stored on h2
		xid2=$(rq_order | awk '$1 == "h2" {print $2; exit}')
		rq_select "$name" h2 "$xid2"
		keys "$name" c
		wait_screen "$name" "Correct review #$xid2 \\(intent\\) on h2" 4
		check console_review_correct_form $? "$(screen "$name")"
		keys "$name" C-u
		type_text "$name" "complaint"
		for _ in 1 2 3 4 5 6; do
			screen "$name" | grep -q 'the result becomes' && break
			keys "$name" Enter
			wait_screen_ms "$name" 'the result becomes' 300 # (it slept 0.3 s)
		done
		wait_screen "$name" "Correct review #$xid2 of route intent; the result becomes" 4 &&
			screen "$name" | grep -q '"intent":"complaint"'
		check console_review_correct_confirm $? "$(screen "$name")"
		keys "$name" y
		wait_screen "$name" "h2: correct review #$xid2: done" 8 &&
			[ "$(hdb 2 "SELECT state, json_extract(corrected_result, '$.intent') FROM reviews WHERE id = $xid2")" = "corrected|complaint" ] &&
			[ "$(rq_all 1)" = "$h1_before" ]
		check console_review_corrected_on_h2 $? "h2 #$xid2: $(hdb 2 "SELECT state, corrected_result FROM reviews WHERE id = $xid2")
$(screen "$name")"
		# bob claims another h2 item through h2's API: the view shows it within a few seconds
		cid=$(rq_order | awk '$1 == "h2" {print $2; exit}')
		wait_screen "$name" "^ ?h2 +$cid +[a-z]+ +intent +pending " 4
		check console_review_pending_before_claim $? "#$cid: $(screen "$name")"
		code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer bob-token" \
			"$(hurl 2)/v1/reviews/$cid/claim")
		[ "${code#2}" != "$code" ] && wait_screen "$name" "^ ?h2 +$cid +[a-z]+ +intent +claimed .* bob +" 4
		check console_review_claim_shown $? "claim $code #$cid: $(screen "$name")"
		screen "$name" >"$T/capture-reviews-claimed-$size"
		# Esc: the overview again
		keys "$name" Escape
		wait_screen "$name" 'routes: sums over the 2 answering hosts of 3' 4
		check console_reviews_esc $? "$(screen "$name")"
	fi
	keys "$name" q
	wait_screen "$name" 'EXITED-0' 4
	check "console_${size}_reviews_quit" $? "$(screen "$name")"
	tm kill-session -t "$name" 2>/dev/null
done
start_host 3
if [ -n "${FB_FLEET_CAPTURES:-}" ]; then
	cp "$T"/capture-reviews-* "$FB_FLEET_CAPTURES"/ 2>/dev/null || true
fi
frun status
[ "$RC" -eq 0 ] && grep -q '^fleet: 3 hosts, 3 answering, 0 down$' <<<"$OUT" && ! grep -q '^DOWN' <<<"$OUT"
check status_all_up $? "rc $RC: $OUT"


# --- fan-out from the fleet console: L on intent with h3 down, 2 applied / 1 failed;
# r once h3 is back applies it there with the same action id; A on a group ---
# route_forced N ROUTE: the forced level from the daemon's GET /v1/state, or auto
route_forced() {
	hapi "$1" GET /v1/state | python3 -S -c "import json,sys
f=[r for r in json.load(sys.stdin)['routes'] if r['name'] == '$2'][0]['forced_level']
print('auto' if f is None else f['level'])"
}
stop_host 3
name=fleetact
console_start "$name" 80x24 -- --fleet "$T/fleet" --token-file "$T/op.token"
wait_screen "$name" 'fleet: 3 hosts, 2 answering, 1 down' 8
check console_fanout_h3_down $? "$(screen "$name")"
wait_screen "$name" '^ ?intent ' 4
nth=$(screen "$name" | awk '/^ ?ROUTE /{h=NR; next} h && /^ ?[a-z]/{n++; if ($1=="intent") {print n-1; exit}}')
for _ in $(seq 1 "${nth:-0}"); do keys "$name" j; done
keys "$name" L
wait_screen "$name" 'Force a level: intent on the fleet' 4 &&
	screen "$name" | grep -Eq 'Level +< L2 >' && screen "$name" | grep -Eq 'Scope +< all hosts >'
check console_fanout_form $? "$(screen "$name")"
# Enter on an empty reason: refused, the form stays
keys "$name" Enter Enter Enter Enter
wait_screen "$name" 'a reason is required' 4
check console_fanout_reason_required $? "$(screen "$name")"
type_text "$name" "vendor outage"
keys "$name" Enter Enter Enter Enter
wait_screen "$name" 'Force route intent to L2 on 3 hosts \(all hosts\):' 4 &&
	screen "$name" | grep -q 'h1, h2, h3 (down now)' &&
	screen "$name" | grep -q 'Reason: vendor outage' &&
	screen "$name" | grep -q 'Apply?  y = yes'
check console_fanout_confirm $? "$(screen "$name")"
caid=$(screen "$name" | grep -o 'Action id: [0-9a-f-]*' | sed 's/Action id: //')
[[ "$caid" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]]
check console_fanout_action_id $? "action id '$caid': $(screen "$name")"
screen "$name" >"$T/capture-fanout-confirm-80x24"
keys "$name" y
wait_screen "$name" ' 2 applied, 1 failed' 8 &&
	screen "$name" | grep -Eq '^ ?h1 +applied: L2 \(forced\)' &&
	screen "$name" | grep -Eq '^ ?h2 +applied: L2 \(forced\)' &&
	screen "$name" | grep -Eq '^ ?h3 +failed: cannot reach ' &&
	screen "$name" | grep -q "action $caid" && screen "$name" | grep -q 'r retry the failed hosts'
check console_fanout_partial $? "$(screen "$name")"
[ "$(screen "$name" | wc -L)" -le 80 ]
check console_fanout_fits $? "$(screen "$name")"
screen "$name" >"$T/capture-fanout-result-80x24"
start_host 3
keys "$name" r
wait_screen "$name" ' 3 applied, 0 failed' 8 &&
	screen "$name" | grep -Eq '^ ?h3 +applied: L2 \(forced\) \(try 2\)' &&
	screen "$name" | grep -Eq '^ ?h1 +applied: L2 \(forced\) \(try 1\)' &&
	screen "$name" | grep -q '(all hosts), try 2'
check console_fanout_retry $? "$(screen "$name")"
screen "$name" >"$T/capture-fanout-retry-80x24"
for n in 1 2 3; do
	[ "$(route_field "$n" intent level)" = 2 ] && [ "$(route_forced "$n" intent)" = 2 ]
	check "console_fanout_state_h$n" $? "h$n intent: $(hapi "$n" GET /v1/state)"
	hapi "$n" GET '/v1/audit?after=0' | python3 -S -c "
import json,sys
a=[x for x in json.load(sys.stdin)['audit'] if x['action_id']=='$caid']
assert [(x['action'], x['target']) for x in a] == [('level.force', 'route:intent')], a"
	check "console_fanout_audit_h$n" $? "h$n: $(hapi "$n" GET '/v1/audit?after=0')"
done
# A with the scope "a group": eu (h1, h2) released, h3 stays forced
keys "$name" Escape
wait_screen "$name" 'routes: sums over all 3 hosts' 8
check console_fanout_back $? "$(screen "$name")"
keys "$name" A
wait_screen "$name" 'Release to auto: intent on the fleet' 4
check console_release_form $? "$(screen "$name")"
keys "$name" Right Enter
type_text "$name" "eu"
keys "$name" Enter
wait_screen "$name" 'Release route intent to auto on 2 hosts \(group eu\):' 4 &&
	screen "$name" | grep -q '  h1, h2$\|  h1, h2 '
check console_release_confirm $? "$(screen "$name")"
keys "$name" y
wait_screen "$name" ' 2 applied, 0 failed' 8 &&
	screen "$name" | grep -Eq '^ ?h1 +applied: L[0-3] \(auto\)' && ! screen "$name" | grep -Eq '^ ?h3 +'
check console_release_applied $? "$(screen "$name")"
[ "$(route_forced 1 intent)" = auto ] && [ "$(route_forced 2 intent)" = auto ] &&
	[ "$(route_forced 3 intent)" = 2 ]
check console_release_state $? "forced h1 $(route_forced 1 intent) h2 $(route_forced 2 intent) h3 $(route_forced 3 intent)"
keys "$name" q
wait_screen "$name" 'EXITED-0' 4
check console_fanout_quit $? "$(screen "$name")"
tm kill-session -t "$name" 2>/dev/null
if [ -n "${FB_FLEET_CAPTURES:-}" ]; then
	cp "$T"/capture-fanout-* "$FB_FLEET_CAPTURES"/ 2>/dev/null || true
fi

# --- weights and breaker fan-out from the fleet console (the CLI's builders, one path):
# W on intent with h3 down, 2 applied / 1 failed, r once h3 is back; B on flaky-v1 (the
# open backend preset) forced closed on all hosts, one action id in every daemon's audit ---
# route_weight N ROUTE BACKEND: the target's weight from the daemon's GET /v1/state
route_weight() {
	hapi "$1" GET /v1/state | python3 -S -c "import json,sys
r=[r for r in json.load(sys.stdin)['routes'] if r['name'] == '$2'][0]
print([t for t in r['targets'] if t['backend'] == '$3'][0]['weight'])"
}
audit_has() { # n action-id action target-substring: exactly one such row, nothing else
	hapi "$1" GET '/v1/audit?after=0' | python3 -S -c "
import json,sys
a=[x for x in json.load(sys.stdin)['audit'] if x['action_id']=='$2']
assert len(a) == 1 and a[0]['action'] == '$3' and '$4' in a[0]['target'], a"
}
h3w=$(route_weight 3 intent primary-v2)
hapi 2 PUT /v1/backends/flaky-v1/breaker '{"state": "forced_open", "reason": "preset"}' >/dev/null
stop_host 3
name=fleetwb
console_start "$name" 200x50 -- --fleet "$T/fleet" --token-file "$T/op.token"
wait_screen "$name" 'fleet: 3 hosts, 2 answering, 1 down' 8
check console_weights_h3_down $? "$(screen "$name")"
screen "$name" | grep -q 'W weights  B breaker'
check console_weights_hint $? "$(screen "$name")"
nth=$(screen "$name" | awk '/^ ?ROUTE /{h=NR; next} h && /^ ?[a-z]/{n++; if ($1=="intent") {print n-1; exit}}')
for _ in $(seq 1 "${nth:-0}"); do keys "$name" j; done
keys "$name" W
wait_screen "$name" 'Set weights: intent on the fleet' 4
check console_weights_form $? "$(screen "$name")"
# a malformed pair is refused in the form
type_text "$name" "primary-v2"
keys "$name" Enter Enter Enter Enter
wait_screen "$name" 'is not BACKEND=WEIGHT' 4
check console_weights_refused $? "$(screen "$name")"
type_text "$name" "=60 canary-v3=40"
keys "$name" Enter Enter Enter Enter
wait_screen "$name" 'Set weights of route intent to primary-v2=60 canary-v3=40 on 3 hosts' 4 &&
	screen "$name" | grep -q 'h3 (down now)'
check console_weights_confirm $? "$(screen "$name")"
waid=$(screen "$name" | grep -o 'Action id: [0-9a-f-]*' | sed 's/Action id: //')
keys "$name" y
wait_screen "$name" ' 2 applied, 1 failed' 8 &&
	screen "$name" | grep -Eq '^ ?h1 +applied' && screen "$name" | grep -Eq '^ ?h2 +applied' &&
	screen "$name" | grep -Eq '^ ?h3 +failed: ' && screen "$name" | grep -q "action $waid"
check console_weights_partial $? "$(screen "$name")"
[ "$(route_weight 1 intent primary-v2)" = 60 ] && [ "$(route_weight 2 intent canary-v3)" = 40 ]
check console_weights_state_up $? "h1 $(route_weight 1 intent primary-v2) h2 $(route_weight 2 intent canary-v3)"
start_host 3
[ "$(route_weight 3 intent primary-v2)" = "$h3w" ] && [ "$h3w" != 60 ]
check console_weights_h3_untouched $? "h3 $(route_weight 3 intent primary-v2), was $h3w"
keys "$name" r
wait_screen "$name" ' 3 applied, 0 failed' 8 &&
	screen "$name" | grep -Eq '^ ?h3 +applied.*\(try 2\)'
check console_weights_retry $? "$(screen "$name")"
for n in 1 2 3; do
	[ "$(route_weight "$n" intent primary-v2)" = 60 ] && audit_has "$n" "$waid" weights.set intent
	check "console_weights_h$n" $? "h$n: $(route_weight "$n" intent primary-v2) $(hapi "$n" GET '/v1/audit?after=0')"
done
keys "$name" Escape
wait_screen "$name" 'routes: sums over all 3 hosts' 8
keys "$name" B
wait_screen "$name" 'Breaker: flaky-v1 on the fleet' 4 &&
	screen "$name" | grep -Eq 'State +< open >'
check console_breaker_form $? "$(screen "$name")"
keys "$name" Right Enter
type_text "$name" "drill"
keys "$name" Enter Enter Enter
wait_screen "$name" 'Breaker flaky-v1 to closed on 3 hosts \(all hosts\):' 4 &&
	screen "$name" | grep -q 'Reason: drill'
check console_breaker_confirm $? "$(screen "$name")"
baid=$(screen "$name" | grep -o 'Action id: [0-9a-f-]*' | sed 's/Action id: //')
keys "$name" y
wait_screen "$name" ' 3 applied, 0 failed' 8 && screen "$name" | grep -q "action $baid"
check console_breaker_applied $? "$(screen "$name")"
for n in 1 2 3; do
	[ -n "$baid" ] && [ "$baid" != "$waid" ] && audit_has "$n" "$baid" breaker.force flaky-v1 &&
		hapi "$n" GET /v1/state | grep -q '"forced_closed"'
	check "console_breaker_audit_h$n" $? "h$n: $(hapi "$n" GET '/v1/audit?after=0')"
done
keys "$name" q
wait_screen "$name" 'EXITED-0' 4
check console_wb_quit $? "$(screen "$name")"
tm kill-session -t "$name" 2>/dev/null

finish
