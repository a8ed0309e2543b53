#!/usr/bin/env bash
# fuseboxd under a real systemd (issue 25): the shipped unit
# (contrib/systemd/fuseboxd.service, byte for byte) run by a private
# `systemd --user` manager that this script starts and tears down.
#
# How: the script re-executes itself in a private mount namespace
# (unshare --mount, then shared inside it as on a systemd host), mounts a
# tmpfs on /run/systemd there with an empty /run/systemd/system (systemd
# --user refuses to start on a host "not booted with systemd", which is
# how it checks), a tmpfs as XDG_RUNTIME_DIR and a FIFO over /dev/kmsg (the
# manager's log, kept off the host's), moves itself into cgroups of its
# own (one per mounted hierarchy, removed at the end), and starts systemd
# --user with private XDG_RUNTIME_DIR, HOME and XDG_CONFIG_HOME and a
# minimal start target. systemctl --user talks to it over
# $XDG_RUNTIME_DIR/systemd/private (no D-Bus needed). Everything lives in
# BUILD_ROOT/systemd-test-XXXXXX and goes with the namespace.
#
# The unit is installed unchanged; one drop-in
# (fuseboxd.service.d/10-test.conf) says only what a user manager and a
# build tree need: no user switch (DynamicUser/User/Group), the binaries of
# the build folder, the config in the manager's ConfigurationDirectory, the
# tokens from the test's file (still through LoadCredential, %d), a free
# port, WatchdogSec=3s, and the daemon's output in a file (no journald).
#
# Checked with systemctl: `start` returns once the daemon sent READY=1
# (active/running, StatusText "listening on ...", /healthz answers at
# once); the watchdog keeps it running past WatchdogSec and, when the loop
# stops (SIGSTOP), kills it ("Watchdog timeout") and Restart=on-failure brings
# it back; `systemctl reload` succeeds on a valid change (a new route is
# served) and fails on an invalid file while the daemon keeps its PID and
# the old configuration; kill -9 restarts it; `systemctl stop` ends it
# with Result=success and exit status 0.
#
# Needs root (mount namespace, cgroups) and systemd (Debian: systemd,
# util-linux's unshare, curl, python3); exits 77 (skip) naming what is
# missing when the machine cannot host the manager.
#   tests/systemd/run.sh BUILD_ROOT SOURCE_ROOT
# Debugging: SYSTEMD_TEST_LOG_LEVEL=debug (the manager's log level),
# SYSTEMD_TEST_HOLD=SECONDS (wait that long on a failure before tearing down).
set -euo pipefail

build=$(cd "${1:?usage: run.sh BUILD_ROOT SOURCE_ROOT}" && pwd)
src=$(cd "${2:?usage: run.sh BUILD_ROOT SOURCE_ROOT}" && pwd)

skip() {
	echo "SKIP: $*"
	exit 77
}
# The shipped unit's hardening (SystemCallFilter, MemoryDenyWriteExecute, …)
# is for the release binary: an ASan build aborts under it at start
# (status 6/ABRT). The plain build runs this test.
if [ "${FB_SANITIZED:-0}" = 1 ]; then
	skip "sanitizer build: the ASan binary aborts under the unit's hardening (seen: status 6/ABRT)"
fi
fail() {
	echo "FAIL: $*" >&2
	[ -z "${work:-}" ] || dump_logs >&2
	[ -z "${SYSTEMD_TEST_HOLD:-}" ] || sleep "$SYSTEMD_TEST_HOLD"
	exit 1
}

SYSTEMD=${SYSTEMD:-/lib/systemd/systemd}
daemon=$build/daemon/fuseboxd
console=$build/tui/fusebox
unit_src=$src/contrib/systemd/fuseboxd.service

# ---- outside the namespace: checks, then re-exec inside one ----
if [ -z "${FUSEBOX_SYSTEMD_NS:-}" ]; then
	[ -x "$daemon" ] || skip "$daemon is not built"
	[ -x "$console" ] || skip "$console is not built"
	[ -f "$unit_src" ] || skip "$unit_src is missing"
	[ "$(id -u)" -eq 0 ] || skip "needs root: a private mount namespace and cgroups for the manager"
	[ -x "$SYSTEMD" ] || skip "no systemd at $SYSTEMD (Debian package systemd)"
	for c in systemctl unshare mount curl python3; do
		command -v "$c" >/dev/null || skip "$c is not on PATH"
	done
	if ! out=$(unshare --mount --propagation private true 2>&1); then
		skip "cannot create a mount namespace (unshare --mount: $out)"
	fi
	FUSEBOX_SYSTEMD_NS=1 exec unshare --mount --propagation private -- bash "$0" "$build" "$src"
fi

# ---- inside the private mount namespace ----
work=$(mktemp -d "$build/systemd-test-XXXXXX")
chmod 755 "$work"
run=$work/run # XDG_RUNTIME_DIR: short, sockets live there
home=$work/home
cfgdir=$home/.config
mkdir -p "$run" "$home" "$cfgdir/systemd/user/fuseboxd.service.d" "$cfgdir/fusebox"
chmod 755 "$cfgdir/fusebox"
export XDG_RUNTIME_DIR=$run HOME=$home XDG_CONFIG_HOME=$cfgdir
unset DBUS_SESSION_BUS_ADDRESS XDG_STATE_HOME XDG_CACHE_HOME XDG_DATA_HOME NOTIFY_SOCKET \
	WATCHDOG_USEC WATCHDOG_PID
mgr_pid=
cat_pid=
cgroups=()

dump_logs() {
	echo "--- systemd --user (tail)"
	tail -n 40 "$work/manager.log" 2>/dev/null || true
	echo "--- fuseboxd (tail)"
	tail -n 40 "$work/daemon.log" 2>/dev/null || true
	echo "--- systemctl status"
	timeout 5 systemctl --user --no-pager status fuseboxd 2>&1 | head -20 || true
}

cleanup() {
	set +e
	if [ -n "$mgr_pid" ] && kill -0 "$mgr_pid" 2>/dev/null; then
		timeout 10 systemctl --user stop fuseboxd >/dev/null 2>&1
		kill -TERM "$mgr_pid" 2>/dev/null
		for _ in $(seq 1 100); do
			kill -0 "$mgr_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$mgr_pid" 2>/dev/null
		wait "$mgr_pid" 2>/dev/null
	fi
	[ -z "$cat_pid" ] || kill "$cat_pid" 2>/dev/null
	# Whatever is left in our cgroups (nothing, normally), then the cgroups.
	local cg p
	for cg in "${cgroups[@]}"; do
		[ -d "$cg" ] || continue
		# the services' cgroups only: the manager moved this shell into
		# its init.scope
		find "$cg/app.slice" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r p; do
			[ "$p" = "$$" ] || kill -KILL "$p" 2>/dev/null
		done
	done
	for cg in "${cgroups[@]}"; do
		[ -d "$cg" ] || continue
		# leave it first: a cgroup with a process in it cannot be removed
		echo $$ >"${cg%/*}/cgroup.procs" 2>/dev/null
		find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	umount "$run" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# Cut off from the host (unshare --propagation private), then shared inside
# the namespace as on a systemd host: the manager sets credentials up in a
# namespace of its own and moves the mount into ours, which only
# propagates between shared mounts.
mount --make-rshared / || skip "cannot make the mounts of the private namespace shared"

# systemd --user checks for /run/systemd/system: give it one, in this
# namespace only (a tmpfs over /run/systemd; the host's stays as it was).
if [ -d /run/systemd ]; then
	mount -t tmpfs -o mode=755 fusebox-systemd-test /run/systemd ||
		skip "cannot mount a tmpfs on /run/systemd in a private mount namespace"
else
	mount -t tmpfs -o mode=755 fusebox-systemd-test /run ||
		skip "cannot mount a tmpfs on /run in a private mount namespace"
	mkdir -p /run/systemd
fi
mkdir /run/systemd/system
# A runtime directory is a tmpfs (systemd refuses to remove the credentials
# and RuntimeDirectory= it made on a disk file system).
mount -t tmpfs -o mode=700 fusebox-systemd-test "$run" ||
	skip "cannot mount a tmpfs on $run"

# Cgroups of our own for the manager, under the one we are in, in every
# hierarchy systemd uses: the unified one (cgroup2 at /sys/fs/cgroup, or
# at /sys/fs/cgroup/unified in the hybrid layout) and the named v1
# hierarchy "systemd" of the legacy/hybrid layouts.
cgname=fusebox-systemd-$$
join_cgroup() { # mountpoint path-of-our-cgroup
	local dir=$1${2%/}/$cgname
	mkdir "$dir" 2>/dev/null || return 1
	cgroups+=("$dir")
	echo $$ >"$dir/cgroup.procs" 2>/dev/null || return 1
}
if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then
	own=$(sed -n 's/^0:://p' /proc/self/cgroup)
	join_cgroup /sys/fs/cgroup "$own" ||
		skip "cannot create and join a cgroup under /sys/fs/cgroup$own (cgroup2, not delegated to us?)"
else
	[ -d /sys/fs/cgroup/systemd ] ||
		skip "no cgroup hierarchy for systemd: /sys/fs/cgroup is not cgroup2 and has no name=systemd hierarchy"
	own=$(sed -n 's/^[0-9]*:name=systemd://p' /proc/self/cgroup)
	join_cgroup /sys/fs/cgroup/systemd "$own" ||
		skip "cannot create and join a cgroup under /sys/fs/cgroup/systemd$own"
	if [ "$(stat -fc %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then
		own=$(sed -n 's/^0:://p' /proc/self/cgroup)
		join_cgroup /sys/fs/cgroup/unified "$own" ||
			skip "cannot create and join a cgroup under /sys/fs/cgroup/unified$own"
	fi
fi

# ---- the configuration, the tokens, the unit ----
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
op_token=op-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s operator oncall\n' "$op_token" >"$work/tokens"
chmod 600 "$work/tokens"

write_config() { # file, extra route name or "" (a second route to see a reload applied), its backend
	local extra=""
	[ -z "$2" ] || extra=",{\"name\":\"$2\",\"targets\":[{\"backend\":\"${3:-primary}\"}]}"
	cat >"$1" <<EOF
{"listen": "127.0.0.1:$port",
 "database": "$state/fusebox.db",
 "tokens_file": "$creds/tokens",
 "backends": [{"name": "primary", "url": "http://127.0.0.1:9/v1/chat/completions", "model": "m"}],
 "routes": [{"name": "intent", "targets": [{"backend": "primary"}]}$extra]}
EOF
}
conf=$cfgdir/fusebox/fusebox.json # ConfigurationDirectory=fusebox of a user manager (%E)

# PrivateTmp= and ProtectHome= hide /tmp, /var/tmp, /home, /root and
# /run/user from the service: a build folder there is bound back in.
hidden=
case "$build/" in
/tmp/* | /var/tmp/* | /home/* | /root/* | /run/user/*)
	hidden="# The build folder is under a path the sandbox hides.
BindReadOnlyPaths=$daemon $console
BindPaths=$work"
	;;
esac
# The shipped unit, unchanged.
cp "$unit_src" "$cfgdir/systemd/user/fuseboxd.service"
# What a user manager and a build tree need, as an operator's drop-in would.
cat >"$cfgdir/systemd/user/fuseboxd.service.d/10-test.conf" <<EOF
[Service]
# A user manager cannot switch users.
DynamicUser=no
User=
Group=
ExecStartPre=
ExecStartPre=$daemon --check-config -c %E/fusebox/fusebox.json
ExecStart=
ExecStart=$daemon -c %E/fusebox/fusebox.json
ExecReload=
ExecReload=$console reload
Environment=FUSEBOX_URL=http://127.0.0.1:$port
EnvironmentFile=
LoadCredential=
LoadCredential=tokens:$work/tokens
WorkingDirectory=%S/fusebox
WatchdogSec=3s
$hidden
# No journald in this namespace.
StandardOutput=append:$work/daemon.log
StandardError=append:$work/daemon.log
EOF
# The manager's start target: nothing but itself (no sockets, no default.target).
cat >"$cfgdir/systemd/user/fusebox-test.target" <<'EOF'
[Unit]
Description=fusebox systemd test
DefaultDependencies=no
EOF

# ---- the manager ----
# The manager and its forked children log to /dev/kmsg (the console
# target wants a tty), opened anew in each child: the host's kernel log is
# not ours to write to, so in this namespace /dev/kmsg is a FIFO that a
# reader appends to the manager's log.
: >"$work/manager.log"
mkfifo "$work/kmsg"
cat <>"$work/kmsg" >>"$work/manager.log" &
cat_pid=$!
mount --bind "$work/kmsg" /dev/kmsg ||
	skip "cannot bind-mount a FIFO over /dev/kmsg in a private mount namespace"
"$SYSTEMD" --user --unit=fusebox-test.target --log-target=kmsg --log-level="${SYSTEMD_TEST_LOG_LEVEL:-info}" \
	>"$work/manager.log" 2>&1 </dev/null &
mgr_pid=$!
ok=
for _ in $(seq 1 100); do
	kill -0 "$mgr_pid" 2>/dev/null || break
	if [ -S "$run/systemd/private" ]; then
		s=$(timeout 5 systemctl --user is-system-running 2>/dev/null || true)
		case "$s" in running | degraded) ok=1 && break ;; esac
	fi
	sleep 0.1
done
if [ -z "$ok" ]; then
	log=$(tail -n 20 "$work/manager.log" 2>/dev/null || true)
	kill -0 "$mgr_pid" 2>/dev/null || mgr_pid=
	skip "systemd --user did not come up within 10 s: ${log:-no output}"
fi
# Sandboxing (ProtectHome=, InaccessiblePaths=) mounts the inode stubs of
# /run/systemd/inaccessible, which PID 1 makes on a real host: our tmpfs
# has none, so give it the user manager's (same modes: 0000).
if [ ! -e /run/systemd/inaccessible ]; then
	mkdir /run/systemd/inaccessible
	mount --bind "$run/systemd/inaccessible" /run/systemd/inaccessible ||
		skip "cannot bind-mount $run/systemd/inaccessible on /run/systemd/inaccessible"
fi
echo "ok: systemd --user $("$SYSTEMD" --version | head -1 | cut -d' ' -f2-) running (pid $mgr_pid)"

sc() { timeout 30 systemctl --user --no-pager "$@"; }
prop() { sc show -p "$1" --value fuseboxd; }
wait_for() { # seconds description command...
	local secs=$1 what=$2 _
	shift 2
	for _ in $(seq 1 $((secs * 10))); do
		"$@" && return 0
		sleep 0.1
	done
	fail "$what: not within $secs s"
}
nrestarts_is() { [ "$(prop NRestarts)" = "$1" ]; }
is_running() { [ "$(prop ActiveState)/$(prop SubState)" = active/running ]; }
healthz() { curl -fsS --max-time 2 "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; }
routes() {
	curl -fsS --max-time 2 -H "Authorization: Bearer $op_token" "http://127.0.0.1:$port/v1/state" |
		python3 -c 'import json,sys; print(" ".join(r["name"] for r in json.load(sys.stdin)["routes"]))'
}

# Where this manager puts StateDirectory= (%S: ~/.config before systemd
# 254, ~/.local/state after) and the credentials (%d): ask it, with a
# oneshot unit using the same settings.
cat >"$cfgdir/systemd/user/fusebox-probe.service" <<EOF
[Service]
Type=oneshot
LoadCredential=tokens:$work/tokens
ExecStart=/bin/sh -c 'printf "%%s\\\\n" "%S" "%d" >$work/probe'
EOF
sc daemon-reload
sc start fusebox-probe.service || fail "the probe unit did not run"
state=$(sed -n 1p "$work/probe")/fusebox
creds=$(sed -n 2p "$work/probe")
creds=${creds%/fusebox-probe.service}/fuseboxd.service
if [ -z "$state" ] || [ -z "$creds" ]; then fail "probe: no %S or %d"; fi
write_config "$conf" ""
sc cat fuseboxd >/dev/null || fail "the manager does not know fuseboxd.service"
bad=$(grep -iE 'unknown|invalid|ignoring|not supported|failed to parse' "$work/manager.log" | grep -i fuseboxd || true)
[ -z "$bad" ] || fail "systemd complains about the unit: $bad"

# ---- start: returns once READY=1 was sent ----
t0=$(date +%s%N)
sc start fuseboxd || fail "systemctl start fuseboxd"
t1=$(date +%s%N)
st="$(prop ActiveState)/$(prop SubState)"
[ "$st" = active/running ] || fail "after start: $st, not active/running"
healthz || fail "systemctl start returned before /healthz answers (READY=1 too early)"
[ "$(prop Type)" = notify ] || fail "Type is $(prop Type)"
status=$(prop StatusText)
[ "$status" = "listening on 127.0.0.1:$port" ] || fail "StatusText \"$status\""
pid1=$(prop MainPID)
[ "$pid1" -gt 0 ] || fail "no MainPID"
[ -f "$creds/tokens" ] || fail "no credential at $creds/tokens while running"
[ "$(routes)" = intent ] || fail "routes after start: $(routes)"
echo "ok: start returned after READY=1 in $(((t1 - t0) / 1000000)) ms: active/running, StatusText \"$status\", MainPID $pid1"

# ---- the watchdog keeps it alive ----
wd=$(prop WatchdogUSec)
[ "$wd" = 3s ] || fail "WatchdogUSec is $wd, not 3s"
sleep 8
is_running || fail "not running 8 s after start with WatchdogSec=3s"
[ "$(prop MainPID)" = "$pid1" ] || fail "MainPID changed ($pid1 -> $(prop MainPID)) with a live loop"
[ "$(prop NRestarts)" = 0 ] || fail "NRestarts $(prop NRestarts) with a live loop"
echo "ok: still running after 8 s with WatchdogSec=3s (same PID, no restart)"

# ---- reload: a valid change is applied ----
write_config "$conf.new" extra
mv "$conf.new" "$conf"
sc reload fuseboxd || fail "systemctl reload with a valid file"
is_running || fail "not running after a valid reload"
[ "$(prop MainPID)" = "$pid1" ] || fail "a reload restarted the daemon"
[ "$(routes)" = "intent extra" ] || fail "routes after a valid reload: $(routes)"
status=$(prop StatusText)
[ "$status" = "configuration reloaded" ] || fail "StatusText after a valid reload: \"$status\""
echo "ok: systemctl reload applied a valid change (routes: $(routes)), StatusText \"$status\""

# ---- reload: an invalid file fails, the old configuration stays ----
write_config "$conf.new" other nope # a route naming an unknown backend
mv "$conf.new" "$conf"
"$daemon" --check-config -c "$conf" >/dev/null 2>&1 && fail "the invalid config passes --check-config"
if sc reload fuseboxd 2>"$work/reload.err"; then
	fail "systemctl reload succeeded on an invalid file"
fi
is_running || fail "not running after a refused reload"
[ "$(prop MainPID)" = "$pid1" ] || fail "a refused reload restarted the daemon"
healthz || fail "/healthz after a refused reload"
[ "$(routes)" = "intent extra" ] || fail "routes after a refused reload: $(routes)"
status=$(prop StatusText)
case "$status" in "configuration refused"*) ;; *) fail "StatusText after a refused reload: \"$status\"" ;; esac
grep -q 'nope' "$work/daemon.log" || fail "the refusal is not in the daemon's log"
echo "ok: systemctl reload failed ($(head -1 "$work/reload.err")), daemon kept PID $pid1 and the old config, StatusText \"$status\""
write_config "$conf" extra

# ---- a stuck loop: the watchdog kills it, Restart=on-failure restarts it ----
kill -STOP "$pid1"
wait_for 20 "watchdog restart after SIGSTOP" nrestarts_is 1
wait_for 20 "running again after the watchdog" is_running
pid2=$(prop MainPID)
[ "$pid2" != "$pid1" ] || fail "same MainPID after the watchdog fired"
kill -0 "$pid1" 2>/dev/null && fail "the stuck daemon $pid1 is still there"
grep -q 'fuseboxd.service: Watchdog timeout' "$work/manager.log" ||
	fail "the manager did not log a watchdog timeout"
healthz || fail "/healthz after the watchdog restart"
echo "ok: SIGSTOP -> watchdog timeout, restarted as PID $pid2"

# ---- kill -9: Restart=on-failure ----
kill -KILL "$pid2"
wait_for 20 "restart after kill -9" nrestarts_is 2
wait_for 20 "running again after kill -9" is_running
pid3=$(prop MainPID)
[ "$pid3" != "$pid2" ] || fail "same MainPID after kill -9"
healthz || fail "/healthz after the restart"
echo "ok: kill -9 -> restarted as PID $pid3 (NRestarts $(prop NRestarts))"

# ---- stop: a clean exit ----
sc stop fuseboxd || fail "systemctl stop"
st="$(prop ActiveState)/$(prop Result)/$(prop ExecMainStatus)"
[ "$st" = inactive/success/0 ] || fail "after stop: ActiveState/Result/ExecMainStatus $st"
kill -0 "$pid3" 2>/dev/null && fail "fuseboxd $pid3 still there after stop"
healthz && fail "/healthz still answers after stop"
[ ! -e "$creds/tokens" ] || fail "credential left behind after stop"
echo "ok: systemctl stop: inactive, Result=success, exit status 0"
# What systemd warned about while setting the unit up (informational: a
# user manager's quirks, e.g. ConfigurationDirectory= and StateDirectory=
# being one folder before systemd 254).
grep -aE '^<2[4-8]>\(fuseboxd\)' "$work/manager.log" | grep -av 'journal socket' |
	sed 's/^<[0-9]*>(fuseboxd)\[[0-9]*\]: /note: systemd: /' | sort -u | head -20 || true
echo "PASS"
