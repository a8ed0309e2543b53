// The official OpenAI Node client (6.x) pointed at fuseboxd: the facade
// must be a drop-in chat-completions endpoint, plain and streaming,
// healthy and degraded, with tool calls assembled by the SDK's own
// helpers (runTools, the chat completion stream's final message), n,
// stop, finish_reason "length", include_usage, models.list(), and SDK
// retries that wait for Retry-After. Run by tests/openai/run.sh with
// FB_URL and MOCK_URL set.
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

const weatherTool = {
	type: "function",
	function: {
		name: "get_weather",
		description: "the weather in a city",
		parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
	},
};
const toolReply = { tool_calls: [{ id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' }] };

async function mockRequests(backend) {
	const r = await fetch(`${mock}/_mock/stats`);
	const st = await r.json();
	return st.backends?.[backend]?.requests ?? 0;
}

async function lastRequest(backend) {
	const r = await fetch(`${mock}/_mock/stats`);
	return (await r.json()).backends[backend].last_request.body;
}

await test("a tool-call reply is an answer (non-stream)", async () => {
	await mockSet("primary", toolReply);
	const c = await client.chat.completions.create({
		model: "agent", messages, tools: [weatherTool], tool_choice: "auto", stop: ["END"], seed: 3,
	});
	assert.equal(c.choices[0].finish_reason, "tool_calls");
	assert.equal(c.choices[0].message.content, null);
	assert.equal(c.choices[0].message.tool_calls[0].function.name, "get_weather");
	assert.deepEqual(JSON.parse(c.choices[0].message.tool_calls[0].function.arguments), { city: "Paris" });
	assert.equal(c.model, "m");
	assert.equal(c.system_fingerprint, "fp_mock");
	assert.equal(c.fusebox.route, "agent");
	const body = await lastRequest("primary");
	assert.deepEqual(body.stop, ["END"]);
	assert.equal(body.seed, 3);
	assert.equal(body.tools[0].function.name, "get_weather");
});

await test("runTools drives a tool loop through the facade", async () => {
	await mockSet("primary", { script: [toolReply, { content: "It is sunny in Paris." }] });
	let called = null;
	const runner = client.chat.completions.runTools({
		model: "fusebox/agent",
		messages: [{ role: "user", content: "weather in Paris?" }],
		tools: [{
			type: "function",
			function: {
				name: "get_weather",
				parameters: weatherTool.function.parameters,
				parse: JSON.parse,
				function: async (args) => { called = args; return { sky: "sunny" }; },
			},
		}],
	});
	assert.equal(await runner.finalContent(), "It is sunny in Paris.");
	assert.deepEqual(called, { city: "Paris" });
	const body = await lastRequest("primary");
	assert.equal(body.messages.at(-1).role, "tool");
	assert.equal(body.messages.at(-1).tool_call_id, "call_1");
	assert.equal(body.messages.at(-2).tool_calls[0].id, "call_1");
});

await test("streamed tool calls assemble in the SDK's stream helper, with usage", async () => {
	await mockSet("primary", { ...toolReply, stream_chunk_ms: 20 });
	const stream = client.chat.completions.stream({
		model: "agent", messages, tools: [weatherTool], stream_options: { include_usage: true },
	});
	let usageChunk = null;
	for await (const chunk of stream)
		if (chunk.usage) usageChunk = chunk;
	const final = await stream.finalChatCompletion();
	const msg = final.choices[0].message;
	assert.equal(final.choices[0].finish_reason, "tool_calls");
	assert.equal(msg.tool_calls.length, 1);
	assert.equal(msg.tool_calls[0].id, "call_1");
	assert.equal(msg.tool_calls[0].function.name, "get_weather");
	assert.deepEqual(JSON.parse(msg.tool_calls[0].function.arguments), { city: "Paris" });
	assert.ok(usageChunk, "no usage chunk");
	assert.deepEqual(usageChunk.choices, []);
	assert.equal(usageChunk.usage.completion_tokens, 9);
});

await test("include_usage on a streamed text answer", async () => {
	await mockSet("primary", {});
	const stream = await client.chat.completions.create({
		model: "agent", messages, stream: true, stream_options: { include_usage: true },
	});
	let last, text = "";
	for await (const chunk of stream) {
		text += chunk.choices[0]?.delta?.content ?? "";
		last = chunk;
	}
	assert.match(text, /refund/);
	assert.ok(last.usage.total_tokens > 0);
	assert.equal(last.usage.prompt_tokens + last.usage.completion_tokens, last.usage.total_tokens);
});

await test("n choices and finish_reason length", async () => {
	await mockSet("primary", { content: "cut sh", finish_reason: "length" });
	const c = await client.chat.completions.create({ model: "agent", messages, n: 2, max_tokens: 2 });
	assert.equal(c.choices.length, 2);
	assert.deepEqual(c.choices.map((x) => x.finish_reason), ["length", "length"]);
	assert.equal(c.choices[1].index, 1);
	await assert.rejects(client.chat.completions.create({ model: "agent", messages, n: 0 }),
		(e) => e.status === 400 && e.param === "n" && e instanceof OpenAI.BadRequestError);
});

await test("models.list() and models.retrieve()", async () => {
	const ids = [];
	for await (const m of client.models.list()) {
		assert.equal(m.owned_by, "fusebox");
		ids.push(m.id);
	}
	for (const id of ["fusebox/intent", "intent", "fusebox/agent", "agent"])
		assert.ok(ids.includes(id), `${id} missing from ${ids}`);
	const m = await client.models.retrieve("agent");
	assert.equal(m.id, "agent");
	await assert.rejects(client.models.retrieve("gpt-nope"), (e) => e.status === 404);
});

await test("SDK retries of a 503 wait for Retry-After", async () => {
	await mockSet("down", { status: 500 });
	const before = await mockRequests("down");
	const retrying = new OpenAI({ baseURL: process.env.FB_URL + "/v1", apiKey: "unused", maxRetries: 2 });
	const t0 = Date.now();
	await assert.rejects(retrying.chat.completions.create({ model: "down", messages }),
		(e) => e.status === 503 && e.headers.get("retry-after") === "1");
	const took = Date.now() - t0;
	assert.equal((await mockRequests("down")) - before, 3);
	// two waits of Retry-After: 1 s each (the SDK's own backoff would be ~0.5 s, then ~1 s)
	assert.ok(took >= 1900, `3 requests in ${took} ms`);
});

console.log(`${passed} passed, 0 failed`);
