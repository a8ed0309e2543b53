# tests/console/lib.sh: the fixture shared by test_console.sh and
# test_cli.sh (sourced, bash). It starts fusebox-mockllm and fuseboxd on
# 127.0.0.1 port 0 in a fresh temporary folder (config, tokens file 0600,
# database), drives fusebox in tmux on a private socket, and cleans
# everything up on exit. Only processes started here are stopped, by pid.
#
#   source lib.sh BUILD_ROOT SOURCE_ROOT
#
# Results: ok NAME / not ok NAME (reason) lines; finish prints the totals
# and exits 1 when anything failed. A check that needs an endpoint the
# daemon does not serve yet says so in its reason ("endpoint missing:
# ..."); FB_CONSOLE_ALLOW_MISSING=1 turns those into skips.

set -u

BUILD_ROOT=$(cd "${1:-${FB_BUILD_ROOT:-build}}" && pwd)
SOURCE_ROOT=$(cd "${2:-${FB_SOURCE_ROOT:-.}}" && pwd)
FUSEBOX=$BUILD_ROOT/tui/fusebox
FUSEBOXD=$BUILD_ROOT/daemon/fuseboxd
MOCKLLM=$BUILD_ROOT/contrib/fusebox-mockllm
export LC_ALL=C.UTF-8
unset NO_COLOR FUSEBOX_URL FUSEBOX_TOKEN FUSEBOX_TOKEN_FILE FUSEBOX_TOKENS_FILE

for bin in "$FUSEBOX" "$FUSEBOXD" "$MOCKLLM"; do
	if [ ! -x "$bin" ]; then
		echo "missing $bin (build it first)" >&2
		exit 1
	fi
done

T=$(mktemp -d /tmp/fusebox-console-XXXXXX)
TMUX_SOCK=fbtest-$$
MOCK_PID=
D_PID=
MOCK_PORT=
D_PORT=
URL=
PASS=0
FAIL=0
SKIP=0
FAILED_NAMES=()

tm() {
	tmux -L "$TMUX_SOCK" -f /dev/null "$@"
}

cleanup() {
	tm kill-server >/dev/null 2>&1 || true
	if [ -n "$D_PID" ]; then
		kill "$D_PID" 2>/dev/null || true
		wait "$D_PID" 2>/dev/null || true
	fi
	if [ -n "$MOCK_PID" ]; then
		kill "$MOCK_PID" 2>/dev/null || true
		wait "$MOCK_PID" 2>/dev/null || true
	fi
	if [ "$FAIL" -eq 0 ] && [ -z "${FB_KEEP_TMP:-}" ]; then
		rm -rf "$T"
	else
		echo "# files kept in $T" >&2
	fi
}
trap cleanup EXIT

ok() {
	PASS=$((PASS + 1))
	echo "ok - $1"
}

not_ok() { # name reason
	case "$2" in
	"endpoint missing"*)
		if [ -n "${FB_CONSOLE_ALLOW_MISSING:-}" ]; then
			SKIP=$((SKIP + 1))
			echo "ok - $1 # SKIP $2"
			return
		fi
		;;
	esac
	FAIL=$((FAIL + 1))
	FAILED_NAMES+=("$1")
	echo "not ok - $1: $2"
}

finish() {
	echo "# $PASS passed, $FAIL failed, $SKIP skipped"
	if [ "$FAIL" -gt 0 ]; then
		printf '#   failed: %s\n' "${FAILED_NAMES[@]}"
		exit 1
	fi
	exit 0
}

# Wait for "listening on 127.0.0.1:PORT" in file (up to 10 s); echo PORT.
wait_port() {
	local file=$1 port POLL_END POLL_N POLL_PAST NOW_US
	poll_start 10
	while :; do
		port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$file" 2>/dev/null | head -1)
		if [ -n "$port" ]; then
			echo "$port"
			return 0
		fi
		poll_next || return 1
	done
}

start_mock() {
	"$MOCKLLM" --listen 127.0.0.1:0 >"$T/mock.out" 2>"$T/mock.err" &
	MOCK_PID=$!
	MOCK_PORT=$(wait_port "$T/mock.out") || {
		echo "mock did not start" >&2
		cat "$T/mock.err" >&2
		exit 1
	}
}

# The daemon's config: routes intent (primary-v2 95 / canary-v3 5, every
# model answer goes to review: review_below 0.95 > the mock's 0.92) and
# ticket (flaky-v1, breaker opens after 3 failures, rules fallback).
# FB_TAIL=1 (issue 23): primary-v2 gets an adaptive concurrency limit and
# intent hedges after 800 ms.
write_config() { # listen
	local adaptive= hedge=
	if [ -n "${FB_TAIL:-}" ]; then
		adaptive='"adaptive_concurrency": {"min_limit": 2, "initial_limit": 10},'
		hedge=', "hedge": {"after_ms": 800}'
	fi
	cat >"$T/fusebox.json" <<EOF
{
  "listen": "$1",
  "database": "fusebox.db",
  "tokens_file": "tokens",
  "backends": [
    {"name": "primary-v2", "url": "http://127.0.0.1:$MOCK_PORT/b/primary-v2/v1/chat/completions",
     "model": "m2", "version": "v2", $adaptive
     "breaker": {"mode": "consecutive", "failure_threshold": 3, "open_ms": 600000}},
    {"name": "canary-v3", "url": "http://127.0.0.1:$MOCK_PORT/b/canary-v3/v1/chat/completions",
     "model": "m3", "version": "v3"},
    {"name": "flaky-v1", "url": "http://127.0.0.1:$MOCK_PORT/b/flaky-v1/v1/chat/completions",
     "model": "m1", "version": "v1",
     "breaker": {"mode": "consecutive", "failure_threshold": 3, "open_ms": 600000}}
  ],
  "routes": [
    {"name": "intent", "budget_ms": 3000,
     "retry": {"max_retries": 0$hedge},
     "targets": [{"backend": "primary-v2", "weight": 95},
                 {"backend": "canary-v3", "weight": 5, "canary": true}],
     "prompt": {"system": "Classify.", "user": "{{input}}"},
     "output": {"schema": {"type": "object", "required": ["intent", "confidence"],
                           "properties": {"intent": {"type": "string", "enum": ["refund", "complaint", "consult", "other"]},
                                          "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                                          "summary": {"type": "string"}}},
                "review_below": 0.95},
     "rules": {"match": [{"any": ["退款", "refund"], "result": {"intent": "refund"}, "confidence": 0.6}],
               "default": {"result": {"intent": "other"}, "confidence": 0.3}}},
    {"name": "ticket", "budget_ms": 2000,
     "retry": {"max_retries": 0},
     "targets": [{"backend": "flaky-v1", "weight": 100}],
     "prompt": {"system": "Classify.", "user": "{{input}}"},
     "output": {"schema": {"type": "object", "required": ["intent"],
                           "properties": {"intent": {"type": "string"}}}},
     "rules": {"default": {"result": {"intent": "other"}, "confidence": 0.3}}}
  ]
}
EOF
}

write_tokens() {
	printf 'op-token operator alice\nview-token viewer victor\n' >"$T/tokens"
	chmod 600 "$T/tokens"
	printf 'op-token\n' >"$T/op.token"
	printf 'view-token viewer victor\n' >"$T/view.token"
	printf 'view-token\n' >"$T/view-norole.token"
}

start_daemon() {
	: >"$T/d.out"
	"$FUSEBOXD" -c "$T/fusebox.json" >>"$T/d.out" 2>>"$T/d.err" &
	D_PID=$!
	D_PORT=$(wait_port "$T/d.out") || {
		echo "fuseboxd did not start" >&2
		cat "$T/d.err" >&2
		exit 1
	}
	URL=http://127.0.0.1:$D_PORT
}

stop_daemon() {
	if [ -n "$D_PID" ]; then
		kill "$D_PID" 2>/dev/null || true
		wait "$D_PID" 2>/dev/null || true
		D_PID=
	fi
}

# Start everything; the daemon is given a port, then its config is pinned to
# that port so that a restart comes back where the console looks.
fixture_start() {
	write_tokens
	start_mock
	write_config "127.0.0.1:0"
	start_daemon
	write_config "127.0.0.1:$D_PORT"
}

# curl against the daemon: api METHOD PATH [BODY] [TOKEN] -> body on stdout,
# status in $T/status.
api() {
	local method=$1 path=$2 body=${3:-} token=${4:-op-token}
	if [ -n "$body" ]; then
		curl -s -o "$T/api.body" -w '%{http_code}' -X "$method" -H "Authorization: Bearer $token" \
			-H 'Content-Type: application/json' -d "$body" "$URL$path" >"$T/status"
	else
		curl -s -o "$T/api.body" -w '%{http_code}' -X "$method" -H "Authorization: Bearer $token" \
			"$URL$path" >"$T/status"
	fi
	cat "$T/api.body"
}

status() { cat "$T/status"; }

# 0 when the daemon serves METHOD PATH (anything but 404 no such endpoint / 405).
endpoint_exists() { # METHOD PATH [BODY]
	api "$1" "$2" "${3:-}" >/dev/null
	case "$(status)" in
	404 | 405)
		grep -q '"not_found"\|no such endpoint' "$T/api.body" && return 1
		return 0
		;;
	esac
	return 0
}

mock_set() { # backend json
	curl -s -o /dev/null -X PUT -d "$2" "http://127.0.0.1:$MOCK_PORT/_mock/backends/$1"
}

call_route() { # route input
	curl -s -X POST -H 'Content-Type: application/json' \
		-d "{\"input\": \"$2\"}" "$URL/v1/routes/$1/call"
}

db() { sqlite3 -cmd '.timeout 5000' "$T/fusebox.db" "$1"; }

# --- tmux ---

# console_start NAME COLSxROWS [env assignments...] -- [fusebox args...]
# (the pane shows EXITED-<status> when fusebox ends)
console_start() {
	local name=$1 size=$2 w h
	shift 2
	w=${size%x*}
	h=${size#*x}
	local envs=() args=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do
		envs+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	args=("$@")
	local cmd
	cmd=$(printf '%q ' env TERM=xterm-256color LC_ALL=C.UTF-8 "${envs[@]}" "$FUSEBOX" "${args[@]}")
	tm new-session -d -s "$name" -x "$w" -y "$h" "$cmd; echo EXITED-\$?; sleep 30"
	tm set-option -t "$name" remain-on-exit on >/dev/null 2>&1 || true
}

screen() { # name -> pane text
	tm capture-pane -p -t "$1"
}

keys() { # name key...
	local name=$1
	shift
	tm send-keys -t "$name" "$@"
}

# type literal text
type_text() { # name text
	tm send-keys -t "$1" -l "$2"
}

# Polling with a deadline: poll_start SECONDS, then after each failed try
# poll_next (0: try again, after a short sleep; 1: SECONDS have passed and
# the last try began at or after the deadline). The sleeps start at 10 ms
# and grow to 50 ms, so a pane that changes at once is seen at once. The
# callers keep POLL_END, POLL_N, POLL_PAST and NOW_US local (nested waits).
_now_us() {
	local t=$EPOCHREALTIME
	NOW_US=${t/[.,]/}
}
poll_start_ms() { # MILLISECONDS
	_now_us
	POLL_END=$((NOW_US + $1 * 1000))
	POLL_N=0
	POLL_PAST=0
}
poll_start() { poll_start_ms $(($1 * 1000)); } # SECONDS
poll_next() {
	[ "$POLL_PAST" -eq 1 ] && return 1
	POLL_N=$((POLL_N + 1))
	if [ "$POLL_N" -le 5 ]; then
		sleep 0.01
	elif [ "$POLL_N" -le 15 ]; then
		sleep 0.02
	else
		sleep 0.05
	fi
	_now_us
	[ "$NOW_US" -ge "$POLL_END" ] && POLL_PAST=1
	return 0
}

# wait_screen NAME PATTERN [SECONDS]: grep -E PATTERN in the pane (whole seconds).
wait_screen() {
	wait_screen_ms "$1" "$2" $((${3:-6} * 1000))
}

# wait_screen_ms NAME PATTERN MILLISECONDS: the same, for any part of a second.
wait_screen_ms() {
	local name=$1 pat=$2 POLL_END POLL_N POLL_PAST NOW_US
	poll_start_ms "$3"
	while :; do
		if screen "$name" | grep -Eq -- "$pat"; then
			return 0
		fi
		poll_next || return 1
	done
}

# wait_until SECONDS COMMAND...: retry the command until it succeeds.
wait_until() {
	local secs=$1 POLL_END POLL_N POLL_PAST NOW_US
	shift
	poll_start "$secs"
	while :; do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		poll_next || return 1
	done
}

dump() { # name: the pane, for failure messages
	echo "# --- screen $1 ---" >&2
	screen "$1" | sed 's/^/# | /' >&2
}
