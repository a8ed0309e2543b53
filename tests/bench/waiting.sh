#!/usr/bin/env bash
# waiting: 10,000 calls held at once against an upstream that answers after
# 5 s. The client is holdcalls (one epoll thread, one connection per call,
# all started at once). Two upstream paths:
#   HTTP/1.1: slowupstream (answers each request exactly 5 s after it
#     arrived, O(1) per request; fusebox-mockllm itself adds up to ~2.4 s at
#     10,000 waiting requests on this machine, which would be measured
#     instead of the daemon). The daemon needs 2 descriptors per call
#     (+ ~30): with a hard open-file limit of 20,000 (this sandbox; root
#     without CAP_SYS_RESOURCE cannot raise it) at most ~9,980 calls fit, so
#     levels that do not fit are skipped on this path.
#   HTTP/2: nginx (nginx-light: http_v2 + echo modules) answering each
#     request after 5 s (echo_sleep), the backend with "http_version": "2":
#     calls are streams on ~n/100 upstream connections, so the daemon needs
#     ~1 descriptor per call. h2 over TLS (ALPN; a self-signed certificate
#     made here, trusted through the backend's tls_ca_file): libcurl 7.88
#     cannot reuse an h2c prior-knowledge connection (curl issue #10634), so
#     there the daemon opens one connection per attempt.
#     BENCH_WAIT_H2_SCHEME=http measures h2c anyway.
# Per level and path:
#   1. baseline, same run: holdcalls -> the upstream directly (HTTP/1.1;
#      for the HTTP/2 path nginx's plain HTTP/1.1 listener with the same
#      delay: holdcalls speaks HTTP/1.1 only);
#   2. holdcalls -> fuseboxd -> upstream, budget 8 s: every call must be
#      answered by the model (source llm), none after its budget, with the
#      daemon's thread count constant and its RSS <= 150 MB. On the HTTP/2
#      path this runs twice, a fresh daemon each: the native path (POST
#      /v1/routes/intent/call, keys waiting.h2.N.*) and the OpenAI facade
#      (POST /v1/chat/completions with "model": "intent", keys
#      waiting.h2.chat.N.*); BENCH_WAIT_APIS (default "call chat") picks.
# Memory per waiting call (issue 28), per path and level:
#   kb_per_call = (RSS while all N calls are held - RSS idle) / N, in KiB,
#   "held": from the moment holdcalls has written every request
#   (--held-file) until the first call ends, the largest RSS sampled then
#   (every 0.2 s); idle: after one warm-up call, before the load. Target
#   <= 24 KiB on the HTTP/2 path at every level, judged per API path; a
#   table of both paths side by side closes the output.
#   BENCH_WAIT_AT_HELD=CMD runs "CMD PID KEY" once per level and path while
#   all calls are held (after ~1 s of it), e.g. a script that copies
#   /proc/PID/smaps or asks jemalloc for a heap profile (MALLOC_CONF is
#   passed to the daemon as set).
# Levels: BENCH_WAIT_LEVELS (default "1000 3000 10000") on the HTTP/1.1
# path (those that fit), BENCH_WAIT_H2_LEVELS (default: the same levels)
# on the HTTP/2 path. The other targets are judged at the largest level,
# on the HTTP/2 path when nginx is there (else on the HTTP/1.1 path, as
# before).
#   tests/bench/waiting.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
bench_init "${1:-}" "${2:-}" waiting
holdcalls=$build/tests/bench/holdcalls
slowup=$build/tests/bench/slowupstream
echo_mod=/usr/lib/nginx/modules/ngx_http_echo_module.so
[ -x "$fuseboxd" ] || bench_skip "$fuseboxd is not built"
[ -x "$holdcalls" ] || bench_skip "$holdcalls is not built"
[ -x "$slowup" ] || bench_skip "$slowup is not built"
levels=${BENCH_WAIT_LEVELS:-1000 3000 10000}
h2_levels=${BENCH_WAIT_H2_LEVELS:-$levels}
apis=${BENCH_WAIT_APIS:-call chat}
declare -A KB_CALL=()
h2_scheme=${BENCH_WAIT_H2_SCHEME:-https}
calls=$(tr ' ' '\n' <<<"$levels $h2_levels" | grep . | sort -n | tail -1)
delay=5000
budget=8000
bench_header
h2=1
for p in nginx openssl; do
	command -v "$p" >/dev/null 2>&1 || { h2=0; note "$p is not installed (Debian package: $(bench_pkg "$p")): no HTTP/2 path"; }
done
[ -e "$echo_mod" ] || { h2=0; note "$echo_mod is missing (nginx-light): no HTTP/2 path"; }
note "levels: HTTP/1.1 $levels; HTTP/2 ${h2_levels:-none}; calls started at once (at most 256 connects pending), upstream delay ${delay} ms, budget ${budget} ms, open-file limit $(ulimit -n)"

bench_spawn UP UP_PORT "$tmp/slowup.log" "$slowup" --delay-ms "$delay" --max-s 600
chat='{"model":"m","messages":[{"role":"user","content":"I want my money back"}]}'
# the facade's request: the same user text as CALL_BODY's input
CHAT_BODY='{"model":"intent","messages":[{"role":"user","content":"Hello, I ordered shoes last week and they arrived damaged. I want my money back, please tell me how to return them."}]}'

# nginx with an h2 server ($h2_scheme) and a plain HTTP/1.1 one (the direct
# baseline), both answering CANNED_REPLY after $delay ms; access log: the
# protocol and connection serial number of each request.
nginx_h2() {
	local d=$tmp/nginx esc listen tls=""
	mkdir -p "$d/logs"
	esc=${CANNED_REPLY//\\\"/\\\\\\\"}
	NGX_PORT=$(bench_free_port)
	NGX_H1_PORT=$(bench_free_port)
	if [ "$h2_scheme" = https ]; then
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-keyout "$d/key.pem" -out "$d/cert.pem" -days 2 -subj /CN=127.0.0.1 \
			-addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1
		listen="127.0.0.1:$NGX_PORT ssl http2"
		tls="ssl_certificate $d/cert.pem; ssl_certificate_key $d/key.pem;"
	else
		listen="127.0.0.1:$NGX_PORT http2"
	fi
	cat >"$d/nginx.conf" <<EOF
load_module $echo_mod;
worker_processes 1;
worker_rlimit_nofile $(ulimit -Hn);
daemon off;
master_process on;
pid $d/nginx.pid;
error_log $d/logs/error.log warn;
events { worker_connections $(($(ulimit -Hn) - 100)); }
http {
	log_format fb '\$server_port \$server_protocol \$connection';
	access_log $d/logs/access.log fb buffer=64k;
	client_body_temp_path $d/body;
	proxy_temp_path $d/proxy;
	fastcgi_temp_path $d/fastcgi;
	uwsgi_temp_path $d/uwsgi;
	scgi_temp_path $d/scgi;
	client_body_buffer_size 64k;
	keepalive_requests 100000000;
	keepalive_timeout 300s;
	http2_max_concurrent_streams 128;
	http2_max_requests 100000000;
	default_type application/json;
	server {
		listen $listen;
		$tls
		location / { echo_read_request_body; echo_sleep $((delay / 1000)); echo_exec /canned; }
		location = /canned { internal; return 200 '$esc'; }
	}
	server {
		listen 127.0.0.1:$NGX_H1_PORT;
		location / { echo_read_request_body; echo_sleep $((delay / 1000)); echo_exec /canned; }
		location = /canned { internal; return 200 '$esc'; }
	}
}
EOF
	bench_nginx_spawn NGX "$d" nginx_up
}

nginx_up() { # both listeners answer
	curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$NGX_H1_PORT/canned" &&
		ss -Htln "sport = :$NGX_PORT" | grep -q .
}

level() { # calls judge(0|1) path(h1|h2) api(call|chat)
	local n=$1 judge=$2 path=$3 api=${4:-call} out threads0 rss0 cpu0 cpu1 hwm tmin tmax rssmax fdmax t r f k
	local dport url ver="" ca="" nlog=$tmp/nginx/logs/access.log rssheld=0 heldn=0 held mark=$tmp/held.$n.$api kb
	local -a how=(--body "$CALL_BODY")
	[ "$api" = chat ] && how=(--chat intent --body "$CHAT_BODY")
	if [ "$path" = h2 ]; then
		k=waiting.h2.$n dport=$NGX_H1_PORT ver=2
		[ "$api" = chat ] && k=waiting.h2.chat.$n
		url="$h2_scheme://127.0.0.1:$NGX_PORT/v1/chat/completions"
		[ "$h2_scheme" = https ] && ca=$tmp/nginx/cert.pem
	else
		k=waiting.$n dport=$UP_PORT
		url="http://127.0.0.1:$UP_PORT/v1/chat/completions"
	fi
	# 1. Baseline: the client and the upstream alone (once per level and path).
	if [ "$api" = call ]; then
		"$holdcalls" --port "$dport" --path /v1/chat/completions -n "$n" --body "$chat" \
			--timeout-ms $((budget + 5000)) --max-s 60 >"$tmp/direct.out" 2>&1 || true
		out=$(cat "$tmp/direct.out")
		note "$n direct ($path path: holdcalls -> upstream over HTTP/1.1): $(grep -E '^(ok|failed|client_p50_ms|client_p99_ms|client_max_ms)=' <<<"$out" | tr '\n' ' ')"
		result "$k.direct_client_p50_ms" "$(kv client_p50_ms "$out")" ms
		result "$k.direct_client_max_ms" "$(kv client_max_ms "$out")" ms
		sleep 1
	fi

	# 2. Through the daemon (a fresh one per level).
	rm -f "$tmp"/fusebox.db*
	bench_config "$tmp/fusebox.json" "$url" "$budget" 20000 "$((budget - 500))" "$ver" "$ca"
	bench_daemon FBD FBD_PORT "$tmp/fusebox.json"
	if [ "$api" = chat ]; then
		curl -s -o /dev/null -H 'Content-Type: application/json' -d "$CHAT_BODY" --max-time 10 "http://127.0.0.1:$FBD_PORT/v1/chat/completions"
	else
		curl -s -o /dev/null -H 'Content-Type: application/json' -d "$CALL_BODY" --max-time 10 "http://127.0.0.1:$FBD_PORT/v1/routes/intent/call"
	fi
	threads0=$(bench_threads "$FBD")
	rss0=$(bench_rss_kb "$FBD")
	cpu0=$(bench_cpu_us "$FBD")
	if [ "$path" = h2 ]; then
		kill -USR1 "$NGX" 2>/dev/null || true # reopen logs: flushes the buffer
		sleep 0.3
		wc -l <"$nlog" >"$nlog.mark" 2>/dev/null || echo 0 >"$nlog.mark"
	fi
	rm -f "$mark"
	"$holdcalls" --port "$FBD_PORT" -n "$n" "${how[@]}" --timeout-ms $((budget + 5000)) \
		--max-s 60 --late-ms "$budget" --expect-source llm --csv "$tmp/calls.$n.$api.csv" \
		--held-file "$mark" >"$tmp/hold.out" 2>&1 &
	HOLD=$!
	BENCH_PIDS+=("$HOLD")
	tmin=$threads0 tmax=$threads0 rssmax=$rss0 fdmax=0
	while kill -0 "$HOLD" 2>/dev/null; do
		t=$(bench_threads "$FBD") r=$(bench_rss_kb "$FBD")
		f=$(ls "/proc/$FBD/fd" 2>/dev/null | wc -l)
		[ "$t" -lt "$tmin" ] && tmin=$t
		[ "$t" -gt "$tmax" ] && tmax=$t
		[ "$r" -gt "$rssmax" ] && rssmax=$r
		[ "$f" -gt "$fdmax" ] && fdmax=$f
		# every request written, no call ended yet: all n are held
		if [ -s "$mark" ] && ! grep -q ended_after_mark "$mark" 2>/dev/null; then
			[ "$r" -gt "$rssheld" ] && rssheld=$r
			heldn=$((heldn + 1))
			if [ "$heldn" = 5 ] && [ -n "${BENCH_WAIT_AT_HELD:-}" ]; then
				$BENCH_WAIT_AT_HELD "$FBD" "$k" || true
			fi
		fi
		sleep 0.2
	done
	wait "$HOLD" || true
	cpu1=$(bench_cpu_us "$FBD")
	hwm=$(bench_hwm_kb "$FBD")
	out=$(cat "$tmp/hold.out")
	note "$n through fuseboxd ($path, $api): $(tr '\n' ' ' <<<"$out")"
	bench_stop "$FBD"
	if command -v sqlite3 >/dev/null 2>&1; then
		note "$n daemon's rows: $(sqlite3 "$tmp/fusebox.db" "SELECT group_concat(source || '/' || coalesce(reason, '-') || ': ' || n, ', ') FROM (SELECT source, reason, count(*) n FROM calls GROUP BY 1, 2)") | attempts: $(sqlite3 "$tmp/fusebox.db" "SELECT group_concat(outcome || ': ' || n, ', ') FROM (SELECT outcome, count(*) n FROM attempts GROUP BY 1)")"
		note "$n engine lag: attempt started after its call by $(sqlite3 "$tmp/fusebox.db" "SELECT printf('avg %.0f ms, max %d ms; connect avg %.0f ms', avg(a.started_at - c.started_at), max(a.started_at - c.started_at), avg(a.connect_ms)) FROM calls c JOIN attempts a ON a.call_id = c.id")"
	fi
	if [ "$path" = h2 ]; then
		local skip
		skip=$(cat "$nlog.mark" 2>/dev/null || echo 0)
		kill -USR1 "$NGX" 2>/dev/null || true
		sleep 0.5
		note "$n upstream (nginx) saw: $(tail -n +"$((skip + 1))" "$nlog" | awk -v p="$NGX_PORT" '$1 == p { n++; proto[$2]++; conn[$3] = 1 } END { printf "%d requests on port %s,", n, p; for (x in proto) printf " %s: %d", x, proto[x]; c = 0; for (x in conn) c++; printf ", %d connections", c }')"
		result "$k.upstream_connections" "$(tail -n +"$((skip + 1))" "$nlog" | awk -v p="$NGX_PORT" '$1 == p { conn[$3] = 1 } END { c = 0; for (x in conn) c++; print c }')" connections
	fi
	if [ "$judge" = 1 ]; then
		target "$k.answered_by_model" "$(kv0 ok "$out")" calls eq "$n"
		target "$k.failed" "$(kv0 failed "$out")" calls eq 0
		target "$k.answered_late" "$(kv0 late "$out")" calls eq 0
	else
		result "$k.answered_by_model" "$(kv0 ok "$out")/$n" calls
		result "$k.answered_late" "$(kv0 late "$out")" calls
	fi
	result "$k.client_p50_ms" "$(kv client_p50_ms "$out")" ms
	result "$k.client_max_ms" "$(kv client_max_ms "$out")" ms
	result "$k.daemon_elapsed_p50_ms" "$(kv daemon_p50_ms "$out")" ms
	result "$k.daemon_elapsed_max_ms" "$(kv daemon_max_ms "$out")" ms
	if [ "$judge" = 1 ]; then
		result "$k.threads" "$threads0" threads
		target "$k.threads_change" "$((tmax - tmin))" threads eq 0
		target "$k.rss_peak_mb" "$(calc "$rssmax / 1024")" MB le 150
	else
		result "$k.threads_change" "$((tmax - tmin))" threads
		result "$k.rss_peak_mb" "$(calc "$rssmax / 1024")" MB
	fi
	result "$k.rss_idle_mb" "$(calc "$rss0 / 1024")" MB
	held=$(sed -n 's/^held_at_mark=//p' "$mark" 2>/dev/null | head -1)
	if [ "$rssheld" -gt 0 ]; then
		result "$k.rss_held_mb" "$(calc "$rssheld / 1024")" MB
		kb=$(calc "($rssheld - $rss0) / $n")
		[ "${held:-0}" -lt "$n" ] && note "$n ($path, $api): only ${held:-0} calls were open when the last request went out"
	else
		kb=nan
		note "$n ($path, $api): no RSS sample while all calls were held"
	fi
	KB_CALL[$path.$api.$n]=$kb
	if [ "$path" = h2 ]; then
		target "$k.kb_per_call" "$kb" KiB le 24
	else
		result "$k.kb_per_call" "$kb" KiB
	fi
	result "$k.fds_peak" "$fdmax" fds
	result "$k.cpu_per_call_us" "$(calc "($cpu1 - $cpu0) / $n")" us
	note "load after level $n ($path): $(bench_load)"
	sleep 2
}

if [ "$h2" = 1 ] && [ -n "$h2_levels" ]; then
	nginx_h2
	note "HTTP/2 path: nginx h2 ($h2_scheme) on 127.0.0.1:$NGX_PORT, the direct baseline on its HTTP/1.1 listener 127.0.0.1:$NGX_H1_PORT (holdcalls speaks HTTP/1.1 only)"
fi
hard=$(ulimit -Hn)
for n in $levels; do
	if [ $((2 * n + 40)) -gt "$hard" ]; then
		note "HTTP/1.1 path, $n calls: skipped, the daemon needs $((2 * n + 40)) descriptors (2 per call) > the hard open-file limit $hard (the machine's limit, not the daemon's)"
		continue
	fi
	level "$n" "$([ "$n" = "$calls" ] && { [ "$h2" = 0 ] || ! grep -qw "$n" <<<"$h2_levels"; } && echo 1 || echo 0)" h1
done
if [ "$h2" = 1 ]; then
	for n in $h2_levels; do
		for a in $apis; do
			level "$n" "$([ "$n" = "$calls" ] && echo 1 || echo 0)" h2 "$a"
		done
	done
fi
# Side by side: memory per waiting call, per path and level.
note "memory per waiting call, KiB ((RSS held - RSS idle) / N; target <= 24 on HTTP/2):"
note "  level  | HTTP/1.1 native | HTTP/2 native | HTTP/2 facade"
for n in $(tr ' ' '\n' <<<"$levels $h2_levels" | grep . | sort -nu); do
	note "$(printf '  %-6s | %-15s | %-13s | %s' "$n" "${KB_CALL[h1.call.$n]:--}" "${KB_CALL[h2.call.$n]:--}" "${KB_CALL[h2.chat.$n]:--}")"
done
