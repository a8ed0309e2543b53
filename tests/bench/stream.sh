#!/usr/bin/env bash
# stream: the streaming facade's time to first relayed byte, side by side
# in one run. The upstream is tests/bench/ssettfb (upstream mode): every
# request gets its headers and first chat.completion.chunk (role and the
# first piece of content) in one write at once, the rest of the stream
# BENCH_STREAM_REST_MS ms later (default 2). In front of it, on 127.0.0.1:
#   haproxy  HAProxy as a reverse proxy (one thread, option http-no-delay:
#            without it a chunked answer's first piece waits for the next,
#            the kernel holding the MSG_MORE send)
#   nginx    nginx as a reverse proxy (one worker, proxy_buffering off,
#            as SSE needs)
#   bare     tests/bench/barerelay: the stream passed through by
#            libmicrohttpd and libcurl on one epoll loop the way fuseboxd
#            writes its streams, and nothing else (the libraries' floor)
#   chat     fuseboxd, POST /v1/chat/completions with "stream": true (the
#            bench config: validation, full logging)
# ssettfb (client mode) sends the same streaming chat request at c=1 on one
# keep-alive connection, BENCH_STREAM_N requests (default 300, after 20
# not counted) per target per round, targets interleaved, BENCH_REPS
# rounds; per request, the time from the request's write to the first
# byte of the answer's body. Per round: p50(through) - p50(direct); the
# figures are the medians over the rounds.
# Target (issue 28): fuseboxd's added TTFB <= HAProxy's + 50 us.
#   tests/bench/stream.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
bench_init "${1:-}" "${2:-}" stream
bench_need nginx haproxy curl
ssettfb=$build/tests/bench/ssettfb
[ -x "$fuseboxd" ] || bench_skip "$fuseboxd is not built"
[ -x "$ssettfb" ] || bench_skip "$ssettfb is not built (ninja -C $build tests/bench/ssettfb)"
bare=$build/tests/bench/barerelay
[ -x "$bare" ] || bench_skip "$bare is not built (ninja -C $build tests/bench/barerelay)"
N=${BENCH_STREAM_N:-300}
REST_MS=${BENCH_STREAM_REST_MS:-2}
bench_header
note "ssettfb client: c=1, one keep-alive connection, $N requests per target per round (after 20 not counted), $BENCH_REPS rounds; upstream sends the rest ${REST_MS} ms after the first chunk; figures are medians over the rounds"

BODY='{"model":"intent","stream":true,"messages":[{"role":"user","content":"Hello, I ordered shoes last week and they arrived damaged. I want my money back, please tell me how to return them."}]}'

bench_spawn UP UP_PORT "$tmp/upstream.log" "$ssettfb" upstream --rest-ms "$REST_MS" --max-s 900

# HAProxy and nginx as reverse proxies in front of the same upstream (lib.sh).
bench_haproxy HAP HAP_PORT $UP_PORT "option http-no-delay"
bench_nginx_proxy PXY PXY_PORT $UP_PORT "proxy_buffering off;"
bench_spawn BARE BARE_PORT "$tmp/barerelay.log" "$bare" \
	--upstream "http://127.0.0.1:$UP_PORT/v1/chat/completions"

bench_config "$tmp/fusebox.json" "http://127.0.0.1:$UP_PORT/v1/chat/completions"
bench_daemon FBD FBD_PORT "$tmp/fusebox.json"

declare -A port
port[direct]=$UP_PORT port[haproxy]=$HAP_PORT port[nginx]=$PXY_PORT port[bare]=$BARE_PORT
port[chat]=$FBD_PORT
targets=(direct haproxy nginx bare chat)

# Each relays a whole stream: the model's content, ending in [DONE].
for t in "${targets[@]}"; do
	a=$(curl -sN --max-time 5 -H 'Content-Type: application/json' -d "$BODY" \
		"http://127.0.0.1:${port[$t]}/v1/chat/completions" || true)
	grep -q 'customer wants a refund' <<<"$a" && grep -q '^data: \[DONE\]' <<<"$a" ||
		{ echo "bench: $t: unexpected stream: $a" >&2; exit 1; }
done

ttfb_run() { # OUTVAR target
	local -n _o=$1
	_o=$(timeout 120 "$ssettfb" client --port "${port[$2]}" --body "$BODY" --n "$N" --warm 20 || true)
}

for t in "${targets[@]}"; do
	: >"$tmp/p50.$t" >"$tmp/p90.$t" >"$tmp/added.$t"
done
bad=0
for ((rep = 1; rep <= BENCH_REPS; rep++)); do
	line="round $rep:"
	for t in "${targets[@]}"; do
		ttfb_run R "$t"
		bad=$((bad + $(kv0 errors "$R")))
		[ "$(kv0 requests "$R")" -gt 0 ] || { echo "bench: $t: no stream answered" >&2; exit 1; }
		kv p50_us "$R" >>"$tmp/p50.$t"
		kv p90_us "$R" >>"$tmp/p90.$t"
		line+=" $t $(kv p50_us "$R")us;"
	done
	for t in "${targets[@]}"; do
		calc "$(tail -1 "$tmp/p50.$t") - $(tail -1 "$tmp/p50.direct")" >>"$tmp/added.$t"
	done
	note "$line load $(bench_load)"
done

med() { bench_median <"$tmp/$1"; }
result stream.direct.ttfb_p50_us "$(med p50.direct)" us
result stream.direct.ttfb_p90_us "$(med p90.direct)" us
hap=$(med added.haproxy)
for t in haproxy nginx bare chat; do
	result "stream.$t.ttfb_p50_us" "$(med p50.$t)" us
	result "stream.$t.ttfb_p90_us" "$(med p90.$t)" us
	result "stream.$t.added_ttfb_us" "$(med added.$t)" us
	[ "$t" = haproxy ] && continue
	result "stream.$t.added_ttfb_minus_haproxy_us" "$(calc "$(med added.$t) - $hap")" us
done
result stream.chat.added_ttfb_minus_bare_us "$(calc "$(med added.chat) - $(med added.bare)")" us
target stream.chat.added_ttfb_vs_haproxy_us "$(calc "$(med added.chat) - $hap")" us le 50
target stream.failed_requests "$bad" requests eq 0
note "haproxy $(haproxy -v | head -1 | cut -d' ' -f3), nginx $(nginx -v 2>&1 | cut -d/ -f2); load after: $(bench_load)"
