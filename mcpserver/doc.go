// Package mcpserver is engram's Model Context Protocol server (issue 15,
// part 1), built with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk). [New] returns an *mcp.Server
// whose tools and resources are thin translations onto engramd's /v1 API,
// made through package client: the server keeps no state of its own and
// writes nothing except through the API, so every call passes the same
// authentication, roles, tenant, redaction and write-path gates as any
// other client's, with the caller's key.
//
// Two transports serve it:
//
//   - stdio, as `engram mcp` (cmd/engram), for desktop and CLI agents: a
//     client over the network to the engramd at ENGRAM_URL, with the key
//     ENGRAM_API_KEY;
//   - streamable HTTP at /mcp on engramd ([NewHTTPHandler], mounted by
//     package server): each request is served by a server made for it,
//     whose client calls the API in process (client.InProcess) with the
//     bearer key of that request.
//
// # Tools
//
// Each tool has annotations (read-only, destructive, idempotent hints) and
// JSON schemas for its input and its output:
//
//   - recall: what memory helps with a task (POST /v1/retrieve), layer by
//     layer, each item with its id, type, a one-line summary, why it matched,
//     and the retrieval id that feedback reports on;
//   - remember: stream events of a thread (POST /v1/events, all or none);
//   - feedback: how a retrieval's records served (POST /v1/feedback);
//   - get_record, record_history, record_audit: a record, its versions and
//     its audit trail;
//   - list_procedures: the learned procedures (competence records), with
//     their success rate, optionally above a minimum;
//   - propose_fact: a semantic record through the write path's gates; the
//     answer says whether it was stored, absorbed by a duplicate, contested
//     or queued for a reviewer;
//   - forget: withdraw a record (POST /v1/records/{id}:retract), or delete
//     an episode, which is append-only (DELETE /v1/records/{id}), as the
//     key's role allows: an executor forgets its own agent's working memory, episodes and facts.
//
// remember names no agent unless the call does: the API gives the events
// the key's own agent (an executor's), else the actor, which is
// X-Engram-Actor or ENGRAM_ACTOR, else [DefaultAgent].
//
// Every input and output schema is a JSON Schema object with one type per
// subschema (values of several types are an anyOf), bounds where the
// description gives them, so that strict clients (the TypeScript SDK, the
// MCP Inspector's --strict) take the tool list. The server advertises
// tools and resources only, and answers the methods of other capabilities
// as not found.
//
// # Resources
//
//   - engram://records/{id}: a record as the API's JSON (a template);
//   - engram://skills/{id}: a learned procedure as an Agent Skills
//     SKILL.md (GET /v1/records/{id}/skill.md); resources/list lists one per
//     active procedure.
//
// # Failures
//
// An API refusal (an RFC 9457 problem) becomes a tool error result, never
// a protocol error: its title, status, detail, field errors (located in the
// tool's arguments where they can be), the gate and reason of a write-path
// refusal, and a hint of what to do. Bad arguments are refused the same
// way, by the input schema or by the API. A record the key cannot see, in
// its tenant or at all, is "not found". The key appears in no answer.
package mcpserver
