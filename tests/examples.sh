#!/usr/bin/env bash
# examples: every contrib/examples/*.json passes `fuseboxd --check-config`
# (exit 0), and broken copies fail with exit 1 and an error naming the JSON
# path (or line:column) of the mistake.
#   tests/examples.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail

build=${1:?usage: examples.sh BUILD_ROOT SOURCE_ROOT}
src=${2:?usage: examples.sh BUILD_ROOT SOURCE_ROOT}
bin=$build/daemon/fuseboxd
examples=$src/contrib/examples

if [ ! -x "$bin" ]; then
	echo "SKIP: $bin is not built"
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fusebox-examples-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

n=0
for f in "$examples"/*.json; do
	[ -e "$f" ] || break
	if ! out=$("$bin" --check-config -c "$f" 2>&1); then
		printf '%s\n' "$out" >&2
		fail "$f does not pass --check-config"
	fi
	echo "ok: $(basename "$f")"
	n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "no examples in $examples"

# expect_invalid FILE TEXT: exit status 1 and TEXT somewhere in the output.
expect_invalid() {
	local file=$1 want=$2 out rc
	set +e
	out=$("$bin" --check-config -c "$file" 2>&1)
	rc=$?
	set -e
	if [ "$rc" -ne 1 ]; then
		printf '%s\n' "$out" >&2
		fail "$(basename "$file"): exit status $rc, want 1"
	fi
	if ! grep -qF -- "$want" <<<"$out"; then
		printf '%s\n' "$out" >&2
		fail "$(basename "$file"): output lacks: $want"
	fi
	echo "ok: $(basename "$file") refused"
}

base=$examples/intent-fast-path.json

# A typo'd key: named with its path and the nearest known key.
sed '0,/"budget_ms"/s//"budget_msx"/' "$base" >"$tmp/typo.json"
grep -q '"budget_msx"' "$tmp/typo.json" || fail "could not break $base"
expect_invalid "$tmp/typo.json" 'routes[0].budget_msx: unknown key (did you mean "budget_ms"?)'

# A value out of range.
sed '0,/"half_open_probes": 1/s//"half_open_probes": 0/' "$base" >"$tmp/range.json"
grep -q '"half_open_probes": 0' "$tmp/range.json" || fail "could not break $base"
expect_invalid "$tmp/range.json" 'backends[0].breaker.half_open_probes: must be >= 1 (got 0)'

# Not JSON at all: a comment on line 2.
{
	echo '{'
	echo '  // comments are documentation only'
	tail -n +2 "$base"
} >"$tmp/comment.json"
expect_invalid "$tmp/comment.json" ':2:3: invalid JSON'
