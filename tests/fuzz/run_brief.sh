#!/usr/bin/env bash
# run_brief.sh: the fuzz suite's meson test. Runs contrib/fuzz.sh for a
# short time per target (FUZZ_SECONDS, default 5: a smoke run; `contrib/dev.sh fuzz` runs them for minutes) with its build in
# BUILD_ROOT/fuzz, so the source tree is not written. Prints the targets'
# "N passed, N failed" last and exits non-zero when a target found a crash,
# leak, UB, timeout or OOM (the reproducer is printed above). Exits 77
# (skipped) when clang cannot build libFuzzer targets here.
#   tests/fuzz/run_brief.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail

if [ "$#" -ne 2 ]; then
	echo "usage: tests/fuzz/run_brief.sh BUILD_ROOT SOURCE_ROOT" >&2
	exit 2
fi
mkdir -p "$1"
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
secs=${FUZZ_SECONDS:-5}
cc=${FUZZ_CC:-clang}
export FUZZ_BUILD=${FUZZ_BUILD:-$build/fuzz}

mkdir -p "$FUZZ_BUILD"
probe=$FUZZ_BUILD/probe
printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
	'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);' \
	'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return d == NULL && n > 0; }' \
	>"$probe.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$probe.c" -o "$probe" >/dev/null 2>&1; then
	echo "skipped: $cc cannot build -fsanitize=fuzzer,address,undefined targets"
	echo "0 passed, 0 failed"
	exit 77
fi

ntargets=$(find "$src/tests/fuzz" -maxdepth 1 -name 'fuzz_*.c' | wc -l)
rc=0
"$src/contrib/fuzz.sh" "$secs" >"$FUZZ_BUILD/run_brief.out" 2>&1 || rc=$?
last=$(tail -n 1 "$FUZZ_BUILD/run_brief.out")
if [[ $last =~ ^[0-9]+\ passed,\ [0-9]+\ failed$ ]]; then
	# The build log went to stderr ("== " lines); the target lines and the total to stdout.
	grep -v '^== ' "$FUZZ_BUILD/run_brief.out" || true
else
	# fuzz.sh stopped before running a target (build or usage error): show why.
	tail -n 30 "$FUZZ_BUILD/run_brief.out"
	echo "0 passed, $ntargets failed"
	[ "$rc" -ne 0 ] || rc=1
fi
exit "$rc"
