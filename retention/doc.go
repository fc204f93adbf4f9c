// Package retention enforces the maximum retention of each data
// classification and reports compliance (write-path RFC §12.10.4,
// §12.10.5).
//
// A record's class follows from its classification ([memory.ClassOf]):
// PII-bearing when tagged [memory.PIITag] (the write path tags what was
// made from personal data the policy's redactor found) or high or hyper;
// business-sensitive at medium; general at low; public at public. Each
// class has a maximum retention counted from the record's creation and a
// post-expiry action ([Config]): hard_delete deletes the record with its
// versions, relations, entries and vectors, leaving an audit entry naming
// its id; soft_delete expires it, and decay's purge deletes it after its
// grace period. Retention overrides relevance: a pinned, salient record
// past its retention goes all the same.
//
// [Retainer.Enforce] is the retention job: class by class, bounded batches
// through the write path, each its own transaction under a timeout, until
// a batch comes back short. A batch skips records another transaction
// holds; the next run takes them. [Retainer.Check] is the compliance job:
// it writes the report GET /v1/compliance serves.
//
// Retrieval never returns a record past its retention, even before the job
// has run: the retriever asks [Config.Past] of every candidate. Reading a
// record by id, listing records and as_of reads do not; the compliance
// report counts such records as retrievable until the job acts.
package retention
