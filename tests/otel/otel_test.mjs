// fuseboxd's tracing against real OpenTelemetry code (API.md "Tracing").
// The caller is the official OpenTelemetry JS SDK: it starts a span and
// calls fuseboxd with its W3C propagator. The collector is a small OTLP/HTTP
// receiver here; what fuseboxd sends it is decoded with the official OTLP
// message types (@opentelemetry/otlp-transformer's protobufjs module compiled
// from opentelemetry-proto): JSON -> ExportTraceServiceRequest.fromObject ->
// protobuf bytes -> decode, and every field we sent must survive the trip.
// Run by run.sh (env MOCK_URL, FUSEBOXD, WORK).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

import { context, trace, propagation, defaultTextMapSetter, defaultTextMapGetter,
  TraceFlags } from '@opentelemetry/api';
import { W3CTraceContextPropagator, TraceState } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor,
  AlwaysOnSampler } from '@opentelemetry/sdk-trace-base';

const require = createRequire(import.meta.url);
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root.js');
const pb = root.opentelemetry.proto;
const Request = pb.collector.trace.v1.ExportTraceServiceRequest;
const SpanKind = pb.trace.v1.Span.SpanKind;
const StatusCode = pb.trace.v1.Status.StatusCode;

// --- the collector ---------------------------------------------------------
const bodies = [];
const collector = createServer((req, res) => {
  let data = '';
  req.on('data', (c) => { data += c; });
  req.on('end', () => {
    bodies.push({ path: req.url, type: req.headers['content-type'], data });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
});
await new Promise((r) => collector.listen(0, '127.0.0.1', r));
const cport = collector.address().port;

// --- fuseboxd ---------------------------------------------------------------
const work = process.env.WORK;
writeFileSync(`${work}/tokens`, 'op-token operator alice\n', { mode: 0o600 });
writeFileSync(`${work}/fusebox.json`, JSON.stringify({
  listen: '127.0.0.1:0', database: 'fusebox.db', tokens_file: 'tokens',
  tracing: { endpoint: `http://127.0.0.1:${cport}/v1/traces`, flush_ms: 100,
    service_name: 'fuseboxd-otel-test' },
  backends: [{ name: 'primary', url: `${process.env.MOCK_URL}/b/primary/v1/chat/completions`,
    model: 'm', record_response_headers: ['X-Mock-Backend'] }],
  routes: [{ name: 'intent', budget_ms: 5000, targets: [{ backend: 'primary' }] }],
}));
const daemon = spawn(process.env.FUSEBOXD, ['-c', `${work}/fusebox.json`],
  { stdio: ['ignore', 'pipe', 'inherit'] });
const fbUrl = await new Promise((resolve, reject) => {
  let out = '';
  const t = setTimeout(() => reject(new Error('fuseboxd did not start')), 10000);
  daemon.stdout.on('data', (c) => {
    out += c;
    const m = /^listening on 127\.0\.0\.1:(\d+)/m.exec(out);
    if (m) { clearTimeout(t); resolve(`http://127.0.0.1:${m[1]}`); }
  });
});

let failed = 0;
async function check(name, fn) {
  try {
    await fn();
    console.log(`ok - ${name}`);
  } catch (e) {
    failed++;
    console.log(`not ok - ${name}\n${e.stack}`);
  }
}

// --- the caller: the OpenTelemetry SDK --------------------------------------
const memory = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ sampler: new AlwaysOnSampler() });
provider.addSpanProcessor(new SimpleSpanProcessor(memory));
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
const tracer = provider.getTracer('fusebox-otel-test');

const hex = (b) => Buffer.from(b).toString('hex');
const toProto = (o) => {
  // OTLP/JSON writes ids as hex; the protobuf JSON mapping reads bytes as
  // base64: that is the one difference the OTLP spec allows.
  const fix = (x) => {
    if (Array.isArray(x)) return x.map(fix);
    if (x && typeof x === 'object') {
      const y = {};
      for (const [k, v] of Object.entries(x)) {
        y[k] = ['traceId', 'spanId', 'parentSpanId'].includes(k)
          ? Buffer.from(v, 'hex').toString('base64') : fix(v);
      }
      return y;
    }
    return x;
  };
  return fix(o);
};
// Every key of a (what we sent) is a field the official type kept in b.
function sameFields(a, b, where) {
  if (Array.isArray(a)) {
    assert.ok(Array.isArray(b), `${where}: not a repeated field`);
    assert.equal(a.length, b.length, `${where}: length`);
    a.forEach((v, i) => sameFields(v, b[i], `${where}[${i}]`));
  } else if (a && typeof a === 'object') {
    for (const k of Object.keys(a)) {
      assert.ok(b && k in b, `${where}.${k}: not a field of the OTLP message`);
      sameFields(a[k], b[k], `${where}.${k}`);
    }
  } else {
    assert.equal(String(b), String(a), `${where}: value`);
  }
}
function decodeAll() {
  const spans = [];
  for (const b of bodies) {
    assert.equal(b.path, '/v1/traces');
    assert.match(b.type, /^application\/json/);
    const sent = toProto(JSON.parse(b.data));
    // fromObject reads the protobuf JSON mapping (int64 as decimal strings,
    // enums as numbers); verify then checks the message it built.
    const built = Request.fromObject(sent);
    assert.equal(Request.verify(built), null, 'verify');
    const msg = Request.decode(Request.encode(built).finish());
    const back = Request.toObject(msg, { longs: String, enums: Number, bytes: String });
    sameFields(sent, back, 'request');
    for (const rs of msg.resourceSpans)
      for (const ss of rs.scopeSpans)
        for (const s of ss.spans) spans.push({ s, resource: rs.resource });
  }
  return spans;
}
const attrs = (s) => Object.fromEntries(s.attributes.map((a) => {
  const v = a.value;
  return [a.key, v.stringValue ?? (v.intValue != null ? String(v.intValue) : undefined) ??
    v.boolValue ?? v.arrayValue?.values.map((x) => x.stringValue)];
}));
async function spansOf(traceId, n) {
  for (let i = 0; i < 100; i++) {
    const got = decodeAll().filter((x) => hex(x.s.traceId) === traceId);
    if (got.length >= n) return got;
    await new Promise((r) => setTimeout(r, 50));
  }
  return decodeAll().filter((x) => hex(x.s.traceId) === traceId);
}

await check('the SDK caller\'s span is the parent of fuseboxd\'s spans', async () => {
  const parent = tracer.startSpan('checkout');
  const sc = parent.spanContext();
  let ctx = trace.setSpan(context.active(), parent);
  ctx = trace.setSpanContext(ctx, { ...sc, traceState: new TraceState('shop=7f,vendor=x1') });
  const headers = { 'content-type': 'application/json' };
  propagation.inject(ctx, headers, defaultTextMapSetter);
  assert.match(headers.traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);

  const res = await fetch(`${fbUrl}/v1/routes/intent/call`, {
    method: 'POST', headers, body: JSON.stringify({ input: 'refund please', request_id: 'otel-1' }),
  });
  assert.equal(res.status, 200);
  await res.json();
  parent.end();

  // The answer's traceparent read back by the SDK's own propagator.
  const back = trace.getSpanContext(propagation.extract(context.active(),
    { traceparent: res.headers.get('traceparent') }, defaultTextMapGetter));
  assert.ok(back, 'the answer carries a traceparent the SDK accepts');
  assert.equal(back.traceId, sc.traceId);
  assert.notEqual(back.spanId, sc.spanId);
  assert.equal(back.traceFlags & TraceFlags.SAMPLED, TraceFlags.SAMPLED);

  const mock = await (await fetch(`${process.env.MOCK_URL}/_mock/stats`)).json();
  const up = mock.backends.primary.last_request.headers;
  const upCtx = trace.getSpanContext(propagation.extract(context.active(), up,
    defaultTextMapGetter));
  assert.equal(upCtx.traceId, sc.traceId);
  assert.equal(upCtx.traceState.serialize(), 'shop=7f,vendor=x1');

  const spans = await spansOf(sc.traceId, 2);
  assert.equal(spans.length, 2, 'one call span and one attempt span');
  const call = spans.find((x) => x.s.name === 'fusebox.call');
  const att = spans.find((x) => x.s.name === 'chat m');
  assert.ok(call && att);
  assert.equal(call.s.kind, SpanKind.SPAN_KIND_SERVER);
  assert.equal(hex(call.s.parentSpanId), sc.spanId);
  assert.equal(hex(call.s.spanId), back.spanId);
  assert.equal(att.s.kind, SpanKind.SPAN_KIND_CLIENT);
  assert.equal(hex(att.s.parentSpanId), hex(call.s.spanId));
  assert.equal(hex(att.s.spanId), upCtx.spanId);
  assert.equal(call.s.status?.code ?? StatusCode.STATUS_CODE_UNSET,
    StatusCode.STATUS_CODE_UNSET);
  const ca = attrs(call.s), aa = attrs(att.s);
  assert.equal(ca['gen_ai.operation.name'], 'chat');
  assert.equal(ca['fusebox.route'], 'intent');
  assert.equal(ca['fusebox.source'], 'llm');
  assert.equal(ca['http.response.status_code'], '200');
  assert.equal(aa['gen_ai.request.model'], 'm');
  assert.equal(aa['server.address'], '127.0.0.1');
  assert.equal(aa['fusebox.attempt_no'], '1');
  assert.equal(aa['fusebox.outcome'], 'ok');
  assert.deepEqual(aa['http.response.header.x-mock-backend'], ['primary']);
  assert.ok(!('fusebox.input' in ca), 'no inputs without tracing.include_io');
  const ra = attrs(call.resource);
  assert.equal(ra['service.name'], 'fuseboxd-otel-test');
  assert.ok(ra['service.version']);
  assert.ok(BigInt(att.s.startTimeUnixNano.toString()) >= BigInt(call.s.startTimeUnixNano.toString()));

  // The caller's own span, as the SDK recorded it, is in the same trace.
  const mine = memory.getFinishedSpans().find((s) => s.name === 'checkout');
  assert.equal(mine.spanContext().traceId, hex(call.s.traceId));
});

await check('an unsampled caller: propagated, not exported', async () => {
  const parent = tracer.startSpan('not-sampled');
  const sc = { ...parent.spanContext(), traceFlags: TraceFlags.NONE };
  const headers = { 'content-type': 'application/json' };
  propagation.inject(trace.setSpanContext(context.active(), sc), headers, defaultTextMapSetter);
  const res = await fetch(`${fbUrl}/v1/routes/intent/call`, {
    method: 'POST', headers, body: JSON.stringify({ input: 'x' }),
  });
  assert.equal(res.status, 200);
  await res.json();
  parent.end();
  const back = trace.getSpanContext(propagation.extract(context.active(),
    { traceparent: res.headers.get('traceparent') }, defaultTextMapGetter));
  assert.equal(back.traceId, sc.traceId);
  assert.equal(back.traceFlags & TraceFlags.SAMPLED, 0);
  await new Promise((r) => setTimeout(r, 600));
  assert.equal(decodeAll().filter((x) => hex(x.s.traceId) === sc.traceId).length, 0);
});

daemon.kill('SIGTERM');
await new Promise((r) => daemon.on('exit', r));
collector.close();
await provider.shutdown();
if (failed) {
  console.log(`${failed} failed`);
  process.exit(1);
}
console.log('all passed');
