#!/usr/bin/env bash
# fuzz.sh: build the libFuzzer targets of tests/fuzz/ and run each one.
#
#   contrib/fuzz.sh [SECONDS [TARGET...]]    SECONDS per target, default 60
#
# Every target is built with clang (-fsanitize=fuzzer,address,undefined, UB
# reports fatal) from its harness plus the daemon sources it needs, listed
# below and compiled in directly (no meson build needed). Each then runs for
# SECONDS over build-fuzz/corpus-<name>, a copy of tests/fuzz/corpus/<name>
# that collects the new inputs: the source tree is never written. A crash, a
# leak, a UBSan report, an input slower than 5 s or a run over 2 GiB fails
# the target and its reproducer is printed. The last line is
# "N passed, N failed"; the exit status is 0 when every target passed, 1
# when one failed, 2 on a usage or build error.
#
# Environment: FUZZ_BUILD (build folder, default build-fuzz/ in the source
# tree), FUZZ_CC (default clang), FUZZ_JOBS (parallel compiles, default
# nproc). Reproduce a failure: build-fuzz/fuzz_<name> <reproducer>.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${FUZZ_BUILD:-$here/build-fuzz}
cc=${FUZZ_CC:-clang}
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
secs=${1:-60}

log() { printf '== %s\n' "$*" >&2; }
die() {
	printf 'fuzz.sh: %s\n' "$*" >&2
	exit 2
}

case $secs in
'' | *[!0-9]* | 0) die "usage: contrib/fuzz.sh [SECONDS [TARGET...]] (SECONDS: a whole number >= 1)" ;;
esac
if [ "$#" -gt 0 ]; then
	shift
fi

ALL_TARGETS=(validate config call_body chat_body retry_after tokens upstream_reply http)

# Daemon sources per target (the closure of what each harness calls), and
# the pkg-config packages it links. api_call.c and api_chat.c hold their
# endpoint handlers next to the parsers, so the body targets link the whole
# daemon: every file of daemon/meson.build's daemon_src and of
# daemon/core/meson.build's core_src, db/'s store files and @migrations, the
# db/migrations/*.sql embedded by db/embed_sql.c. The http target links
# the HTTP front (http*.c, log.c) alone: its harness stands in for the engine.
CORE_ALL=""
DAEMON_ALL="db/store.c db/store_open.c db/store_reader.c db/store_rows.c db/store_writer.c @migrations"
listed() { # meson.build variable prefix: the '*.c' names between "var = files(" and ")"
	sed -n "/^$2 = files(/,/)/p" "$here/$1" | grep -o "'[a-z0-9_]*\.c'" | tr -d "'" |
		sed "s#^#$3#"
}
while read -r f; do CORE_ALL+=" $f"; done < <(listed daemon/core/meson.build core_src daemon/core/)
while read -r f; do DAEMON_ALL+=" $f"; done < <(listed daemon/meson.build daemon_src daemon/)
DAEMON_ALL+=$CORE_ALL
case $DAEMON_ALL in
*daemon/api_call.c*daemon/core/util.c*) ;;
*) die "no daemon_src / core_src lists in daemon/meson.build, daemon/core/meson.build" ;;
esac

declare -A SOURCES=(
	[validate]=$CORE_ALL
	[config]=$CORE_ALL
	[call_body]=$DAEMON_ALL
	[chat_body]=$DAEMON_ALL
	[retry_after]=$CORE_ALL
	[tokens]=$CORE_ALL
	[upstream_reply]="daemon/upstream.c$CORE_ALL"
	[http]="daemon/http.c daemon/http_conn.c daemon/http_req.c daemon/http_screen.c daemon/log.c$CORE_ALL"
)
declare -A PACKAGES=(
	[validate]="libcjson"
	[config]="libcjson"
	[call_body]="libcjson libcurl sqlite3 libmicrohttpd"
	[chat_body]="libcjson libcurl sqlite3 libmicrohttpd"
	[retry_after]="libcjson"
	[tokens]="libcjson"
	[upstream_reply]="libcjson libcurl"
	[http]="libcjson libmicrohttpd"
)

# -max_len per target: past the 4 KiB stack buffers of rules.c and the
# 4 KiB line limit of tokens.c; a Retry-After value is short.
declare -A MAXLEN=(
	[validate]=16384 [config]=16384 [call_body]=8192 [chat_body]=8192
	[retry_after]=256 [tokens]=8192 [upstream_reply]=8192 [http]=8192
)

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${ALL_TARGETS[@]}")
for t in "${targets[@]}"; do
	[ -n "${SOURCES[$t]+set}" ] || die "unknown target '$t' (targets: ${ALL_TARGETS[*]})"
	[ -f "$here/tests/fuzz/fuzz_$t.c" ] || die "tests/fuzz/fuzz_$t.c is missing"
done

command -v "$cc" >/dev/null 2>&1 || die "$cc not found (clang with libFuzzer is needed)"
command -v pkg-config >/dev/null 2>&1 || die "pkg-config not found"
pkg-config --exists libcjson libcurl sqlite3 libmicrohttpd ||
	die "missing -dev packages: pkg-config libcjson libcurl sqlite3 libmicrohttpd"

read -ra pkg_cflags <<<"$(pkg-config --cflags libcjson libcurl sqlite3 libmicrohttpd)"
SAN=('-fsanitize=address,undefined' -fno-sanitize-recover=all -fno-omit-frame-pointer)
CFLAGS=(-std=gnu11 -g -O1 -D_GNU_SOURCE '-DFB_VERSION="fuzz"' -Wall -Wno-unused-parameter
	-I"$here/daemon" -I"$here/daemon/core" -I"$here/db" -I"$here/tests/fuzz" -I"$out/gen"
	"${pkg_cflags[@]}" "${SAN[@]}")

mkdir -p "$out/obj" "$out/gen"
# commit.h, which meson's vcs_tag makes from daemon/commit.h.in for the build
sed 's/@VCS_TAG@/fuzz/' "$here/daemon/commit.h.in" >"$out/gen/commit.h"
headers=("$here"/daemon/*.h "$here"/daemon/core/*.h "$here"/db/*.h)

# Whether $1 is missing or older than any of the other arguments.
stale() {
	local f=$1 d
	shift
	[ -f "$f" ] || return 0
	for d in "$@"; do
		[ "$d" -nt "$f" ] && return 0
	done
	return 1
}

# db/migrations/*.sql as C, through the project's own generator.
migrations() {
	local sql=("$here"/db/migrations/[0-9][0-9][0-9]_*.sql)
	if stale "$out/embed_sql" "$here/db/embed_sql.c"; then
		"$cc" -std=gnu11 -O1 -o "$out/embed_sql" "$here/db/embed_sql.c"
	fi
	if stale "$out/migrations.c" "$out/embed_sql" "${sql[@]}"; then
		"$out/embed_sql" "$out/migrations.c" "${sql[@]}"
	fi
}

obj_of() { # source → object
	case $1 in
	@migrations) echo "$out/obj/migrations.o" ;;
	*) echo "$out/obj/$(basename "${1%.c}").o" ;;
	esac
}

compile() { # source object
	local src=$1 obj=$2
	if [ "$src" = @migrations ]; then
		src=$out/migrations.c
	else
		src=$here/$src
	fi
	"$cc" "${CFLAGS[@]}" -fsanitize=fuzzer-no-link -c "$src" -o "$obj.$$.tmp" &&
		mv "$obj.$$.tmp" "$obj"
}

build() {
	local t s src obj running=0 failed=0
	declare -A seen=()
	for t in "${targets[@]}"; do
		for s in ${SOURCES[$t]}; do
			seen[$s]=1
		done
	done
	[ -z "${seen[@migrations]+set}" ] || migrations
	for src in "${!seen[@]}"; do
		obj=$(obj_of "$src")
		if [ "$src" = @migrations ]; then
			stale "$obj" "$out/migrations.c" "${headers[@]}" "${BASH_SOURCE[0]}" || continue
		else
			[ -f "$here/$src" ] || die "$src is missing (update SOURCES in contrib/fuzz.sh)"
			stale "$obj" "$here/$src" "${headers[@]}" "${BASH_SOURCE[0]}" || continue
		fi
		log "cc $src"
		compile "$src" "$obj" &
		running=$((running + 1))
		if [ "$running" -ge "$jobs" ]; then
			wait -n || failed=1
			running=$((running - 1))
		fi
	done
	while [ "$running" -gt 0 ]; do
		wait -n || failed=1
		running=$((running - 1))
	done
	[ "$failed" -eq 0 ] || die "compile failed"
	for t in "${targets[@]}"; do
		local objs=() libs=() bin=$out/fuzz_$t
		for s in ${SOURCES[$t]}; do
			objs+=("$(obj_of "$s")")
		done
		if [ -n "${PACKAGES[$t]}" ]; then
			# shellcheck disable=SC2086 # a list of package names
			read -ra libs <<<"$(pkg-config --libs ${PACKAGES[$t]})"
		fi
		stale "$bin" "$here/tests/fuzz/fuzz_$t.c" "$here"/tests/fuzz/*.h "${objs[@]}" \
			"${headers[@]}" || continue
		log "link fuzz_$t"
		"$cc" "${CFLAGS[@]}" -fsanitize=fuzzer "$here/tests/fuzz/fuzz_$t.c" "${objs[@]}" \
			"${libs[@]}" -lm -lpthread -o "$bin" ||
			die "link of fuzz_$t failed (a source missing from SOURCES in contrib/fuzz.sh?)"
	done
}

# Run one target; prints one PASS / FAIL line, returns 1 on a finding.
run() { # target
	local t=$1 bin=$out/fuzz_$1 corpus=$out/corpus-$1 arts=$out/artifacts/$1
	local logf=$out/logs/fuzz_$1.log rc=0 dict=() stats execs cov repro why
	mkdir -p "$corpus" "$arts" "$out/logs"
	if [ -d "$here/tests/fuzz/corpus/$t" ]; then
		find "$here/tests/fuzz/corpus/$t" -maxdepth 1 -type f -exec cp -f {} "$corpus/" \;
	fi
	if [ -f "$here/tests/fuzz/$t.dict" ]; then
		dict=(-dict="$here/tests/fuzz/$t.dict")
	fi
	log "fuzz_$t: ${secs}s over $corpus"
	UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
		ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
		"$bin" -max_total_time="$secs" -timeout=5 -rss_limit_mb=2048 -max_len="${MAXLEN[$t]}" \
		-print_final_stats=1 \
		-artifact_prefix="$arts/" "${dict[@]}" "$corpus" >"$logf" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logf" | tail -n 1)
	stats=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$logf" | tail -n 1 || true)
	cov=${stats:-no coverage line}
	if [ "$rc" -eq 0 ]; then
		printf 'PASS %-15s %s execs, %s\n' "$t" "${execs:-?}" "$cov"
		return 0
	fi
	repro=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$logf" | tail -n 1)
	why=$(grep -m 1 -E '^SUMMARY: |ERROR: libFuzzer|runtime error:|ERROR: AddressSanitizer|ERROR: LeakSanitizer' "$logf" ||
		tail -n 1 "$logf")
	printf 'FAIL %-15s %s\n' "$t" "$why"
	printf '     reproducer: %s\n' "${repro:-none written (see the log)}"
	printf '     log:        %s\n' "$logf"
	printf '     replay:     %s %s\n' "$bin" "${repro:-<input>}"
	return 1
}

build
passed=0
failed=0
for t in "${targets[@]}"; do
	if run "$t"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] || exit 1
