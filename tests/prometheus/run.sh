#!/usr/bin/env bash
# tests/prometheus/run.sh BUILD_ROOT SOURCE_ROOT: the fleet SLOs on a real
# Prometheus (Debian package prometheus) and the fleet alerts in a real
# Alertmanager (prometheus-alertmanager), everything on 127.0.0.1.
#
# One fusebox-mockllm and three fuseboxd with routes intent and ticket
# (objectives service 99.9 %, smart 99 %):
#   h1  healthy; some intent calls with allow_llm: false (not in smart's
#       denominator)
#   h2  a failing upstream: intent answers from its rules (smart drops),
#       ticket has no rules and answers 503 (service drops too)
#   h3  ticket forced to L2 by an operator (smart drops), backend spare-v1
#       forced open
# Prometheus scrapes the three /metrics (viewer token, 1 s) with
# contrib/prometheus/fusebox-rules.yml as shipped (a copy with shorter
# group intervals, the rest asserted byte for byte equal), and sends its
# alerts to an Alertmanager running contrib/alertmanager/alertmanager.yml
# with the receivers pointed at a local webhook. Asserted: Prometheus's
# sums of the counters equal the daemons' own; the recorded fleet
# availabilities (5m, 1h, 30d) are the summed ratio (not the hosts'
# average) within the rate() extrapolation; the burn rates and budget
# follow from them; `fusebox slo --prometheus` (or prom_driver, built here
# from tui/prom.c, until the CLI has it) prints them; tui/prom.c's errors
# (bad expression, unreachable, not Prometheus); the fleet burn-rate page
# reaches Alertmanager with route, kind, severity, source=fleet and the
# hosts annotation naming h2, inhibits its own ticket and reaches the
# page receiver; every expression of contrib/grafana/fusebox-fleet.json
# parses and returns data (check_grafana.py); the console's SLO screen in
# fleet mode (f, --prometheus via $FUSEBOX_PROMETHEUS) in tmux at 80x24 and
# 200x50 shows the CLI's figures, and an unreachable Prometheus gives its
# error line while the console keeps answering keys (needs tmux).
#
# Exit 0 all passed, 1 a failure, 77 skipped (prometheus, promtool,
# prometheus-alertmanager or amtool not installed). Every wait is bounded;
# only the processes started here are stopped, by pid. FB_KEEP_TMP=1 keeps
# the temporary folder.

set -u

BUILD_ROOT=$(cd "${1:-${FB_BUILD_ROOT:-build}}" && pwd)
SOURCE_ROOT=$(cd "${2:-${FB_SOURCE_ROOT:-.}}" && pwd)
here=$SOURCE_ROOT/tests/prometheus
PROMETHEUS=${PROMETHEUS:-/usr/bin/prometheus}
PROMTOOL=${PROMTOOL:-/usr/bin/promtool}
ALERTMANAGER=${ALERTMANAGER:-/usr/bin/prometheus-alertmanager}
AMTOOL=${AMTOOL:-/usr/bin/amtool}
FUSEBOX=$BUILD_ROOT/tui/fusebox
FUSEBOXD=$BUILD_ROOT/daemon/fuseboxd
MOCKLLM=$BUILD_ROOT/contrib/fusebox-mockllm
export LC_ALL=C.UTF-8
unset FUSEBOX_URL FUSEBOX_TOKEN FUSEBOX_TOKEN_FILE FUSEBOX_TOKENS_FILE FUSEBOX_FLEET

# What this test checks is the rules' arithmetic and the alerts' path over
# real daemons; it waits for Prometheus's evaluations (~100 s). The
# sanitizer build's coverage of the daemons comes from the other suites, so
# there it is skipped (FB_SANITIZED_PROMETHEUS=1 runs it anyway).
if [ "${FB_SANITIZED:-0}" = 1 ] && [ "${FB_SANITIZED_PROMETHEUS:-0}" != 1 ]; then
	echo "SKIP: sanitizer build (the plain build runs it; FB_SANITIZED_PROMETHEUS=1 to run here)"
	exit 77
fi
for bin in "$PROMETHEUS" "$PROMTOOL" "$ALERTMANAGER" "$AMTOOL"; do
	if [ ! -x "$bin" ]; then
		echo "SKIP: $bin not installed (Debian packages prometheus, prometheus-alertmanager)"
		exit 77
	fi
done
for bin in "$FUSEBOXD" "$MOCKLLM"; do
	if [ ! -x "$bin" ]; then
		echo "missing $bin (build it first)" >&2
		exit 1
	fi
done

T=$(mktemp -d /tmp/fusebox-prom-XXXXXX)
PIDS=()
PASS=0
FAIL=0
FAILED_NAMES=()

cleanup() {
	local i
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		kill "${PIDS[$i]}" 2>/dev/null || true
	done
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		wait "${PIDS[$i]}" 2>/dev/null || true
	done
	if [ "$FAIL" -eq 0 ] && [ -z "${FB_KEEP_TMP:-}" ]; then
		rm -rf "$T"
	else
		echo "# files kept in $T" >&2
	fi
}
trap cleanup EXIT

ok() {
	PASS=$((PASS + 1))
	echo "ok - $1"
}
not_ok() { # name reason
	FAIL=$((FAIL + 1))
	FAILED_NAMES+=("$1")
	echo "not ok - $1: $2"
}
check() { # name rc details
	if [ "$2" -eq 0 ]; then ok "$1"; else not_ok "$1" "$3"; fi
}
finish() {
	echo "# $PASS passed, $FAIL failed"
	if [ "$FAIL" -gt 0 ]; then
		printf '#   failed: %s\n' "${FAILED_NAMES[@]}"
		exit 1
	fi
	exit 0
}
die() {
	not_ok "$1" "$2"
	finish
}

# Seconds since the start, for the log: where the test's time goes.
T0=$EPOCHREALTIME
elapsed() { python3 -c "print('%.1f' % ($EPOCHREALTIME - $T0))"; }

# wait_until SECONDS COMMAND...: retry (every 0.2 s) until it succeeds.
# A wait of more than 2 s is logged with its length (a timed-out one too).
wait_until() {
	local secs=$1 i t=$EPOCHREALTIME rc=1
	shift
	for ((i = 0; i < secs * 5; i++)); do
		if "$@" >/dev/null 2>&1; then
			rc=0
			break
		fi
		sleep 0.2
	done
	if [ "$i" -ge 10 ]; then
		echo "#   [$(elapsed) s] waited $(python3 -c "print('%.1f' % ($EPOCHREALTIME - $t))") s$([ $rc = 0 ] || echo ' (timed out)') for: $*"
	fi
	return $rc
}

# "listening on 127.0.0.1:PORT" in a file (up to 10 s): PORT.
wait_port() {
	local i port
	for ((i = 0; i < 200; i++)); do
		port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$1" 2>/dev/null | head -1)
		if [ -n "$port" ]; then
			echo "$port"
			return 0
		fi
		sleep 0.05
	done
	return 1
}

free_port() {
	python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

pq() { python3 "$here/pq.py" "$@"; }

# --- the mock and three daemons ---
"$MOCKLLM" --listen 127.0.0.1:0 >"$T/mock.out" 2>"$T/mock.err" &
PIDS+=($!)
MOCK_PORT=$(wait_port "$T/mock.out") || die mock_start "$(cat "$T/mock.err")"
curl -s -m 5 -o /dev/null -X PUT -d '{"status": 500}' "http://127.0.0.1:$MOCK_PORT/_mock/backends/down-v1"

printf 'op-token operator alice\nview-token viewer victor\n' >"$T/tokens"
chmod 600 "$T/tokens"
printf 'view-token\n' >"$T/viewer.token"

backend() { # name
	printf '{"name": "%s", "url": "http://127.0.0.1:%s/b/%s/v1/chat/completions", "model": "m",
	  "breaker": {"mode": "consecutive", "failure_threshold": 3, "open_ms": 600000}}' "$1" "$MOCK_PORT" "$1"
}
RULES='"rules": {"default": {"result": {"intent": "other"}, "confidence": 0.3}},'
route() { # name backend rules-or-empty
	printf '{"name": "%s", "budget_ms": 3000, "retry": {"max_retries": 0},
	  "targets": [{"backend": "%s", "weight": 100}],
	  "prompt": {"system": "Classify.", "user": "{{input}}"},
	  "output": {"schema": {"type": "object", "required": ["intent"], "properties": {"intent": {"type": "string"}}}},
	  %s "on_exhausted": "error",
	  "slo": {"service_availability": 0.999, "smart_availability": 0.99}}' "$1" "$2" "$3"
}
write_config() { # n intent-backend ticket-backend ticket-rules
	mkdir -p "$T/h$1"
	cp "$T/tokens" "$T/h$1/tokens"
	cat >"$T/h$1/fusebox.json" <<EOF
{"listen": "127.0.0.1:0", "database": "fusebox.db", "tokens_file": "tokens",
 "backends": [$(backend good-v1), $(backend down-v1), $(backend spare-v1)],
 "routes": [$(route intent "$2" "$RULES"), $(route ticket "$3" "$4")]}
EOF
}
declare -A HPORT
start_host() { # n
	(cd "$T/h$1" && exec "$FUSEBOXD" -c fusebox.json >d.out 2>d.err) &
	PIDS+=($!)
	HPORT[$1]=$(wait_port "$T/h$1/d.out") || die "start_h$1" "$(cat "$T/h$1/d.err")"
}
write_config 1 good-v1 good-v1 "$RULES"
write_config 2 down-v1 down-v1 ""
write_config 3 good-v1 good-v1 "$RULES"
for n in 1 2 3; do start_host "$n"; done
hurl() { echo "http://127.0.0.1:${HPORT[$1]}"; }
hop() { # n method path body
	curl -s -m 5 -o /dev/null -w '%{http_code}' -X "$2" -H 'Authorization: Bearer op-token' \
		-H 'Content-Type: application/json' -d "$4" "$(hurl "$1")$3"
}
code=$(hop 3 PUT /v1/routes/ticket/level '{"level": 2, "reason": "fleet test"}')$(hop 3 PUT \
	/v1/backends/spare-v1/breaker '{"state": "forced_open", "reason": "fleet test"}')
check h3_operator_state "$([ "$code" = 200200 ]; echo $?)" "PUT level / breaker answered $code"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$(hurl 1)/metrics")
check metrics_needs_viewer "$([ "$code" = 401 ]; echo $?)" "GET /metrics without a token: $code"

# --- Alertmanager (the shipped config, receivers pointed at a local webhook) ---
HOOK_PORT=$(free_port)
mkdir -p "$T/hook"
python3 - "$HOOK_PORT" "$T/hook" >"$T/hook.log" 2>&1 <<'EOF' &
import http.server, os, sys, itertools
port, out = int(sys.argv[1]), sys.argv[2]
seq = itertools.count()
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(os.path.join(out, "%s-%03d.json" % (self.path.strip("/"), next(seq))), "wb") as f:
            f.write(body)
        self.send_response(200)
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
EOF
PIDS+=($!)
AM_PORT=$(free_port)
AM_URL=http://127.0.0.1:$AM_PORT
sed "s#http://127\.0\.0\.1:9095/#http://127.0.0.1:$HOOK_PORT/#" \
	"$SOURCE_ROOT/contrib/alertmanager/alertmanager.yml" >"$T/alertmanager.yml"
"$AMTOOL" check-config "$T/alertmanager.yml" >"$T/amtool.out" 2>&1
check amtool_check_config $? "$(cat "$T/amtool.out")"
mkdir -p "$T/am-data"
"$ALERTMANAGER" --config.file="$T/alertmanager.yml" --storage.path="$T/am-data" \
	--web.listen-address="127.0.0.1:$AM_PORT" --cluster.listen-address= \
	--log.level=warn >"$T/am.log" 2>&1 &
PIDS+=($!)

# --- Prometheus: 1 s scrapes and evaluations, the shipped rules ---
# The shipped groups evaluate every 30 s (fusebox-slo-recording) and every
# minute (fusebox-slo-budget): waiting for those would be most of this
# test. Prometheus loads a copy whose group interval: lines read
# $RULES_INTERVAL instead, and nothing else differs (asserted: the rules'
# names, expressions, labels and annotations are the shipped ones byte for
# byte). FB_PROM_SHIPPED_INTERVALS=1 loads the shipped file itself.
# 10 s: the console check below compares the screen with two CLI reports
# taken a few seconds apart, which holds while at most one evaluation of a
# group falls between them.
RULES_INTERVAL=10s
SHIPPED_RULES=$SOURCE_ROOT/contrib/prometheus/fusebox-rules.yml
if [ "${FB_PROM_SHIPPED_INTERVALS:-0}" = 1 ]; then
	RULES_FILE=$SHIPPED_RULES
else
	RULES_FILE=$T/fusebox-rules.yml
	sed -E "s/^(    interval: ).*\$/\1$RULES_INTERVAL/" "$SHIPPED_RULES" >"$RULES_FILE"
	python3 - "$SHIPPED_RULES" "$RULES_FILE" "$RULES_INTERVAL" >"$T/rules-diff.out" 2>&1 <<'EOF2'
import re, sys
shipped, copy = (open(f).read().split("\n") for f in sys.argv[1:3])
assert len(shipped) == len(copy), (len(shipped), len(copy))
diff = [i for i, (a, b) in enumerate(zip(shipped, copy)) if a != b]
intervals = [i for i, a in enumerate(shipped) if re.match(r"^    interval: ", a)]
# the groups' interval lines, and only them, changed (the two groups that
# have one: the 30-second and the one-minute group)
assert diff == intervals and len(intervals) == 2, ([shipped[i] for i in diff], [shipped[i] for i in intervals])
assert all(copy[i] == "    interval: " + sys.argv[3] for i in diff), [copy[i] for i in diff]
print("#   the copy's intervals: " + ", ".join("%s -> %s" % (shipped[i].split()[1], copy[i].split()[1]) for i in diff))
EOF2
	check rules_copy_differs_only_in_intervals $? "$(cat "$T/rules-diff.out")"
	cat "$T/rules-diff.out"
	"$PROMTOOL" check rules "$RULES_FILE" >"$T/promtool-rules.out" 2>&1
	check promtool_check_rules_copy $? "$(cat "$T/promtool-rules.out")"
fi
PROM_PORT=$(free_port)
PROM_URL=http://127.0.0.1:$PROM_PORT
cat >"$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $RULES_FILE
alerting:
  alertmanagers:
    - static_configs:
        - targets: ['127.0.0.1:$AM_PORT']
scrape_configs:
  - job_name: fusebox
    authorization:
      credentials_file: $T/viewer.token
    static_configs:
      - targets: ['127.0.0.1:${HPORT[1]}']
        labels: {instance: h1}
      - targets: ['127.0.0.1:${HPORT[2]}']
        labels: {instance: h2}
      - targets: ['127.0.0.1:${HPORT[3]}']
        labels: {instance: h3}
EOF
"$PROMTOOL" check config "$T/prometheus.yml" >"$T/promtool.out" 2>&1
check promtool_check_config $? "$(cat "$T/promtool.out")"
mkdir -p "$T/prom-data"
"$PROMETHEUS" --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/prom-data" \
	--web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$T/prom.log" 2>&1 &
PIDS+=($!)
ready() { [ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "$1/-/ready")" = 200 ]; }
wait_until 30 ready "$AM_URL" || die alertmanager_ready "$(tail -5 "$T/am.log")"
wait_until 30 ready "$PROM_URL" || die prometheus_ready "$(tail -5 "$T/prom.log")"
scraped_at_zero() {
	[ "$(pq scalar "$PROM_URL" 'count(fusebox_slo_eligible_calls_total{kind="service"} == 0)')" = 6 ]
}
wait_until 30 scraped_at_zero
check scrapes_three_hosts $? "$(pq vector "$PROM_URL" 'up' 2>&1)"

# --- bounded traffic: sequential calls, 5 s each at most ---
hcall() { # n route count [allow_llm]
	local i body='{"input": "refund please"}'
	[ -n "${4:-}" ] && body='{"input": "later", "allow_llm": false}'
	for ((i = 0; i < $3; i++)); do
		curl -s -m 5 -o /dev/null -X POST -H 'Content-Type: application/json' -d "$body" \
			"$(hurl "$1")/v1/routes/$2/call"
	done
}
hcall 1 intent 30
hcall 1 intent 6 no-llm
hcall 1 ticket 10
hcall 2 intent 10
hcall 2 ticket 6
hcall 3 intent 20
hcall 3 ticket 8

# --- the daemons' own counters, summed: the exact fleet figures ---
: >"$T/counters"
: >"$T/slo1h"
for n in 1 2 3; do
	pq counters "$(hurl "$n")" view-token | sed "s/^/h$n /" >>"$T/counters"
	pq slo "$(hurl "$n")" view-token | sed "s/^/h$n /" >>"$T/slo1h"
done
python3 - "$T/counters" "$T/slo1h" >"$T/exact" <<'EOF'
import sys
sums, per, hosts = {}, {}, {}
for line in open(sys.argv[1]):
    h, route, kind, e, g = line.split()
    s = sums.setdefault((route, kind), [0, 0])
    s[0] += int(e); s[1] += int(g)
    per.setdefault((route, kind), []).append(int(g) / int(e) if int(e) else None)
    hosts.setdefault((route, kind), []).append((int(e), int(g)))
# The imbalance P = sum of the positive g_i - R e_i (R the fleet ratio):
# with each host's rate() scaled by its own f_i in [1, 1 + eps], the ratio
# of the scaled sums is within eps * P / E of R (see the tolerance below).
imbalance = {}
for rk, (e, g) in sums.items():
    imbalance[rk] = sum(max(gi - g / e * ei, 0) for ei, gi in hosts[rk])
# /v1/slo's 1 h window must hold the same calls as the counters
for line in open(sys.argv[2]):
    h, route, total, smart_total, sg, mg = line.split()
    c = {(l.split()[1], l.split()[2]): l.split()[3:] for l in open(sys.argv[1]) if l.startswith(h + " ")}
    assert c[(route, "service")] == [total, sg] and c[(route, "smart")] == [smart_total, mg], (h, route)
for (route, kind), (e, g) in sorted(sums.items()):
    avg = sum(x for x in per[(route, kind)] if x is not None) / len(per[(route, kind)])
    print(route, kind, e, g, repr(g / e), repr(avg), repr(imbalance[(route, kind)] / e))
EOF
check slo_api_matches_metrics $? "GET /v1/slo 1h vs /metrics: $(cat "$T/counters" "$T/slo1h")"
echo "# exact fleet figures (route kind eligible good ratio hosts-average imbalance):"
sed 's/^/#   /' "$T/exact"
exact() { # route kind field
	awk -v r="$1" -v k="$2" -v f="$3" '$1 == r && $2 == k { print $f }' "$T/exact"
}
[ "$(exact intent smart 3)" = 60 ] && [ "$(exact intent smart 4)" = 50 ] &&
	[ "$(exact intent service 3)" = 66 ] && [ "$(exact ticket service 4)" = 18 ]
check traffic_as_planned $? "$(cat "$T/exact")"

# Prometheus's sums of the raw counters: exactly the daemons'.
prom_sums_exact() {
	local route kind e g ratio pe pg
	while read -r route kind e g ratio _ _; do
		pe=$(pq scalar "$PROM_URL" "sum(fusebox_slo_eligible_calls_total{route=\"$route\",kind=\"$kind\"})")
		pg=$(pq scalar "$PROM_URL" "sum(fusebox_slo_good_total{route=\"$route\",kind=\"$kind\"})")
		[ "$pe" = "$e" ] && [ "$pg" = "$g" ] || return 1
	done <"$T/exact"
}
wait_until 20 prom_sums_exact
check prometheus_sums_equal_daemon_counters $? \
	"$(pq vector "$PROM_URL" 'sum by (route, kind) (fusebox_slo_eligible_calls_total)')"
SCRAPED=$(date +%s)

# Evaluations are read 2 s in the past, so that none is being written.
past() { python3 -c 'import time; print("%.3f" % (time.time() - 2))'; }
# The recorded series, evaluated after that scrape and late enough that
# every host has at least MIN_SAMPLES samples (1 s scrapes) in the window:
# n in the tolerance below, eps = 1.1 / (n - 1), so 2.75 % at most; the
# 2 calls allowed on 60 in fleet_calls_1h need n >= 34. (With the shipped
# intervals this was "60 s after Prometheus's start", some 55 samples.)
MIN_SAMPLES=41
recorded_fresh() { # metric [min-count]
	local t at n
	at=$(past)
	t=$(pq scalar "$PROM_URL" "min(timestamp($1))" "$at")
	[ "$t" != none ] && [ "$(pq scalar "$PROM_URL" "count($1)" "$at")" = "${2:-4}" ] &&
		python3 -c "import sys; sys.exit(0 if float('$t') > $SCRAPED + 1 else 1)" || return 1
	n=$(pq scalar "$PROM_URL" "min(count_over_time(fusebox_slo_eligible_calls_total[1h] @ $t))" "$at")
	[ "$n" != none ] && [ "$n" -ge "$MIN_SAMPLES" ]
}
wait_until 120 recorded_fresh route_kind:fusebox_slo_availability:ratio_rate1h
check recorded_1h_fresh $? "$(pq vector "$PROM_URL" 'timestamp(route_kind:fusebox_slo_availability:ratio_rate1h)' 2>&1)"

# The tolerance: not a guess but rate()'s extrapolation. Every counter was
# scraped at 0 before the traffic, so rate() extrapolates only past the
# window's last sample, by less than 1.1 sample intervals: each host's
# rates are its exact increase times f_i in [1, 1 + eps], eps = 1.1 / (n -
# 1) with n the fewest samples a host has in the window at that evaluation.
# The fleet ratio is then within eps * P / E of the summed counters' (P/E
# the imbalance above); a route whose hosts all have the same ratio is exact.
close() { # got want tol
	python3 -c "import sys; g, w, t = float('$1'), float('$2'), float('$3'); sys.exit(0 if abs(g - w) <= t else 1)"
}
# recorded METRIC ROUTE KIND WINDOW [AT]: "value tolerance n" of the
# evaluation latest at AT (epoch seconds, default 2 s ago)
recorded() {
	local sel="$1{route=\"$2\",kind=\"$3\"}" at=${5:-$(past)} v ts n
	v=$(pq scalar "$PROM_URL" "$sel" "$at")
	ts=$(pq scalar "$PROM_URL" "timestamp($sel)" "$at")
	n=$(pq scalar "$PROM_URL" "min(count_over_time(fusebox_slo_eligible_calls_total[$4] @ $ts))" "$at")
	echo "$v $(python3 -c "print(1.1 / ($n - 1) * $(exact "$2" "$3" 7) + 1e-12)") $n"
}
maxdiff=0
: >"$T/tol"
: >"$T/tol30"
for w in 5m 1h; do
	while read -r route kind e g ratio avg _; do
		read -r got tol n < <(recorded route_kind:fusebox_slo_availability:ratio_rate$w "$route" "$kind" $w)
		close "$got" "$ratio" "$tol"
		check "fleet_availability_${w}_${route}_$kind" $? "Prometheus $got, summed counters $ratio, tolerance $tol"
		maxdiff=$(python3 -c "print(max($maxdiff, abs(float('$got') - $ratio)))")
		echo "#   $w $route $kind: Prometheus $got, summed counters $ratio (tolerance $tol, n $n), hosts' average $avg"
		[ "$w" = 1h ] && echo "$route $kind $tol" >>"$T/tol"
		read -r burn btol n < <(recorded route_kind:fusebox_slo_burn_rate:ratio_rate$w "$route" "$kind" $w)
		obj=$([ "$kind" = service ] && echo 0.999 || echo 0.99)
		close "$burn" "$(python3 -c "print((1 - $ratio) / (1 - $obj))")" "$(python3 -c "print($btol / (1 - $obj) + 1e-9)")"
		check "fleet_burn_${w}_${route}_$kind" $? "burn $burn, expected (1 - $ratio) / (1 - $obj)"
	done <"$T/exact"
done
echo "# largest |Prometheus - summed counters|: $maxdiff"
# The sum, not the hosts' average: intent smart is 50/60 = 83.3 %, the average 66.7 %.
got=$(pq scalar "$PROM_URL" 'route_kind:fusebox_slo_availability:ratio_rate1h{route="intent",kind="smart"}')
! close "$got" "$(exact intent smart 6)" 0.05
check fleet_is_sum_not_average $? "got $got, the average is $(exact intent smart 6)"
calls=$(pq scalar "$PROM_URL" 'route_kind:fusebox_slo_calls:increase1h{route="intent",kind="smart"}')
close "$calls" 60 2
check fleet_calls_1h $? "increase1h $calls, 60 calls"
pq vector "$PROM_URL" 'route_level:fusebox_hosts:count' >"$T/levels"
lv=$(awk '{print $1, $2}' "$T/levels" | tr '\n' ';')
[ "$lv" = "level=0,route=intent 3;level=0,route=ticket 2;level=2,route=ticket 1;" ]
check fleet_levels $? "$lv"
bo=$(pq vector "$PROM_URL" 'backend:fusebox_breaker_open_hosts:count' | awk '{print $1, $2}' | tr '\n' ';')
[ "$bo" = "backend=down-v1 1;backend=good-v1 0;backend=spare-v1 1;" ]
check fleet_breakers_open $? "$bo"

# The 30-day budget group (once a minute).
wait_until 90 recorded_fresh route_kind:fusebox_slo_error_budget_remaining:ratio_rate30d
check recorded_30d_fresh $? "$(pq vector "$PROM_URL" 'timestamp(route_kind:fusebox_slo_error_budget_remaining:ratio_rate30d)' 2>&1)"
while read -r route kind e g ratio _ _; do
	at=$(past) # one evaluation for both
	read -r a30 tol n < <(recorded route_kind:fusebox_slo_availability:ratio_rate30d "$route" "$kind" 30d "$at")
	left=$(pq scalar "$PROM_URL" "route_kind:fusebox_slo_error_budget_remaining:ratio_rate30d{route=\"$route\",kind=\"$kind\"}" "$at")
	obj=$([ "$kind" = service ] && echo 0.999 || echo 0.99)
	close "$a30" "$ratio" "$tol" && close "$left" "$(python3 -c "print(1 - (1 - $a30) / (1 - $obj))")" 1e-9
	check "fleet_budget_30d_${route}_$kind" $? "availability30d $a30 (exact $ratio, tolerance $tol), budget left $left"
	echo "$route $kind $tol" >>"$T/tol30"
	echo "#   30d $route $kind: availability $a30 (exact $ratio), budget left $left"
done <"$T/exact"

# --- the alerts: Prometheus -> Alertmanager -> the page receiver ---
ALERT='fusebox_error_budget_burn'
am_has_page() {
	pq am "$AM_URL" "alertname=\"$ALERT\"" 'route="intent"' 'kind="smart"' 'window="1h"' >"$T/am.json" &&
		grep -q '"severity":"page"' "$T/am.json"
}
wait_until 45 am_has_page
check alert_reaches_alertmanager $? "$(pq vector "$PROM_URL" 'ALERTS' 2>&1 | head -20)"
python3 - "$T/am.json" <<'EOF'
import json, sys
a = json.load(open(sys.argv[1]))
assert len(a) == 1, a
a = a[0]
want = {"alertname": "fusebox_error_budget_burn", "route": "intent", "kind": "smart",
        "window": "1h", "factor": "14.4", "severity": "page", "source": "fleet"}
assert all(a["labels"].get(k) == v for k, v in want.items()), a["labels"]
assert "instance" not in a["labels"], a["labels"]   # a fleet alert: across the hosts
assert a["annotations"]["hosts"].startswith("h2 100%"), a["annotations"]
assert "h1" not in a["annotations"]["hosts"] and "h3" not in a["annotations"]["hosts"], a["annotations"]
assert a["annotations"]["runbook_url"] == "docs/OBSERVABILITY.md#fusebox_error_budget_burn"
assert a["status"]["state"] == "active", a["status"]
print("#   %s %s: hosts %s" % (a["labels"], a["status"]["state"], a["annotations"]["hosts"]))
EOF
check alert_labels_route_kind_severity_source_hosts $? "$(cat "$T/am.json")"
# the fleet page inhibits the fleet ticket of the same alertname, route and kind
ticket_suppressed() {
	pq am "$AM_URL" "alertname=\"$ALERT\"" 'route="intent"' 'kind="smart"' 'window="1d"' >"$T/am1d.json" &&
		grep -q '"state":"suppressed"' "$T/am1d.json" && grep -q '"severity":"ticket"' "$T/am1d.json"
}
wait_until 20 ticket_suppressed
check ticket_inhibited_by_page $? "$(cat "$T/am1d.json")"
page_delivered() { grep -ls '"route":"intent"' "$T"/hook/page-*.json | xargs -r grep -l '"source":"fleet"' | grep -q .; }
wait_until 40 page_delivered
check page_receiver_gets_it $? "webhook got: $(ls "$T/hook")"

# --- tui/prom.c through prom_driver (the build's flags and libraries) ---
DRIVER=$T/prom_driver
python3 - "$BUILD_ROOT" "$SOURCE_ROOT" "$DRIVER" >"$T/cc.log" 2>&1 <<'EOF'
import json, os, shlex, subprocess, sys
build, src, out = sys.argv[1:4]
cmds = json.load(open(os.path.join(build, "compile_commands.json")))
e = next(c for c in cmds if c["file"].endswith("tui/fmt.c"))
args = shlex.split(e["command"])
keep, skip = [], False
for a in args[1:]:
    if skip:
        skip = False
        continue
    if a in ("-o", "-c", "-MF", "-MQ"):
        skip = True
        continue
    if a in ("-MD",) or a.endswith("fmt.c"):
        continue
    keep.append(a)
libs = subprocess.run(["pkg-config", "--libs", "libcurl", "libcjson"], check=True,
                      stdout=subprocess.PIPE, universal_newlines=True).stdout.split()
cmd = ([args[0]] + keep + ["-I" + os.path.join(src, "tui"), "-o", out,
       os.path.join(src, "tests/prometheus/prom_driver.c"), os.path.join(src, "tui/prom.c"),
       os.path.join(build, "tui/libfbtui.a"), os.path.join(build, "daemon/core/libfbcore.a")]
       + libs + ["-lm", "-pthread"])
print(" ".join(cmd))
sys.exit(subprocess.run(cmd, cwd=e["directory"]).returncode)
EOF
check prom_driver_builds $? "$(cat "$T/cc.log")"

"$DRIVER" query "$PROM_URL" 'route_kind:fusebox_slo_availability:ratio_rate1h{route="intent"}' >"$T/q.out" 2>&1
grep -q '^{__name__="route_kind:fusebox_slo_availability:ratio_rate1h",kind="smart",route="intent"} 0\.8' "$T/q.out" &&
	[ "$(wc -l <"$T/q.out")" = 2 ]
check prom_query_vector $? "$(cat "$T/q.out")"
now_ms=$(($(date +%s) * 1000))
"$DRIVER" range "$PROM_URL" 'route_level:fusebox_hosts:count{route="ticket",level="2"}' \
	$((now_ms - 20000)) "$now_ms" 5000 >"$T/r.out" 2>&1
[ "$(wc -l <"$T/r.out")" = 1 ] && [ "$(awk '{print NF}' "$T/r.out")" -ge 3 ] &&
	grep -q '^{__name__="route_level:fusebox_hosts:count",level="2",route="ticket"} 1 1' "$T/r.out"
check prom_query_range_matrix $? "$(cat "$T/r.out")"
"$DRIVER" query "$PROM_URL" 'sum(rate(fusebox_calls_total[5m]' >"$T/bad.out" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q '^fusebox: Prometheus at http://127.0.0.1:[0-9]* refused the query "sum(rate(fusebox_calls_total\[5m\]": bad_data: .*parse error' "$T/bad.out" &&
	grep -q '^rc 2 error_type bad_data$' "$T/bad.out"
check prom_bad_expression_says_why $? "rc $rc: $(cat "$T/bad.out")"
"$DRIVER" query "http://127.0.0.1:$(free_port)" 'up' >"$T/down.out" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q '^fusebox: Prometheus unreachable: cannot reach http://127.0.0.1:[0-9]*: ' "$T/down.out" &&
	grep -q '^rc 1 ' "$T/down.out"
check prom_unreachable_says_so $? "rc $rc: $(cat "$T/down.out")"
"$DRIVER" query "$(hurl 1)" 'up' >"$T/notprom.out" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q 'not a Prometheus API answer' "$T/notprom.out" && grep -q '^rc 3 ' "$T/notprom.out"
check prom_not_prometheus $? "rc $rc: $(cat "$T/notprom.out")"
"$DRIVER" slo "$PROM_URL" nosuch >"$T/nosuch.out" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q 'has no fleet series for route "nosuch"' "$T/nosuch.out"
check prom_slo_unknown_route $? "rc $rc: $(cat "$T/nosuch.out")"

# --- the report: fusebox slo --prometheus once wired, else prom_driver slo ---
if [ -x "$FUSEBOX" ] && "$FUSEBOX" slo --help 2>&1 | grep -q -- '--prometheus'; then
	SLO=("$FUSEBOX" slo --prometheus "$PROM_URL")
	SLOJ=("$FUSEBOX" --json slo --prometheus "$PROM_URL")
	echo "# the report through: fusebox slo --prometheus"
else
	SLO=("$DRIVER" slo "$PROM_URL")
	SLOJ=("$DRIVER" slo "$PROM_URL" --json)
	echo "# the report through: prom_driver slo (fusebox slo --prometheus not wired yet)"
fi
"${SLO[@]}" >"$T/slo.out" 2>&1
rc=$?
sed 's/^/#   /' "$T/slo.out"
[ "$rc" = 0 ] &&
	grep -Eq "^intent \(fleet, $PROM_URL\): objectives service 99\.9%, smart 99%; 3 hosts: L0 3$" "$T/slo.out" &&
	grep -Eq "^ticket \(fleet, $PROM_URL\): objectives service 99\.9%, smart 99%; 3 hosts: L0 2 · L2 1$" "$T/slo.out" &&
	[ "$(grep -Ec '^WINDOW +CALLS +SERVICE +BURN +SMART +BURN$' "$T/slo.out")" = 2 ]
check slo_report_headers $? "rc $rc"
python3 - "$T/slo.out" "$T/exact" "$T/tol" "$T/tol30" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
exact = {(l.split()[0], l.split()[1]): float(l.split()[4]) for l in open(sys.argv[2])}
# the tolerance of each window's evaluation: the 1 h one for the 30-second
# group, the 30 d one for the budget group (a later evaluation has more
# samples, so a smaller bound)
tol1 = {(l.split()[0], l.split()[1]): float(l.split()[2]) for l in open(sys.argv[3])}
tol30 = {(l.split()[0], l.split()[1]): float(l.split()[2]) for l in open(sys.argv[4])}
for route in ("intent", "ticket"):
    block = text.split(route + " (fleet")[1].split("\n\n")[0]
    rows = {l.split()[0]: l.split() for l in block.splitlines()[1:] if re.match(r"^(5m|30m|1h|2h|6h|1d|3d|30d) ", l)}
    assert list(rows) == ["5m", "30m", "1h", "2h", "6h", "1d", "3d", "30d"], rows
    for w, cells in rows.items():
        _, calls, sv, sb, sm, mb = cells
        for kind, cell in (("service", sv), ("smart", sm)):
            got = float(cell.rstrip("%")) / 100
            # printed with 2 decimals: half a unit of 0.01 % more
            tol = (tol30 if w == "30d" else tol1)[(route, kind)]
            assert abs(got - exact[(route, kind)]) <= tol + 5e-5 + 1e-12, (route, w, kind, cell, exact, tol)
        assert sb.endswith("x") and mb.endswith("x"), cells
    assert re.search(r"^error budget left \(30d\): service -?[0-9.]+% \(burn 1h [0-9.]+x\), "
                     r"smart -?[0-9.]+% \(burn 1h [0-9.]+x\)$", block, re.M), block
fl = re.search(r"^fleet alerts firing: (.*)$", text.split("intent (fleet")[1], re.M).group(1)
assert fl.startswith("page smart 1h (14.4x), page smart 6h (6x), ticket smart 1d (3x), ticket smart 3d (1x)"), fl
EOF
check slo_report_figures $? "see the report above"
"${SLOJ[@]}" intent >"$T/slo.json" 2>&1
python3 - "$T/slo.json" "$T/exact" "$T/tol" "$T/tol30" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
exact = {(l.split()[0], l.split()[1]): float(l.split()[4]) for l in open(sys.argv[2])}
tol1 = {(l.split()[0], l.split()[1]): float(l.split()[2]) for l in open(sys.argv[3])}
tol30 = {(l.split()[0], l.split()[1]): float(l.split()[2]) for l in open(sys.argv[4])}
assert [r["route"] for r in j["routes"]] == ["intent"], j
r = j["routes"][0]
assert r["objectives"] == {"service_availability": 0.999, "smart_availability": 0.99}, r["objectives"]
assert r["hosts_by_level"] == {"0": 3, "1": 0, "2": 0, "3": 0}, r["hosts_by_level"]
for w in ("5m", "1h", "30d"):
    tol = (tol30 if w == "30d" else tol1)[("intent", "smart")]
    assert abs(r["windows"][w]["smart_availability"] - exact[("intent", "smart")]) <= tol, r["windows"][w]
    assert r["windows"][w]["service_availability"] == 1, r["windows"][w]
left = r["error_budget"]["smart"]["remaining"]
assert abs(left - (1 - (1 - r["windows"]["30d"]["smart_availability"]) / 0.01)) < 1e-6, r["error_budget"]
assert {(a["severity"], a["window"]) for a in r["alerts"]} >= {("page", "1h"), ("page", "6h")}, r["alerts"]
EOF
check slo_report_json $? "$(head -c 2000 "$T/slo.json")"
if [ "${SLO[0]}" = "$FUSEBOX" ]; then
	"$FUSEBOX" slo --prometheus "http://127.0.0.1:$(free_port)" >"$T/cli-down.out" 2>&1
	rc=$?
	[ "$rc" = 1 ] && grep -q '^fusebox: Prometheus unreachable: ' "$T/cli-down.out"
	check cli_prometheus_unreachable $? "rc $rc: $(cat "$T/cli-down.out")"
	"$FUSEBOX" slo --prometheus "$PROM_URL" intent ticket >"$T/cli-usage.out" 2>&1
	rc=$?
	check cli_prometheus_usage "$([ "$rc" = 2 ]; echo $?)" "rc $rc: $(cat "$T/cli-usage.out")"
fi

# --- the console's SLO screen, fleet mode (f), in tmux ---
# The numbers on screen are the CLI's (run just before the console starts
# and just after the capture: each cell equals one of the two, as the
# recording rules may evaluate in between); an unreachable Prometheus gives
# the error line and the console keeps answering keys.
if command -v tmux >/dev/null 2>&1 && [ -x "$FUSEBOX" ]; then
	TMX=(tmux -L "fbprom$$" -f /dev/null)
	pane() { "${TMX[@]}" capture-pane -p -t "$1" >"$T/pane.$1" 2>/dev/null; }
	pane_has() { pane "$1" && grep -Eq -- "$2" "$T/pane.$1"; }
	console() { # session cols rows prometheus-url
		"${TMX[@]}" new-session -d -s "$1" -x "$2" -y "$3" \
			"env LC_ALL=C.UTF-8 TERM=xterm-256color FUSEBOX_URL=$(hurl 1) FUSEBOX_TOKEN_FILE=$T/viewer.token FUSEBOX_PROMETHEUS=$4 $FUSEBOX; sleep 600"
	}
	for geo in 80x24 200x50; do
		s=fleet$geo
		"$FUSEBOX" slo --prometheus "$PROM_URL" >"$T/tui-before.$geo" 2>&1
		console "$s" "${geo%x*}" "${geo#*x}" "$PROM_URL"
		wait_until 10 pane_has "$s" '^ connected  fuseboxd '
		"${TMX[@]}" send-keys -t "$s" 4
		wait_until 5 pane_has "$s" 'objectives: service'
		"${TMX[@]}" send-keys -t "$s" f
		# the fleet report drawn: its header, then the window rows (at
		# column 0) down to 3d with their figures
		wait_until 15 pane_has "$s" '^ intent \(1/2\) fleet: '
		wait_until 15 pane_has "$s" '^3d +[0-9]'
		pane "$s"
		cp "$T/pane.$s" "$T/tui-intent.$geo"
		"${TMX[@]}" send-keys -t "$s" j
		wait_until 5 pane_has "$s" '^ ticket \(2/2\) fleet'
		wait_until 5 pane_has "$s" '^30d +[0-9]'
		pane "$s"
		cp "$T/pane.$s" "$T/tui-ticket.$geo"
		"$FUSEBOX" slo --prometheus "$PROM_URL" >"$T/tui-after.$geo" 2>&1
		# f again: this daemon's SLOs are back
		"${TMX[@]}" send-keys -t "$s" f
		wait_until 5 pane_has "$s" 'objectives: service 99\.9%'
		check "tui_fleet_toggles_back_$geo" $? "$(cat "$T/pane.$s")"
		"${TMX[@]}" kill-session -t "$s" 2>/dev/null
		sed 's/^/#   /' "$T/tui-ticket.$geo"
		python3 - "$geo" "$T/tui-intent.$geo" "$T/tui-ticket.$geo" "$T/tui-before.$geo" "$T/tui-after.$geo" <<'EOF'
import re, sys
geo, pi, pt, before, after = sys.argv[1:6]
cols = int(geo.split("x")[0])
WIN = ["5m", "30m", "1h", "2h", "6h", "1d", "3d", "30d"]

def cli(path):
    text = open(path).read()
    out = {}
    for route in ("intent", "ticket"):
        block = text.split(route + " (fleet")[1].split("\n\n")[0]
        rows = {l.split()[0]: l.split()[1:] for l in block.splitlines()
                if l.split() and l.split()[0] in WIN}
        b = re.search(r"^error budget left \(30d\): service (\S+) \(burn 1h \S+\), smart (\S+) ", block, re.M)
        al = re.search(r"^fleet alerts firing: (.*)$", block, re.M).group(1)
        hosts = re.search(r"; (.*hosts?.*)$", block.splitlines()[0]).group(1)
        out[route] = (rows, b.groups(), al, hosts)
    return out

cb, ca = cli(before), cli(after)
for route, path in (("intent", pi), ("ticket", pt)):
    screen = open(path).read()
    lines = screen.splitlines()
    assert len(lines) <= int(geo.split("x")[1]) and all(len(l) <= cols for l in lines), screen
    head = [l for l in lines if l.startswith(" %s (" % route)][0]
    assert " fleet: objectives service 99.9%  smart 99%  " in head, head
    tail = head.rstrip().split("smart 99%  ", 1)[1]
    assert tail == cb[route][3] or (len(head) >= cols - 1 and cb[route][3].startswith(tail.rstrip("~…"))), (head, cb[route][3])
    assert re.search(r"^ ?WINDOW +CALLS +SERVICE +BURN +SMART +BURN *$", screen, re.M), screen
    rows = {l.split()[0]: l.split()[1:] for l in lines if l.split() and l.split()[0] in WIN}
    assert list(rows) == WIN, rows
    for w in WIN:
        ok = rows[w] == cb[route][0].get(w) or rows[w] == ca[route][0].get(w)
        assert ok, (route, w, rows[w], cb[route][0].get(w), ca[route][0].get(w))
    m = re.search(r"^ error budget left \(30d\): service (\S+)  smart (\S+)$", screen, re.M)
    assert m and (m.groups() == cb[route][1] or m.groups() == ca[route][1]), (m and m.groups(), cb[route][1], ca[route][1])
    fl = re.search(r"^ fleet alerts firing: (.*)$", screen, re.M).group(1).rstrip()
    want = (cb[route][2], ca[route][2])
    if len(" fleet alerts firing: " + fl) < cols - 2:
        assert fl in want, (fl, want)
    else:   # cut at the terminal's edge
        assert any(w.startswith(fl.rstrip("~…")) for w in want), (fl, want)
    sp = re.search(r"^ service 5m, last 1h: (.*) \(99%-100%\)$", screen, re.M)
    assert sp and sp.group(1).strip(), screen
    st = re.search(r"^ prometheus http://127\.0\.0\.1:\d+: updated \S+ ago", screen, re.M)
    assert st, screen
# the ticket route spends budget (h2's 503s): its service burn is above 1 somewhere
t = {l.split()[0]: l.split()[1:] for l in open(pt).read().splitlines() if l.split() and l.split()[0] in WIN}
assert any(float(c[2].rstrip("x")) > 1 for c in t.values() if c[2] != "-"), t
print("#   %s: %d windows x 2 routes equal the CLI's" % (geo, len(WIN)))
EOF
		check "tui_fleet_mode_equals_cli_$geo" $? "before/after: $(cat "$T/tui-before.$geo")"
	done

	# Unreachable: nobody listens on that loopback port.
	s=fleetdown
	down=http://127.0.0.1:$(free_port)
	console "$s" 80 24 "$down"
	wait_until 10 pane_has "$s" '^ connected  fuseboxd '
	"${TMX[@]}" send-keys -t "$s" 4 f
	wait_until 15 pane_has "$s" '^ prometheus unreachable since [0-9]{2}:[0-9]{2}:[0-9]{2} \(cannot reach http://127\.0\.0\.1:'
	check tui_fleet_unreachable_error_line $? "$(cat "$T/pane.$s")"
	# keys still answer: j does nothing harmful, 1 shows the Overview, 4 f the line again
	"${TMX[@]}" send-keys -t "$s" j 1
	overview() { pane "$1" && ! grep -q 'prometheus unreachable' "$T/pane.$1" && ! grep -q 'f fleet' "$T/pane.$1"; }
	wait_until 5 overview "$s"
	check tui_fleet_unreachable_keys_answer $? "$(cat "$T/pane.$s")"
	"${TMX[@]}" send-keys -t "$s" 4
	wait_until 5 pane_has "$s" '^ prometheus unreachable since'
	check tui_fleet_unreachable_stays_on_screen $? "$(cat "$T/pane.$s")"
	"${TMX[@]}" kill-server 2>/dev/null
else
	echo "# SKIP the console's fleet mode: tmux or $FUSEBOX missing"
fi

# --- the Grafana dashboard's expressions, on this Prometheus ---
python3 "$here/check_grafana.py" "$SOURCE_ROOT/contrib/grafana/fusebox-fleet.json" \
	"$SOURCE_ROOT/contrib/prometheus/fusebox-rules.yml" "$PROM_URL" >"$T/grafana.out" 2>&1
check grafana_expressions_parse_and_answer $? "$(cat "$T/grafana.out")"
sed 's/^/#   /' "$T/grafana.out"

finish
