#!/usr/bin/env bash
# tests/console/test_fleet.sh BUILD_ROOT SOURCE_ROOT: fusebox --fleet over
# three real fuseboxd on 127.0.0.1 (h1 forced to L2, h2 with the flaky-v1
# breaker forced open, h3 down): the status sums are the hosts' own
# counters added up and the down host is named; a fan-out level change
# with h3 down is 2 applied / 1 failed, exit 1, and its retry applies to
# h3 once it is back, with the same action id in every daemon's audit
# rows; the reviews of two daemons merged by due time, one decided on the
# daemon that owns it; the fleet console (fusebox --fleet F, no verb) in
# tmux at 80x24 and 200x50: host counts per level, the sums equal to the
# daemons' own /v1/slo counters added up, the down host named with its
# error, route -> hosts -> a host's screens -> Esc back. See lib.sh for
# the fixture (one mock LLM for all).

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
	hapi "$1" GET /v1/state | python3 -c "import json,sys
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

slo_sum() { # route field: the two live hosts' 1 h counters added up
	local n total=0 v
	for n in 1 2; do
		v=$(hapi "$n" GET /v1/slo | python3 -c "import json,sys
print(sum(r['windows']['1h']['$2'] for r in json.load(sys.stdin)['routes'] if r['route'] == '$1'))")
		total=$((total + v))
	done
	echo "$total"
}
for i in $(seq 1 100); do
	[ "$(slo_sum intent total)" = 4 ] && [ "$(slo_sum ticket total)" = 2 ] && break
	sleep 0.1
done

frun status
[ "$RC" -eq 1 ] && grep -q '^fleet: 3 hosts, 2 answering, 1 down$' <<<"$OUT"
check status_counts $? "rc $RC: $OUT $ERR"
ok_re status_down_named "^DOWN h3 \\(http://127\\.0\\.0\\.1:${HPORT[3]}\\) since [0-9T:.-]+Z: cannot reach "
ok_re status_levels '^intent +L0 1 · L2\* 1 '
ok_re status_levels_ticket '^ticket +L0 2 '
for route in intent ticket; do
	t=$(slo_sum $route total)
	sg=$(slo_sum $route service_good)
	sm=$(slo_sum $route smart_good)
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
	for route in intent ticket; do
		t=$(slo_sum $route total)
		sg=$(slo_sum $route service_good)
		sm=$(slo_sum $route smart_good)
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
hapi 1 GET '/v1/audit?after=0' | python3 -c "
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
frun status
[ "$RC" -eq 0 ] && grep -q '^fleet: 3 hosts, 3 answering, 0 down$' <<<"$OUT" && ! grep -q '^DOWN' <<<"$OUT"
check status_all_up $? "rc $RC: $OUT"


# --- fan-out from the fleet console: L on intent with h3 down, 2 applied / 1 failed;
# r once h3 is back applies it there with the same action id; A on a group ---
# route_forced N ROUTE: the forced level from the daemon's GET /v1/state, or auto
route_forced() {
	hapi "$1" GET /v1/state | python3 -c "import json,sys
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
	hapi "$n" GET '/v1/audit?after=0' | python3 -c "
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

finish
