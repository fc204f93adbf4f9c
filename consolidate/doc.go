// Package consolidate is engram's learning: periodic jobs that turn
// repeated experience into memory of a higher layer (substrate RFC §15.7).
// A pass reads each tenant's history once (consolidator.go) and runs its
// stages over it: its latest closed episodes, each with the features a
// pass learned of it from its events the first time it read it, and kept
// (features.go: its problems, their reduced steps, its trace and plan
// graph, its triggers read for templates), so that a pass reads the events
// of the episodes new to it only. Competence extraction (§8, §15A.9): a closed
// episode's problems are the errors its agent resolved (problem.go): an
// error opens one, known by the command that failed, and a later run of
// that command that works resolves it, its recipe the calls between —
// several problems a run. Problems are grouped by their error's template,
// learned from the tenant's stream by aligning messages (package
// signature: a bare instance value becomes a wildcard), or fixed
// signature; the steps of the resolved ones are reduced (shell-aware:
// shell.go) and templated word by word (template.go), and a procedure
// that enough tasks (threads) share becomes a competence record, written
// through the one write path (package revise). A value of the error its
// steps use (a path, a directory, a quoted name, a wildcard's word) is a
// variable that says where in the error it is, so that retrieval binds it
// from the next occurrence's; its conditions are the environment keys
// that set it apart from the other recipes of the error and from its own
// failures (§12). The same pass
// learns plan graphs (§9, §15A.10, plan.go): the successful episodes of an
// intent become DAGs of their steps with data and control edges, and an
// intent's best supported structure is its versioned plan record.
//
// A procedure's life ([Lifecycle], §8): later episodes that follow its
// recipe count as its uses, each once (the record cites them), amending the
// record in place ([revise.Tx.Amend]); a new one is on probation until it
// has proved itself; one that keeps failing is retracted with an audited
// rationale and is not learned again unless an operator restores it.
// Learned records are written in batches, a transaction each.
//
// Duplicate resolution (duplicates.go, §15.7, write-path RFC §12.3): the
// live facts, procedures and plans revised or embedded since the pass's
// watermark are compared with the tenant's others by content hash,
// structural fingerprint and vector similarity; pure duplicates merge into
// the older record ([revise.Tx.MergeInto]), conflicting ones are
// contested.
//
// Episodic compression (compress.go, §5): the pass's last stage rewrites
// closed episodes old enough and used as evidence as their compressed next
// version — errors, outcome, cited events and the steps derived records
// stand on, plus a summary — and releases their other staged events,
// through [revise.Tx.Compress]. It keeps whatever it could not prove the
// pass would learn the same without.
//
// Everything here is deterministic: no model writes a procedure. The one
// optional use of a language model (extract.go, package extract) reads the
// free text of new episodes for facts, which go through the write path
// like any other, with low authority.
//
// Failure cases: a record the write path refuses is skipped, counted and
// audited, and the pass goes on (batch.go); one tenant's failure never
// stops another's or the later stages. A pass that fails part-way for
// want of a database keeps its watermark where it was, and the next pass
// redoes the work; writes are idempotent, so a redone pass changes
// nothing that the failed one wrote. Duplicate resolution saves its part
// of the watermark after each batch.
package consolidate
