package store

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
)

// This file holds the statements of erasure on demand (write-path RFC
// §12.10.2): the erasure requests and their certificates, the reads that
// bring every trace of a tenant's data to the write path in bounded
// batches for matching against a subject, the deletes, and the
// verification scan over every table information_schema lists.

// Erasure is an erasure request's row: its status and, once it has
// completed, its certificate. It names the subject only by SubjectSHA256.
type Erasure struct {
	ID            uuid.UUID
	SubjectSHA256 string
	// Identifiers counts the subject's identifiers by kind.
	Identifiers map[string]int
	// Status is running, completed, failed or interrupted; Phase the step
	// a running erasure is at.
	Status       string
	Phase        string
	Counts       ErasureCounts
	Rebuilt      []uuid.UUID
	Verification *Verification
	// Verified is Verification's, when there is one.
	Verified    bool
	Error       string
	RequestedAt time.Time
	UpdatedAt   time.Time
	CompletedAt *time.Time
}

// ErasureCounts counts what an erasure deleted: records per layer, and the
// other traces of the subject. Its JSON is the erasures.counts column's
// (and the erasure's audit entry's).
type ErasureCounts struct {
	Episodic            int `json:"episodic"`
	Working             int `json:"working"`
	Semantic            int `json:"semantic"`
	Competence          int `json:"competence"`
	PlanGraph           int `json:"plan_graph"`
	StagedEvents        int `json:"staged_events"`
	TimelineEntries     int `json:"timeline_entries"`
	Vectors             int `json:"vectors"`
	Versions            int `json:"versions"`
	Artifacts           int `json:"artifacts"`
	RetrievalLogEntries int `json:"retrieval_log_entries"`
	AuditEntries        int `json:"audit_entries"`
	Other               int `json:"other"`
}

// Verification is the result of an erasure's verification scan: how many
// tables and columns it scanned, and those where the subject was still
// found, with how many rows (never the values). Its JSON is the
// erasures.verification column's.
type Verification struct {
	Verified  bool        `json:"verified"`
	Tables    int         `json:"tables"`
	Columns   int         `json:"columns"`
	Remaining []Remaining `json:"remaining"`
	At        time.Time   `json:"at"`
}

// Remaining is a column in which the verification scan found the subject.
type Remaining struct {
	Table  string `json:"table"`
	Column string `json:"column"`
	Rows   int    `json:"rows"`
}

const erasureColumns = `id, subject_sha256, identifiers, status, phase, counts, rebuilt, verification,
	coalesce(error, ''), requested_at, updated_at, completed_at`

func scanErasure(row pgx.Row) (Erasure, error) {
	var e Erasure
	var verification []byte
	err := row.Scan(&e.ID, &e.SubjectSHA256, &e.Identifiers, &e.Status, &e.Phase, &e.Counts, &e.Rebuilt, &verification,
		&e.Error, &e.RequestedAt, &e.UpdatedAt, &e.CompletedAt)
	if err == pgx.ErrNoRows {
		return e, ErrNotFound
	}
	if err != nil {
		return e, fmt.Errorf("read erasure: %w", err)
	}
	if len(verification) > 0 {
		var v Verification
		if err := json.Unmarshal(verification, &v); err != nil {
			return e, fmt.Errorf("read erasure verification: %w", err)
		}
		e.Verification, e.Verified = &v, v.Verified
	}
	if e.Rebuilt == nil {
		e.Rebuilt = []uuid.UUID{}
	}
	e.RequestedAt, e.UpdatedAt = e.RequestedAt.UTC(), e.UpdatedAt.UTC()
	if e.CompletedAt != nil {
		t := e.CompletedAt.UTC()
		e.CompletedAt = &t
	}
	return e, nil
}

const insertErasureSQL = `
INSERT INTO erasures (tenant_id, id, subject_sha256, identifiers, status, phase, counts, rebuilt, requested_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`

// InsertErasure records a new erasure request.
func InsertErasure(ctx context.Context, db pg.DBTX, tenant string, e Erasure) error {
	if _, err := db.Exec(ctx, insertErasureSQL, tenant, e.ID, e.SubjectSHA256, e.Identifiers, e.Status, e.Phase,
		e.Counts, uuids(nonNil(e.Rebuilt)), e.RequestedAt.UTC()); err != nil {
		return fmt.Errorf("insert erasure: %w", err)
	}
	return nil
}

const updateErasureSQL = `
UPDATE erasures SET status = $3, phase = $4, counts = $5, rebuilt = $6, verification = $7, error = nullif($8, ''),
	updated_at = $9, completed_at = $10
WHERE tenant_id = $1 AND id = $2`

// UpdateErasure writes an erasure's progress, or its end.
func UpdateErasure(ctx context.Context, db pg.DBTX, tenant string, e Erasure) error {
	var verification any
	if e.Verification != nil {
		verification = e.Verification
	}
	tag, err := db.Exec(ctx, updateErasureSQL, tenant, e.ID, e.Status, e.Phase, e.Counts, uuids(nonNil(e.Rebuilt)),
		verification, e.Error, e.UpdatedAt.UTC(), e.CompletedAt)
	if err != nil {
		return fmt.Errorf("update erasure: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

const getErasureSQL = `SELECT ` + erasureColumns + ` FROM erasures WHERE tenant_id = $1 AND id = $2`

// GetErasure returns an erasure request, or ErrNotFound.
func GetErasure(ctx context.Context, db pg.DBTX, tenant string, id uuid.UUID) (Erasure, error) {
	return scanErasure(db.QueryRow(ctx, getErasureSQL, tenant, id))
}

// RecordTrace is one record as erasure matching reads it: the whole row
// (payload, tags, scope, provenance, origin), every version snapshot
// and, for an episode, its appended timeline entries.
type RecordTrace struct {
	ID       uuid.UUID
	Type     memory.Type
	Row      json.RawMessage
	Versions []json.RawMessage
	Entries  []json.RawMessage
}

const recordTracesSQL = `
SELECT r.id, r.type, to_jsonb(r) - 'tsv',
	ARRAY(SELECT v.snapshot - 'tsv' FROM record_versions v WHERE v.tenant_id = r.tenant_id AND v.record_id = r.id ORDER BY v.version),
	ARRAY(SELECT e.entry FROM episode_entries e WHERE e.tenant_id = r.tenant_id AND e.record_id = r.id ORDER BY e.seq)
FROM records r
WHERE r.tenant_id = $1 AND r.id > $2
ORDER BY r.id
LIMIT $3`

// RecordTraces reads up to limit of a tenant's records, of every status,
// in id order after after.
func RecordTraces(ctx context.Context, db pg.DBTX, tenant string, after uuid.UUID, limit int) ([]RecordTrace, error) {
	rows, err := db.Query(ctx, recordTracesSQL, tenant, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read records to match: %w", err)
	}
	return collectRecordTraces(rows)
}

const recordTracesOfSQL = `
SELECT r.id, r.type, to_jsonb(r) - 'tsv',
	ARRAY(SELECT v.snapshot - 'tsv' FROM record_versions v WHERE v.tenant_id = r.tenant_id AND v.record_id = r.id ORDER BY v.version),
	ARRAY(SELECT e.entry FROM episode_entries e WHERE e.tenant_id = r.tenant_id AND e.record_id = r.id ORDER BY e.seq)
FROM records r
WHERE r.tenant_id = $1 AND r.id = ANY($2)
ORDER BY r.id`

// RecordTracesOf reads a tenant's records ids as [RecordTraces] does.
func RecordTracesOf(ctx context.Context, db pg.DBTX, tenant string, ids []uuid.UUID) ([]RecordTrace, error) {
	rows, err := db.Query(ctx, recordTracesOfSQL, tenant, uuids(ids))
	if err != nil {
		return nil, fmt.Errorf("read records to match: %w", err)
	}
	return collectRecordTraces(rows)
}

func collectRecordTraces(rows pgx.Rows) ([]RecordTrace, error) {
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RecordTrace, error) {
		var t RecordTrace
		err := row.Scan(&t.ID, &t.Type, &t.Row, &t.Versions, &t.Entries)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("read records to match: %w", err)
	}
	return out, nil
}

// RowTrace is a row of a table other than records, whole, as erasure
// matching reads it (to_jsonb of the row, so a column added later is read
// too), and its key.
type RowTrace struct {
	Seq int64     // candidates' seq, the audit log's id
	ID  uuid.UUID // candidates' and retrievals' id
	Row json.RawMessage
}

const candidateTracesSQL = `
SELECT seq, id, to_jsonb(c) - 'dedup_key' FROM candidates c
WHERE tenant_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`

// CandidateTraces reads up to limit of a tenant's staged events, of every
// status, in staging order after seq after.
func CandidateTraces(ctx context.Context, db pg.DBTX, tenant string, after int64, limit int) ([]RowTrace, error) {
	return rowTraces(ctx, db, "read staged events to match", candidateTracesSQL, tenant, after, limit)
}

const auditTracesSQL = `
SELECT id, coalesce(record_id, '00000000-0000-0000-0000-000000000000'), to_jsonb(a) FROM audit_log a
WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3`

// AuditTraces reads up to limit of a tenant's audit entries after id
// after; ID is the record an entry names (the nil UUID for none).
func AuditTraces(ctx context.Context, db pg.DBTX, tenant string, after int64, limit int) ([]RowTrace, error) {
	return rowTraces(ctx, db, "read audit entries to match", auditTracesSQL, tenant, after, limit)
}

const retrievalTracesSQL = `
SELECT 0, id, to_jsonb(r) - 'record_ids' FROM retrievals r
WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3`

// RetrievalTraces reads up to limit of a tenant's retrieval log entries
// in id order after after, without the record ids they returned.
func RetrievalTraces(ctx context.Context, db pg.DBTX, tenant string, after uuid.UUID, limit int) ([]RowTrace, error) {
	return rowTraces(ctx, db, "read retrieval log to match", retrievalTracesSQL, tenant, after, limit)
}

const reputationTracesSQL = `
SELECT 0, '00000000-0000-0000-0000-000000000000'::uuid, to_jsonb(a) FROM agent_reputation a WHERE tenant_id = $1 AND agent_id > $2
ORDER BY agent_id LIMIT $3`

// ReputationTraces reads up to limit of a tenant's agents' reputation
// rows in agent order after after.
func ReputationTraces(ctx context.Context, db pg.DBTX, tenant, after string, limit int) ([]RowTrace, error) {
	return rowTraces(ctx, db, "read agents to match", reputationTracesSQL, tenant, after, limit)
}

func rowTraces(ctx context.Context, db pg.DBTX, what, sql string, args ...any) ([]RowTrace, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RowTrace, error) {
		var t RowTrace
		err := row.Scan(&t.Seq, &t.ID, &t.Row)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// ArtifactTrace is one stored artifact, its content whole.
type ArtifactTrace struct {
	SHA256  []byte
	Content []byte
	// Sealed: Content is a sealed value.
	Sealed bool
}

const artifactTracesSQL = `
SELECT sha256, content, sealed FROM artifacts WHERE tenant_id = $1 AND sha256 > $2 ORDER BY sha256 LIMIT $3`

// ArtifactTraces reads up to limit of a tenant's artifacts after the
// digest after.
func ArtifactTraces(ctx context.Context, db pg.DBTX, tenant string, after []byte, limit int) ([]ArtifactTrace, error) {
	rows, err := db.Query(ctx, artifactTracesSQL, tenant, nonNilBytes(after), limit)
	if err != nil {
		return nil, fmt.Errorf("read artifacts to match: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ArtifactTrace, error) {
		var t ArtifactTrace
		err := row.Scan(&t.SHA256, &t.Content, &t.Sealed)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("read artifacts to match: %w", err)
	}
	return out, nil
}

func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Dependent is a record that derives from others: the targets of its
// derived_from relations and the refs its provenance and evidence cite.
type Dependent struct {
	ID          uuid.UUID
	Type        memory.Type
	DerivedFrom []uuid.UUID
	Refs        []string
}

const dependentsSQL = `
SELECT r.id, r.type,
	ARRAY(SELECT x.target_id FROM relations x
		WHERE x.tenant_id = r.tenant_id AND x.source_id = r.id AND x.predicate = 'derived_from' ORDER BY x.target_id),
	engram_evidence_refs(r.provenance, r.payload)
FROM records r
WHERE r.tenant_id = $1 AND (
	r.id IN (SELECT source_id FROM relations WHERE tenant_id = $1 AND predicate = 'derived_from' AND target_id = ANY($2))
	OR engram_evidence_refs(r.provenance, r.payload) && $3::text[])
ORDER BY r.id`

// Dependents lists a tenant's records, of every status, that are
// derived_from one of ids or cite one of refs.
func Dependents(ctx context.Context, db pg.DBTX, tenant string, ids []uuid.UUID, refs []string) ([]Dependent, error) {
	rows, err := db.Query(ctx, dependentsSQL, tenant, uuids(nonNil(ids)), nonNil(refs))
	if err != nil {
		return nil, fmt.Errorf("find derived records: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Dependent, error) {
		var d Dependent
		err := row.Scan(&d.ID, &d.Type, &d.DerivedFrom, &d.Refs)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("find derived records: %w", err)
	}
	return out, nil
}

// Erased counts what [EraseRecords] deleted.
type Erased struct {
	ByType    map[memory.Type]int
	Versions  int
	Entries   int
	Vectors   int
	Audit     int
	Artifacts int
	// Events are the staged events the erased episodes' timelines cite.
	Events []uuid.UUID
}

const (
	allowEraseSQL  = `SET LOCAL engram.erase = 'on'`
	countTracesSQL = `
SELECT (SELECT count(*) FROM record_versions WHERE tenant_id = $1 AND record_id = ANY($2)),
	(SELECT count(*) FROM episode_entries WHERE tenant_id = $1 AND record_id = ANY($2)),
	(SELECT count(*) FROM record_vectors WHERE tenant_id = $1 AND record_id = ANY($2)),
	ARRAY(SELECT DISTINCT substr(x, 7) FROM (
		SELECT e.entry ->> 'ref' FROM episode_entries e WHERE e.tenant_id = $1 AND e.record_id = ANY($2)
		UNION ALL
		SELECT t ->> 'ref' FROM records r, jsonb_array_elements(CASE jsonb_typeof(r.payload -> 'timeline') WHEN 'array' THEN r.payload -> 'timeline' ELSE '[]' END) AS t
		WHERE r.tenant_id = $1 AND r.id = ANY($2) AND r.type = 'episodic'
		UNION ALL
		SELECT s ->> 'ref' FROM records r, jsonb_array_elements(CASE jsonb_typeof(r.provenance -> 'sources') WHEN 'array' THEN r.provenance -> 'sources' ELSE '[]' END) AS s
		WHERE r.tenant_id = $1 AND r.id = ANY($2) AND r.type = 'episodic'
	) AS refs(x) WHERE x LIKE 'evt://%' AND substr(x, 7) ~ '^[0-9a-f-]{36}$')::uuid[]`
	deleteRecordAuditSQL = `DELETE FROM audit_log WHERE tenant_id = $1 AND record_id = ANY($2)`
	deleteSalienceSQL    = `DELETE FROM record_salience WHERE tenant_id = $1 AND record_id = ANY($2)`
	eraseRecordsSQL      = `
WITH gone AS (
	DELETE FROM records WHERE tenant_id = $1 AND id = ANY($2)
	RETURNING id, type, version, CASE WHEN type = 'episodic' THEN payload -> 'artifacts' END AS artifacts
), audited AS (
	INSERT INTO audit_log (tenant_id, record_id, action, actor, version, rationale)
	SELECT $1, id, 'erase', $3, version + 1, $4 FROM gone
)
SELECT type, artifacts FROM gone`
)

// EraseRecords hard-deletes a tenant's records ids, in the caller's
// transaction, with everything that hangs on them: versions, timeline
// entries, relations, vectors, feedback, flags, provenance stamps, reviews,
// threads (by cascade), materialised salience and their audit entries,
// which may carry the subject's words. Each leaves one audit entry of
// action erase by actor, with rationale (which must name no data). The
// artifacts the erased episodes referenced and no remaining episode does
// are deleted too.
func EraseRecords(ctx context.Context, tx pgx.Tx, tenant string, ids []uuid.UUID, actor, rationale string) (Erased, error) {
	out := Erased{ByType: map[memory.Type]int{}}
	if len(ids) == 0 {
		return out, nil
	}
	for _, s := range []string{allowEraseSQL, "SET LOCAL engram.purge = 'on'"} {
		if _, err := tx.Exec(ctx, s); err != nil {
			return out, fmt.Errorf("allow erasure: %w", err)
		}
	}
	keys := uuids(ids)
	if err := tx.QueryRow(ctx, countTracesSQL, tenant, keys).Scan(&out.Versions, &out.Entries, &out.Vectors, &out.Events); err != nil {
		return out, fmt.Errorf("count erased traces: %w", err)
	}
	tag, err := tx.Exec(ctx, deleteRecordAuditSQL, tenant, keys)
	if err != nil {
		return out, fmt.Errorf("erase audit entries: %w", err)
	}
	out.Audit = int(tag.RowsAffected())
	if _, err := tx.Exec(ctx, deleteSalienceSQL, tenant, keys); err != nil {
		return out, fmt.Errorf("erase salience: %w", err)
	}
	rows, err := tx.Query(ctx, eraseRecordsSQL, tenant, keys, actor, rationale)
	if err != nil {
		return out, fmt.Errorf("erase records: %w", err)
	}
	var tenants, shas []string
	for rows.Next() {
		var typ memory.Type
		var refs []string
		if err := rows.Scan(&typ, &refs); err != nil {
			rows.Close()
			return out, fmt.Errorf("erase records: %w", err)
		}
		out.ByType[typ]++
		for _, ref := range refs {
			if sum, err := hex.DecodeString(ref); err == nil && len(sum) == 32 {
				tenants, shas = append(tenants, tenant), append(shas, hex.EncodeToString(sum))
			}
		}
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("erase records: %w", err)
	}
	if len(shas) > 0 {
		tag, err := tx.Exec(ctx, deleteOrphanArtifactsSQL, tenants, shas)
		if err != nil {
			return out, fmt.Errorf("erase artifacts: %w", err)
		}
		out.Artifacts = int(tag.RowsAffected())
	}
	return out, nil
}

const deleteCandidatesSQL = `
DELETE FROM candidates WHERE tenant_id = $1 AND (id = ANY($2) OR record_ids && $3::uuid[])`

// DeleteCandidates deletes a tenant's staged events ids, and those that
// became one of the records erased.
func DeleteCandidates(ctx context.Context, db pg.DBTX, tenant string, ids, erased []uuid.UUID) (int, error) {
	tag, err := db.Exec(ctx, deleteCandidatesSQL, tenant, uuids(nonNil(ids)), uuids(nonNil(erased)))
	if err != nil {
		return 0, fmt.Errorf("erase staged events: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// DeleteAuditEntries deletes a tenant's audit entries ids (they carry the
// subject's words), in an erasing transaction.
func DeleteAuditEntries(ctx context.Context, tx pgx.Tx, tenant string, ids []int64) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	if _, err := tx.Exec(ctx, allowEraseSQL); err != nil {
		return 0, fmt.Errorf("allow erasure: %w", err)
	}
	tag, err := tx.Exec(ctx, `DELETE FROM audit_log WHERE tenant_id = $1 AND id = ANY($2)`, tenant, ids)
	if err != nil {
		return 0, fmt.Errorf("erase audit entries: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

const deleteArtifactsSQL = `DELETE FROM artifacts WHERE tenant_id = $1 AND sha256 = ANY($2)`

// DeleteArtifacts deletes a tenant's artifacts by digest.
func DeleteArtifacts(ctx context.Context, db pg.DBTX, tenant string, shas [][]byte) (int, error) {
	if len(shas) == 0 {
		return 0, nil
	}
	tag, err := db.Exec(ctx, deleteArtifactsSQL, tenant, shas)
	if err != nil {
		return 0, fmt.Errorf("erase artifacts: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

const (
	deleteRetrievalsSQL = `DELETE FROM retrievals WHERE tenant_id = $1 AND id = ANY($2)`
	scrubRetrievalsSQL  = `
UPDATE retrievals SET record_ids = ARRAY(SELECT x FROM unnest(record_ids) AS x WHERE x <> ALL($2::uuid[]))
WHERE tenant_id = $1 AND record_ids && $2::uuid[]`
)

// ScrubRetrievals deletes a tenant's retrieval log entries ids and takes
// the erased records out of every other entry that returned them.
func ScrubRetrievals(ctx context.Context, db pg.DBTX, tenant string, ids, erased []uuid.UUID) (int, error) {
	n := 0
	if len(ids) > 0 {
		tag, err := db.Exec(ctx, deleteRetrievalsSQL, tenant, uuids(ids))
		if err != nil {
			return 0, fmt.Errorf("erase retrieval log entries: %w", err)
		}
		n += int(tag.RowsAffected())
	}
	if len(erased) > 0 {
		tag, err := db.Exec(ctx, scrubRetrievalsSQL, tenant, uuids(erased))
		if err != nil {
			return 0, fmt.Errorf("scrub retrieval log: %w", err)
		}
		n += int(tag.RowsAffected())
	}
	return n, nil
}

// DeleteReputation deletes the reputation rows of a tenant's agents.
func DeleteReputation(ctx context.Context, db pg.DBTX, tenant string, agents []string) (int, error) {
	if len(agents) == 0 {
		return 0, nil
	}
	tag, err := db.Exec(ctx, `DELETE FROM agent_reputation WHERE tenant_id = $1 AND agent_id = ANY($2)`, tenant, agents)
	if err != nil {
		return 0, fmt.Errorf("erase agent reputation: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

const replaceProvenanceSQL = `
INSERT INTO provenance (tenant_id, record_id, stamp, content_hash, fingerprint, key_id, signature)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (tenant_id, record_id) DO UPDATE SET stamp = excluded.stamp, content_hash = excluded.content_hash,
	fingerprint = excluded.fingerprint, key_id = excluded.key_id, signature = excluded.signature, tampered_at = NULL`

// ReplaceProvenance writes a record's provenance stamp over the one it
// has: a record rebuilt by an erasure is stamped again without the erased
// sources.
func ReplaceProvenance(ctx context.Context, db pg.DBTX, p ProvenanceRow) error {
	var sig any
	if p.KeyID != "" {
		sig = p.Signature
	}
	if _, err := db.Exec(ctx, replaceProvenanceSQL, p.Tenant, p.RecordID, p.Stamp, p.ContentHash, p.Fingerprint, p.KeyID, sig); err != nil {
		return fmt.Errorf("stamp provenance: %w", err)
	}
	return nil
}

// TextColumn is a column that can hold text: text, character, JSON,
// binary, a text array or a tsvector.
type TextColumn struct {
	Table, Column, DataType string
}

// tenantTextColumnsSQL lists, from information_schema, the columns of the
// current schema's tables that have a tenant_id column and that can hold
// text. Partitions are left out: their parent's scan reads them.
const tenantTextColumnsSQL = `
SELECT c.table_name, c.column_name, c.data_type
FROM information_schema.columns c
JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
JOIN pg_catalog.pg_class k ON k.relname = c.table_name AND k.relnamespace = c.table_schema::regnamespace
WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' AND NOT k.relispartition
	AND EXISTS (SELECT 1 FROM information_schema.columns x
		WHERE x.table_schema = c.table_schema AND x.table_name = c.table_name AND x.column_name = 'tenant_id')
	AND c.column_name <> 'tenant_id'
	AND (c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'bytea', 'tsvector')
		OR (c.data_type = 'ARRAY' AND c.udt_name IN ('_text', '_varchar', '_jsonb', '_json')))
ORDER BY c.table_name, c.ordinal_position`

// TenantTextColumns lists the text-holding columns of every table in the
// current schema that holds tenants' rows.
func TenantTextColumns(ctx context.Context, db pg.DBTX) ([]TextColumn, error) {
	rows, err := db.Query(ctx, tenantTextColumnsSQL)
	if err != nil {
		return nil, fmt.Errorf("list columns: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (TextColumn, error) {
		var c TextColumn
		err := row.Scan(&c.Table, &c.Column, &c.DataType)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("list columns: %w", err)
	}
	return out, nil
}

// ColumnCells returns, for up to limit of a tenant's rows of a column, the
// column's value as text (binary decoded as UTF-8 where it is, escaped
// where it is not) when it is ILIKE one of likes, or its digits alone are
// LIKE one of digits: a prefilter that cannot miss a value the caller's
// matching would find, given patterns made for it.
func ColumnCells(ctx context.Context, db pg.DBTX, tenant string, c TextColumn, likes, digits []string, limit int) ([]string, error) {
	value := pgx.Identifier{c.Column}.Sanitize() + `::text`
	if c.DataType == "bytea" {
		value = `CASE WHEN length(` + pgx.Identifier{c.Column}.Sanitize() + `) > 0 THEN encode(` + pgx.Identifier{c.Column}.Sanitize() + `, 'escape') END`
	}
	sql := `SELECT v FROM (SELECT ` + value + ` AS v FROM ` + pgx.Identifier{c.Table}.Sanitize() + ` WHERE tenant_id = $1) AS t
WHERE v ILIKE ANY($2::text[]) OR regexp_replace(v, '[^0-9]', '', 'g') LIKE ANY($3::text[])
LIMIT $4`
	rows, err := db.Query(ctx, sql, tenant, nonNil(likes), nonNil(digits), limit)
	if err != nil {
		return nil, fmt.Errorf("scan %s.%s: %w", c.Table, c.Column, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("scan %s.%s: %w", c.Table, c.Column, err)
	}
	return out, nil
}

const insertTenantAuditSQL = `
INSERT INTO audit_log (tenant_id, record_id, action, actor, rationale) VALUES ($1, NULL, $2, $3, $4)`

// InsertTenantAudit writes an audit entry that names no record: an
// operation on the tenant as a whole, such as an erasure.
func InsertTenantAudit(ctx context.Context, db pg.DBTX, tenant, action, actor, rationale string) error {
	if _, err := db.Exec(ctx, insertTenantAuditSQL, tenant, action, actor, rationale); err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	return nil
}

const unfinishedErasuresSQL = `
SELECT id, tenant_id, status, phase, requested_at FROM erasures
WHERE status <> 'completed' ORDER BY requested_at, tenant_id, id LIMIT $1`

// PendingErasure is an erasure request not yet complete: its id, tenant
// and state, never its subject.
type PendingErasure struct {
	ID          uuid.UUID
	Tenant      string
	Status      string
	Phase       string
	RequestedAt time.Time
}

// UnfinishedErasures lists up to limit erasure requests of every tenant
// that have not completed (running, failed or interrupted), oldest first:
// the compliance report's question (write-path RFC §12.10.5). It is the
// operator's, like the jobs, and reads ids and states, never a subject.
func UnfinishedErasures(ctx context.Context, db pg.DBTX, limit int) ([]PendingErasure, error) {
	rows, err := db.Query(ctx, unfinishedErasuresSQL, limit)
	if err != nil {
		return nil, fmt.Errorf("list unfinished erasures: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (PendingErasure, error) {
		var p PendingErasure
		err := row.Scan(&p.ID, &p.Tenant, &p.Status, &p.Phase, &p.RequestedAt)
		p.RequestedAt = p.RequestedAt.UTC()
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("list unfinished erasures: %w", err)
	}
	return out, nil
}
