// The official OpenAI Node client pointed at fuseboxd: the facade must be
// a drop-in chat-completions endpoint, plain and streaming, healthy and
// degraded. Run by tests/openai/run.sh with FB_URL and MOCK_URL set.
import assert from "node:assert/strict";
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.FB_URL + "/v1", apiKey: "unused", maxRetries: 0 });
const mock = process.env.MOCK_URL;

async function mockSet(backend, behaviour) {
	const r = await fetch(`${mock}/_mock/backends/${backend}`, { method: "PUT", body: JSON.stringify(behaviour) });
	assert.equal(r.status, 200);
}

const messages = [{ role: "user", content: "I want a refund" }];
let passed = 0;

async function test(name, fn) {
	await fn();
	passed++;
	console.log(`ok - ${name}`);
}

await test("plain completion from the model", async () => {
	await mockSet("primary", {});
	const c = await client.chat.completions.create({ model: "fusebox/intent", messages });
	assert.equal(c.object, "chat.completion");
	assert.match(c.choices[0].message.content, /refund/);
	assert.equal(c.choices[0].finish_reason, "stop");
	assert.equal(c.fusebox.source, "llm");
	assert.ok(c.usage.total_tokens > 0);
});

await test("plain completion degraded to the rule engine", async () => {
	await mockSet("primary", { status: 503 });
	const c = await client.chat.completions.create({ model: "intent", messages });
	assert.deepEqual(JSON.parse(c.choices[0].message.content), { intent: "refund" });
	assert.equal(c.fusebox.source, "rules");
	assert.equal(c.fusebox.reason, "http_5xx");
});

await test("streaming from the model", async () => {
	await mockSet("primary", { stream_first_delay_ms: 50, stream_chunk_ms: 50 });
	const stream = await client.chat.completions.create({ model: "intent", messages, stream: true });
	let text = "", chunks = 0, last;
	for await (const chunk of stream) {
		chunks++;
		text += chunk.choices[0]?.delta?.content ?? "";
		last = chunk;
	}
	assert.ok(chunks >= 4, `chunks ${chunks}`);
	assert.match(text, /"intent":"refund"/);
	assert.equal(last.choices[0].finish_reason, "stop");
	assert.equal(last.fusebox.source, "llm");
});

await test("streaming degraded: no first token in time", async () => {
	await mockSet("primary", { stream_first_delay_ms: 5000 });
	const t0 = Date.now();
	const stream = await client.chat.completions.create({ model: "intent", messages, stream: true });
	let text = "", last;
	for await (const chunk of stream) {
		text += chunk.choices[0]?.delta?.content ?? "";
		last = chunk;
	}
	assert.ok(Date.now() - t0 < 2000);
	assert.deepEqual(JSON.parse(text), { intent: "refund" });
	assert.equal(last.fusebox.source, "rules");
	assert.equal(last.fusebox.reason, "first_byte_timeout");
});

await test("unknown model is an OpenAI 404", async () => {
	await assert.rejects(client.chat.completions.create({ model: "gpt-nope", messages }),
		(e) => e.status === 404 && e.code === "model_not_found");
});

console.log(`${passed} passed, 0 failed`);
