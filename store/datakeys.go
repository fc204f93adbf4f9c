package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
)

// DataKey is a tenant's data key as stored: wrapped by a master key
// (substrate RFC §15.9). Retired keys seal nothing new; they are kept to
// open what a daemon with a stale view of the tenant's keys may still
// have sealed under them.
type DataKey struct {
	Tenant      string
	Version     int
	MasterKeyID string
	Wrapped     []byte
	CreatedAt   time.Time
	Retired     bool
}

const dataKeysSQL = `
SELECT tenant_id, version, master_key_id, wrapped, created_at, retired_at IS NOT NULL
FROM tenant_data_keys WHERE tenant_id = $1 ORDER BY version`

// DataKeys returns a tenant's data keys, oldest first.
func DataKeys(ctx context.Context, db pg.DBTX, tenant string) ([]DataKey, error) {
	return queryDataKeys(ctx, db, dataKeysSQL, tenant)
}

const allDataKeysSQL = `
SELECT tenant_id, version, master_key_id, wrapped, created_at, retired_at IS NOT NULL
FROM tenant_data_keys WHERE master_key_id <> $1 ORDER BY tenant_id, version LIMIT $2`

// DataKeysNotWrappedBy returns up to limit data keys, of every tenant,
// that master key id does not wrap: what re-wrapping has left to do, and
// what a starting daemon checks it can unwrap.
func DataKeysNotWrappedBy(ctx context.Context, db pg.DBTX, masterKeyID string, limit int) ([]DataKey, error) {
	return queryDataKeys(ctx, db, allDataKeysSQL, masterKeyID, limit)
}

const masterKeyUseSQL = `
SELECT DISTINCT ON (master_key_id) tenant_id, version, master_key_id, wrapped, created_at, retired_at IS NOT NULL
FROM tenant_data_keys ORDER BY master_key_id, tenant_id, version`

// MasterKeyUse returns one data key wrapped by each master key in use.
func MasterKeyUse(ctx context.Context, db pg.DBTX) ([]DataKey, error) {
	return queryDataKeys(ctx, db, masterKeyUseSQL)
}

func queryDataKeys(ctx context.Context, db pg.DBTX, sql string, args ...any) ([]DataKey, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("read data keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (DataKey, error) {
		var k DataKey
		err := row.Scan(&k.Tenant, &k.Version, &k.MasterKeyID, &k.Wrapped, &k.CreatedAt, &k.Retired)
		return k, err
	})
	if err != nil {
		return nil, fmt.Errorf("read data keys: %w", err)
	}
	return keys, nil
}

const insertDataKeySQL = `
INSERT INTO tenant_data_keys (tenant_id, version, master_key_id, wrapped)
VALUES ($1, $2, $3, $4) ON CONFLICT (tenant_id, version) DO NOTHING`

// InsertDataKey stores a new data key version; false when that version
// exists already (another daemon made it first).
func InsertDataKey(ctx context.Context, db pg.DBTX, k DataKey) (bool, error) {
	tag, err := db.Exec(ctx, insertDataKeySQL, k.Tenant, k.Version, k.MasterKeyID, k.Wrapped)
	if err != nil {
		return false, fmt.Errorf("insert data key: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

const rewrapDataKeySQL = `
UPDATE tenant_data_keys SET master_key_id = $4, wrapped = $5, rewrapped_at = now()
WHERE tenant_id = $1 AND version = $2 AND master_key_id = $3`

// RewrapDataKey replaces a data key's wrapping, if it is still wrapped by
// master key from.
func RewrapDataKey(ctx context.Context, db pg.DBTX, k DataKey, from string) (bool, error) {
	tag, err := db.Exec(ctx, rewrapDataKeySQL, k.Tenant, k.Version, from, k.MasterKeyID, k.Wrapped)
	if err != nil {
		return false, fmt.Errorf("rewrap data key: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

const retireDataKeysSQL = `
UPDATE tenant_data_keys SET retired_at = now()
WHERE tenant_id = $1 AND version < $2 AND retired_at IS NULL`

// RetireDataKeys marks a tenant's data keys older than version retired.
func RetireDataKeys(ctx context.Context, db pg.DBTX, tenant string, version int) error {
	if _, err := db.Exec(ctx, retireDataKeysSQL, tenant, version); err != nil {
		return fmt.Errorf("retire data keys: %w", err)
	}
	return nil
}

// SealedRow is one sealed value that re-sealing reads and rewrites: a
// record's payload, a version snapshot's payload, an episode entry or a
// staged event. ID and Seq locate it in its table.
type SealedRow struct {
	ID    uuid.UUID
	Seq   int64 // the version of a snapshot, the seq of an entry
	Value json.RawMessage
}

// Sealed values are JSON objects with a "sealed" member {key, data}; a
// value is under key version k when sealed.key = k.
const (
	recordsToResealSQL = `
SELECT id, 0, payload FROM records
WHERE tenant_id = $1 AND payload ? 'sealed' AND (payload #>> '{sealed,key}')::int <> $2
ORDER BY id LIMIT $3 FOR UPDATE`
	versionsToResealSQL = `
SELECT record_id, version, snapshot -> 'payload' FROM record_versions
WHERE tenant_id = $1 AND snapshot -> 'payload' ? 'sealed' AND (snapshot #>> '{payload,sealed,key}')::int <> $2
ORDER BY record_id, version LIMIT $3 FOR UPDATE`
	entriesToResealSQL = `
SELECT record_id, seq, entry FROM episode_entries
WHERE tenant_id = $1 AND entry ? 'sealed' AND (entry #>> '{sealed,key}')::int <> $2
ORDER BY record_id, seq LIMIT $3 FOR UPDATE`
	candidatesToResealSQL = `
SELECT id, 0, event FROM candidates
WHERE tenant_id = $1 AND event ? 'sealed' AND (event #>> '{sealed,key}')::int <> $2
ORDER BY id LIMIT $3 FOR UPDATE`
)

// ResealTable names a table whose sealed values re-sealing rewrites.
type ResealTable string

// The tables that hold sealed values.
const (
	ResealRecords    ResealTable = "records"
	ResealVersions   ResealTable = "record_versions"
	ResealEntries    ResealTable = "episode_entries"
	ResealCandidates ResealTable = "candidates"
)

// ResealTables are the tables that hold sealed values, in the order
// re-sealing visits them.
var ResealTables = []ResealTable{ResealRecords, ResealVersions, ResealEntries, ResealCandidates}

var toResealSQL = map[ResealTable]string{
	ResealRecords: recordsToResealSQL, ResealVersions: versionsToResealSQL,
	ResealEntries: entriesToResealSQL, ResealCandidates: candidatesToResealSQL,
}

// ToReseal locks up to limit of a tenant's values in table sealed under a
// data key other than version, in key order.
func ToReseal(ctx context.Context, db pg.DBTX, table ResealTable, tenant string, version, limit int) ([]SealedRow, error) {
	rows, err := db.Query(ctx, toResealSQL[table], tenant, version, limit)
	if err != nil {
		return nil, fmt.Errorf("read %s to re-seal: %w", table, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SealedRow, error) {
		var s SealedRow
		err := row.Scan(&s.ID, &s.Seq, &s.Value)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("read %s to re-seal: %w", table, err)
	}
	return out, nil
}

const countToResealSQL = `
SELECT
	(SELECT count(*) FROM records WHERE tenant_id = $1 AND payload ? 'sealed' AND (payload #>> '{sealed,key}')::int <> $2),
	(SELECT count(*) FROM record_versions WHERE tenant_id = $1 AND snapshot -> 'payload' ? 'sealed' AND (snapshot #>> '{payload,sealed,key}')::int <> $2),
	(SELECT count(*) FROM episode_entries WHERE tenant_id = $1 AND entry ? 'sealed' AND (entry #>> '{sealed,key}')::int <> $2),
	(SELECT count(*) FROM candidates WHERE tenant_id = $1 AND event ? 'sealed' AND (event #>> '{sealed,key}')::int <> $2),
	(SELECT count(*) FROM artifacts WHERE tenant_id = $1 AND sealed AND (convert_from(content, 'UTF8')::jsonb #>> '{sealed,key}')::int <> $2),
	(SELECT count(*) FROM episode_features WHERE tenant_id = $1 AND ` + staleSealedFeatures + `)`

// CountToReseal counts a tenant's values sealed under a data key other
// than version, in every table that holds them.
func CountToReseal(ctx context.Context, db pg.DBTX, tenant string, version int) (int64, error) {
	var a, b, c, d, e, f int64
	if err := db.QueryRow(ctx, countToResealSQL, tenant, version).Scan(&a, &b, &c, &d, &e, &f); err != nil {
		return 0, fmt.Errorf("count values to re-seal: %w", err)
	}
	return a + b + c + d + e + f, nil
}

// staleSealedFeatures holds for an episode_features row sealed under a
// data key other than $2: a sealed value begins {"sealed":.
const staleSealedFeatures = `substring(features from 1 for 10) = convert_to('{"sealed":', 'UTF8')
	AND (convert_from(features, 'UTF8')::jsonb #>> '{sealed,key}')::int <> $2`

const forgetSealedFeaturesSQL = `DELETE FROM episode_features WHERE tenant_id = $1 AND ` + staleSealedFeatures

// ForgetSealedFeatures deletes a tenant's episode features sealed under a
// data key other than version: they are derived from the episodes' events
// (migration 031), and a rotation forgets them rather than re-sealing
// them; consolidation learns them again.
func ForgetSealedFeatures(ctx context.Context, db pg.DBTX, tenant string, version int) (int, error) {
	tag, err := db.Exec(ctx, forgetSealedFeaturesSQL, tenant, version)
	if err != nil {
		return 0, fmt.Errorf("forget sealed episode features: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// Re-sealing changes ciphertext only, never a version: the triggers that
// keep the version log and the timelines append-only let it through when
// the transaction says so (SET LOCAL engram.reseal = 'on') and only the
// sealed value changes (migration 022).
const (
	resealRecordsSQL = `
UPDATE records r SET payload = u.v
FROM unnest($2::uuid[], $3::bigint[], $4::jsonb[]) AS u(id, seq, v)
WHERE r.tenant_id = $1 AND r.id = u.id`
	resealVersionsSQL = `
UPDATE record_versions r SET snapshot = jsonb_set(r.snapshot, '{payload}', u.v)
FROM unnest($2::uuid[], $3::bigint[], $4::jsonb[]) AS u(id, seq, v)
WHERE r.tenant_id = $1 AND r.record_id = u.id AND r.version = u.seq`
	resealEntriesSQL = `
UPDATE episode_entries e SET entry = u.v
FROM unnest($2::uuid[], $3::bigint[], $4::jsonb[]) AS u(id, seq, v)
WHERE e.tenant_id = $1 AND e.record_id = u.id AND e.seq = u.seq`
	resealCandidatesSQL = `
UPDATE candidates c SET event = u.v
FROM unnest($2::uuid[], $3::bigint[], $4::jsonb[]) AS u(id, seq, v)
WHERE c.tenant_id = $1 AND c.id = u.id`
)

var resealSQL = map[ResealTable]string{
	ResealRecords: resealRecordsSQL, ResealVersions: resealVersionsSQL,
	ResealEntries: resealEntriesSQL, ResealCandidates: resealCandidatesSQL,
}

// Reseal rewrites sealed values of table (read by [ToReseal] in the same
// transaction) in one statement.
func Reseal(ctx context.Context, db pg.DBTX, table ResealTable, tenant string, rows []SealedRow) error {
	if len(rows) == 0 {
		return nil
	}
	ids, seqs, vals := make([]uuid.UUID, len(rows)), make([]int64, len(rows)), make([]json.RawMessage, len(rows))
	for i, r := range rows {
		ids[i], seqs[i], vals[i] = r.ID, r.Seq, r.Value
	}
	if _, err := db.Exec(ctx, `SET LOCAL engram.reseal = 'on'`); err != nil {
		return fmt.Errorf("re-seal %s: %w", table, err)
	}
	if _, err := db.Exec(ctx, resealSQL[table], tenant, ids, seqs, vals); err != nil {
		return fmt.Errorf("re-seal %s: %w", table, err)
	}
	if _, err := db.Exec(ctx, `SET LOCAL engram.reseal = 'off'`); err != nil {
		return fmt.Errorf("re-seal %s: %w", table, err)
	}
	return nil
}

// SealedArtifact is a sealed artifact that re-sealing reads and rewrites:
// its digest and its content (a sealed value).
type SealedArtifact struct {
	SHA256  []byte
	Content []byte
}

const artifactsToResealSQL = `
SELECT sha256, content FROM artifacts
WHERE tenant_id = $1 AND sealed AND (convert_from(content, 'UTF8')::jsonb #>> '{sealed,key}')::int <> $2
ORDER BY sha256 LIMIT $3 FOR UPDATE`

// ArtifactsToReseal locks up to limit of a tenant's artifacts sealed under
// a data key other than version, in digest order.
func ArtifactsToReseal(ctx context.Context, db pg.DBTX, tenant string, version, limit int) ([]SealedArtifact, error) {
	rows, err := db.Query(ctx, artifactsToResealSQL, tenant, version, limit)
	if err != nil {
		return nil, fmt.Errorf("read artifacts to re-seal: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SealedArtifact, error) {
		var a SealedArtifact
		err := row.Scan(&a.SHA256, &a.Content)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("read artifacts to re-seal: %w", err)
	}
	return out, nil
}

const resealArtifactsSQL = `
UPDATE artifacts a SET content = u.content
FROM unnest($2::bytea[], $3::bytea[]) AS u(sha256, content)
WHERE a.tenant_id = $1 AND a.sha256 = u.sha256 AND a.sealed`

// ResealArtifacts rewrites the content of sealed artifacts (read by
// [ArtifactsToReseal] in the same transaction) in one statement.
func ResealArtifacts(ctx context.Context, db pg.DBTX, tenant string, arts []SealedArtifact) error {
	if len(arts) == 0 {
		return nil
	}
	shas, contents := make([][]byte, len(arts)), make([][]byte, len(arts))
	for i, a := range arts {
		shas[i], contents[i] = a.SHA256, a.Content
	}
	if _, err := db.Exec(ctx, resealArtifactsSQL, tenant, shas, contents); err != nil {
		return fmt.Errorf("re-seal artifacts: %w", err)
	}
	return nil
}
