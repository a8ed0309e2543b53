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

The daemon is one event loop: the engine thread runs the HTTP server
(libmicrohttpd in external epoll mode) and the upstream transfers
(libcurl multi), so a request is read, routed, answered from the rules or
sent upstream, and written in turns of one thread; the SQLite writer is
the only other busy thread. All runtime state lives on that thread
unlocked.

This round (session 3), found with the profile above and same-run A/B
measurements (the machine's own noise is +-30 % between repetitions, so
each change was measured against the previous binary back to back):

- **Generated request ids sort by time** (UUIDv7-shaped: wall-clock ms
  first). With random ids every insert into the unique
  (route, request_id) index of `calls` landed on a random leaf page, and
  once that index outgrew SQLite's page cache the writer reread and
  rewrote about one page per call (`pread`/`pwrite` in the profile).
  Writer CPU per call at c=64: 28-38 us -> 9-10 us.
- **libcurl easy handles are reused** (a pool of up to 128, reset between
  attempts): no `curl_easy_init`/cleanup per attempt and none of the large
  frees that made glibc consolidate its fastbins. Engine instructions per
  call (callgrind): 289 k -> 278 k.
- **Upstream request bodies are written straight into a buffer** (no cJSON
  tree per attempt; committed after the run above): 278 k -> 265 k
  engine instructions per call.
- **The SQLite writer runs SCHED_IDLE** (raised to normal scheduling while
  a backlog of cap/8 rows waits, while a caller waits on a commit, and at
  close; only where the policy can be undone). At nice 10 alone a batch
  still held a core a call needed: p99 at concurrency 1 through the model
  path 3.5 ms -> 0.52 ms in an A/B, rule-engine answers ~2.2 ms -> ~0.4 ms.
  No row lost: bench_lograte stays lossless to 60-100 k calls/s, and the
  end-to-end check finds every calls and attempts row.
- Tried and reverted: starting a call's budget when the kernel received
  the request (TCP_INFO `tcpi_last_data_recv`) during a busy stretch. One
  burst run went from +135 ms to +10 ms (p99, caller's clock), the next
  ones were no better than without it: from epoll_wait alone the loop
  cannot tell reliably that it has caught up, and even with exact arrival
  times 1,000 deadlines in the same few ms need more than the 50 ms
  reserve DESIGN.md allows to answer them all (~50-100 us each).

What is still missed, and why:

- **Throughput at c=64 and CPU per call.** One loop runs one core:
  ~10-13 k calls/s against nginx (nginx alone: ~40-70 k/s on this shared
  machine), ~0.16-0.19x, not 0.35x; that needs ~20 k calls/s, i.e. a
  second loop (SO_REUSEPORT shards with breaker and bulkhead counts
  shared) -- not built. CPU per call in quiet repetitions is ~80-95 us
  (engine ~70-85, writer ~9-10), in busy ones 100-160 us; the table gives
  this run's median. About half the engine's time is the kernel (the
  hypervisor's `pvm_irq_enable` on every syscall and loopback softirq):
  ~9 syscalls per call, set by the libraries (libmicrohttpd: recv until
  EAGAIN, epoll_ctl on suspend and on resume; libcurl 7.88: a liveness
  poll() before reusing a connection and one after sending). Of the
  user-space half, malloc/free is the largest part (cJSON trees for the
  request, the upstream body, the reply and the answer), then libcurl's
  request formatting and URL handling.
- **Fallback p99 at c=1** (~0.4 ms, target 0.2): the p50 is that of nginx
  and the rule engine is 1-4 us; with no log rows at all the p99 is
  0.13-0.16 ms (measured by switching the rows off in a test build). What
  remains comes with the writer's work even at SCHED_IDLE: scheduler
  tracepoints (perf, sched_wakeup/sched_switch, 1 s of this load) put the
  engine thread's wake-to-run delay at p50 23 us, p99 76 us, max 540 us,
  and the slowest cases followed the writer or the block layer's
  high-priority kworker (nice -20) completing the writer's WAL writes and
  checkpoint fsyncs on the engine's core: kernel work no thread policy
  of ours can lower. Pinning the writer and the engine thread to
  different cores would; not done (it fights the cpusets of containers).
- **Deadline under a burst, caller's clock.** On the daemon's clock the
  crowd reserve keeps the burst within the target; on the caller's clock
  the last requests wait ~100+ ms in the kernel before the loop reads
  them (about 0.1 ms each); see the reverted attempt above.
- **10,000 waiting calls: RSS.** Over HTTP/1.1 they need 20,040
  descriptors and this machine's hard limit is 20,000: that level runs
  over HTTP/2 (~110-120 upstream connections). All answered by the model,
  none late, threads constant; RSS ~37 KB per waiting call. massif at
  1,000 waiting calls, per call: libmicrohttpd's connection pool 16 KiB
  (zeroed, so resident), libcurl's upload buffer for h2 streams 16 KiB
  (its minimum), the easy handle 5.4 KB, the receive buffer 4 KiB, our
  call + attempt + request ~2 KB. Tried: mmap for allocations >= 16 KiB
  (glibc tunable): 128 -> 115 MB at 3,000 over h2, CPU per waiting call
  doubled; an 8 KiB MHD pool saves ~3.5 KB per call but then MHD drops
  requests with > ~7.5 KB of headers without an answer. 150 MB needs
  ~13 KB per call: no MHD connection and no libcurl handle per waiting
  call.

Met: added latency at c=1 in quiet repetitions (~80-100 us; busy ones
110-150), 10,000 waiting calls answered by the model with constant
threads, deadline precision paced (both clocks) and burst (daemon clock),
the rule engine (1-4 us per input of 200 characters with 100 rules), the
SQLite writer (bench_store ~0.3 M rows/s; no row lost at 20 k calls/s),
the console (< 3 % of a core with 200 routes and 200 backends).
ANALYSIS_END
ANALYSIS
