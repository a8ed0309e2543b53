#!/usr/bin/env bash
# install: `meson install` from a build directory into a temporary DESTDIR,
# then check the tree: binaries (and that the test-only mock and traffic
# generator are not installed), man pages, the systemd unit (naming the
# installed fuseboxd), the example configurations (each passes the
# installed daemon's --check-config) and the bash completion.
#   tests/install.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail

build=${1:?usage: install.sh BUILD_ROOT SOURCE_ROOT}
src=${2:?usage: install.sh BUILD_ROOT SOURCE_ROOT}

if ! command -v meson >/dev/null; then
	echo "SKIP: meson is not on PATH"
	exit 77
fi
if [ ! -x "$build/daemon/fuseboxd" ]; then
	echo "SKIP: $build/daemon/fuseboxd is not built"
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fusebox-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/root

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# The one file under dest whose path ends with suffix.
one() { # suffix
	local hits
	hits=$(find "$dest" -path "*/$1" \( -type f -o -type l \) | sort)
	[ -n "$hits" ] || fail "not installed: */$1"
	[ "$(printf '%s\n' "$hits" | wc -l)" -eq 1 ] || fail "installed twice: $hits"
	printf '%s\n' "$hits"
}

if ! out=$(meson install -C "$build" --no-rebuild --destdir "$dest" 2>&1); then
	printf '%s\n' "$out" >&2
	fail "meson install failed"
fi

# Binaries.
daemon=$(one bin/fuseboxd)
[ -x "$daemon" ] || fail "$daemon is not executable"
"$daemon" --version | grep -q '^fuseboxd ' || fail "installed fuseboxd --version"
echo "ok: ${daemon#"$dest"}"
if [ -f "$src/tui/main.c" ]; then
	console=$(one bin/fusebox)
	[ -x "$console" ] || fail "$console is not executable"
	echo "ok: ${console#"$dest"}"
fi
for b in fusebox-mockllm fusebox-traffic; do
	[ -z "$(find "$dest" -name "$b")" ] || fail "$b is a test tool and must not be installed"
done

# Man pages, each rendering without warnings when groff is there.
for m in man8/fuseboxd.8 man1/fusebox.1 man5/fusebox.json.5; do
	page=$(one "$m")
	if command -v groff >/dev/null; then
		warn=$(LC_ALL=C.UTF-8 groff -man -ww -z "$page" 2>&1) || fail "groff $m"
		[ -z "$warn" ] || fail "groff warns on $m: $warn"
	fi
	echo "ok: ${page#"$dest"}"
done

# The systemd unit runs the installed binary.
unit=$(one lib/systemd/system/fuseboxd.service)
bin_path=${daemon#"$dest"}
grep -qx "ExecStart=$bin_path -c /etc/fusebox/fusebox.json" "$unit" ||
	fail "$unit: ExecStart does not name $bin_path"
# shellcheck disable=SC2016 # $MAINPID is systemd's, not ours
for k in 'ExecReload=/bin/kill -HUP $MAINPID' 'Restart=on-failure' \
	'StateDirectory=fusebox' 'ProtectSystem=strict' 'NoNewPrivileges=yes' \
	'LimitNOFILE=65536'; do
	grep -qxF "$k" "$unit" || fail "$unit lacks $k"
done
echo "ok: ${unit#"$dest"}"

# Examples: the same files as in the source tree, each accepted.
n=0
for f in "$src"/contrib/examples/*.json; do
	[ -e "$f" ] || break
	inst=$(one "share/fusebox/examples/$(basename "$f")")
	cmp -s "$f" "$inst" || fail "$inst differs from $f"
	if ! out=$("$daemon" --check-config -c "$inst" 2>&1); then
		printf '%s\n' "$out" >&2
		fail "installed $(basename "$f") does not pass --check-config"
	fi
	n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "no examples in $src/contrib/examples"
echo "ok: $n examples"

# Bash completion: parses, registers, completes the verbs.
comp=$(one share/bash-completion/completions/fusebox)
bash -n "$comp" || fail "$comp: syntax"
got=$(bash -c '
	source "$1"
	complete -p fusebox >/dev/null || exit 1
	COMP_WORDS=(fusebox re)
	COMP_CWORD=1
	_fusebox
	echo "${COMPREPLY[*]}"' _ "$comp") || fail "$comp does not register fusebox"
[ "$got" = "reviews review report" ] || fail "$comp: \"fusebox re<TAB>\" gave \"$got\""
echo "ok: ${comp#"$dest"}"
