#!/usr/bin/env bash
# fusebox benchmarks: build a release tree, run every benchmark of
# tests/bench/, and regenerate tests/bench/RESULTS.md.
#
#   contrib/bench.sh [--quick] [--no-profile] [--build DIR] [NAME...]
#
# NAME: overhead facade stream waiting deadline fallback logging console hedge
# adaptive fleet_console profile
# (default: all). --quick: 3 repetitions of 3 s instead of 5 of 5 s.
# Installs nothing. Needs the Debian packages (contrib/dev.sh bench deps):
#   wrk nginx-light haproxy curl sqlite3 tmux (the benchmarks)
#   linux-perf valgrind                       (the profile; skipped without)
# nginx-light and haproxy are used only as processes started by the bench
# on 127.0.0.1 with their own temp configs; their system services are never
# needed (install them with a policy-rc.d that forbids starting services,
# as dev.sh does).
# Everything runs on loopback, bounded in count and time; about 18 min.
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
	-h | --help) sed -n '2,17p' "$0"; exit 0 ;;
	-*) echo "bench.sh: unknown option $1" >&2; exit 2 ;;
	*) names+=("$1") ;;
	esac
	shift
done
all=(overhead facade stream waiting deadline fallback logging console hedge adaptive fleet_console)
[ "$profile" = 0 ] || all+=(profile)
[ ${#names[@]} -gt 0 ] || names=("${all[@]}")
if [ "$quick" = 1 ]; then
	export BENCH_REPS=${BENCH_REPS:-3} BENCH_SECS=${BENCH_SECS:-3}
fi
export BENCH_REPS=${BENCH_REPS:-5} BENCH_SECS=${BENCH_SECS:-5}

log() { printf '== %s\n' "$*" >&2; }

# What is missing, as Debian package names; the benchmarks needing it skip.
missing=()
for p in wrk:wrk nginx:nginx-light haproxy:haproxy curl:curl sqlite3:sqlite3 tmux:tmux perf:linux-perf valgrind:valgrind; do
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
	ninja -C "$build" tests/bench/holdcalls tests/bench/slowupstream tests/bench/ssettfb tests/bench/barerelay tests/bench/bench_rules \
		tests/bench/bench_lograte db/bench_store >>"$build/bench-build.log" 2>&1
else
	log "tests/bench is not a meson subdir yet: compiling the bench tools directly"
	cc=${CC:-cc}
	flags=(-O2 -std=gnu11 -D_GNU_SOURCE -Wall -Wextra)
	libs=$(pkg-config --libs libcjson libcurl libmicrohttpd sqlite3)
	inc=(-Idaemon -Idb $(pkg-config --cflags libcjson))
	$cc "${flags[@]}" -o "$build/tests/bench/holdcalls" tests/bench/holdcalls.c
	$cc "${flags[@]}" -o "$build/tests/bench/slowupstream" tests/bench/slowupstream.c
	$cc "${flags[@]}" -pthread -o "$build/tests/bench/ssettfb" tests/bench/ssettfb.c
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
alloc="glibc malloc"
if ldd "$build/daemon/fuseboxd" 2>/dev/null | grep -q jemalloc; then
	alloc="jemalloc $(pkg-config --modversion jemalloc 2>/dev/null)"
fi

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
- tools: $(wrk --version 2>&1 | head -1 | cut -d' ' -f1-2), $(nginx -v 2>&1 | cut -d' ' -f3), $(haproxy -v 2>/dev/null | head -1 | cut -d' ' -f1,3), libcurl $(curl-config --version 2>/dev/null | cut -d' ' -f2), libmicrohttpd $(pkg-config --modversion libmicrohttpd), SQLite $(pkg-config --modversion sqlite3), fuseboxd's allocator: $alloc

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

The daemon is one event loop: the engine thread runs the HTTP server
(libmicrohttpd in external epoll mode) and the upstream transfers
(libcurl multi), so a request is read, routed, answered from the rules or
sent upstream, and written in turns of one thread; the SQLite writer is
the only other busy thread. All runtime state lives on that thread
unlocked.

**Latest round (2026-12-02, issue 28).** Read this run against the one
before with care: the rule engine's bench, whose code has not changed
since, reads 6.6 us (any-near) and 5.2 us (mixed) on this machine today
at load 0.03, against 3.8 and 3.2 us in the previous RESULTS.md: the
machine runs the same instructions ~1.7x slower than it did, so every
CPU and latency figure above moved with it. Compare within a run (the
ratios), and instruction counts across runs. This round:

- **The libraries' floor** (`barerelay`, in facade.sh and stream.sh):
  libmicrohttpd and libcurl run as the engine runs them, relaying and
  nothing else. It costs ~2.5x HAProxy's CPU a request and ~4.5x its
  instructions (libcurl ~75 k of ~139 k) and adds ~HAProxy + 20 us at
  c=1, so the 1.5x-CPU and +20 us targets are out of reach for anything
  built on these libraries; the guard's own cost is the daemon's figure
  minus bare's (`*_minus_bare_*` above). The stream's first byte is
  ~HAProxy + 17 us through bare: there the guard's own ~40 us is what
  misses the +50 us target. libcurl formats every request header byte
  through its printf engine (~44 k instructions a request) and sends on
  a reused connection in ~27 us; the steps of the stream's first byte
  are in docs/ENGINE-NOTES.md ("The stream's first byte").
- **HAProxy's cost, counted the same way** (facade.sh): under callgrind
  with the same wrk c=4 load, HAProxy's whole request is 30.7 k
  user-space instructions; the daemon's `/call` ~275 k, split by
  library in the facade section above (libcurl's own ~82 k alone is
  2.7x HAProxy's request). With strace -c at c=64: HAProxy 4.1 syscalls
  a request, fuseboxd 10.9 (libcurl's two poll() a transfer,
  libmicrohttpd's epoll_ctl on suspend and resume and a recv to EAGAIN,
  the writer's pwrite). The 1.5x-HAProxy CPU target and the +20 us
  latency target are out of reach while libcurl, libmicrohttpd and a
  SQLite row per call do the work (docs/ENGINE-NOTES.md, "Against
  HAProxy").
- **No empty syscalls at low concurrency**: a pass accepts only when the
  listen socket's own epoll set woke the loop (accept4 3 -> 0 a request
  at c=1), and a new transfer's first step runs in the turn that
  started it (epoll_wait 5 -> 4.5); strace -c at c=1, engine thread:
  15.8 -> 12.7 syscalls a request.
- **The token estimate** counts ASCII eight bytes at a time (3.7 k
  instructions a call before).
- **jemalloc, wall clock** (same commit built both ways, alternated, 4
  rounds): CPU per request at c=64 -2 % (`/call`) and -6.5 % (facade),
  req/s +4 % / +11 %, latency at c=1 and RSS unchanged.

Session 5, measured against the previous binary back to back
(the machine's own noise is +-30 % between repetitions; A/B runs
alternate the two binaries and compare the quiet rounds):

- **The SQLite writer keeps off the first allowed CPU.** Left free, the
  scheduler kept moving the idle-priority writer next to the engine thread
  that woke it, and its WAL writes and checkpoint fsyncs completed on the
  engine's core. Where the process may use two or more CPUs (its affinity
  mask, so a cpuset is respected) the writer keeps to all but the first;
  the engine is never pinned (FUSEBOX_WRITER_AFFINITY=off turns it off).
  Same binary, the variable alternated, fallback at c=1, p99 per 5 s run:
  0.22-0.76 ms free, 0.14-0.24 ms restricted (one noisy round up to
  0.55); CPU per call at c=64, latency at c=1 and the writer's lossless
  rate unchanged.
- **Log rows' memory goes back to the engine.** Rows are made on the
  engine thread and freed by the writer: glibc's thread cache never got
  the blocks back, rows of 1 KiB and more made malloc consolidate its
  fast bins (perf: malloc_consolidate under store_row_make), and the
  writer's free()s took the engine's arena lock -- with the writer in
  SCHED_IDLE, the engine sometimes slept on that lock until the idle
  writer got a core back. The writer now hands the blocks back through
  spare lists (512 B .. 8 KiB, at most 1 MiB per size, locked only to
  pop and to splice). perf stat (syscall tracepoints, c=64): futex calls
  0.5-0.8 -> 0.02-0.03 per call; callgrind: engine 234.7 k -> 231.6 k
  instructions per call. Alternated A/B runs at c=64 could not separate
  the two binaries' CPU per call from the noise.
- **An overflow pass of the review queue is one commit** (the outage path,
  not a target here): auto-accepting 256 low items after a reload that
  lowered the capacity took 256 fsyncs on the engine thread, each
  stalling every call in flight; now one.
- The rule engine's figure is now the median of 5 runs (one run under
  load read 7.0 us for a case that reads 3.9 us on a quiet machine).
- Measured, not adopted (a new library needs asking first, asked on the
  issue): jemalloc or mimalloc preloaded into fuseboxd takes CPU per call
  from 81-87 to 66-77 us and throughput from 13-14 k to 15-17 k calls/s,
  RSS unchanged.

Earlier rounds: libcurl's sockets kept in the epoll set between attempts
(epoll_ctl 3.9 -> 1.9 per call), the answer and upstream bodies written
into buffers (no cJSON trees, no printf for numbers), one allocation per
header, promises (job accepts, review items) committed by the writer
without stopping the loop (forced L3 at c=64: 2,620 -> 25,380 accepts/s),
request ids that sort by time (writer CPU per call 28-38 -> 9-10 us),
reused easy handles, the writer in SCHED_IDLE (model path p99 at c=1 3.5
-> 0.5 ms), one event loop for HTTP and upstreams, the crowd reserve for
bursts of deadlines. Tried and reverted: starting a call's budget when
the kernel received the request (TCP_INFO `tcpi_last_data_recv`) during
a busy stretch: not reliable (one run +10 ms, the next ones no better
than without it); larger SQLite pages (16 and 64 KiB): the writer's CPU
per call doubled and tripled (each commit rewrites whole tail pages);
MHD_USE_TURBO: not one syscall fewer per call.

What is still missed, and why:

- **Throughput at c=64** (0.35x): one loop runs one core, 14-15 k
  calls/s against nginx in this run while nginx alone does 66-76 k/s.
  0.35x needs ~23 k calls/s: the engine thread is saturated (one core),
  and wrk, nginx and the writer share the other one; even a second loop
  (SO_REUSEPORT shards with breaker and bulkhead counts shared, not
  built) would need CPU per call near 50 us to get there on two cores.
  What a call costs: ~8 syscalls on the engine thread, set by the
  libraries (libmicrohttpd: a recv until EAGAIN after resuming and an
  epoll_ctl on suspend and on resume; libcurl 7.88: a liveness poll()
  before reusing a connection and one after sending), about half of the
  engine's time in the kernel (the hypervisor's `pvm_irq_enable` on every
  syscall and loopback softirq); in user space malloc/free is the largest
  item (~13 % of the daemon's CPU in perf: cJSON trees for the request,
  the upstream reply and the validated result; libcurl's own), then
  libcurl formatting the request head one byte at a time (~47 k
  instructions per call); the writer thread ~9 us per call.
- **Fallback p99 at c=1** (target 0.2 ms): this run 0.26-0.71 ms (median
  0.36) while nginx's own p99 was 0.11-0.16 ms; the run before it, at
  8309c8e with the same code, 0.18-0.30 ms (median 0.186: met). The p50
  is that of nginx plus 5 us and the rule engine is 1-4 us; with no log
  rows at all the p99 is 0.13-0.16 ms (a test build). What remains comes
  with the writer's work: scheduler tracepoints put the engine thread's
  wake-to-run delay at p50 23 us, p99 76 us, max 540 us, the slowest
  cases after the writer or the block layer's high-priority kworker
  (nice -20) completing the writer's I/O on the engine's core. Keeping
  the writer off one CPU (above) removed most of it in A/B runs; in the
  bench's own loop, which runs nginx's baseline between the daemon's
  repetitions, the tail is less steady.
- **Deadline under a burst, caller's clock.** On the daemon's clock the
  crowd reserve keeps the burst within the target; on the caller's clock
  the last requests wait ~100-250 ms in the kernel before the loop reads
  them (0.1-0.25 ms each: a new connection and a new upstream connection
  per call). Meeting 2 ms there would mean reading 1,000 new connections
  in 2 ms.
- **10,000 waiting calls: RSS.** Over HTTP/1.1 they need 20,040
  descriptors and this machine's hard limit is 20,000: that level runs
  over HTTP/2 (~105-120 upstream connections). All answered by the model,
  none late, threads constant; RSS ~37 KB per waiting call. massif at
  1,000 waiting calls, per call: libmicrohttpd's connection pool 16 KiB,
  libcurl's upload buffer for h2 streams 16 KiB (its minimum; libcurl
  7.88 sends an h2 request body through it and keeps it until the handle
  is reset), the easy handle 5.4 KB, the receive buffer 4 KiB, our call +
  attempt + request ~2 KB. Tried: mmap for allocations >= 16 KiB (glibc
  tunable): 128 -> 115 MB at 3,000 over h2, CPU per waiting call doubled;
  an 8 KiB MHD pool saves ~3.5 KB per call but then MHD drops requests
  with > ~7.5 KB of headers without an answer. 150 MB needs ~13 KB per
  call: no MHD connection and no libcurl handle per waiting call.

Met: added latency at c=1 (73 us), CPU per call at c=64 (this run
72.1-79.3 us, median 74.5; the session's other runs: 73.6 on a quiet
machine, 79.8, and 115 in one run on a busy machine), 10,000 waiting
calls answered by the model with constant threads, deadline precision
paced (both clocks) and burst (daemon clock), the rule engine (1.3-3.9
us per input of 200 characters with 100 rules), the SQLite writer
(bench_store ~0.32 M rows/s; no row lost at 20 k calls/s, lossless to
80 k), the console (< 1 % of a core with 200 routes and 200 backends).
### The tail (issue 23): hedge and adaptive, 2026-12-02, this machine under other sessions' load

`tests/bench/hedge.sh` (mock: 100 ms, 5 % at 3 s; 2,000 calls at 8 in
flight per route after 200 warm-up calls; hedge `"after": "p95"`,
`min_ms` 50, `max_ms` 1000, `targets` same): plain p50 101.6 ms / p99
3002.5 ms, hedged p50 101.4 ms / p99 221.3 ms, **p99 ratio 0.074** (target
<= 0.4), **extra upstream requests 4.8 %** (target <= 8 %), all 2,000
answered by the model. The first run, with only successful first-byte
times in the quantile's window, hedged 13.7 %: the attempts that lose to
their hedge never show their first byte, so the window held only the fast
mode and its p95 hedged 5 % of normal calls too. Their age at
cancellation is now kept as a (lower-bound) sample.

`tests/bench/adaptive.sh` (mock: 90-110 ms, knee 12, `knee_exp` 2 — past
the knee the server's throughput falls; 60 callers = 5x the knee for 20 s
per route; `max_concurrent` 60, budget 3 s): fixed limit goodput 24.6
answers/s (llm p99 2,752 ms); adaptive (`tolerance` 1.2, `queue_ms` 20)
goodput 102.0/s, **ratio 4.15** (target >= 1.5), admitted p99 191 ms
against an uncongested p99 of 114 ms, **1.68x** (target <= 2). With
CONFIG.md's default `tolerance` 1.5 the limit settles higher (17 against
15) and the admitted p99 is 2.1-2.2x the uncongested one (goodput ratio
3.9-4.0): met for goodput, missed for the p99 — the gradient lets latency
grow to ~1.5x its baseline before it bites, plus the queue wait. The
default stays 1.5 (Netflix's); routes that need admitted calls near the
uncongested latency set 1.2.
ANALYSIS_END
ANALYSIS
