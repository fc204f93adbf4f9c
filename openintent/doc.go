// Package openintent serves OpenIntent RFC-0015 "Agent Memory & Persistent
// State" at /api/v1/memory… and /api/v1/agents/{agent_id}/memory…, as the
// published OpenIntent SDK (0.17) calls it: create_memory, get_memory,
// list_memory (a bare JSON array), update_memory (a bare integer If-Match)
// and delete_memory, with X-API-Key and X-Agent-ID on every request.
//
// GET /.well-known/openintent.json is its discovery document, which the
// SDK's discover() reads.
//
// It is a thin translation: it keeps no state, and every request becomes a
// few calls of engramd's /v1 API through package client, made with the
// caller's own key (X-API-Key, or a bearer token), so the caller's tenant,
// role, access rules, clearance, redaction and the write path's gates
// apply to every entry exactly as to any record. engramd mounts it with
// client.InProcess over its own API handler.
//
// # Mapping
//
// An entry is a record of type working (substrate RFC §6): the one type
// engram revises in place, keeping its id, as the next version — which is
// what an OpenIntent entry is in every tier (RFC-0015 §3: one id, a
// version bumped by each If-Match update; §2.2: pinned and priority
// change; §9.3: eviction and deletion remove it entirely). engram's
// episodic records are append-only timelines (substrate RFC §5: episodic
// payloads MUST be append-only, corrections happen only in higher layers)
// and its facts are revised by supersede into new records (§7), so
// neither can be that mutable entry; the tier is kept in the payload and
// decides visibility, uniqueness, capacity and eviction.
//
// # Typed memory
//
// What an agent stores is also typed memory (substrate RFC §15.6), written
// with the entry in the same transaction, so that /v1/retrieve finds it in
// its layer and consolidation and feedback learn from it:
//
//   - an episodic entry has an episode (type episodic, visibility agent,
//     scope its namespace): each version of the entry is an observation
//     event appended to its timeline — "<namespace>/<key>: <value>" — so
//     the episode is the append-only history of what the agent noted;
//   - a semantic entry has a fact (type semantic, visibility tenant):
//     subject "<namespace>/<key>", predicate [FactPredicate], object the
//     value, scope the namespace, so that the write path's one active fact
//     per (scope, subject, predicate) is RFC-0015 §1.2's one semantic
//     entry per (namespace, key); an update supersedes it with a fact of
//     the new value (§7), whose lineage keeps every value;
//   - a working entry is working memory, and has none.
//
// The entry's payload names its typed record (typed_id); the typed
// record's payload names its entry (openintent.entry_id). A deletion,
// eviction or archival takes the typed record with the entry; a typed
// record that decay removed is made anew by the entry's next update.
//
//	OpenIntent (RFC-0015)     engram record
//	id                        id
//	agent_id                  agent_id, and payload.openintent.agent_id
//	namespace                 scope, and payload.openintent.namespace
//	key                       payload.openintent.key
//	value                     payload.openintent.value, as sent
//	memory_type               payload.openintent.memory_type; the record is of type working
//	                          working, episodic: visibility agent; semantic: visibility tenant
//	version                   version (If-Match is PATCH /v1/records/{id}'s version)
//	scope {task_id, …}        payload.openintent.scope, as sent; task_id also payload.task_id,
//	                          and the payload's thread_id is "openintent:task:<task_id>"
//	                          (or "openintent:agent:<agent_id>")
//	tags                      tags
//	ttl                       payload.openintent.ttl, as sent; its duration sets lifecycle.expires_at
//	expires_at                lifecycle.expires_at (it takes precedence over ttl)
//	pinned, priority          payload.openintent.pinned, .priority (eviction reads them)
//	sensitivity               sensitivity: public–public, internal–low, confidential–medium,
//	                          restricted–high (high and hyper read as restricted)
//	curated_by                payload.openintent.curated_by
//	created_at, updated_at    created_at, updated_at
//	other members of a create payload.openintent.extra, kept, not answered
//
// The payload's other members make it a valid working payload (kind,
// thread_id, state "executing"). Its decay profile has a salience floor
// of 1, so that entries never fade out: they leave by deletion, eviction,
// archival or expiry, as RFC-0015 says.
//
// # Invariants
//
//   - (agent_id, namespace, key) is unique for working and episodic
//     entries, (namespace, key) for semantic ones (RFC-0015 §1.2): a
//     partial unique index (migration 024), which the write path reports as
//     the conflict entry-key-taken, answered here as a 409 with the entry
//     that holds the key. A payload sealed at rest escapes the index.
//   - An entry past its expires_at is never answered; its record is
//     expired by decay (or removed here when its key is wanted again).
//   - A working or episodic entry is written only by its agent (X-Agent-ID),
//     read by others (coordinators, replacements: RFC-0015 §8).
//
// # Failure cases
//
// Errors are answered as the SDK reads them: message always, errors (field,
// message) on a 400, current_version and the current entry on a 409 — never
// with the word the SDK takes for a lease conflict, so the current entry is
// left out when it holds it — current_count and max_capacity on a 429, 428
// for a missing or non-integer If-Match. Capacity is counted before a
// create, so concurrent creates may pass a limit by as many as run at once.
// A create whose key an entry holds is a 409 KEY_EXISTS (with that entry),
// a stale If-Match a 409 VERSION_MISMATCH: the SDK reads both as
// conflicts, and the code tells them apart. Every request's writes — an
// entry and its typed record, the evictions a create makes, every entry of
// a batch — are one transaction of the write path (POST
// /v1/records:batch; substrate RFC §15.7): a failure leaves nothing
// written, and nothing is undone by compensation. Deletions are then
// purged by a key that may purge; for other keys the records stay deleted
// (never answered) until the purge job.
package openintent
