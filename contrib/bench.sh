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
  the fallback p99, holdcalls -> slowupstream direct for waiting calls).
- Daemon config (\`tests/bench/lib.sh\` \`bench_config\`): one route, one
  backend, output validation (schema, enum, deny pattern, confidence), full
  logging (\`log.inputs\` true, \`raw_output_bytes\` 4096), rules as fallback.
- CPU: \`/proc/<pid>/stat\` utime+stime (10 ms ticks) over the run divided by
  the calls served. Latency: wrk's percentiles (c=1: 1 thread; c=64: 2
  threads). Waiting calls and deadlines: \`tests/bench/holdcalls\` (one
  connection per call, time from request written to answer read).
- Tools: \`tests/bench/holdcalls.c\` (client holding N calls),
  \`tests/bench/slowupstream.c\` (answers every request exactly D ms after it
  arrived), \`tests/bench/bench_lograte.c\` (writer thread vs a call rate),
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
## Why the targets are missed, and the fixes (next steps)

Hot spots are from the profile section above (perf: share of samples;
callgrind: instructions per call, user space). About 550 k instructions
per call in all, ~420 k of them on the engine thread, which is the
bottleneck: it runs one full core at 4-9 k calls/s (depending on the
machine's load) while the HTTP thread and the SQLite writer use a fraction
of theirs. The fixed cost of a call without any upstream (the fallback
path) is already ~100 us of CPU, so the 80 us/call target needs the
engine's own work cut by more than half.

Measured in a patched copy of the tree (not committed; fixes 1, 3 and 4
below, three one-line changes): 543 k -> 391 k instructions per call
(-28 %, callgrind, same load), throughput at c=64 5.6 k -> 8.0 k calls/s
in the same session, RSS at 9,900 waiting calls 386 -> 281 MB, engine
lag to start 9,900 waiting attempts 1.5 s -> 0.7 s (avg).

1. **`health_score()` sorts the backend's window on every call**
   (`daemon/health.c` `health_percentile()`: copy + `qsort` of up to 512
   durations, called from `model_step()` in `daemon/call.c` for every
   candidate). ~130 k instructions per call, ~23 % of the daemon's
   instructions, 9-12 % of the engine thread's samples. Fix: skip the
   score when the step has one candidate (`if (rc->health_weighting &&
   n > 1)`); for several candidates keep a per-backend p99 cached and
   recomputed at most every 100 ms (or at the 1 s cron), or a log-bucket
   latency histogram updated by `health_record()` (O(1) record,
   O(buckets) percentile). Expected: -23 % CPU per call.
2. **The answer is rendered with cJSON twice** (`call_answer_json()` from
   `log_call_row()` for the `response` column and again from `call_done()`
   in `daemon/api_call.c`), plus `cJSON_PrintUnformatted(result)`:
   ~76 k + ~17 k instructions per call; cJSON prints doubles with
   `sprintf("%1.15g")` + an `sscanf()` round-trip check (`__printf_fp`,
   `__isoc99_sscanf` ~39 k). Fix: render once in `call_answer()` and hand
   the same string to the calls row and to the HTTP answer (`store_put()`
   copies it); write the fixed fields with one `snprintf()` into a
   `struct buf`, cJSON only for `result`; print confidences with `%.6g`.
   Expected: -60 k instructions per call (~-11 %).
3. **libmicrohttpd zeroes its 32 KiB connection pool per request**
   (`memset` called from MHD's connection code: ~57 k instructions per call) and keeps
   32 KiB per connection, most of the RSS at 10,000 waiting calls (RSS
   grows ~40 KiB per waiting call: 118-133 MB at 3,000). Fix:
   `MHD_OPTION_CONNECTION_MEMORY_LIMIT` 8 KiB in `http_start()`
   (`daemon/http.c`; the URL is bounded at 4 KiB, bodies go through the
   upload callback). Expected: -10 % instructions, -24 KiB RSS per
   connection.
4. **libcurl's connection reuse scan is O(connections to the host)**
   (libcurl 7.88 `ConnectionExists()` walks every connection to
   host:port, busy ones included, for each new transfer): with thousands
   of calls in flight to one backend, starting N waiting calls is O(N^2)
   (~30 % of the engine's samples at 6,000 calls). Fix in
   `attempt_start()`: `CURLOPT_FRESH_CONNECT` when the backend already has
   many attempts in flight (e.g. `b->bulkhead.inflight > 64`, where an
   idle connection is unlikely), or spread a backend's transfers over
   several `CURLM` handles (shards of a few hundred).
5. **The engine drains its whole task queue before running timers**
   (`run_tasks()` in `daemon/engine.c` takes every posted call at once,
   and `check_multi_info()`/epoll batches run before the next
   `timerheap_run()`): when thousands of calls arrive together, deadline
   timers fire seconds late (daemon-side `elapsed_ms` ~9-10 s for an 8 s
   budget at 10,000 waiting calls, and 3-35 ms over at a burst of 1,000
   500 ms calls), so calls are late and fall to the rules. Fix: run at most
   ~64 tasks (or ~2 ms of work) per loop turn with `timerheap_run()`
   between batches; shed load at admission (answer from the rules at once,
   or 429) when the loop lags its timers by more than a few ms, so the
   deadline promise holds under overload.
6. **Per-call allocation churn**: `curl_easy_init()`/`cleanup()` and every
   setopt per attempt (URL parsed each time: `curl_url_get`,
   `curl_maprintf` ~26 k instructions), a new header `curl_slist`,
   `struct attempt`/`struct call`/request copies: malloc+free ~13 % of the
   daemon's samples; at thousands of concurrent calls the heap growth turns
   into page faults (`sysmalloc`, ~30 % of samples at 6,000 calls). Fix: a
   free list of easy handles per backend (`curl_easy_reset()` keeps the
   buffers; URL and constant options set once), `CURLOPT_BUFFERSIZE` 8 KiB
   for the small JSON answers, the constant headers prebuilt per backend.
7. **Three thread hops per call** (MHD thread -> engine through a mutex and
   an eventfd; engine -> MHD through `MHD_resume_connection()`; the
   writer's condition variable): on a loaded 2-core VM every wake-up is a
   chance to wait for a core, which is most of the added latency at
   concurrency 1 and of the p99s. Fix (after 1-6, which shrink the engine's
   work): run MHD from the engine's loop (`MHD_USE_EPOLL` without the
   internal thread, its epoll fd in the engine's set,
   `MHD_run_from_select()`/`MHD_run()` on readiness): no hop, no
   suspend/resume handshake.

About the p99 targets on this machine: the same-run baseline (nginx, one
process, answering at once) already has a p99 of ~0.8-1.5 ms at
concurrency 1 because other people's jobs share the 2 cores; the daemon's
p99 (3-4 ms on the fallback path, whose p50 is ~80 us) is the baseline's
noise multiplied by its three threads. The 200 us p99 target can only be
judged on a quiet machine (or with the daemon's threads pinned to
isolated cores); fixes 2 and 7 are what moves it.

Not bottlenecks: the SQLite writer (bench_store ~0.2-0.3 M rows/s;
bench_lograte loses no row far above 20 k calls/s, see logging), the rule
engine (1-4 us per input of 200 characters with 100 rules), the console
(< 1 % of a core with 200 routes and 200 backends).
ANALYSIS_END
ANALYSIS
