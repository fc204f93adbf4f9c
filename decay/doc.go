// Package decay is how engram's memory fades, is reinforced and is
// forgotten (substrate RFC §11, §15.6, §15A.3, §15A.7, §15B): the decay
// curves, reinforcement and penalty, the per-type profiles of the
// configuration, the sweep that expires what has faded, the purge that
// deletes it for good after a grace period, restore, and the operator's
// preview of a configuration change. Every statement it runs is the
// store's; it owns the arithmetic and the decisions.
//
// # Salience: what is stored and what is shown
//
// A record's stored salience s₀ is its salience at its decay origin t₀,
// last_reinforced_at. Its salience at time t is computed, never stored:
//
//	S(t) = s₀                          if t ≤ t₀ or s₀ ≤ f
//	S(t) = f + (s₀ − f) · R(t − t₀)    otherwise
//
// where f is the profile's floor (min_salience) and R the curve's retention,
// 1 at age zero and never rising ([Retention]):
//
//	exponential  R(a) = 2^(−a/h)
//	linear       R(a) = max(0, 1 − a/(2h))          (half left at a = h, none at 2h)
//	custom       R(a) = straight lines between the points (age, share),
//	             from (0, 1), flat after the last point
//
// [Current] is that function, the single definition every part of engram
// uses: the API renders every record with it (GET, list, every revision's
// answer; a read as of a past time at that time), the sweep decides with
// it, the preview projects with it, and feedback starts from it.
//
// Three things change s₀ and t₀, and each sets both at once, so that decay
// is never counted twice:
//
//   - feedback: s₀ ← clamp(S(now) ± gain or penalty), t₀ ← now. A success
//     adds the reinforcement gain (up to [MaxSalience]), a failure or a
//     retrieval left unused takes a penalty away (down to 0). Reinforcement
//     is the only way back up (§15A.7).
//   - restore: s₀ ← max(s₀, threshold + gain), t₀ ← now.
//   - a revision that creates a record (create, supersede, fork, merge)
//     starts a new s₀ and t₀.
//
// The sweep never writes s₀ or t₀. It only materialises S(now) into the
// record_salience table for metrics and set-based reads; nothing reads it
// back as salience. Writing S(now) back as s₀ with a new t₀ would be exact
// for the memoryless exponential curve only: for the linear and custom
// curves it would restart the curve and decay records at the wrong rate.
// record_salience is a narrow, unlogged table of its own, so that a sweep
// never rewrites the wide records rows: it holds each live record's
// salience to within a step of [MaterialiseResolution] (a row is written
// again when the record changed since the previous pass or its salience
// crossed a step; decay being monotonic, the others still hold), a trigger
// drops the row of a record that leaves the active set, and a sweep that
// finds the table empty (a crash empties unlogged tables) writes every row.
//
// History (GET /v1/records/{id}/history) shows each version's stored
// snapshot, s₀ as it was, not decayed. Salience and its origin move without
// a new version (the records_revision trigger allows it): a version is a
// change of content or state, and feedback is counted in the feedback
// table, not the version log.
//
// # Profiles
//
// The configuration holds a [Profile] per memory type. A record that names
// no decay profile inherits its type's (the decay_inherited column): it
// gets the type's profile when it is created, and when the operator changes
// that profile, the next sweep stamps the new one on it (a profile is not
// content: no new version). A record that names its own profile keeps it;
// its reinforcement gain, when it names none, is its type's at the time of
// the feedback. A profile's max_age counts from the last reinforcement,
// like the curve.
//
// # Forgetting
//
// The sweep (job decay_sweep) walks the active set of every tenant in
// bounded batches, resuming from its cursor, and expires each record that
// is prunable (not pinned, deletion policy auto_prune) and past its time:
// salience below the prune threshold, max_age passed since its last
// reinforcement, or expires_at passed. Expiry is soft and audited: the
// record leaves every read of the active set, stays readable by id, and
// POST /v1/records/{id}:restore brings it back. The purge (job
// decay_purge) deletes expired records for good once the grace period has
// passed since they expired, with their versions, relations, feedback and
// the artifacts no remaining record references, leaving an audit entry that
// names no content. Records an operator deleted wait for an explicit purge.
// Pinned and never records are never expired; manual_only records only by
// an operator's DELETE.
//
// # Failure cases
//
//   - A configuration that does not validate is refused whole, with the
//     field named ([ConfigError]); the one in force stays.
//   - Feedback naming a record the tenant does not have changes nothing
//     (422, with each bad record_ids entry); an outcome outside the enum
//     is refused (422).
//   - A sweep or purge batch that fails or times out rolls back; the next
//     run resumes from the last cursor saved, after a completed batch. A
//     batch run twice does the same thing twice: expiry re-checks that the
//     record is as it was read, so a record reinforced in between stays.
//   - Restoring a record whose expires_at has passed is refused: that time
//     is the client's and is never extended (OpenWOP memory §E).
package decay
