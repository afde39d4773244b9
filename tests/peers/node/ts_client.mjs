#!/usr/bin/env node
// A scripted MCP host on the official TypeScript SDK (the version tests/peers/node's lock pins),
// for rootfence's live-roots tests: it declares the roots capability, answers roots/list with
// the --roots URIs, runs each --call in order, and prints one JSON document to stdout:
// {"calls":[{"name", "arguments", "result" | "error"}], "roots_asked": N}.
//
// Usage: node ts_client.mjs [--roots URI].. [--call NAME=JSON].. [--timeout SECS] -- <server command..>
// It never hangs: the whole run is bounded by --timeout (default 60).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const argv = process.argv.slice(2);
const dash = argv.indexOf("--");
if (dash < 0 || dash === argv.length - 1) {
  console.error("usage: ts_client.mjs [--roots URI].. [--call NAME=JSON].. -- <server command..>");
  process.exit(2);
}
const own = argv.slice(0, dash);
const command = argv.slice(dash + 1);
const roots = [];
const calls = [];
let timeout = 60;
for (let i = 0; i < own.length; i += 2) {
  const [flag, value] = [own[i], own[i + 1]];
  if (value === undefined) {
    console.error(`ts_client.mjs: ${flag} needs a value`);
    process.exit(2);
  }
  if (flag === "--roots") roots.push(value);
  else if (flag === "--call") {
    const eq = value.indexOf("=");
    calls.push(eq < 0 ? { name: value, arguments: {} } : { name: value.slice(0, eq), arguments: JSON.parse(value.slice(eq + 1)) });
  } else if (flag === "--timeout") timeout = Number(value);
  else {
    console.error(`ts_client.mjs: unknown option ${flag}`);
    process.exit(2);
  }
}
setTimeout(() => {
  console.error(`ts_client.mjs: timed out after ${timeout}s`);
  process.exit(1);
}, timeout * 1000).unref();

const client = new Client({ name: "rootfence-ts-client", version: "0.0.0" }, { capabilities: { roots: { listChanged: true } } });
let rootsAsked = 0;
client.setRequestHandler(ListRootsRequestSchema, async () => {
  rootsAsked += 1;
  return { roots: roots.map((uri) => ({ uri })) };
});
const transport = new StdioClientTransport({ command: command[0], args: command.slice(1), stderr: "inherit" });
await client.connect(transport);
const out = { calls: [] };
for (const call of calls) {
  try {
    const result = await client.callTool({ name: call.name, arguments: call.arguments });
    out.calls.push({ ...call, result });
  } catch (e) {
    out.calls.push({ ...call, error: { code: e.code ?? null, message: String(e.message ?? e) } });
  }
}
out.roots_asked = rootsAsked;
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(0);
