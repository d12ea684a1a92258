// Drives the gateway's OpenAI-compatible API with the official Node SDK:
// OPENAI_API_KEY=<key> node openai_client.cjs <node_modules dir> <base URL>. Prints one JSON
// object with what it got; exits non-zero on any error.
const { createRequire } = require('node:module');
const path = require('node:path');
const req = createRequire(path.join(process.argv[2], 'noop.js'));
const { OpenAI } = req('openai');

async function main() {
  const client = new OpenAI({ baseURL: process.argv[3], apiKey: process.env.OPENAI_API_KEY, maxRetries: 0 });
  const models = await client.models.list();
  const ids = [];
  for await (const m of models) ids.push(m.id);
  const done = await client.chat.completions.create({
    model: ids[0], messages: [{ role: 'user', content: 'hello from node' }],
  });
  const stream = await client.chat.completions.create({
    model: ids[0], messages: [{ role: 'user', content: 'stream to node' }], stream: true,
    stream_options: { include_usage: true },
  });
  let streamed = '';
  let chunks = 0;
  let usage = null;
  for await (const c of stream) {
    if (c.choices.length && c.choices[0].delta.content) {
      streamed += c.choices[0].delta.content;
      chunks++;
    }
    if (c.usage) usage = c.usage;
  }
  let notFound = 0;
  try {
    await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] });
  } catch (e) {
    notFound = e.status;
  }
  const resp = await client.responses.create({ model: ids[0], input: 'respond to node', instructions: 'be brief' });
  const next = await client.responses.create({ model: ids[0], input: 'and again', previous_response_id: resp.id });
  const rstream = await client.responses.create({ model: ids[0], input: 'stream a response', stream: true });
  const events = [];
  let rdeltas = '';
  let rdone = null;
  for await (const ev of rstream) {
    if (events[events.length - 1] !== ev.type) events.push(ev.type);
    if (ev.type === 'response.output_text.delta') rdeltas += ev.delta;
    if (ev.type === 'response.completed') rdone = ev.response;
  }
  console.log(JSON.stringify({
    ids, answer: done.choices[0].message.content, usage: done.usage, streamed, chunks, streamUsage: usage, notFound,
    response: { id: resp.id, text: resp.output_text, usage: resp.usage },
    next: { previous: next.previous_response_id, text: next.output_text },
    responseStream: { events, deltas: rdeltas, text: rdone && rdone.output[0].content[0].text, status: rdone && rdone.status },
  }));
}

main().catch((e) => { console.error(String(e)); process.exit(1); });
