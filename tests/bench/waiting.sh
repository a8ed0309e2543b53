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
#      daemon's thread count constant and its RSS <= 150 MB.
# Levels: BENCH_WAIT_LEVELS (default "1000 3000 10000") on the HTTP/1.1
# path (those that fit), BENCH_WAIT_H2_LEVELS (default: the levels of
# BENCH_WAIT_LEVELS from 3000 up) on the HTTP/2 path. The targets are judged
# at the largest level, on the HTTP/2 path when nginx is there (else on the
# HTTP/1.1 path, as before).
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
h2_levels=${BENCH_WAIT_H2_LEVELS:-$(for n in $levels; do [ "$n" -lt 3000 ] || printf '%s ' "$n"; done)}
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

level() { # calls judge(0|1) path(h1|h2)
	local n=$1 judge=$2 path=$3 out threads0 rss0 cpu0 cpu1 hwm tmin tmax rssmax fdmax t r f k
	local dport url ver="" ca="" nlog=$tmp/nginx/logs/access.log
	if [ "$path" = h2 ]; then
		k=waiting.h2.$n dport=$NGX_H1_PORT ver=2
		url="$h2_scheme://127.0.0.1:$NGX_PORT/v1/chat/completions"
		[ "$h2_scheme" = https ] && ca=$tmp/nginx/cert.pem
	else
		k=waiting.$n dport=$UP_PORT
		url="http://127.0.0.1:$UP_PORT/v1/chat/completions"
	fi
	# 1. Baseline: the client and the upstream alone.
	"$holdcalls" --port "$dport" --path /v1/chat/completions -n "$n" --body "$chat" \
		--timeout-ms $((budget + 5000)) --max-s 60 >"$tmp/direct.out" 2>&1 || true
	out=$(cat "$tmp/direct.out")
	note "$n direct ($path path: holdcalls -> upstream over HTTP/1.1): $(grep -E '^(ok|failed|client_p50_ms|client_p99_ms|client_max_ms)=' <<<"$out" | tr '\n' ' ')"
	result "$k.direct_client_p50_ms" "$(kv client_p50_ms "$out")" ms
	result "$k.direct_client_max_ms" "$(kv client_max_ms "$out")" ms
	sleep 1

	# 2. Through the daemon (a fresh one per level).
	rm -f "$tmp"/fusebox.db*
	bench_config "$tmp/fusebox.json" "$url" "$budget" 20000 "$((budget - 500))" "$ver" "$ca"
	bench_daemon FBD FBD_PORT "$tmp/fusebox.json"
	curl -s -o /dev/null -H 'Content-Type: application/json' -d "$CALL_BODY" --max-time 10 "http://127.0.0.1:$FBD_PORT/v1/routes/intent/call"
	threads0=$(bench_threads "$FBD")
	rss0=$(bench_rss_kb "$FBD")
	cpu0=$(bench_cpu_us "$FBD")
	if [ "$path" = h2 ]; then
		kill -USR1 "$NGX" 2>/dev/null || true # reopen logs: flushes the buffer
		sleep 0.3
		wc -l <"$nlog" >"$nlog.mark" 2>/dev/null || echo 0 >"$nlog.mark"
	fi
	"$holdcalls" --port "$FBD_PORT" -n "$n" --body "$CALL_BODY" --timeout-ms $((budget + 5000)) \
		--max-s 60 --late-ms "$budget" --expect-source llm --csv "$tmp/calls.$n.csv" >"$tmp/hold.out" 2>&1 &
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
		sleep 0.2
	done
	wait "$HOLD" || true
	cpu1=$(bench_cpu_us "$FBD")
	hwm=$(bench_hwm_kb "$FBD")
	out=$(cat "$tmp/hold.out")
	note "$n through fuseboxd ($path): $(tr '\n' ' ' <<<"$out")"
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
		level "$n" "$([ "$n" = "$calls" ] && echo 1 || echo 0)" h2
	done
fi
