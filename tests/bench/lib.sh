# tests/bench/lib.sh: what the benchmark scripts share (sourced, bash).
#
# Every process a bench starts is recorded in BENCH_PIDS and ended by its
# pid in bench_cleanup (trap on EXIT); nothing is ever killed by name.
# Everything listens on 127.0.0.1 only; every load is bounded in count and
# in time. Figures go to stdout as lines
#   RESULT <key> <value> [<unit>]
# which contrib/bench.sh collects into tests/bench/RESULTS.md; narrative
# lines start with "# " and go to stdout too.
#
# Environment: BENCH_REPS (repetitions, default 5), BENCH_SECS (seconds of
# load per wrk run, default 5), BENCH_KEEP=1 keeps the temp dir.

BENCH_PIDS=()
BENCH_REPS=${BENCH_REPS:-5}
BENCH_SECS=${BENCH_SECS:-5}

bench_init() { # build_root source_root name
	build=$(cd "${1:?usage: $0 BUILD_ROOT SOURCE_ROOT}" && pwd)
	src=$(cd "${2:?usage: $0 BUILD_ROOT SOURCE_ROOT}" && pwd)
	bench_name=$3
	fuseboxd=$build/daemon/fuseboxd
	mockllm=$build/contrib/fusebox-mockllm
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/fusebox-bench-$bench_name-XXXXXX")
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
	CLK_TCK=$(getconf CLK_TCK)
	# Many connections: as root the hard limit may be raised (the daemon
	# then raises its soft limit to it at start).
	ulimit -Hn 200000 2>/dev/null || true
	ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
}

bench_cleanup() {
	local p
	for p in "${BENCH_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${BENCH_PIDS[@]}"; do
		bench_wait_gone "$p" 10 || kill -KILL "$p" 2>/dev/null || true
	done
	BENCH_PIDS=()
	if [ "${BENCH_KEEP:-0}" = 1 ]; then
		echo "# kept $tmp" >&2
	else
		rm -rf "$tmp"
	fi
}

bench_skip() {
	echo "SKIP: $*"
	exit 77
}

bench_need() { # program... : skip unless each is on PATH
	local p
	for p in "$@"; do
		command -v "$p" >/dev/null 2>&1 ||
			bench_skip "$p is not installed (Debian package: $(bench_pkg "$p"))"
	done
}

bench_pkg() {
	case $1 in
	nginx) echo nginx-light ;;
	sqlite3) echo sqlite3 ;;
	perf) echo linux-perf ;;
	tmux) echo tmux ;;
	*) echo "$1" ;;
	esac
}

bench_wait_gone() { # pid seconds
	local i n=$(($2 * 20))
	for ((i = 0; i < n; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.05
	done
	return 1
}

bench_stop() { # pid: SIGTERM, wait (10 s), forget it
	local p=$1 keep=() q
	kill -TERM "$p" 2>/dev/null || true
	bench_wait_gone "$p" 10 || kill -KILL "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
	for q in "${BENCH_PIDS[@]}"; do
		[ "$q" = "$p" ] || keep+=("$q")
	done
	BENCH_PIDS=("${keep[@]}")
}

# bench_spawn VAR_PID VAR_PORT LOGFILE cmd...: start cmd in the background,
# wait (10 s) for "listening on HOST:PORT" on its stdout.
bench_spawn() {
	local -n _pid=$1 _port=$2
	local log=$3 i line
	shift 3
	"$@" >"$log.out" 2>"$log" </dev/null &
	_pid=$!
	BENCH_PIDS+=("$_pid")
	for ((i = 0; i < 200; i++)); do
		line=$(grep -m1 -o 'listening on [0-9.]*:[0-9]*' "$log.out" 2>/dev/null || true)
		if [ -n "$line" ]; then
			_port=${line##*:}
			return 0
		fi
		kill -0 "$_pid" 2>/dev/null || break
		sleep 0.05
	done
	echo "bench: $1 did not start: $*" >&2
	cat "$log" >&2
	return 1
}

bench_free_port() { # a TCP port nobody listens on (for nginx, which needs a number)
	local p i
	for ((i = 0; i < 50; i++)); do
		p=$((20000 + RANDOM % 10000))
		if ! ss -Htln "sport = :$p" 2>/dev/null | grep -q .; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# The canned upstream reply: a chat.completion whose content passes the
# bench route's schema (intent enum, confidence 0..1 above review_below).
CANNED_CONTENT='{\"intent\":\"refund\",\"confidence\":0.92,\"summary\":\"customer wants a refund\"}'
CANNED_REPLY='{"id":"chatcmpl-bench","object":"chat.completion","created":1767225600,"model":"bench","choices":[{"index":0,"message":{"role":"assistant","content":"'$CANNED_CONTENT'"},"finish_reason":"stop"}],"usage":{"prompt_tokens":42,"completion_tokens":20,"total_tokens":62}}'

# bench_nginx VAR_PID VAR_PORT: nginx on 127.0.0.1 answering every request
# at once with CANNED_REPLY (one worker, keep-alive without a request cap),
# configured in $tmp/nginx, never the system service.
bench_nginx() {
	local -n _npid=$1 _nport=$2
	local d=$tmp/nginx esc
	mkdir -p "$d/logs"
	# nginx unescapes \" inside a quoted string: write \\\" for a JSON \".
	esc=${CANNED_REPLY//\\\"/\\\\\\\"}
	_nport=$(bench_free_port)
	{
		bench_nginx_head "$d"
		cat <<EOF
	client_body_buffer_size 64k;
	server {
		listen 127.0.0.1:$_nport;
		default_type application/json;
		location / { return 200 '$esc'; }
	}
}
EOF
	} >"$d/nginx.conf"
	bench_nginx_spawn _npid "$d" curl -s -o /dev/null -X POST -d '{}' \
		"http://127.0.0.1:$_nport/v1/chat/completions"
}

# bench_nginx_head DIR: the first lines of an nginx.conf whose prefix is
# DIR (one worker, foreground, no access log, temp paths and keep-alive),
# up to inside its http block.
bench_nginx_head() {
	local d=$1
	cat <<EOF
worker_processes 1;
daemon off;
master_process on;
pid $d/nginx.pid;
error_log $d/logs/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path $d/body;
	proxy_temp_path $d/proxy;
	fastcgi_temp_path $d/fastcgi;
	uwsgi_temp_path $d/uwsgi;
	scgi_temp_path $d/scgi;
	keepalive_requests 100000000;
	keepalive_timeout 300s;
EOF
}

# bench_nginx_spawn VAR_PID DIR PROBE...: start nginx on DIR/nginx.conf in
# the background and wait (5 s) until the command PROBE... succeeds.
bench_nginx_spawn() {
	local -n _spid=$1
	local d=$2 i
	shift 2
	nginx -p "$d" -e "$d/logs/error.log" -c "$d/nginx.conf" >"$d/logs/stdout" 2>&1 </dev/null &
	_spid=$!
	BENCH_PIDS+=("$_spid")
	for ((i = 0; i < 100; i++)); do
		"$@" 2>/dev/null && return 0
		kill -0 "$_spid" 2>/dev/null || break
		sleep 0.05
	done
	echo "bench: nginx did not start" >&2
	cat "$d/logs/error.log" "$d/logs/stdout" >&2
	return 1
}

# bench_haproxy VAR_PID VAR_PORT UPSTREAM_PORT [OPTION...]: HAProxy as a
# reverse proxy in front of 127.0.0.1:UPSTREAM_PORT, foreground (-db), one
# thread like the daemon's one loop, configured in $tmp/haproxy (never the
# system's): upstream keep-alive, one retry, connect 1 s / read 6 s, no
# logs; each OPTION a further line of its defaults (e.g. "option
# http-no-delay").
bench_haproxy() {
	local -n _hpid=$1 _hport=$2
	local up=$3 d=$tmp/haproxy o extra=""
	shift 3
	for o in "$@"; do extra+=$'\t'"$o"$'\n'; done
	_hport=$(bench_free_port)
	mkdir -p "$d"
	cat >"$d/haproxy.cfg" <<CFG
global
	nbthread 1
	maxconn 4096
defaults
	mode http
	no log
	option http-keep-alive
${extra}	timeout connect 1s
	timeout server 6s
	timeout client 30s
	timeout http-keep-alive 300s
	retries 1
frontend fe
	bind 127.0.0.1:$_hport
	default_backend upstream
backend upstream
	http-reuse always
	server up 127.0.0.1:$up
CFG
	haproxy -c -q -f "$d/haproxy.cfg" >/dev/null 2>"$d/check.log" ||
		{ cat "$d/check.log" >&2; return 1; }
	haproxy -db -f "$d/haproxy.cfg" >"$d/log" 2>&1 </dev/null &
	_hpid=$!
	BENCH_PIDS+=("$_hpid")
}

# bench_nginx_proxy VAR_PID VAR_PORT UPSTREAM_PORT [DIRECTIVE...]: nginx as
# a reverse proxy in front of 127.0.0.1:UPSTREAM_PORT, its own prefix in
# $tmp/nginx-proxy: upstream keep-alive, one retry, connect 1 s / read 6 s,
# no access log; each DIRECTIVE a further line of its location (e.g.
# "proxy_buffering off;").
bench_nginx_proxy() {
	local -n _xpid=$1 _xport=$2
	local up=$3 d=$tmp/nginx-proxy o extra=""
	shift 3
	for o in "$@"; do extra+=$'\t\t\t'"$o"$'\n'; done
	_xport=$(bench_free_port)
	mkdir -p "$d/logs"
	{
		bench_nginx_head "$d"
		cat <<CFG
	upstream up {
		server 127.0.0.1:$up max_fails=0;
		keepalive 128;
		keepalive_requests 100000000;
	}
	server {
		listen 127.0.0.1:$_xport;
		location / {
			proxy_pass http://up;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
${extra}			proxy_connect_timeout 1s;
			proxy_read_timeout 6s;
			proxy_next_upstream error timeout;
			proxy_next_upstream_tries 2;
		}
	}
}
CFG
	} >"$d/nginx.conf"
	bench_nginx_spawn _xpid "$d" curl -sf -o /dev/null -X POST -d '{}' \
		"http://127.0.0.1:$_xport/v1/chat/completions"
}

# Process CPU (utime + stime, all threads) in microseconds.
bench_cpu_us() { # pid
	local stat
	stat=$(cat "/proc/$1/stat") || return 1
	stat=${stat##*) }
	# fields after "comm)": state is $1, utime is field 14 overall -> $12 here
	awk -v t="$CLK_TCK" '{ printf "%d\n", ($12 + $13) * 1000000 / t }' <<<"$stat"
}

bench_threads() { awk '/^Threads:/ { print $2 }' "/proc/$1/status"; }
bench_rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
bench_hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }

bench_load() { cut -d' ' -f1-3 /proc/loadavg; }

# Median of the numbers on stdin (one per line).
bench_median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.6g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# wrk's figures, from its --latency output on stdin, as "key=value" lines:
# rps, requests, p50_us, p90_us, p99_us, non2xx, errors.
wrk_parse() {
	awk '
	function us(v) {
		if (v ~ /us$/) return v + 0;
		if (v ~ /ms$/) return v * 1000;
		if (v ~ /s$/) return v * 1000000;
		return v;
	}
	/^ +50%/ { print "p50_us=" us($2) }
	/^ +90%/ { print "p90_us=" us($2) }
	/^ +99%/ { print "p99_us=" us($2) }
	/requests in/ { print "requests=" $1 }
	/^Requests\/sec:/ { print "rps=" $2 }
	/Non-2xx or 3xx responses:/ { print "non2xx=" $NF }
	/Socket errors:/ { e = 0; for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) e += $i; print "errors=" e }
	'
}

# wrk_run OUTVAR threads conns secs url body: POST body to url; OUTVAR gets
# the parsed figures (see wrk_parse), the raw output goes to $tmp/wrk.last.
wrk_run() {
	local -n _out=$1
	local t=$2 c=$3 s=$4 url=$5 body=$6
	WRK_BODY=$body timeout $((s + 30)) wrk -t"$t" -c"$c" -d"${s}s" --timeout 10s --latency \
		-s "$src/tests/bench/post.lua" "$url" >"$tmp/wrk.last" 2>&1 || true
	_out=$(wrk_parse <"$tmp/wrk.last")
}

kv() { # key "k=v lines"
	sed -n "s/^$1=//p" <<<"$2" | head -1
}

result() { # key value [unit]
	echo "RESULT $*"
}

note() { echo "# $*"; }

bench_header() {
	note "$bench_name: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), load $(bench_load)"
}

# bench_config FILE UPSTREAM_URL [budget_ms [max_concurrent [first_byte_ms
# [http_version [tls_ca_file]]]]]: one route "intent" on one backend
# "primary" with output validation (schema, enum, deny rule, confidence)
# and full logging (inputs and raw output in the DB), rules as the
# fallback; tokens file with an operator. http_version and tls_ca_file are
# written only when given (absent: the defaults, "1.1" and the system's CAs).
bench_config() {
	local f=$1 url=$2 budget=${3:-3000} maxc=${4:-20000} fb=${5:-5000} extra=""
	[ -z "${6:-}" ] || extra+=", \"http_version\": \"$6\""
	[ -z "${7:-}" ] || extra+=", \"tls_ca_file\": \"$7\""
	echo "bench-operator-token operator bench" >"$tmp/tokens"
	chmod 600 "$tmp/tokens"
	cat >"$f" <<EOF
{
  "listen": "127.0.0.1:0",
  "database": "$tmp/fusebox.db",
  "tokens_file": "$tmp/tokens",
  "max_inflight": 20000,
  "log": {"level": "warn", "inputs": true, "raw_output_bytes": 4096},
  "backends": [{
    "name": "primary",
    "url": "$url",
    "model": "bench-model",
    "timeouts": {"connect_ms": 1000, "first_byte_ms": $fb, "total_ms": $((fb + 3000))},
    "max_concurrent": $maxc, "queue_ms": 0,
    "breaker": {"mode": "consecutive", "failure_threshold": 100000, "open_ms": 60000}$extra
  }],
  "routes": [{
    "name": "intent",
    "budget_ms": $budget,
    "min_attempt_ms": 50,
    "retry": {"max_retries": 1, "backoff": "none",
              "retry_on": ["connect_error", "reset", "http_5xx"]},
    "targets": [{"backend": "primary", "weight": 100}],
    "prompt": {"system": "Classify the user's intent as refund, complaint, consult or other. Answer with JSON: {\"intent\": ..., \"confidence\": 0..1, \"summary\": ...}.",
               "user": "{{input}}", "temperature": 0.2, "max_tokens": 128, "response_format_json": true},
    "output": {
      "schema": {"type": "object", "required": ["intent", "confidence"],
                 "properties": {"intent": {"type": "string", "enum": ["refund", "complaint", "consult", "other"]},
                                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                                "summary": {"type": "string", "minLength": 4, "maxLength": 100}}},
      "deny": [{"field": "summary", "pattern": "unknown|n/a"}],
      "confidence_field": "confidence", "clamp_confidence": true,
      "reject_below": 0.1, "review_below": 0.5
    },
    "rules": {
      "match": [{"any": ["refund", "money back"], "result": {"intent": "refund"}, "confidence": 0.6},
                {"regex": "complain", "result": {"intent": "complaint"}, "confidence": 0.6}],
      "default": {"result": {"intent": "other"}, "confidence": 0.3}
    },
    "on_exhausted": "error"
  }]
}
EOF
}

CALL_BODY='{"input":"Hello, I ordered shoes last week and they arrived damaged. I want my money back, please tell me how to return them."}'

# bench_daemon VAR_PID VAR_PORT CONFIG
bench_daemon() {
	bench_spawn "$1" "$2" "$tmp/fuseboxd.log" "$fuseboxd" -c "$3"
}

# verdict VALUE OP TARGET: "met" or "MISSED" (OP: le, ge, lt, eq).
verdict() {
	awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN {
		if (v == "" || v == "nan") { print "n/a"; exit }
		ok = (op == "le" && v + 0 <= t + 0) || (op == "ge" && v + 0 >= t + 0) ||
		     (op == "lt" && v + 0 < t + 0) || (op == "eq" && v + 0 == t + 0);
		print ok ? "met" : "MISSED" }'
}

# target KEY VALUE UNIT OP TARGET: a RESULT line with the target and verdict.
target() {
	local sym
	case $4 in le) sym="<=" ;; ge) sym=">=" ;; lt) sym="<" ;; eq) sym="=" ;; esac
	echo "RESULT $1 $2 $3 target:$sym$5 $(verdict "$2" "$4" "$5")"
}

calc() { awk "BEGIN { printf \"%.6g\n\", $* }"; }

kv0() { # like kv, 0 when absent
	local v
	v=$(kv "$1" "$2")
	echo "${v:-0}"
}

# bench_route NAME BACKEND BUDGET_MS RETRY_EXTRA: bench_config's route
# (validation, rules) as one element of a routes array, for benches that
# render their own config (hedge, adaptive).
bench_route() {
	cat <<EOF
    {"name": "$1", "budget_ms": $3, "min_attempt_ms": 50,
     "retry": {"max_retries": 1, "backoff": "none",
               "retry_on": ["connect_error", "reset", "http_5xx"]$4},
     "targets": [{"backend": "$2", "weight": 100}],
     "prompt": {"system": "Classify the user's intent as refund, complaint, consult or other. Answer with JSON: {\"intent\": ..., \"confidence\": 0..1, \"summary\": ...}.",
                "user": "{{input}}", "temperature": 0.2, "max_tokens": 128, "response_format_json": true},
     "output": {
       "schema": {"type": "object", "required": ["intent", "confidence"],
                  "properties": {"intent": {"type": "string", "enum": ["refund", "complaint", "consult", "other"]},
                                 "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                                 "summary": {"type": "string", "minLength": 4, "maxLength": 100}}},
       "confidence_field": "confidence", "clamp_confidence": true,
       "reject_below": 0.1, "review_below": 0.5},
     "rules": {"match": [{"any": ["refund", "money back"], "result": {"intent": "refund"}, "confidence": 0.6}],
               "default": {"result": {"intent": "other"}, "confidence": 0.3}},
     "on_exhausted": "error"}
EOF
}

# bench_mock BEHAVIOUR BACKEND...: start fusebox-mockllm (pid in MOCK, port
# MOCK_PORT, base URL in mock) and give each BACKEND the behaviour.
bench_mock() {
	local behaviour=$1 b
	shift
	bench_spawn MOCK MOCK_PORT "$tmp/mock.log" "$mockllm" --listen 127.0.0.1:0 --quiet
	mock=http://127.0.0.1:$MOCK_PORT
	for b in "$@"; do
		curl -sf -X PUT -d "$behaviour" "$mock/_mock/backends/$b" >/dev/null
	done
}

# bench_mock_stat BACKEND KEY: a number of the backend's entry in the mock's /_mock/stats.
bench_mock_stat() {
	curl -sf "$mock/_mock/stats" | sed -n 's/.*"'"$1"'":{\([^{}]*\).*/\1/p' | tr ',' '\n' |
		sed -n 's/^"'"$2"'":\([0-9.]*\)$/\1/p'
}
