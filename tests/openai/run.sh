#!/usr/bin/env bash
# The OpenAI Node SDK against fuseboxd (issue: OpenAI-compatible facade).
# Installs the npm package `openai` into the build folder, starts
# fusebox-mockllm and fuseboxd on 127.0.0.1 (port 0) and runs sdk_test.mjs.
# usage: run.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
work=$(mktemp -d /tmp/fusebox-sdk-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "node/npm not installed: contrib/dev.sh deps installs them" >&2
	exit 1
fi
sdk="$build/openai-sdk"
# the SDK's major version 6 (the one the facade is tested against)
if ! node -e "process.exit(require('$sdk/node_modules/openai/package.json').version.startsWith('6.') ? 0 : 1)" 2>/dev/null; then
	mkdir -p "$sdk"
	(cd "$sdk" && npm install --no-audit --no-fund --loglevel=error openai@6 >&2)
fi
cp "$src/tests/openai/sdk_test.mjs" "$sdk/"

# start a child, wait for its "listening on 127.0.0.1:PORT" line, PORT into
# the variable VAR. Not in a $(...) subshell: the pid must reach pids[]
# of this shell, or cleanup cannot stop the child.
start() { # name VAR cmd...
	local name=$1 out=$work/$1.out
	local -n _port=$2
	shift 2
	"$@" >"$out" 2>"$work/$name.err" &
	pids+=($!)
	for _ in $(seq 1 100); do
		if grep -q '^listening on ' "$out" 2>/dev/null; then
			_port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$out" | head -1)
			return 0
		fi
		sleep 0.1
	done
	echo "$name did not start:" >&2
	cat "$work/$name.err" >&2
	return 1
}

start mock mport "$build/contrib/fusebox-mockllm" --listen 127.0.0.1:0 --quiet
cat >"$work/fusebox.json" <<CFG
{"listen": "127.0.0.1:0", "database": "fusebox.db", "tokens_file": "tokens",
 "backends": [{"name": "primary", "url": "http://127.0.0.1:$mport/b/primary/v1/chat/completions",
               "model": "m", "timeouts": {"connect_ms": 1000, "first_byte_ms": 400, "total_ms": 5000},
               "breaker": {"failure_threshold": 1000}},
              {"name": "down", "url": "http://127.0.0.1:$mport/b/down/v1/chat/completions",
               "model": "m-down", "timeouts": {"connect_ms": 1000, "first_byte_ms": 400, "total_ms": 1000},
               "breaker": {"failure_threshold": 1000}}],
 "routes": [{"name": "intent", "budget_ms": 5000, "targets": [{"backend": "primary"}],
             "retry": {"max_retries": 0},
             "rules": {"match": [{"any": ["refund"], "result": {"intent": "refund"}}]}},
            {"name": "agent", "budget_ms": 5000, "targets": [{"backend": "primary"}],
             "retry": {"max_retries": 0}},
            {"name": "down", "budget_ms": 2000, "targets": [{"backend": "down"}],
             "retry": {"max_retries": 0}}]}
CFG
start daemon dport "$build/daemon/fuseboxd" -c "$work/fusebox.json"
cd "$sdk"
FB_URL="http://127.0.0.1:$dport" MOCK_URL="http://127.0.0.1:$mport" node sdk_test.mjs
