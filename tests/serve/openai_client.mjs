// openai_client.mjs TINYGPT WORK — the official openai npm client against
// `tinygpt serve` on 127.0.0.1: a completion and a streamed completion, both
// equal to `tinygpt generate` for the same seed, the model list, and an API
// error surfacing as the client's own error class with the field named.
import { createRequire } from "node:module";
import { startServer, Checks, generate } from "./serve_node_util.mjs";
const require = createRequire(process.env.NODE_PATH + "/");
const OpenAI = require("openai");

const [exe] = process.argv.slice(2);
const ck = new Checks();
const srv = await startServer(exe, ["--api-key", "k-test"]);
try {
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${srv.port}/v1`, apiKey: "k-test", maxRetries: 0 });
  const list = await client.models.list();
  const ids = list.data.map((m) => m.id);
  ck.check(ids.includes("shakespeare-4h") && ids.includes("shakespeare-1h"), "models.list: " + ids.join(", "));

  const want = generate(exe, "ROMEO:", 30, 42);
  const c = await client.completions.create({ model: "shakespeare-4h", prompt: "ROMEO:", max_tokens: 30, seed: 42 });
  ck.check(c.choices[0].text === want, `completions.create == tinygpt generate (${JSON.stringify(c.choices[0].text.slice(0, 30))})`);
  ck.check(c.usage.completion_tokens === 30 && c.choices[0].finish_reason === "length", "usage and finish_reason");

  const stream = await client.completions.create({ model: "shakespeare-4h", prompt: "ROMEO:", max_tokens: 30, seed: 42, stream: true });
  let text = "", chunks = 0, finish = null;
  for await (const chunk of stream) {
    text += chunk.choices[0].text;
    chunks++;
    if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
  }
  ck.check(text === want && chunks >= 30 && finish === "length", `streamed: ${chunks} chunks, the same text, finish_reason ${finish}`);

  const s2 = await client.completions.create({ model: "shakespeare-1h", prompt: "KING", max_tokens: 40, seed: 1, stop: ["\n"], stream: true });
  let t2 = "";
  for await (const chunk of s2) t2 += chunk.choices[0].text;
  const full = generate(exe, "KING", 40, 1, ["-m", srv.weights("shakespeare-1h")]);
  ck.check(t2 === full.split("\n")[0], `streamed with stop "\\n" on shakespeare-1h: ${JSON.stringify(t2)}`);

  try {
    await client.completions.create({ model: "shakespeare-4h", prompt: "x", max_tokens: -5 });
    ck.check(false, "max_tokens -5 is refused");
  } catch (e) {
    ck.check(e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === "max_tokens", `max_tokens -5: ${e.constructor.name} ${e.status} param ${e.param}`);
  }
  try {
    const bad = new OpenAI({ baseURL: `http://127.0.0.1:${srv.port}/v1`, apiKey: "wrong", maxRetries: 0 });
    await bad.completions.create({ model: "shakespeare-4h", prompt: "x", max_tokens: 1 });
    ck.check(false, "a wrong key is refused");
  } catch (e) {
    ck.check(e instanceof OpenAI.AuthenticationError && e.status === 401, `wrong key: ${e.constructor.name} ${e.status}`);
  }
} finally {
  ck.check(await srv.stop() === 0, "SIGINT: exit 0");
}
process.exit(ck.finish());
