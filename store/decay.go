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

// uuids converts ids for set-based statements: pgx encodes [16]byte as a
// uuid directly, where uuid.UUID goes through its text form.
func uuids(ids []uuid.UUID) [][16]byte {
	out := make([][16]byte, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// Key names a record across tenants, for work that walks every tenant's
// records in (tenant, id) order.
type Key struct {
	Tenant string    `json:"tenant"`
	ID     uuid.UUID `json:"id"`
}

// DecayRow is what decay reads of a live record: Record holds its id, type,
// status, version, salience, lifecycle, creation and update times, nothing
// else. Inherited says its decay profile follows its type's configured one.
type DecayRow struct {
	Tenant    string
	Record    memory.Record
	Inherited bool
}

// Key returns the row's key.
func (r DecayRow) Key() Key { return Key{Tenant: r.Tenant, ID: r.Record.ID} }

const decayColumns = `tenant_id, id, type, status, version, salience, decay_curve, decay_half_life_seconds,
	decay_floor, decay_max_age_seconds, decay_reinforcement_gain, decay_points, last_reinforced_at, pinned,
	deletion_policy, expires_at, created_at, updated_at, decay_inherited`

// scanLiveSQL walks the active set of every tenant in key order, on the
// records_live index.
const scanLiveSQL = `
SELECT ` + decayColumns + ` FROM records
WHERE status IN ('active', 'contested') AND (tenant_id, id) > ($1, $2)
ORDER BY tenant_id, id
LIMIT $3`

const scanTenantLiveSQL = `
SELECT ` + decayColumns + ` FROM records
WHERE tenant_id = $1 AND status IN ('active', 'contested') AND id > $2
ORDER BY tenant_id, id
LIMIT $3`

// ScanLive returns up to limit records of the active set after key after,
// in key order: of every tenant, or of one when tenant is not empty (then
// only after.ID counts). An empty page ends the walk.
func ScanLive(ctx context.Context, db pg.DBTX, tenant string, after Key, limit int) ([]DecayRow, error) {
	var rows pgx.Rows
	var err error
	if tenant == "" {
		rows, err = db.Query(ctx, scanLiveSQL, after.Tenant, after.ID, limit)
	} else {
		rows, err = db.Query(ctx, scanTenantLiveSQL, tenant, after.ID, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("scan live records: %w", err)
	}
	defer rows.Close()
	// Sized once: a batch is large, and growing a slice of records copies
	// it over and over.
	out := make([]DecayRow, 0, limit)
	for rows.Next() {
		out = append(out, DecayRow{})
		if err := scanDecayRow(rows, &out[len(out)-1]); err != nil {
			return nil, fmt.Errorf("scan live records: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("scan live records: %w", err)
	}
	return out, nil
}

func scanDecayRow(row pgx.Row, d *DecayRow) error {
	var (
		r      = &d.Record
		maxAge *int64
		points []byte
	)
	err := row.Scan(&d.Tenant, (*[16]byte)(&r.ID), &r.Type, &r.Status, &r.Version, &r.Salience, &r.Lifecycle.Decay.Curve,
		&r.Lifecycle.Decay.HalfLifeSeconds, &r.Lifecycle.Decay.MinSalience, &maxAge,
		&r.Lifecycle.Decay.ReinforcementGain, &points, &r.Lifecycle.LastReinforcedAt, &r.Lifecycle.Pinned,
		&r.Lifecycle.DeletionPolicy, &r.Lifecycle.ExpiresAt, &r.CreatedAt, &r.UpdatedAt, &d.Inherited)
	if err != nil {
		return err
	}
	if maxAge != nil {
		r.Lifecycle.Decay.MaxAgeSeconds = *maxAge
	}
	if len(points) > 0 {
		if err := json.Unmarshal(points, &r.Lifecycle.Decay.Points); err != nil {
			return fmt.Errorf("decode decay points: %w", err)
		}
	}
	r.Lifecycle.LastReinforcedAt = r.Lifecycle.LastReinforcedAt.UTC()
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	return nil
}

// Stamp is a type's configured decay profile, to be written on a record
// that inherits it.
type Stamp struct {
	Key   Key
	Decay memory.Decay
}

const stampProfilesSQL = `
UPDATE records r SET decay_curve = u.curve, decay_half_life_seconds = u.half_life, decay_floor = u.floor,
	decay_max_age_seconds = u.max_age, decay_points = u.points::jsonb
FROM unnest($1::text[], $2::uuid[], $3::text[], $4::int8[], $5::float8[], $6::int8[], $7::text[])
	AS u(tenant_id, id, curve, half_life, floor, max_age, points)
WHERE r.tenant_id = u.tenant_id AND r.id = u.id AND r.decay_inherited`

// lockKeysSQL locks records in key order. Every batch that writes records
// takes its locks this way first, as feedback does (in id order, within a
// tenant), so that two batches over the same records cannot deadlock.
const lockKeysSQL = `
SELECT 1 FROM records r
JOIN unnest($1::text[], $2::uuid[]) AS u(tenant_id, id) ON r.tenant_id = u.tenant_id AND r.id = u.id
ORDER BY r.tenant_id, r.id
FOR UPDATE OF r`

func lockKeys(ctx context.Context, tx pgx.Tx, tenants []string, ids [][16]byte) error {
	if _, err := tx.Exec(ctx, lockKeysSQL, tenants, ids); err != nil {
		return fmt.Errorf("lock records: %w", err)
	}
	return nil
}

// StampProfiles writes each stamp's profile on its record, if the record
// still inherits its type's profile. The decay profile is not content: the
// record keeps its version, as it does when its salience changes.
func StampProfiles(ctx context.Context, db pg.DBTX, stamps []Stamp) error {
	if len(stamps) == 0 {
		return nil
	}
	n := len(stamps)
	tenants, ids, curves := make([]string, n), make([][16]byte, n), make([]string, n)
	halfLives, floors := make([]int64, n), make([]float64, n)
	maxAges, points := make([]*int64, n), make([]*string, n)
	for i, st := range stamps {
		d := st.Decay
		tenants[i], ids[i], curves[i], halfLives[i], floors[i] = st.Key.Tenant, [16]byte(st.Key.ID), string(d.Curve), d.HalfLifeSeconds, d.MinSalience
		if d.MaxAgeSeconds > 0 {
			maxAges[i] = &d.MaxAgeSeconds
		}
		if len(d.Points) > 0 {
			b, err := json.Marshal(d.Points)
			if err != nil {
				return fmt.Errorf("encode decay points: %w", err)
			}
			p := string(b)
			points[i] = &p
		}
	}
	return pg.WithTx(ctx, db, func(ctx context.Context, tx pgx.Tx) error {
		if err := lockKeys(ctx, tx, tenants, ids); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, stampProfilesSQL, tenants, ids, curves, halfLives, floors, maxAges, points); err != nil {
			return fmt.Errorf("stamp decay profiles: %w", err)
		}
		return nil
	})
}

// Salience is a live record's salience at some time, as the decay sweep
// materialises it.
type Salience struct {
	Key   Key
	Type  memory.Type
	Value float64
}

// materialiseSQL writes the salience of records still live. A record that
// leaves the active set loses its row by trigger (records_unmaterialise).
const materialiseSQL = `
INSERT INTO record_salience (tenant_id, record_id, type, salience, computed_at)
SELECT v.tenant_id, v.record_id, v.type, v.salience, $5
FROM unnest($1::text[], $2::uuid[], $3::text[], $4::float8[]) AS v(tenant_id, record_id, type, salience)
JOIN records r ON r.tenant_id = v.tenant_id AND r.id = v.record_id AND r.status IN ('active', 'contested')
ON CONFLICT (tenant_id, record_id) DO UPDATE SET salience = excluded.salience, computed_at = excluded.computed_at`

// MaterialiseSalience records the salience of live records as of at.
func MaterialiseSalience(ctx context.Context, db pg.DBTX, values []Salience, at time.Time) error {
	if len(values) == 0 {
		return nil
	}
	n := len(values)
	tenants, ids, types, sal := make([]string, n), make([][16]byte, n), make([]string, n), make([]float64, n)
	for i, v := range values {
		tenants[i], ids[i], types[i], sal[i] = v.Key.Tenant, [16]byte(v.Key.ID), string(v.Type), v.Value
	}
	if _, err := db.Exec(ctx, materialiseSQL, tenants, ids, types, sal, at); err != nil {
		return fmt.Errorf("materialise salience: %w", err)
	}
	return nil
}

const anyMaterialisedSQL = `SELECT EXISTS (SELECT 1 FROM record_salience)`

// AnyMaterialised reports whether record_salience has any row: it is empty
// when no sweep has run, and after a crash (it is unlogged).
func AnyMaterialised(ctx context.Context, db pg.DBTX) (bool, error) {
	var ok bool
	if err := db.QueryRow(ctx, anyMaterialisedSQL).Scan(&ok); err != nil {
		return false, fmt.Errorf("read materialised salience: %w", err)
	}
	return ok, nil
}

// Expiry is a record the decay sweep found past its time, as it read it:
// the expiry applies only if the record has not changed since.
type Expiry struct {
	Key              Key
	Version          int
	Salience         float64
	LastReinforcedAt time.Time
	// Rationale says why, for the audit entry; it names no content.
	Rationale string
}

// expireSQL expires a batch in one statement: each record still as the
// sweep read it, still live and still prunable becomes expired as its next
// version (its snapshot written by trigger), with an audit entry. A
// semantic payload loses its revision status, as [Store.Delete] does.
const expireSQL = `
WITH c AS (
	SELECT * FROM unnest($1::text[], $2::uuid[], $3::int[], $4::float8[], $5::timestamptz[], $6::text[])
		AS c(tenant_id, id, version, salience, last_reinforced_at, rationale)
), expired AS (
	UPDATE records r SET status = 'expired', version = r.version + 1, updated_at = $7,
		payload = CASE
			WHEN r.type <> 'semantic' OR NOT r.payload ? 'revision' THEN r.payload
			WHEN (r.payload -> 'revision') - 'status' = '{}'::jsonb THEN r.payload - 'revision'
			ELSE jsonb_set(r.payload, '{revision}', (r.payload -> 'revision') - 'status')
		END
	FROM c
	WHERE r.tenant_id = c.tenant_id AND r.id = c.id AND r.version = c.version
		AND r.salience = c.salience AND r.last_reinforced_at = c.last_reinforced_at
		AND r.status IN ('active', 'contested') AND NOT r.pinned AND r.deletion_policy = 'auto_prune'
	RETURNING r.tenant_id, r.id, r.version, c.rationale
)
INSERT INTO audit_log (tenant_id, record_id, action, actor, version, rationale)
SELECT tenant_id, id, 'expire', $8, version, rationale FROM expired
RETURNING tenant_id, record_id`

// Expire soft-deletes records whose time has passed (substrate RFC §11,
// §15B): each becomes expired, a revision with an audit entry, out of
// every read of the active set, restorable (revise.Tx.Restore) until it is
// purged. Pinned records and records whose deletion policy is not
// auto_prune are never expired here; a record that changed since it was
// read is skipped. It returns the records it expired.
func Expire(ctx context.Context, db pg.DBTX, batch []Expiry, actor string, at time.Time) ([]Key, error) {
	if len(batch) == 0 {
		return nil, nil
	}
	n := len(batch)
	tenants, ids, versions := make([]string, n), make([][16]byte, n), make([]int32, n)
	sal, reinforced, why := make([]float64, n), make([]time.Time, n), make([]string, n)
	for i, e := range batch {
		tenants[i], ids[i], versions[i] = e.Key.Tenant, [16]byte(e.Key.ID), int32(e.Version)
		sal[i], reinforced[i], why[i] = e.Salience, e.LastReinforcedAt, e.Rationale
	}
	var out []Key
	err := pg.WithTx(ctx, db, func(ctx context.Context, tx pgx.Tx) error {
		if err := lockKeys(ctx, tx, tenants, ids); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, expireSQL, tenants, ids, versions, sal, reinforced, why, at.UTC(), actor)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Key, error) {
			var k Key
			return k, row.Scan(&k.Tenant, (*[16]byte)(&k.ID))
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("expire records: %w", err)
	}
	return out, nil
}

// purgeExpiredSQL hard-deletes a batch of records that expired before $1,
// oldest first, with their versions, relations and feedback (by cascade),
// leaving an audit entry for each that names no content. It returns the artifact references of purged episodes.
const purgeExpiredSQL = `
WITH doomed AS (
	SELECT tenant_id, id FROM records
	WHERE status = 'expired' AND expired_at < $1
	ORDER BY expired_at
	LIMIT $2
	FOR UPDATE SKIP LOCKED
), gone AS (
	DELETE FROM records r USING doomed d
	WHERE r.tenant_id = d.tenant_id AND r.id = d.id
	RETURNING r.tenant_id, r.id, r.version, CASE WHEN r.type = 'episodic' THEN r.payload -> 'artifacts' END AS artifacts
), audited AS (
	INSERT INTO audit_log (tenant_id, record_id, action, actor, version, rationale)
	SELECT tenant_id, id, 'purge', $3, version + 1, $4 FROM gone
)
SELECT tenant_id, artifacts FROM gone`

// deleteOrphanArtifactsSQL deletes the named artifacts that no remaining
// episode references. Finding the references reads every episode once (no
// index covers payloads, so that payload changes stay cheap); it runs only
// for a batch that purged episodes with artifacts.
const deleteOrphanArtifactsSQL = `
WITH c AS (
	SELECT DISTINCT * FROM unnest($1::text[], $2::text[]) AS c(tenant_id, sha)
), referenced AS (
	SELECT DISTINCT r.tenant_id, x.sha
	FROM records r, jsonb_array_elements_text(r.payload -> 'artifacts') AS x(sha)
	WHERE r.type = 'episodic' AND jsonb_typeof(r.payload -> 'artifacts') = 'array' AND x.sha = ANY($2)
)
DELETE FROM artifacts a
USING c
WHERE a.tenant_id = c.tenant_id AND a.sha256 = decode(c.sha, 'hex')
	AND NOT EXISTS (SELECT 1 FROM referenced f WHERE f.tenant_id = c.tenant_id AND f.sha = c.sha)`

// PurgeResult counts what a purge batch deleted.
type PurgeResult struct {
	Records   int
	Artifacts int
}

// PurgeExpired hard-deletes up to limit records that expired before
// cutoff, the second phase of two-phase collection (governance chapter
// §12.7.5), and the artifacts of purged episodes that no remaining record
// references. Each purged record leaves an audit entry naming its id only.
// Records an operator deleted are not purged here: revise.Tx.Purge erases
// them one at a time.
func PurgeExpired(ctx context.Context, db pg.DBTX, cutoff time.Time, limit int, actor string) (PurgeResult, error) {
	rationale := "expired before " + cutoff.UTC().Format(time.RFC3339) + " and past the purge grace period"
	res, err := purge(ctx, db, purgeExpiredSQL, cutoff.UTC(), limit, actor, rationale)
	if err != nil {
		return res, fmt.Errorf("purge records: %w", err)
	}
	return res, nil
}

// purge runs a purging statement — one that hard-deletes records and
// returns, for each, its tenant and the artifact digests it referenced —
// with purging allowed for its transaction, then deletes the artifacts no
// remaining record references.
func purge(ctx context.Context, db pg.DBTX, sql string, args ...any) (PurgeResult, error) {
	var res PurgeResult
	err := pg.WithTx(ctx, db, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL engram.purge = 'on'"); err != nil {
			return fmt.Errorf("allow purge: %w", err)
		}
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		var tenants, shas []string
		for rows.Next() {
			var tenant string
			var refs []string
			if err := rows.Scan(&tenant, &refs); err != nil {
				rows.Close()
				return err
			}
			res.Records++
			for _, ref := range refs {
				if sum, err := hex.DecodeString(ref); err == nil && len(sum) == 32 {
					tenants, shas = append(tenants, tenant), append(shas, hex.EncodeToString(sum))
				}
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(shas) == 0 {
			return nil
		}
		tag, err := tx.Exec(ctx, deleteOrphanArtifactsSQL, tenants, shas)
		if err != nil {
			return fmt.Errorf("artifacts: %w", err)
		}
		res.Artifacts = int(tag.RowsAffected())
		return nil
	})
	return res, err
}
