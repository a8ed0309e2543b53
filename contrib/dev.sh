#!/usr/bin/env bash
# fusebox developer script: the whole set-up on a fresh Debian 12 machine.
#   contrib/dev.sh deps            install missing Debian packages (apt-get)
#   contrib/dev.sh build           configure + build into build/
#   contrib/dev.sh test            deps + fresh build + every suite, then the
#                                  sanitizer build (address,undefined) suite
#   contrib/dev.sh demo [--no-tui] mock upstream + daemon + traffic + console
#   contrib/dev.sh bench           benchmarks (not part of the test suite)
#   contrib/dev.sh fuzz [SECONDS]  every libFuzzer target for SECONDS (default 60)
#   contrib/dev.sh reliability     fault matrix, crash loop, overload, valgrind;
#                                  "reliability soak MINUTES" for the soak
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"

PACKAGES=(meson ninja-build pkg-config gcc libc6-dev
	libmicrohttpd-dev libcurl4-openssl-dev libsqlite3-dev libcjson-dev
	libncurses-dev check tmux sqlite3 curl procps
	prometheus prometheus-alertmanager iproute2 nftables clang libclang-rt-14-dev nginx-light openssl
	clang-format libjemalloc-dev)
# prometheus: promtool checks the /metrics output and the fleet rules;
# prometheus-alertmanager: amtool and a real Alertmanager for the alert tests;
# iproute2 + nftables: the network fault test (netem, or tbf and random
# drop where the kernel has no sch_netem); clang + libclang-rt: the libFuzzer targets;
# nginx-light (its http_v2 and echo modules) + openssl: the HTTP/2 upstream
# of the http2 integration test (the guard below keeps its service stopped);
# clang-format: the style test (tests/style.sh); libjemalloc-dev: fuseboxd's
# allocator (meson option jemalloc, auto).

t_start=$(date +%s)
log() { printf '== [%4ds] %s\n' $(($(date +%s) - t_start)) "$*" >&2; }

deps() {
	local missing=() p
	for p in "${PACKAGES[@]}"; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
			missing+=("$p")
		fi
	done
	# The OpenAI SDK test needs Node.js and npm; machines that ship them
	# outside Debian's packages keep theirs.
	if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
		for p in nodejs npm; do
			dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
				missing+=("$p")
		done
	fi
	if [ ${#missing[@]} -eq 0 ]; then
		log "deps: all ${#PACKAGES[@]} packages present"
		return 0
	fi
	log "deps: installing ${missing[*]}"
	local sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	# apt-get update only when the package lists are missing or a package
	# is not known to them.
	if ! compgen -G '/var/lib/apt/lists/*_Packages' >/dev/null ||
		! apt-cache show "${missing[@]}" >/dev/null 2>&1; then
		$sudo apt-get update -qq
	fi
	# Packages such as prometheus ship a service: never start one here.
	local guard=""
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		guard=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\nexit 101\n' | $sudo tee "$guard" >/dev/null
		$sudo chmod +x "$guard"
	fi
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
		{ [ -z "$guard" ] || $sudo rm -f "$guard"; return 1; }
	[ -z "$guard" ] || $sudo rm -f "$guard"
}

setup() { # dir [meson options...]
	local dir=$1
	shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" -Dwerror=true "$@" >/dev/null
	else
		meson setup --reconfigure "$dir" -Dwerror=true "$@" >/dev/null
	fi
}

build() {
	setup build
	ninja -C build
}

# Run meson's suites in dir, print the log's totals; returns non-zero on failure.
run_suites() { # dir
	local dir=$1 rc=0
	rm -f "$dir"/meson-logs/suite-*.json
	meson test -C "$dir" --print-errorlogs --num-processes 2 --suite unit --logbase suite-unit || rc=1
	# The Prometheus test mostly waits on Prometheus (~75-85 s):
	# test_all runs it beside the sanitizer build instead.
	# The console suite (tmux on private sockets, ephemeral ports) joins the
	# integration pool, two at a time; the timing-bound tests run alone
	# and last (is_parallel false, priority -10 in tests/meson.build).
	local console=()
	# grep without -q reads everything: an early exit would SIGPIPE meson (pipefail)
	if meson test -C "$dir" --list 2>/dev/null | grep '^fusebox:console' >/dev/null; then
		console=(--suite console)
	fi
	log "integration and console suites ($dir/)"
	meson test -C "$dir" --print-errorlogs --num-processes 2 --suite integration "${console[@]}" \
		--no-suite prometheus --logbase suite-integration || rc=1
	return $rc
}

totals() { # dirs... → "N passed, N failed"
	python3 - "$@" <<'PY' 2>/dev/null || true
import json, sys
ok = bad = skip = 0
for d in sys.argv[1:]:
    import glob
    lines = []
    for f in glob.glob(d + "/meson-logs/suite-*.json"):
        lines += open(f).read().splitlines()
    for line in lines:
        r = json.loads(line)
        if r["result"] in ("OK", "EXPECTEDFAIL"):
            ok += 1
        elif r["result"] == "SKIP":
            skip += 1
        else:
            bad += 1
print(f"{ok} passed, {bad} failed" + (f", {skip} skipped" if skip else ""))
PY
}

test_all() {
	local rc=0
	deps
	log "fresh build (build/)"
	rm -rf build build-asan
	setup build
	ninja -C build
	run_suites build || rc=1
	# Beside the sanitizer build: the Prometheus test (it mostly waits on
	# Prometheus, ~75-85 s) and the brief fuzz run (libFuzzer
	# targets, sanitizer builds of their own, 5 s each): neither asserts
	# on timings of its own.
	log "prometheus test and brief fuzz run (build/), beside the sanitizer build"
	meson test -C build --print-errorlogs --num-processes 1 --suite prometheus \
		--logbase suite-prometheus >build/meson-logs/prometheus.out 2>&1 &
	local prom=$!
	meson test -C build --print-errorlogs --num-processes 1 --suite fuzz \
		--logbase suite-fuzz >build/meson-logs/fuzz.out 2>&1 &
	local fuzz=$!
	log "sanitizer build (build-asan/, address,undefined)"
	setup build-asan -Db_sanitize=address,undefined -Db_lundef=false
	ninja -C build-asan
	wait "$fuzz" || rc=1
	cat build/meson-logs/fuzz.out
	wait "$prom" || rc=1
	cat build/meson-logs/prometheus.out
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		run_suites build-asan || rc=1
	log "totals (plain + sanitizer builds)"
	echo "tests: $(totals build build-asan)"
	return $rc
}

demo() {
	deps
	build
	exec bash "$here/contrib/demo.sh" "$@"
}

bench() {
	# wrk for the overhead baseline (nginx is in the base list), haproxy as
	# the peer reverse proxy of the facade bench, perf and valgrind to profile
	PACKAGES+=(wrk haproxy linux-perf valgrind)
	deps
	exec bash "$here/contrib/bench.sh" "$@"
}

case "${1:-}" in
deps) deps ;;
build) deps; build ;;
test) test_all ;;
demo) shift; demo "$@" ;;
bench) shift; bench "$@" ;;
fuzz) shift; bash "$here/contrib/fuzz.sh" "$@" ;;
reliability) shift; PACKAGES+=(valgrind); deps; build; exec bash "$here/contrib/reliability.sh" "$@" ;;
*)
	echo "usage: contrib/dev.sh deps|build|test|demo [--no-tui]|bench|fuzz [SECONDS]|reliability" >&2
	exit 2
	;;
esac
