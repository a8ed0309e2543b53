#!/usr/bin/env bash
# deb.sh: the Debian package, built from this tree (contrib/debian/).
#   contrib/deb.sh build [OUTDIR]   dpkg-buildpackage -us -uc on a copy of the
#                                   tree; the .deb lands in OUTDIR (default
#                                   build-deb/)
#   contrib/deb.sh check            build, then as root: install, check the
#                                   files and the user, start the daemon under
#                                   the unit's user, reload (refused and
#                                   accepted), stop, purge, check nothing is
#                                   left. Under systemd through systemctl;
#                                   in a container without it, the unit's
#                                   start is played by hand (its user, its
#                                   credential, its state directory).
# Needs debhelper (apt-get install debhelper) and the build dependencies
# of contrib/debian/control. Exit 77 when they are missing.
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cmd=${1:-build}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

need() {
	local missing=()
	command -v dpkg-buildpackage >/dev/null || missing+=(dpkg-dev)
	command -v dh >/dev/null || missing+=(debhelper)
	if [ ${#missing[@]} -gt 0 ]; then
		echo "SKIP: missing ${missing[*]} (apt-get install ${missing[*]})"
		exit 77
	fi
}

build() { # outdir
	local out=$1 tmp version
	need
	version=$(dpkg-parsechangelog -l "$src/contrib/debian/changelog" -S Version)
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/fusebox-deb-XXXXXX")
	mkdir -p "$tmp/fusebox-$version" "$out"
	(cd "$src" && tar --exclude='./build*' --exclude=./.git --exclude='./obj-*' -cf - .) |
		tar -xf - -C "$tmp/fusebox-$version"
	cp -r "$src/contrib/debian" "$tmp/fusebox-$version/debian"
	(cd "$tmp/fusebox-$version" && dpkg-buildpackage -us -uc >"$tmp/build.log" 2>&1) || {
		tail -40 "$tmp/build.log" >&2
		fail "dpkg-buildpackage (log: $tmp/build.log)"
	}
	cp "$tmp"/fusebox_"$version"_*.deb "$out/"
	rm -rf "$tmp"
	ls "$out"/fusebox_"$version"_*.deb
}

# Play the unit's start without systemd: its user, credential and state directory.
start_by_hand() {
	local cred=/run/credentials/fuseboxd.service out pid port
	mkdir -p "$cred" /var/lib/fusebox
	install -o fusebox -g fusebox -m 0400 /etc/fusebox/tokens "$cred/tokens"
	chown fusebox:fusebox /var/lib/fusebox
	chmod 0750 /var/lib/fusebox
	out=$(mktemp)
	(cd /var/lib/fusebox && exec setpriv --reuid=fusebox --regid=fusebox --init-groups -- \
		/usr/bin/fuseboxd -c /etc/fusebox/fusebox.json) >"$out" 2>"$out.err" &
	pid=$!
	for _ in $(seq 1 100); do
		port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$out")
		[ -n "$port" ] && break
		sleep 0.1
	done
	[ -n "$port" ] || fail "fuseboxd did not start: $(cat "$out.err")"
	user=$(ps -o user= -p "$pid" | tr -d ' ')
	[ "$user" = fusebox ] || fail "fuseboxd runs as $user, not fusebox"
	[ "$(stat -c %U /var/lib/fusebox/fusebox.db)" = fusebox ] || fail "the database is not the user's"
	echo "ok: fuseboxd runs as fusebox (no systemd here: the unit's start played by hand)"
	# The unit's ExecReload, as the unit's user with its environment.
	reload() {
		setpriv --reuid=fusebox --regid=fusebox --init-groups -- env \
			FUSEBOX_URL="http://127.0.0.1:$port" FUSEBOX_TOKENS_FILE="$cred/tokens" \
			/usr/bin/fusebox reload
	}
	reload >/dev/null || fail "fusebox reload refused the packaged configuration"
	cp /etc/fusebox/fusebox.json /etc/fusebox/fusebox.json.good
	echo '{"routes": [{}]}' >/etc/fusebox/fusebox.json
	if reload 2>/dev/null; then
		fail "fusebox reload accepted a broken file"
	fi
	mv /etc/fusebox/fusebox.json.good /etc/fusebox/fusebox.json
	echo "ok: ExecReload: exit 0 on a good file, 1 on a refused one"
	kill -TERM "$pid"
	wait "$pid" || true
	rm -rf "$cred" "$out" "$out.err"
}

start_by_systemd() {
	systemctl start fuseboxd || fail "systemctl start fuseboxd: $(journalctl -u fuseboxd -n 20 --no-pager)"
	pid=$(systemctl show -p MainPID --value fuseboxd)
	[ "$(ps -o user= -p "$pid" | tr -d ' ')" = fusebox ] || fail "fuseboxd does not run as fusebox"
	echo "ok: systemctl start; runs as fusebox"
	systemctl reload fuseboxd || fail "systemctl reload refused the packaged configuration"
	cp /etc/fusebox/fusebox.json /etc/fusebox/fusebox.json.good
	echo '{"routes": [{}]}' >/etc/fusebox/fusebox.json
	if systemctl reload fuseboxd; then
		fail "systemctl reload succeeded on a broken file"
	fi
	mv /etc/fusebox/fusebox.json.good /etc/fusebox/fusebox.json
	systemctl is-active -q fuseboxd || fail "fuseboxd stopped after a refused reload"
	echo "ok: systemctl reload: ok on a good file, failed on a refused one, still running"
	systemctl stop fuseboxd
}

check() {
	local out deb f
	[ "$(id -u)" -eq 0 ] || fail "check installs a package: run it as root"
	out=$(mktemp -d "${TMPDIR:-/tmp}/fusebox-debs-XXXXXX")
	deb=$(build "$out" | tail -1)
	dpkg-deb -c "$deb" >"$out/contents"
	dpkg -i "$deb" >/dev/null || fail "dpkg -i $deb"
	for f in /usr/bin/fuseboxd /usr/bin/fusebox /etc/fusebox/fusebox.json.example \
		/etc/fusebox/tokens.example /etc/fusebox/fusebox.json /etc/fusebox/tokens \
		/usr/share/fusebox/prometheus/fusebox-rules.yml; do
		[ -e "$f" ] || fail "$f not installed"
	done
	unit=
	for f in /lib/systemd/system/fuseboxd.service /usr/lib/systemd/system/fuseboxd.service; do
		[ -e "$f" ] && unit=$f
	done
	[ -n "$unit" ] || fail "the unit is not installed"
	grep -qx 'ExecStart=/usr/bin/fuseboxd -c /etc/fusebox/fusebox.json' "$unit" || fail "$unit: ExecStart"
	grep -qx 'ExecReload=/usr/bin/fusebox reload' "$unit" || fail "$unit: ExecReload"
	[ "$(stat -c %a /etc/fusebox/tokens)" = 600 ] || fail "/etc/fusebox/tokens is not 0600"
	getent passwd fusebox >/dev/null || fail "no user fusebox"
	[ "$(id -u fusebox)" -lt 1000 ] || fail "fusebox is not a system user"
	/usr/bin/fuseboxd --check-config -c /etc/fusebox/fusebox.json >/dev/null ||
		fail "the installed configuration does not pass --check-config"
	echo "ok: installed $(basename "$deb"): files, unit, user fusebox, configuration"
	if [ -d /run/systemd/system ]; then
		start_by_systemd
	else
		start_by_hand
	fi
	dpkg --purge fusebox >/dev/null || fail "dpkg --purge fusebox"
	for f in /usr/bin/fuseboxd /usr/bin/fusebox /etc/fusebox /var/lib/fusebox \
		/var/lib/private/fusebox "$unit" /etc/systemd/system/multi-user.target.wants/fuseboxd.service; do
		if [ -e "$f" ] || [ -L "$f" ]; then
			fail "$f left after purge"
		fi
	done
	! getent passwd fusebox >/dev/null || fail "user fusebox left after purge"
	! getent group fusebox >/dev/null || fail "group fusebox left after purge"
	echo "ok: purged: no files, no user, no state left"
	rm -rf "$out"
}

case $cmd in
build) build "${2:-$src/build-deb}" ;;
check) check ;;
*)
	echo "usage: contrib/deb.sh build [OUTDIR] | check" >&2
	exit 2
	;;
esac
