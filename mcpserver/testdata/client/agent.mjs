// An agent's own key through the official TypeScript SDK: what an agent
// at work does with its memory, over streamable HTTP. It remembers a
// thread's events (no agent_id: they are its key's agent's), states a fact
// of its own, recalls it, reports that it served, and forgets it. It
// prints one JSON report on standard output; a protocol failure, or a
// step refused, is in the report's "failures" and the exit code.
//
//   node agent.mjs <url of /mcp> <key> <thread>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key, thread] = process.argv.slice(2);
const report = { steps: [], fact: null, feedback: [], failures: [] };
const text = (res) => (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");

const client = new Client({ name: "engram-agent", version: "1.0.0" });

// step calls a tool and keeps its structured result; a refusal or a
// protocol failure is a failure of the report.
async function step(name, args) {
  try {
    const res = await client.callTool({ name, arguments: args });
    if (res.isError) {
      report.failures.push(`${name}: ${text(res)}`);
      return null;
    }
    report.steps.push(name);
    return res.structuredContent;
  } catch (err) {
    report.failures.push(`${name}: ${err?.stack ?? err}`);
    return null;
  }
}

try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  }));
  await step("remember", {
    thread_id: thread,
    events: [
      { kind: "user_input", text: "Rotate the TLS cert for billing-api" },
      { kind: "tool_call", tool: { name: "bash", arguments: { command: "certctl rotate --service billing-api" }, result: "rotated: serial 0x4F2A" } },
      { kind: "outcome", outcome: { status: "success" } },
    ],
  });
  const fact = await step("propose_fact", {
    subject: "billing-api", predicate: "certificates_from", object: "vault",
    rationale: "certctl read them from vault",
  });
  report.fact = fact?.record_id ?? null;
  const recalled = await step("recall", { task: "where does billing-api get its certificates", max_items: 10 });
  const found = recalled?.items?.some((it) => it.id === report.fact);
  if (!found) {
    report.failures.push(`recall: the agent's own fact ${report.fact} was not recalled`);
  }
  if (recalled?.retrieval_id && report.fact) {
    const fb = await step("feedback", { retrieval_id: recalled.retrieval_id, outcome: "used_success", record_ids: [report.fact] });
    report.feedback = fb?.records?.map((r) => r.id) ?? [];
  }
  if (report.fact) {
    await step("forget", { id: report.fact, rationale: "rotated to a new issuer" });
  }
} catch (err) {
  report.failures.push(`session: ${err?.stack ?? err}`);
} finally {
  await client.close().catch(() => {});
}
console.log(JSON.stringify(report));
process.exit(report.failures.length ? 1 : 0);
