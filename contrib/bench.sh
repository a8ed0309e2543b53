#!/usr/bin/env bash
# fusebox benchmarks: build a release tree, run every benchmark of
# tests/bench/, and regenerate tests/bench/RESULTS.md.
#
#   contrib/bench.sh [--quick] [--no-profile] [--build DIR] [NAME...]
#
# NAME: overhead waiting deadline fallback logging console profile
# (default: all). --quick: 3 repetitions of 3 s instead of 5 of 5 s.
# Installs nothing. Needs the Debian packages (contrib/dev.sh bench deps):
#   wrk nginx-light curl sqlite3 tmux        (the benchmarks)
#   linux-perf valgrind                       (the profile; skipped without)
# nginx-light is used only as a process started by the bench on 127.0.0.1
# with its own temp config; its system service is never needed (install
# it with a policy-rc.d that forbids starting services, as dev.sh does).
# Everything runs on loopback, bounded in count and time; about 15 min.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
build=build-bench
quick=0
profile=1
names=()
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--no-profile) profile=0 ;;
	--build) build=$2; shift ;;
	-h | --help) sed -n '2,16p' "$0"; exit 0 ;;
	-*) echo "bench.sh: unknown option $1" >&2; exit 2 ;;
	*) names+=("$1") ;;
	esac
	shift
done
all=(overhead waiting deadline fallback logging console)
[ "$profile" = 0 ] || all+=(profile)
[ ${#names[@]} -gt 0 ] || names=("${all[@]}")
if [ "$quick" = 1 ]; then
	export BENCH_REPS=${BENCH_REPS:-3} BENCH_SECS=${BENCH_SECS:-3}
fi
export BENCH_REPS=${BENCH_REPS:-5} BENCH_SECS=${BENCH_SECS:-5}

log() { printf '== %s\n' "$*" >&2; }

# What is missing, as Debian package names; the benchmarks needing it skip.
missing=()
for p in wrk:wrk nginx:nginx-light curl:curl sqlite3:sqlite3 tmux:tmux perf:linux-perf valgrind:valgrind; do
	command -v "${p%%:*}" >/dev/null 2>&1 || missing+=("${p#*:}")
done
[ ${#missing[@]} -eq 0 ] || log "missing (apt-get install ${missing[*]}): the benchmarks needing them are skipped"

# A release build; others may be editing the tree: retry a failed build.
log "building $build (release)"
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" -Dbuildtype=release >/dev/null
fi
for try in 1 2 3; do
	if ninja -C "$build" >"$build/bench-build.log" 2>&1; then
		break
	fi
	[ "$try" = 3 ] && { tail -20 "$build/bench-build.log" >&2; exit 1; }
	log "build failed (tree being edited?), retrying in 30 s"
	sleep 30
done
# The bench tools: meson targets when tests/meson.build has subdir('bench'),
# else compiled here directly against the build's static libraries.
mkdir -p "$build/tests/bench"
if ninja -C "$build" -t targets all 2>/dev/null | grep -q '^tests/bench/holdcalls:'; then
	ninja -C "$build" tests/bench/holdcalls tests/bench/slowupstream tests/bench/bench_rules \
		tests/bench/bench_lograte db/bench_store >>"$build/bench-build.log" 2>&1
else
	log "tests/bench is not a meson subdir yet: compiling the bench tools directly"
	cc=${CC:-cc}
	flags=(-O2 -std=gnu11 -D_GNU_SOURCE -Wall -Wextra)
	libs=$(pkg-config --libs libcjson libcurl libmicrohttpd sqlite3)
	inc=(-Idaemon -Idb $(pkg-config --cflags libcjson))
	$cc "${flags[@]}" -o "$build/tests/bench/holdcalls" tests/bench/holdcalls.c
	$cc "${flags[@]}" -o "$build/tests/bench/slowupstream" tests/bench/slowupstream.c
	$cc "${flags[@]}" "${inc[@]}" -o "$build/tests/bench/bench_rules" tests/bench/bench_rules.c \
		"$build/daemon/libfbcore.a" "$build/db/libfbstore.a" $libs -lm -lpthread
	$cc "${flags[@]}" "${inc[@]}" -o "$build/tests/bench/bench_lograte" tests/bench/bench_lograte.c \
		"$build/db/libfbstore.a" $libs -lpthread
	ninja -C "$build" db/bench_store >>"$build/bench-build.log" 2>&1
fi

out=$(mktemp -d "${TMPDIR:-/tmp}/fusebox-bench-results-XXXXXX")
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
for n in "${names[@]}"; do
	log "$n"
	t0=$SECONDS
	rc=0
	bash "tests/bench/$n.sh" "$build" . >"$out/$n.txt" 2>"$out/$n.err" || rc=$?
	echo "$rc $((SECONDS - t0))" >"$out/$n.rc"
	grep -E '^(RESULT|SKIP)' "$out/$n.txt" >&2 || true
	[ "$rc" = 0 ] || [ "$rc" = 77 ] || { log "$n exited $rc:"; tail -5 "$out/$n.err" >&2; }
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- tests/bench/RESULTS.md ----
md=tests/bench/RESULTS.md
table() { # file: the RESULT lines as a Markdown table
	awk '/^RESULT / {
		key = $2; val = $3; unit = $4; tgt = ""; ver = "";
		for (i = 5; i <= NF; i++) {
			if ($i ~ /^target:/) { tgt = substr($i, 8) }
			else if ($i == "met" || $i == "MISSED" || $i == "n/a") { ver = $i }
			else { unit = unit " " $i }
		}
		if (ver == "MISSED") ver = "**MISSED**";
		printf "| `%s` | %s | %s | %s | %s |\n", key, val, unit, tgt, ver
	}' "$1"
}
missed() { # every MISSED line with how far off it is
	awk '/^RESULT / && / MISSED$/ {
		key = $2; v = $3 + 0; t = ""; for (i = 4; i <= NF; i++) if ($i ~ /^target:/) t = substr($i, 8);
		op = t; sub(/[0-9.].*$/, "", op); tv = substr(t, length(op) + 1) + 0;
		if (op == "=") how = sprintf("%s instead of %s", $3, tv);
		else if (tv != 0 && v != 0 && op ~ /</) how = sprintf("%s %s: %.1fx the target (%+g)", $3, $4, v / tv, v - tv);
		else if (tv != 0 && op ~ />/) how = sprintf("%s %s: %.0f%% of the target", $3, $4, 100 * v / tv);
		else how = $3 " " $4;
		printf "- `%s` (target %s): %s\n", key, t, how
	}' "$@"
}
{
	cat <<EOF
# fusebox benchmarks: results

Regenerated by \`contrib/bench.sh\` (do not edit by hand); started $started,
commit \`$(git rev-parse --short HEAD 2>/dev/null || echo '?')\`$(git diff --quiet 2>/dev/null || echo ' + uncommitted changes'), build \`$build\` (release).

## Machine

- $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM, kernel $(uname -r)
- load average at start: $load_start; at the end: $load_end (a shared machine: other
  people's builds and fuzzers run alongside, so every figure carries their noise)
- open-file limit: $(ulimit -n) (hard $(ulimit -Hn))
- tools: $(wrk --version 2>&1 | head -1 | cut -d' ' -f1-2), $(nginx -v 2>&1 | cut -d' ' -f3), libcurl $(curl-config --version 2>/dev/null | cut -d' ' -f2), libmicrohttpd $(pkg-config --modversion libmicrohttpd), SQLite $(pkg-config --modversion sqlite3)

## Method

- Everything on 127.0.0.1, every load bounded in count and time; each
  benchmark starts its own processes in a temp dir and ends them by pid.
- Repetitions: $BENCH_REPS x ${BENCH_SECS} s per wrk point, direct and daemon
  interleaved; the figure is the median of the repetitions. The baseline of
  each ratio is measured in the same run (nginx direct for the overhead and
  the fallback p99, holdcalls -> slowupstream direct for the HTTP/1.1
  waiting levels, holdcalls -> nginx over HTTP/1.1 for the HTTP/2 ones).
- Daemon config (\`tests/bench/lib.sh\` \`bench_config\`): one route, one
  backend, output validation (schema, enum, deny pattern, confidence), full
  logging (\`log.inputs\` true, \`raw_output_bytes\` 4096), rules as fallback.
- CPU: \`/proc/<pid>/stat\` utime+stime (10 ms ticks) over the run divided by
  the calls served. Latency: wrk's percentiles (c=1: 1 thread; c=64: 2
  threads). Waiting calls and deadlines: \`tests/bench/holdcalls\` (one
  connection per call, time from request written to answer read).
- Tools: \`tests/bench/holdcalls.c\` (client holding N calls),
  \`tests/bench/slowupstream.c\` (answers every request exactly D ms after it
  arrived; the HTTP/2 levels use nginx's echo_sleep over TLS h2 instead),
  \`tests/bench/bench_lograte.c\` (writer thread vs a call rate),
  \`tests/bench/bench_rules.c\`, \`tests/bench/bench_store.c\`.

EOF
	echo "## Missed targets"
	echo
	if ! missed "$out"/*.txt 2>/dev/null | grep .; then
		echo "None."
	fi
	echo
	for n in "${names[@]}"; do
		[ "$n" = profile ] && continue
		read -r rc secs <"$out/$n.rc"
		echo "## $n ($(sed -n 's/^# [a-z]*: [0-9]* cores, .*, load \(.*\)$/load at start \1/p' "$out/$n.txt" | head -1); ${secs} s)"
		echo
		if [ "$rc" = 77 ]; then
			echo "Skipped: $(grep -m1 '^SKIP' "$out/$n.txt" | cut -d' ' -f2-)"
			echo
			continue
		fi
		[ "$rc" = 0 ] || { echo "The benchmark failed (exit $rc):"; echo; echo '```'; tail -5 "$out/$n.err"; echo '```'; echo; }
		echo "| figure | value | unit | target | verdict |"
		echo "|---|---|---|---|---|"
		table "$out/$n.txt"
		echo
		grep '^# ' "$out/$n.txt" | sed 1d | sed 's/^# /- /'
		echo
	done
	if [ -f "$out/profile.txt" ]; then
		echo "## Profile (fuseboxd under the overhead load)"
		echo
		echo '```'
		grep -v '^RESULT' "$out/profile.txt" | grep -v '^sending command'
		echo '```'
		echo
	fi
	sed -n '/^## Why the targets are missed/,/^ANALYSIS_END$/p' "$here/contrib/bench.sh" | sed '$d'
} >"$md.new"
mv "$md.new" "$md"
log "wrote $md (raw outputs in $out)"
exit 0

# The analysis below is copied into RESULTS.md as it stands; the figures
# above it are regenerated on every run.
: <<'ANALYSIS'
## Why the targets are missed, and what was done

The daemon is one event loop: since this round the engine thread also runs
the HTTP server (libmicrohttpd in external epoll mode), so a request is
read, routed, answered from the rules or sent upstream, and written in
turns of one thread, with no hand-over between threads; the SQLite writer
(nice 10) is the only other busy thread. All runtime state (breakers,
bulkheads, health, levels, the idempotency table) lives on that thread
unlocked. Against the previous round (three threads, a hand-over each way
per call), on this machine: added latency at c=1 160 -> ~85-110 us (met
in some runs, not all), fallback p50 ~80 -> ~36 us (that of nginx),
fallback CPU ~100 -> ~55-70 us per call, c=64 throughput ~5.7-10 k ->
~10 k calls/s (the loop is saturated either way), 10,000 waiting calls
all answered by the model (over HTTP/2, see below), the daemon's own
clock within the deadline under a burst of 1,000. What is still missed:

- **Throughput at c=64 and CPU per call.** The loop runs one full core at
  ~10 k calls/s against nginx (the same-run nginx alone: ~55-78 k/s), so
  the ratio is ~0.16x, not 0.35x. The target needs ~20 k calls/s, i.e.
  two cores' worth of daemon at ~80 us per call; one loop cannot use the
  second core (wrk and nginx share it). From the profile above: about a
  quarter of the daemon's samples are the hypervisor's interrupt return
  (`pvm_irq_enable`: syscalls and loopback softirqs; ~9 syscalls per call
  on the engine: epoll_wait, recv x3, send x2, epoll_ctl ~2, libcurl's
  liveness poll() x2), the SQLite writer ~25-30 % (inserts into calls and
  attempts with their indexes), the rest user space: libcurl's
  per-transfer setup (easy handle, URL parse), cJSON parsing of the
  request and of the upstream reply, validation. Done in this round:
  bodies printed without cJSON's sprintf+sscanf per number
  (`json_print`), the result printed once, no thread hop, the writer
  niced. Next: shard the engine (one loop per core with SO_REUSEPORT,
  breaker and bulkhead counts shared through atomics) -- the only way to
  0.35x here; then pool curl easy handles per backend.
- **Fallback p99 at c=1**: the p50 is that of nginx; the p99 (0.2-2.3 ms
  across the repetitions above, median 0.4 ms) follows the machine: the
  same-run nginx p99 moves between 0.1 and 0.35 ms, and a call through
  the daemon is exposed to the same preemptions about twice as long
  (plus the writer's commits on the other core). The rule engine itself
  is 1-4 us per input; the 200 us p99 end to end needs a quiet or pinned
  core.
- **Deadline under a burst, caller's clock.** On the daemon's own clock
  the burst meets the target since the crowd reserve (calls whose
  deadlines fall within 10 ms of each other spread their cuts ahead of
  the deadline by the measured cost of one answer, `budget_crowd_*`;
  docs/ENGINE-NOTES.md). On the caller's clock the burst is late by the
  time the loop needs to accept and read 1,000 requests (~100 us each:
  ~100 ms for the last): a budget can only start when the daemon has read
  the request. Paced calls meet the target on both clocks.
- **10,000 waiting calls: RSS.** Over HTTP/1.1 they need 20,040
  descriptors and this machine's hard limit is 20,000 (root lacks
  CAP_SYS_RESOURCE): that level runs over HTTP/2 (`http_version` "2":
  ~120 upstream connections). All answered by the model, none late,
  threads constant; RSS is ~37 KB per waiting call (MHD connection pool
  16 KiB, partly touched; libcurl easy handle and buffers ~10 KB; call,
  attempt, request ~4 KB): ~385 MB at 10,000, over the 150 MB target. An
  8 KiB MHD pool saves ~3.5 KB per call (measured at 3,000: 125 -> 115
  MB) but MHD then closes connections whose headers exceed ~7.5 KB
  without an answer; not taken. Reaching 150 MB needs ~13 KB per call:
  no MHD connection and no libcurl handle per waiting call (a leaner
  HTTP front, or h2 from callers too).

Met: added latency at c=1 (in this run), 10,000 waiting calls answered
by the model with constant threads, deadline precision paced (both
clocks) and burst (daemon clock), the rule engine (1-4 us per input of
200 characters with 100 rules), the SQLite writer (bench_store
~0.2-0.3 M rows/s; bench_lograte loses no row far above 20 k calls/s),
the console (< 3 % of a core with 200 routes and 200 backends).
ANALYSIS_END
ANALYSIS
