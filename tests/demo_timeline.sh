#!/usr/bin/env bash
# The demo plays docs/DEMO.md's timeline: runs contrib/demo.sh --no-tui
# (about 3.5 minutes: the scenario is timed, it cannot be shortened) and
# checks, from its SQLite log and the t0 it records, that every promised
# event happens within TOL seconds (default 5) of the time the document
# gives, that nothing else moves a level, that both drift phases put
# low_confidence items in the review queue, that every call was answered,
# and that the closing story fits 80 columns.
#
#   tests/demo_timeline.sh BUILD_ROOT SOURCE_ROOT         run the demo, check
#   tests/demo_timeline.sh BUILD_ROOT SOURCE_ROOT RUN_DIR check a kept run
#
# Everything on 127.0.0.1 (contrib/demo.sh's processes); the run is bounded
# by the traffic's --duration and a timeout.
set -euo pipefail

build=$(cd "${1:?usage: demo_timeline.sh BUILD_ROOT SOURCE_ROOT [RUN_DIR]}" && pwd)
src=$(cd "${2:?usage: demo_timeline.sh BUILD_ROOT SOURCE_ROOT [RUN_DIR]}" && pwd)
TOL=${TOL:-5}

for p in sqlite3 curl timeout; do
	command -v "$p" >/dev/null || {
		echo "SKIP: $p is missing"
		exit 77
	}
done

if [ $# -ge 3 ]; then
	run=$(cd "$3" && pwd)
	out=$run/demo.out
	[ -f "$out" ] || out=
else
	run=$build/demo-run
	out=$build/demo-timeline.out
	# contrib/demo.sh stops its processes on TERM (the timeout's signal)
	BUILD_DIR=$build timeout 420 bash "$src/contrib/demo.sh" --no-tui >"$out" 2>&1 || {
		echo "FAIL: contrib/demo.sh exited $? (see $out)"
		tail -n 20 "$out"
		exit 1
	}
	cp "$out" "$run/demo.out"
fi

db=$run/var/fusebox.db
[ -f "$db" ] || {
	echo "FAIL: no database at $db"
	exit 1
}
[ -f "$run/t0_ms" ] || {
	echo "FAIL: no $run/t0_ms (contrib/demo.sh records the demo's clock there)"
	exit 1
}
t0=$(cat "$run/t0_ms")
fails=0

q() { sqlite3 -batch -noheader "$db" "$1"; }

# expect KIND SUBJECT DETAIL_PREFIX AT_S: the first such event within TOL of AT_S
expect() {
	local kind=$1 subject=$2 prefix=$3 want=$4 got
	got=$(q "SELECT (at - $t0) / 1000.0 FROM events WHERE kind = '$kind'
		AND subject = '$subject' AND detail LIKE '$prefix%' ORDER BY id LIMIT 1;")
	if [ -z "$got" ]; then
		printf 'FAIL  %-6s %-10s %-22s expected at %3d s, never happened\n' \
			"$kind" "$subject" "$prefix" "$want"
		fails=$((fails + 1))
	elif awk -v g="$got" -v w="$want" -v t="$TOL" 'BEGIN { d = g - w; exit !(d <= t && d >= -t) }'; then
		printf 'ok    %-6s %-10s %-22s at %5.1f s (doc %3d s)\n' "$kind" "$subject" "$prefix" "$got" "$want"
	else
		printf 'FAIL  %-6s %-10s %-22s at %5.1f s, doc says %d s (±%d)\n' \
			"$kind" "$subject" "$prefix" "$got" "$want" "$TOL"
		fails=$((fails + 1))
	fi
}

check() { # description, condition (0/1 from SQL)
	if [ "$2" = 1 ]; then
		echo "ok    $1"
	else
		echo "FAIL  $1"
		fails=$((fails + 1))
	fi
}

echo "== timeline (t0 = the mock's start, as in docs/DEMO.md)"
expect breaker primary-v2 'closed -> open' 23
expect breaker canary-v3 'closed -> open' 30
expect level intent 'auto 0 -> 2' 40
expect breaker small-v1 'closed -> open' 40
expect level ticket 'auto 0 -> 2' 40
expect breaker primary-v2 'open -> half_open' 53
expect breaker canary-v3 'open -> half_open' 60
expect breaker small-v1 'open -> half_open' 70
expect level intent 'auto 2 -> 1' 100
expect breaker small-v1 'half_open -> closed' 100
expect level intent 'auto 1 -> 0' 160
expect breaker primary-v2 'half_open -> closed' 160
expect level ticket 'auto 2 -> 1' 161
check "breakers: no other opening or closing (canary-v3 still half-open)" \
	"$(q "SELECT count(*) = 5 FROM events WHERE kind = 'breaker'
		AND (detail LIKE '%-> open%' OR detail LIKE '%-> closed%');")"
check "level changes: exactly the five above" \
	"$(q "SELECT count(*) = 5 FROM events WHERE kind = 'level';")"
check "the outage's L2 comes from the run of failures at L0, not the error rate" \
	"$(q "SELECT count(*) = 2 FROM events WHERE kind = 'level'
		AND detail LIKE 'auto 0 -> 2 (5 consecutive failures at L0%';")"

echo "== reviews (by reason: $(q "SELECT group_concat(n || ' ' || reason, ', ') FROM
	(SELECT reason, count(*) AS n FROM reviews GROUP BY reason ORDER BY n DESC);"))"
# the scenario's confidences: 0.55 in the format drift, 0.4 in the semantic
check "format drift (95-115 s): >= 20 low_confidence items at 0.55" \
	"$(q "SELECT count(*) >= 20 FROM reviews WHERE reason = 'low_confidence'
		AND abs(confidence - 0.55) < 0.001 AND created_at - $t0 BETWEEN 95000 AND 118000;")"
check "semantic drift (115-150 s): >= 20 low_confidence items at 0.4" \
	"$(q "SELECT count(*) >= 20 FROM reviews WHERE reason = 'low_confidence'
		AND abs(confidence - 0.4) < 0.001 AND created_at - $t0 BETWEEN 115000 AND 153000;")"
check "no low_confidence item outside the drift phases" \
	"$(q "SELECT count(*) = 0 FROM reviews WHERE reason = 'low_confidence'
		AND created_at - $t0 NOT BETWEEN 95000 AND 153000;")"
check "semantic drift: validation_schema failures on small-v1, answered from rules" \
	"$(q "SELECT count(*) >= 5 FROM attempts WHERE backend = 'small-v1'
		AND outcome = 'validation_schema';")"

echo "== calls"
check "every call answered (200 or 202), none failed" \
	"$(q "SELECT count(*) > 1000 AND sum(http_status NOT IN (200, 202)) = 0 FROM calls;")"
if [ -n "$out" ]; then
	check "the story (== what happened) fits 80 columns" \
		"$(sed -n '/^== what happened/,/^ended:/p' "$out" |
			awk 'length($0) > 80 { bad = 1 } END { print bad ? 0 : 1 }')"
	check "the story says what the review queue got" \
		"$(grep -q '^reviews: [0-9]* queued (.*low_confidence' "$out" && echo 1 || echo 0)"
fi

if [ "$fails" -gt 0 ]; then
	echo "$fails check(s) failed; run kept in $run"
	exit 1
fi
echo "all checks passed"
