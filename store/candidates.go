package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
)

// Candidate statuses (substrate RFC §15.4: ingestion produces candidates in
// a staging area; the policy plane classifies them).
const (
	CandidatePending = "pending"
	CandidateDone    = "done"
	CandidateDropped = "dropped"
	CandidateDead    = "dead"
)

// Candidate is one staged event.
type Candidate struct {
	Tenant      string             `json:"-"`
	ID          uuid.UUID          `json:"id"`
	Seq         int64              `json:"seq"`
	AgentID     string             `json:"agent_id"`
	ThreadID    string             `json:"thread_id"`
	Kind        memory.EventKind   `json:"kind"`
	Time        time.Time          `json:"time"`
	Event       json.RawMessage    `json:"event"`
	DedupKey    []byte             `json:"-"`
	Sensitivity memory.Sensitivity `json:"sensitivity"`
	Redactions  []string           `json:"redactions,omitempty"`
	Status      string             `json:"status"`
	Attempts    int                `json:"attempts"`
	LastError   string             `json:"last_error,omitempty"`
	Decision    json.RawMessage    `json:"decision,omitempty"`
	RecordIDs   []uuid.UUID        `json:"record_ids,omitempty"`
	ReceivedAt  time.Time          `json:"received_at"`
}

// Staged is the answer for one staged event: its id, and whether it was a
// retry absorbed into an event staged before.
type Staged struct {
	ID        uuid.UUID
	Duplicate bool
}

const stageSQL = `
INSERT INTO candidates (tenant_id, id, agent_id, thread_id, kind, event_time, event, dedup_key, sensitivity, redactions)
SELECT $1, t.id, t.agent_id, t.thread_id, t.kind, t.event_time, t.event, t.dedup_key, t.sensitivity,
	string_to_array(t.redactions, ',')
FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::jsonb[], $8::bytea[], $9::text[], $10::text[])
	WITH ORDINALITY AS t(id, agent_id, thread_id, kind, event_time, event, dedup_key, sensitivity, redactions, ord)
ORDER BY t.ord
ON CONFLICT (tenant_id, dedup_key) DO NOTHING
RETURNING dedup_key`

const stagedIDsSQL = `SELECT dedup_key, id FROM candidates WHERE tenant_id = $1 AND dedup_key = ANY($2)`

// Stage writes a batch of events to the staging area in one transaction and
// one statement: when it returns, every event is durable. An event whose
// dedup key was staged before (a retry) is absorbed: it gets the first
// event's id and Duplicate set.
func Stage(ctx context.Context, db pg.DBTX, tenant string, cands []Candidate) ([]Staged, error) {
	out := make([]Staged, len(cands))
	first := make(map[string]int, len(cands)) // dedup key -> first index in this batch
	var (
		ids                                  []uuid.UUID
		agents, threads, kinds, sens, redact []string
		times                                []time.Time
		events                               []json.RawMessage
		keys                                 [][]byte
	)
	for i, c := range cands {
		if j, seen := first[string(c.DedupKey)]; seen {
			out[i] = Staged{ID: cands[j].ID, Duplicate: true}
			continue
		}
		first[string(c.DedupKey)] = i
		ids, agents, threads = append(ids, c.ID), append(agents, c.AgentID), append(threads, c.ThreadID)
		kinds, times, events = append(kinds, string(c.Kind)), append(times, c.Time), append(events, c.Event)
		keys, sens, redact = append(keys, c.DedupKey), append(sens, string(c.Sensitivity)), append(redact, strings.Join(c.Redactions, ","))
		out[i] = Staged{ID: c.ID}
	}
	err := pg.WithTx(ctx, db, func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, stageSQL, tenant, ids, agents, threads, kinds, times, events, keys, sens, redact)
		if err != nil {
			return fmt.Errorf("stage events: %w", err)
		}
		inserted, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
		if err != nil {
			return fmt.Errorf("stage events: %w", err)
		}
		if len(inserted) == len(keys) {
			return nil
		}
		// Some were staged before: answer them with the first ids.
		fresh := make(map[string]bool, len(inserted))
		for _, k := range inserted {
			fresh[string(k)] = true
		}
		var old [][]byte
		for _, k := range keys {
			if !fresh[string(k)] {
				old = append(old, k)
			}
		}
		rows, err = tx.Query(ctx, stagedIDsSQL, tenant, old)
		if err != nil {
			return fmt.Errorf("find staged events: %w", err)
		}
		defer rows.Close()
		earlier := make(map[string]uuid.UUID, len(old))
		for rows.Next() {
			var k []byte
			var id uuid.UUID
			if err := rows.Scan(&k, &id); err != nil {
				return fmt.Errorf("find staged events: %w", err)
			}
			earlier[string(k)] = id
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("find staged events: %w", err)
		}
		if len(earlier) < len(old) {
			// A first staging was deleted (released or erased) between the
			// insert that met it and this read: its retry is neither stored
			// nor the duplicate of anything stored, and must not be
			// acknowledged. Nothing of the batch is; sent again, it is
			// staged anew, in its order.
			return fmt.Errorf("find staged events: %w", &pgconn.PgError{Severity: "ERROR", Code: pg.SerializationFailure,
				Message: fmt.Sprintf("%d staged events were deleted while their retries were staged", len(old)-len(earlier))})
		}
		for i, c := range cands {
			if id, ok := earlier[string(c.DedupKey)]; ok {
				out[i] = Staged{ID: id, Duplicate: true}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

const candidateColumns = `tenant_id, id, seq, agent_id, thread_id, kind, event_time, event, sensitivity, redactions,
	status, attempts, COALESCE(last_error, ''), decision, record_ids, received_at`

func scanCandidate(row pgx.Row) (Candidate, error) {
	var c Candidate
	err := row.Scan(&c.Tenant, &c.ID, &c.Seq, &c.AgentID, &c.ThreadID, &c.Kind, &c.Time, &c.Event, &c.Sensitivity,
		&c.Redactions, &c.Status, &c.Attempts, &c.LastError, &c.Decision, &c.RecordIDs, &c.ReceivedAt)
	c.Time, c.ReceivedAt = c.Time.UTC(), c.ReceivedAt.UTC()
	return c, err
}

// claimSQL takes the oldest pending candidates of one partition of threads.
// Every thread belongs to exactly one partition, so one worker at a time
// sees a thread's events, in the order they were staged.
const claimSQL = `
SELECT ` + candidateColumns + `
FROM candidates
WHERE status = 'pending' AND next_attempt_at <= now()
	AND (hashtext(tenant_id || '/' || thread_id) & 2147483647) % $1 = $2
ORDER BY seq
LIMIT $3
FOR UPDATE SKIP LOCKED`

// Claim locks up to limit pending candidates of partition (of partitions)
// for the transaction the store runs on; call it on a store over a
// transaction, and settle each candidate with [Store.Settle] before commit.
func Claim(ctx context.Context, db pg.DBTX, partition, partitions, limit int) ([]Candidate, error) {
	rows, err := db.Query(ctx, claimSQL, partitions, partition, limit)
	if err != nil {
		return nil, fmt.Errorf("claim candidates: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Candidate, error) { return scanCandidate(row) })
	if err != nil {
		return nil, fmt.Errorf("claim candidates: %w", err)
	}
	return out, nil
}

// Settlement is the outcome of classifying one candidate.
type Settlement struct {
	Tenant    string
	ID        uuid.UUID
	Status    string // CandidateDone or CandidateDropped
	Decision  json.RawMessage
	RecordIDs []uuid.UUID
}

// settleSQL finds each candidate by its primary key (the lateral LIMIT 1
// keeps the plan a loop of key look-ups) and updates that row: as a
// prepared statement's generic plan on a table the planner has no
// statistics for, the plain join looked each candidate up among every
// pending candidate of its tenant in candidates_by_status (1,000 settled
// among 5,000 pending: 3.9 s and 860,000 buffers; so, 9.5 ms, EXPLAIN
// ANALYZE). The rows are the batch's, locked since it claimed them.
const settleSQL = `
UPDATE candidates c
SET status = u.status, decision = u.decision, record_ids = u.record_ids::uuid[], processed_at = now(), last_error = NULL
FROM unnest($1::text[], $2::uuid[], $3::text[], $4::jsonb[], $5::text[]) AS u(tenant_id, id, status, decision, record_ids)
CROSS JOIN LATERAL (SELECT x.ctid AS row FROM candidates x WHERE x.tenant_id = u.tenant_id AND x.id = u.id LIMIT 1) AS x
WHERE c.ctid = x.row AND c.tenant_id = u.tenant_id AND c.status = 'pending'`

// Settle marks claimed candidates classified, in the transaction that wrote
// their records: a candidate is classified exactly once.
func Settle(ctx context.Context, db pg.DBTX, settled []Settlement) error {
	if len(settled) == 0 {
		return nil
	}
	tenants, statuses, recs := make([]string, len(settled)), make([]string, len(settled)), make([]string, len(settled))
	ids, decisions := make([]uuid.UUID, len(settled)), make([]json.RawMessage, len(settled))
	for i, st := range settled {
		tenants[i], ids[i], statuses[i], decisions[i] = st.Tenant, st.ID, st.Status, st.Decision
		parts := make([]string, len(st.RecordIDs))
		for j, id := range st.RecordIDs {
			parts[j] = id.String()
		}
		recs[i] = "{" + strings.Join(parts, ",") + "}"
	}
	tag, err := db.Exec(ctx, settleSQL, tenants, ids, statuses, decisions, recs)
	if err != nil {
		return fmt.Errorf("settle candidates: %w", err)
	}
	if int(tag.RowsAffected()) != len(settled) {
		return fmt.Errorf("settle candidates: %d of %d were still pending", tag.RowsAffected(), len(settled))
	}
	return nil
}

const failSQL = `
UPDATE candidates
SET attempts = attempts + 1, last_error = $3,
	status = CASE WHEN attempts + 1 >= $4 THEN 'dead' ELSE 'pending' END,
	next_attempt_at = now() + make_interval(secs => least(300, power(2, attempts + 1)))
WHERE tenant_id = $1 AND id = $2 AND status = 'pending'
RETURNING status`

// Fail records a failed attempt to classify a candidate: it is retried
// with exponential backoff (2 s, 4 s, … up to 5 min) and after maxAttempts
// becomes dead, with reason kept for GET /v1/candidates?status=dead. It
// reports whether the candidate is now dead.
func Fail(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID, reason string, maxAttempts int) (dead bool, err error) {
	var status string
	if err := db.QueryRow(ctx, failSQL, tenant, id, reason, maxAttempts).Scan(&status); err != nil {
		return false, fmt.Errorf("fail candidate: %w", err)
	}
	return status == CandidateDead, nil
}

const listCandidatesSQL = `
SELECT ` + candidateColumns + `
FROM candidates
WHERE tenant_id = $1 AND status = $2 AND seq > $3
ORDER BY seq
LIMIT $4`

// Candidates lists a tenant's candidates with a status, oldest first, after
// the candidate with sequence number after.
func Candidates(ctx context.Context, db pg.DBTX, tenant, status string, after int64, limit int) ([]Candidate, error) {
	rows, err := db.Query(ctx, listCandidatesSQL, tenant, status, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list candidates: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Candidate, error) { return scanCandidate(row) })
	if err != nil {
		return nil, fmt.Errorf("list candidates: %w", err)
	}
	return out, nil
}

const backlogSQL = `SELECT count(*), COALESCE(min(received_at), now()) FROM candidates WHERE status = 'pending'`

// Backlog counts pending candidates across tenants and says when the oldest
// was received.
func Backlog(ctx context.Context, db pg.DBTX) (n int64, oldest time.Time, err error) {
	if err := db.QueryRow(ctx, backlogSQL).Scan(&n, &oldest); err != nil {
		return 0, time.Time{}, fmt.Errorf("count backlog: %w", err)
	}
	return n, oldest.UTC(), nil
}

const lockPendingSQL = `SELECT true FROM candidates WHERE tenant_id = $1 AND id = $2 AND status = 'pending' FOR UPDATE`

// LockPending locks a staged event that is still pending; false when it is
// not (another worker settled it).
func LockPending(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID) (bool, error) {
	var pending bool
	err := db.QueryRow(ctx, lockPendingSQL, tenant, id).Scan(&pending)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lock candidate: %w", err)
	}
	return pending, nil
}
