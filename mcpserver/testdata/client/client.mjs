// A real MCP client against engram: the official TypeScript SDK's Client,
// over streamable HTTP or over stdio (the engram binary's `engram mcp`).
// It lists the tools (the SDK refuses a tool list whose schemas it cannot
// read), calls every tool with valid arguments (the SDK checks each
// structured result against the tool's output schema) and with invalid
// ones (which must be tool errors, not protocol failures), and reads the
// resources. It prints one JSON report on standard output; a failure of
// the protocol is in the report's "failures" and the exit code.
//
//   node client.mjs http  <url of /mcp> <key>
//   node client.mjs stdio <engram binary> <engramd url> <key>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { readFileSync } from "node:fs";

const [mode, ...args] = process.argv.slice(2);
let transport;
if (mode === "http") {
  const [url, key] = args;
  transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
} else if (mode === "stdio") {
  const [bin, url, key] = args;
  transport = new StdioClientTransport({
    command: bin,
    args: ["mcp"],
    env: { ...process.env, ENGRAM_URL: url, ENGRAM_API_KEY: key },
    stderr: "inherit",
  });
} else {
  console.error("usage: node client.mjs http <url> <key> | stdio <engram> <url> <key>");
  process.exit(2);
}

const sdk = JSON.parse(readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url))).version;
const report = { sdk, capabilities: null, tools: [], valid: {}, invalid: {}, resources: {}, failures: [] };
const fail = (where, err) => report.failures.push(`${where}: ${err?.stack ?? err}`);
const text = (res) => (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");

const client = new Client({ name: "engram-real-client", version: "1.0.0" });

// call calls a tool: a protocol failure (a thrown error, such as an
// output that does not match its schema) is a failure of the report.
async function call(name, args) {
  try {
    return await client.callTool({ name, arguments: args });
  } catch (err) {
    fail(`tools/call ${name} ${JSON.stringify(args)}`, err);
    return null;
  }
}

async function valid(name, args) {
  const res = await call(name, args);
  if (res) {
    report.valid[name] = { isError: !!res.isError, structured: res.structuredContent !== undefined, text: res.isError ? text(res) : "" };
  }
  return res?.structuredContent;
}

async function invalid(name, args) {
  const res = await call(name, args);
  if (res) {
    report.invalid[name] = { isError: !!res.isError, text: text(res) };
  }
}

try {
  await client.connect(transport);
  report.capabilities = client.getServerCapabilities();
  const { tools } = await client.listTools();
  report.tools = tools.map((t) => t.name).sort();

  const thread = `real-client-${mode}`;
  await valid("remember", {
    thread_id: thread,
    agent_id: "real-client",
    events: [
      { kind: "user_input", text: "deploy the billing service" },
      { kind: "tool_call", tool: { name: "kubectl", arguments: ["apply", "-f", "billing.yaml"], result: { ok: true } } },
      { kind: "fact", fact: { subject: "billing", predicate: "deploys_with", object: "kubectl", confidence: 0.9 } },
    ],
  });
  const proposed = await valid("propose_fact", {
    subject: `client-${mode}`, predicate: "speaks", object: "typescript", conditions: { sdk: "official" },
    rationale: "the real-client test",
  });
  const id = proposed?.record_id;
  const recalled = await valid("recall", {
    task: `which language does client-${mode} speak`, conditions: { sdk: "official" }, thread_id: thread, max_items: 20,
  });
  if (recalled?.retrieval_id && id) {
    await valid("feedback", { retrieval_id: recalled.retrieval_id, outcome: "used_success", record_ids: [id] });
  }
  if (id) {
    await valid("get_record", { id });
    await valid("record_history", { id });
    await valid("record_audit", { id });
  }
  const procs = await valid("list_procedures", { min_success_rate: 0, limit: 10 });
  if (id) {
    await valid("forget", { id, rationale: "the real-client test is done with it" });
  }

  await invalid("recall", { task: "x", max_items: 0 });
  await invalid("remember", { thread_id: thread, events: [] });
  await invalid("feedback", { retrieval_id: "not-a-retrieval", outcome: "great" });
  await invalid("get_record", { id: "not-an-id" });
  await invalid("record_history", { id: 42 });
  await invalid("record_audit", {});
  await invalid("list_procedures", { limit: 0 });
  await invalid("propose_fact", { subject: "", predicate: "speaks", object: null });
  await invalid("forget", { id: "0190a1b2-0000-7000-8000-000000000000" });

  const { resources } = await client.listResources();
  const { resourceTemplates } = await client.listResourceTemplates();
  report.resources.list = resources.map((r) => r.uri);
  report.resources.templates = resourceTemplates.map((t) => t.uriTemplate).sort();
  if (id) {
    const rec = await client.readResource({ uri: `engram://records/${id}` });
    report.resources.record = { mimeType: rec.contents[0].mimeType, id: JSON.parse(rec.contents[0].text).id };
  }
  const skill = procs?.procedures?.[0]?.skill_uri;
  if (skill) {
    const md = await client.readResource({ uri: skill });
    report.resources.skill = { mimeType: md.contents[0].mimeType, starts: md.contents[0].text.slice(0, 4) };
  }
} catch (err) {
  fail("session", err);
} finally {
  await client.close().catch(() => {});
}
console.log(JSON.stringify(report));
process.exit(report.failures.length ? 1 : 0);
