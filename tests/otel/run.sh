#!/usr/bin/env bash
# fuseboxd's trace context and OTLP export against the official
# OpenTelemetry JS SDK (issue 21). Installs @opentelemetry/api,
# sdk-trace-base, core and otlp-transformer (its protobufjs module of the
# OTLP .proto files checks the payload) into the build folder, starts
# fusebox-mockllm on 127.0.0.1 and runs otel_test.mjs, which starts the
# collector and fuseboxd itself (the config names the collector's port).
# usage: run.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
work=$(mktemp -d /tmp/fusebox-otel-XXXXXX)
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
sdk="$build/otel-sdk"
# the SDK 1.30 line and the OTLP transformer released with it
pkgs=(@opentelemetry/api@1.9.0 @opentelemetry/sdk-trace-base@1.30.1
	@opentelemetry/core@1.30.1 @opentelemetry/otlp-transformer@0.57.2)
if ! node -e "process.exit(require('$sdk/node_modules/@opentelemetry/otlp-transformer/package.json').version === '0.57.2' ? 0 : 1)" 2>/dev/null; then
	mkdir -p "$sdk"
	(cd "$sdk" && npm install --no-audit --no-fund --loglevel=error "${pkgs[@]}" >&2)
fi
cp "$src/tests/otel/otel_test.mjs" "$sdk/"

"$build/contrib/fusebox-mockllm" --listen 127.0.0.1:0 --quiet >"$work/mock.out" 2>"$work/mock.err" &
pids+=($!)
mport=
for _ in $(seq 1 100); do
	if grep -q '^listening on ' "$work/mock.out" 2>/dev/null; then
		mport=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/mock.out" | head -1)
		break
	fi
	sleep 0.1
done
if [ -z "$mport" ]; then
	echo "fusebox-mockllm did not start:" >&2
	cat "$work/mock.err" >&2
	exit 1
fi
cd "$sdk"
WORK="$work" FUSEBOXD="$build/daemon/fuseboxd" MOCK_URL="http://127.0.0.1:$mport" node otel_test.mjs
