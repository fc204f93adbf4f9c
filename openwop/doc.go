// Package openwop serves the OpenWOP MemoryAdapter (OpenWOP RFC 0004,
// "Memory Layer", as the current OpenWOP spec has it): list, get, put and
// delete of memory entries by an opaque memoryRef, and the capability
// advertisement at /.well-known/openwop, with backend long-term.
//
// The adapter is a thin translation onto engramd's /v1 API through package
// client, made with the caller's own bearer key: every call passes the
// same authentication, roles, access rules, redaction and write-path gates
// as any client's, and the adapter keeps no state of its own. Mounted in
// engramd (server.New), its client is [client.InProcess] over the API.
//
// # Routes
//
//	GET    /.well-known/openwop                          the discovery document (no key)
//	POST   /openwop/v1/memory-refs                       {"agentId"?, "namespace"?} → {"memoryRef"}
//	GET    /openwop/v1/memory/{memoryRef}/entries        list → MemoryEntry[]
//	POST   /openwop/v1/memory/{memoryRef}/entries        put {"content", "tags", "expiresAt"} → MemoryEntry
//	GET    /openwop/v1/memory/{memoryRef}/entries/{id}   get → MemoryEntry or null
//	DELETE /openwop/v1/memory/{memoryRef}/entries/{id}   delete → true or false
//
// list takes the MemoryListOptions (RFC 0004 §A) as query parameters,
// limit and tag, and both list and get take snapshot, an RFC 3339 time:
// the run's start. Answers are the spec's bare values: an array, an entry,
// null, a boolean.
//
// The discovery document is the whole of capabilities.schema.json's: the
// four fields its root requires, and the memory adapter at the document
// root, agents.memoryBackends ["long-term"] and memory; nothing that is
// not served.
//
// # memoryRef
//
// A memoryRef (§C) names an agent and a namespace of one tenant. POST
// /openwop/v1/memory-refs issues it, with a tenant's key, for the key's
// tenant (and the key's own agent when the body names none): it reads and
// writes no memory. The ref is signed ([RefSigner]: HMAC-SHA256 of the
// tenant, agent and namespace, with a secret engramd derives from its
// provenance signing keys), so only a ref this host issued is accepted,
// and only with a key of the tenant it was issued to (§F): any other
// string is not_found. Nothing is stored. Clients treat it as opaque.
//
// # Mapping onto engram
//
// An entry is a semantic record of scope openwop/<agent>/<namespace>, with
// the ref's agent as its agent_id and the entry's tags as its tags; its
// payload's object is the content, under a subject unique to the entry (so
// that no two entries contradict). Its id is the record's, createdAt the
// record's created_at, expiresAt the record's lifecycle.expires_at. A put
// is POST /v1/records, through every gate of the write path (a write the
// approval gate queues is persisted as a draft, and listed once
// approved); a delete is DELETE /v1/records/{id}, a soft delete.
//
// # Snapshot, order and TTL
//
// With snapshot set, list and get read memory as it was at that time
// (/v1's as_of, the version log), and keep entries with createdAt ≤
// snapshot (§A, replay determinism): an entry written or deleted after the
// run started does not change what the run reads. Without it, they read
// memory as it is. list answers newest first. An entry whose expiresAt has
// passed is never answered (§E); a put whose expiresAt is not in the future
// is a validation_error.
//
// # Secrets (SR-1)
//
// A put's content and tags go through engram's policy redactor (package
// policy, the operator's literals included) before anything is stored
// (§D). [Config.OnSecret] chooses what a finding does: redact stores the
// entry with each secret replaced by a [REDACTED:<label>] marker (the
// redactor's own marker, the spec's) — the API redacts every string of the
// record it is given, and raises the record's sensitivity, and tags it
// pii, for what it found, as for any write; reject refuses the write here,
// before any call, with secret_leakage, naming the labels and never a
// value. Empty follows the policy's secrets.on_secret. A policy that
// rejects wins. A memoryRef's agent or namespace that the redactor would
// change is refused: its entries' scope would be redacted.
//
// # Errors
//
// Every error under /openwop and /.well-known/openwop is the OpenWOP error
// envelope (error-envelope.schema.json), {"error": code, "message": text,
// "details": {...}}, with the code's status: validation_error 400,
// unauthenticated 401, forbidden 403 (the key's role or the access rules;
// an operator key), not_found 404 (a memoryRef this host did not issue to
// the key's tenant, or a path no route serves), method_not_allowed 405
// (with Allow), version_conflict 409, payload_too_large 413,
// unsupported_media_type 415 (a body declared as anything but JSON),
// secret_leakage 422, rate_limited 429, internal_error 500. No message
// quotes a secret, a memoryRef or a path.
package openwop
