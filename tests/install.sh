#!/usr/bin/env bash
# install: `meson install` from a build directory into a temporary DESTDIR,
# then check the tree: binaries (and that the test-only mock and traffic
# generator are not installed), --help and --version, man pages, the
# systemd unit (Type=notify, naming the installed fuseboxd and fusebox),
# the example configurations (each passes the installed daemon's
# --check-config), the production example and tokens example under
# sysconfdir, the Prometheus rules, and the bash completion.
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
"$daemon" --version | grep -Eqx 'fuseboxd [0-9.]+ \(commit [0-9a-z.+-]+\)' ||
	fail "installed fuseboxd --version names no commit: $("$daemon" --version)"
help=$("$daemon" --help)
[ "$(grep -c '^usage: fuseboxd' <<<"$help")" -eq 1 ] || fail "fuseboxd --help: usage printed twice"
[ "$(grep -c '^Configuration keys' <<<"$help")" -eq 1 ] || fail "fuseboxd --help: header printed twice"
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
# Every man page --help names is installed.
while read -r ref; do
	name=${ref%(*}
	sec=${ref##*(}
	sec=${sec%)}
	one "man$sec/$name.$sec" >/dev/null
done < <(grep -o '[a-z.]*([1-8])' <<<"$help" | sort -u)

# The systemd unit runs the installed binary.
unit=$(one lib/systemd/system/fuseboxd.service)
bin_path=${daemon#"$dest"}
grep -qx "ExecStart=$bin_path -c /etc/fusebox/fusebox.json" "$unit" ||
	fail "$unit: ExecStart does not name $bin_path"
# A refused reload fails `systemctl reload`: ExecReload waits for the daemon's answer.
grep -qx "ExecReload=${bin_path%d} reload" "$unit" ||
	fail "$unit: ExecReload is not ${bin_path%d} reload"
for k in 'Type=notify' 'NotifyAccess=main' 'WatchdogSec=30s' 'Restart=on-failure' \
	'Environment=FUSEBOX_TOKENS_FILE=%d/tokens' \
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

# The production example beside /etc/fusebox/fusebox.json: state under
# /var/lib/fusebox, a real provider's URL, keys from the environment.
prod=$(one etc/fusebox/fusebox.json.example)
cmp -s "$src/contrib/examples/production.json" "$prod" || fail "$prod differs from production.json"
"$daemon" --check-config -c "$prod" >/dev/null || fail "$prod does not pass --check-config"
python3 - "$prod" <<'PY' || fail "$prod is not production-shaped"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["database"].startswith("/var/lib/fusebox/"), d["database"]
assert d["tokens_file"].startswith("/"), d["tokens_file"]
assert all(b["url"].startswith("https://") and b.get("api_key_env") for b in d["backends"])
PY
tok=$(one etc/fusebox/tokens.example)
[ "$(stat -c %a "$tok")" = 600 ] || fail "$tok is mode $(stat -c %a "$tok"), not 600"
grep -Eq '^[^#[:space:]]+ operator ' "$tok" || fail "$tok has no operator line"
echo "ok: ${prod#"$dest"} ${tok#"$dest"}"

# The Prometheus rules and their promtool tests.
for f in "$src"/contrib/prometheus/*.yml; do
	inst=$(one "share/fusebox/prometheus/$(basename "$f")")
	cmp -s "$f" "$inst" || fail "$inst differs from $f"
done
echo "ok: contrib/prometheus/*.yml"

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
[ "$got" = "reviews review report reload" ] || fail "$comp: \"fusebox re<TAB>\" gave \"$got\""
echo "ok: ${comp#"$dest"}"
