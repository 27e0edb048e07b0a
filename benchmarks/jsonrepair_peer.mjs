// jsonrepair (the npm package) over texts, for benchmarks/json_repair_suite.py: node jsonrepair_peer.mjs DIR
// where DIR holds node_modules/jsonrepair (`npm install jsonrepair@3.14.1` in DIR). Reads a JSON
// array of broken texts on stdin; writes a JSON array of [repaired text or null, seconds, best of REPEAT].
import { createRequire } from "node:module";
import { join } from "node:path";

const require = createRequire(join(process.argv[2], "package.json"));
const { jsonrepair } = require("jsonrepair");
const repeat = Number(process.argv[3] || "1");
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const texts = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const out = texts.map((text) => {
  let result = null;
  let best = Infinity;
  for (let i = 0; i < repeat; i++) {
    const started = process.hrtime.bigint();
    try {
      result = jsonrepair(text);
    } catch {
      result = null;
    }
    best = Math.min(best, Number(process.hrtime.bigint() - started) / 1e9);
  }
  return [result, best];
});
process.stdout.write(JSON.stringify(out));
