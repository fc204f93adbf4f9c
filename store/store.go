package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/schemas"
)

// DefaultMaxPayloadBytes is the default limit on a record's encoded payload.
const DefaultMaxPayloadBytes = 64 << 10

// Store is the authoritative store of memory records (substrate RFC §15.1).
// Every method takes the tenant explicitly and no statement crosses tenants.
// Every revision is one transaction: it is visible whole or not at all
// (§15.7), and each one is audited.
type Store struct {
	db              pg.DBTX
	maxPayloadBytes int
	now             func() time.Time
	defaults        func(memory.Type) (memory.Decay, memory.DeletionPolicy)
}

// Option configures a [Store].
type Option func(*Store)

// WithMaxPayloadBytes sets the limit on a record's encoded payload.
func WithMaxPayloadBytes(n int) Option { return func(s *Store) { s.maxPayloadBytes = n } }

// WithClock sets the store's clock, for tests of time-dependent behaviour.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithLifecycleDefaults sets the decay profile and deletion policy a new
// record of a type gets when it names none: the configured profiles of the
// decay package. Without it, [memory.DefaultDecay] and auto_prune.
func WithLifecycleDefaults(f func(memory.Type) (memory.Decay, memory.DeletionPolicy)) Option {
	return func(s *Store) { s.defaults = f }
}

// New returns a store over db: a pool, or a transaction (revisions then run
// in savepoints).
func New(db pg.DBTX, opts ...Option) *Store {
	s := &Store{db: db, maxPayloadBytes: DefaultMaxPayloadBytes, now: time.Now, defaults: builtinLifecycle}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Change says who makes a revision and why; it becomes the audit entry
// (substrate RFC §15A.8: every revision is auditable and traceable to
// evidence).
type Change struct {
	Actor     string          `json:"actor"`
	Rationale string          `json:"rationale,omitempty"`
	Evidence  []memory.Source `json:"evidence,omitempty"`
}

// clock returns the store's time, at the database's microsecond precision.
func (s *Store) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

const ensureTenantSQL = `INSERT INTO tenants (id) VALUES ($1) ON CONFLICT (id) DO NOTHING`

// EnsureTenant registers a tenant id; every row belongs to one.
func (s *Store) EnsureTenant(ctx context.Context, tenant string) error {
	if _, err := s.db.Exec(ctx, ensureTenantSQL, tenant); err != nil {
		return fmt.Errorf("ensure tenant: %w", err)
	}
	return nil
}

// Create validates rec, fills in what it leaves out (id, times, status,
// lifecycle defaults for its type) and stores it as version 1.
func (s *Store) Create(ctx context.Context, tenant string, rec memory.Record, ch Change) (memory.Record, error) {
	if err := checkChange(ch); err != nil {
		return memory.Record{}, err
	}
	err := pg.WithTx(ctx, s.db, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		rec, err = s.create(ctx, tx, tenant, rec, memory.Active, "", ch)
		return err
	})
	return rec, s.nameFact(ctx, tenant, err)
}

// create is Create inside a transaction, with the status the new record
// starts in and a prefix for the pointers of its validation errors.
func (s *Store) create(ctx context.Context, tx pgx.Tx, tenant string, rec memory.Record, status memory.Status, pointer string, ch Change) (memory.Record, error) {
	inherited := rec.Lifecycle.Decay.Curve == "" && rec.Lifecycle.Decay.HalfLifeSeconds == 0
	if err := s.prepare(&rec, status, pointer); err != nil {
		return memory.Record{}, err
	}
	if err := s.checkRelations(ctx, tx, tenant, rec.Relations, pointer); err != nil {
		return memory.Record{}, err
	}
	if err := s.insert(ctx, tx, tenant, rec, inherited); err != nil {
		return memory.Record{}, err
	}
	for _, rel := range rec.Relations {
		if err := addRelation(ctx, tx, tenant, rec.ID, rel); err != nil {
			return memory.Record{}, err
		}
	}
	if err := audit(ctx, tx, tenant, rec, ActionCreate, ch); err != nil {
		return memory.Record{}, err
	}
	return rec, nil
}

// prepare fills in a new record's defaults and validates it against the
// canonical schemas. Status and version are the store's to set.
func (s *Store) prepare(rec *memory.Record, status memory.Status, pointer string) error {
	var bad []schemas.Violation
	if rec.Status != "" && rec.Status != memory.Active {
		bad = append(bad, schemas.Violation{Pointer: pointer + "/status", Message: "is set by the store: omit it"})
	}
	if rec.Version != 0 && rec.Version != 1 {
		bad = append(bad, schemas.Violation{Pointer: pointer + "/version", Message: "is set by the store: omit it"})
	}
	for i, rel := range rec.Relations {
		if rel.Predicate == memory.Supersedes || rel.Predicate == memory.ForkedFrom || rel.Predicate == memory.MergedInto {
			bad = append(bad, schemas.Violation{
				Pointer: fmt.Sprintf("%s/relations/%d/predicate", pointer, i),
				Message: fmt.Sprintf("%q is written only by its revision operation", rel.Predicate),
			})
		}
	}
	bad = append(bad, checkDecayPoints(rec.Lifecycle.Decay.Points, pointer+"/lifecycle/decay/points")...)
	if len(bad) > 0 {
		return &schemas.ValidationError{Violations: bad}
	}

	now := s.clock()
	if rec.ID == uuid.Nil {
		id, err := uuid.NewV7()
		if err != nil {
			return fmt.Errorf("new record id: %w", err)
		}
		rec.ID = id
	}
	rec.Status, rec.Version = status, 1
	if rec.Sensitivity == "" {
		rec.Sensitivity = memory.DefaultSensitivity
	}
	if rec.Tags == nil {
		rec.Tags = []string{}
	}
	if rec.Visibility == "" {
		rec.Visibility = memory.VisibilityTenant
	}
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = now
	}
	rec.CreatedAt = rec.CreatedAt.UTC().Truncate(time.Microsecond)
	rec.UpdatedAt = now
	decay, policy := s.defaults(rec.Type)
	if rec.Lifecycle.Decay.Curve == "" && rec.Lifecycle.Decay.HalfLifeSeconds == 0 {
		rec.Lifecycle.Decay = decay
	}
	if rec.Lifecycle.LastReinforcedAt.IsZero() {
		rec.Lifecycle.LastReinforcedAt = now
	}
	rec.Lifecycle.LastReinforcedAt = rec.Lifecycle.LastReinforcedAt.UTC().Truncate(time.Microsecond)
	if rec.Lifecycle.DeletionPolicy == "" {
		rec.Lifecycle.DeletionPolicy = policy
	}
	if rec.Provenance.Sources == nil {
		rec.Provenance.Sources = []memory.Source{}
	}
	if rec.Type == memory.Semantic {
		p, err := setRevision(rec.Payload, func(r *memory.Revision) { r.Status = revisionStatus(status) })
		if err != nil {
			return err
		}
		rec.Payload = p
	}
	return s.validate(*rec, pointer)
}

// validate checks a complete record against the canonical schemas and the
// payload size limit.
func (s *Store) validate(rec memory.Record, pointer string) error {
	if len(rec.Payload) > s.maxPayloadBytes {
		return &TooLargeError{Pointer: pointer + "/payload", Size: len(rec.Payload), Limit: s.maxPayloadBytes}
	}
	doc, err := json.Marshal(rec)
	if err != nil {
		return &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: pointer + "/payload", Message: "is not valid JSON"}}}
	}
	if err := schemas.ValidateRecord(doc); err != nil {
		var ve *schemas.ValidationError
		if errors.As(err, &ve) && pointer != "" {
			for i := range ve.Violations {
				ve.Violations[i].Pointer = pointer + ve.Violations[i].Pointer
			}
		}
		return err
	}
	return nil
}

// sourceKinds are the kinds of evidence a provenance source or an audit
// entry may cite (§15A.4, with the struct variant's human).
var sourceKinds = []string{"event", "artifact", "tool_call", "observation", "outcome", "human"}

func checkChange(ch Change) error {
	if ch.Actor == "" {
		return errors.New("change has no actor")
	}
	var bad []schemas.Violation
	for i, e := range ch.Evidence {
		if !slices.Contains(sourceKinds, e.Kind) {
			bad = append(bad, schemas.Violation{Pointer: fmt.Sprintf("/evidence/%d/kind", i), Message: "must be one of " + strings.Join(sourceKinds, ", ")})
		}
		if e.Ref == "" {
			bad = append(bad, schemas.Violation{Pointer: fmt.Sprintf("/evidence/%d/ref", i), Message: "is required"})
		}
	}
	if len(bad) > 0 {
		return &schemas.ValidationError{Violations: bad}
	}
	return nil
}

// recordColumns are the columns a record is read from, in [scanRecord]'s order.
// Versions recorded before a column existed have it NULL: the coalesces
// give them its default.
const recordColumns = `id, type, status, version, sensitivity, confidence, salience, scope, tags,
	decay_curve, decay_half_life_seconds, decay_floor, decay_max_age_seconds, decay_reinforcement_gain,
	decay_points, last_reinforced_at, pinned, deletion_policy, expires_at, provenance, payload,
	created_at, updated_at, coalesce(visibility, 'tenant'), coalesce(agent_id, ''), coalesce(thread_id, '')`

// scanRecord reads a record from row; prefix are destinations for columns
// the row has before the record's.
func scanRecord(row pgx.Row, prefix ...any) (memory.Record, error) {
	var (
		r      memory.Record
		maxAge *int64
		points []byte
	)
	err := row.Scan(append(prefix, &r.ID, &r.Type, &r.Status, &r.Version, &r.Sensitivity, &r.Confidence, &r.Salience,
		&r.Scope, &r.Tags, &r.Lifecycle.Decay.Curve, &r.Lifecycle.Decay.HalfLifeSeconds,
		&r.Lifecycle.Decay.MinSalience, &maxAge, &r.Lifecycle.Decay.ReinforcementGain, &points,
		&r.Lifecycle.LastReinforcedAt, &r.Lifecycle.Pinned, &r.Lifecycle.DeletionPolicy,
		&r.Lifecycle.ExpiresAt, &r.Provenance, &r.Payload, &r.CreatedAt, &r.UpdatedAt,
		&r.Visibility, &r.AgentID, &r.ThreadID)...)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return r, ErrNotFound
		}
		return r, fmt.Errorf("scan record: %w", err)
	}
	if maxAge != nil {
		r.Lifecycle.Decay.MaxAgeSeconds = *maxAge
	}
	if len(points) > 0 {
		if err := json.Unmarshal(points, &r.Lifecycle.Decay.Points); err != nil {
			return r, fmt.Errorf("decode decay points: %w", err)
		}
	}
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	r.Lifecycle.LastReinforcedAt = r.Lifecycle.LastReinforcedAt.UTC()
	return r, nil
}

// recordArgs are a record's column values in the order of insertRecordSQL
// and updateRecordSQL.
func recordArgs(tenant string, r memory.Record) []any {
	d := r.Lifecycle.Decay
	var maxAge *int64
	if d.MaxAgeSeconds > 0 {
		maxAge = &d.MaxAgeSeconds
	}
	var points any
	if len(d.Points) > 0 {
		points = d.Points
	}
	var deletedAt *time.Time
	if r.Status == memory.Deleted {
		deletedAt = &r.UpdatedAt
	}
	return []any{
		tenant, r.ID, r.Type, r.Status, r.Version, r.Sensitivity, r.Confidence, r.Salience, r.Scope, r.Tags,
		d.Curve, d.HalfLifeSeconds, d.MinSalience, maxAge, d.ReinforcementGain, points,
		r.Lifecycle.LastReinforcedAt, r.Lifecycle.Pinned, r.Lifecycle.DeletionPolicy, r.Lifecycle.ExpiresAt,
		r.Provenance, r.Payload, r.CreatedAt, r.UpdatedAt, deletedAt, r.Visibility, r.AgentID, r.ThreadID,
	}
}

const insertRecordSQL = `
INSERT INTO records (tenant_id, id, type, status, version, sensitivity, confidence, salience, scope, tags,
	decay_curve, decay_half_life_seconds, decay_floor, decay_max_age_seconds, decay_reinforcement_gain,
	decay_points, last_reinforced_at, pinned, deletion_policy, expires_at, provenance, payload,
	created_at, updated_at, deleted_at, visibility, agent_id, thread_id, decay_inherited)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
	$21, $22, $23, $24, $25, $26, $27, $28, $29)`

// insert writes a new record. inherited says it named no decay profile, so
// it follows its type's configured one (see the decay package).
func (s *Store) insert(ctx context.Context, tx pgx.Tx, tenant string, rec memory.Record, inherited bool) error {
	if _, err := tx.Exec(ctx, insertRecordSQL, append(recordArgs(tenant, rec), inherited)...); err != nil {
		return s.writeError(ctx, tenant, rec, err)
	}
	return nil
}

// updateRecordSQL writes every mutable column of a record, guarded by its
// previous version: a record that changed underneath is never overwritten.
const updateRecordSQL = `
UPDATE records SET (status, version, sensitivity, confidence, salience, scope, tags,
	decay_curve, decay_half_life_seconds, decay_floor, decay_max_age_seconds, decay_reinforcement_gain,
	decay_points, last_reinforced_at, pinned, deletion_policy, expires_at, provenance, payload,
	created_at, updated_at, deleted_at, visibility, agent_id, thread_id)
	= ($4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25,
	$26, $27, $28)
WHERE tenant_id = $1 AND id = $2 AND type = $3 AND version = $5 - 1`

// revise writes rec as its next version.
func (s *Store) revise(ctx context.Context, tx pgx.Tx, tenant string, rec *memory.Record) error {
	rec.Version++
	rec.UpdatedAt = s.clock()
	tag, err := tx.Exec(ctx, updateRecordSQL, recordArgs(tenant, *rec)...)
	if err != nil {
		return s.writeError(ctx, tenant, *rec, err)
	}
	if tag.RowsAffected() == 0 {
		return conflict(CodeVersionConflict, []uuid.UUID{rec.ID}, "record %s changed underneath", rec.ID)
	}
	return nil
}

const findActiveFactSQL = `
SELECT id FROM records
WHERE tenant_id = $1 AND type = 'semantic' AND status = 'active' AND scope = $2
	AND subject = $3::jsonb ->> 'subject' AND predicate = $3::jsonb ->> 'predicate'
	AND validity_key = COALESCE($3::jsonb -> 'validity', '{}'::jsonb) - 'mode'`

// writeError turns a failed insert or update of rec into the store's typed
// errors.
func (s *Store) writeError(ctx context.Context, tenant string, rec memory.Record, err error) error {
	code, constraint := pg.Code(err)
	switch {
	case code == pg.UniqueViolation && constraint == "records_one_active_fact":
		var p memory.SemanticPayload
		_ = json.Unmarshal(rec.Payload, &p)
		ce := conflict(CodeActiveFactExists, nil,
			"an active fact %q %q with the same scope and conditions exists: supersede, fork or contest it", p.Subject, p.Predicate)
		ce.fact = &rec
		return ce
	case code == pg.UniqueViolation && constraint == "records_pkey":
		return conflict(CodeExists, []uuid.UUID{rec.ID}, "record %s already exists", rec.ID)
	case code == pg.RestrictViolation:
		return conflict(CodeImmutable, []uuid.UUID{rec.ID}, "%s", pgMessage(err))
	case code == pg.ForeignKeyViolation && constraint == "records_tenant_id_fkey":
		return fmt.Errorf("unknown tenant %q: %w", tenant, err)
	}
	return fmt.Errorf("write record: %w", err)
}

// nameFact names the active fact a [CodeActiveFactExists] conflict ran
// into. It runs after the failed transaction has ended: asking inside it is
// impossible, and asking beside it would hold two connections at once, which
// can exhaust the pool under contention.
func (s *Store) nameFact(ctx context.Context, tenant string, err error) error {
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.fact == nil {
		return err
	}
	var other uuid.UUID
	if s.db.QueryRow(ctx, findActiveFactSQL, tenant, ce.fact.Scope, ce.fact.Payload).Scan(&other) == nil {
		ce.RecordIDs = []uuid.UUID{other}
	}
	ce.fact = nil
	return err
}

// lock reads a record for update: concurrent revisions of it queue here.
func lock(ctx context.Context, tx pgx.Tx, tenant string, id uuid.UUID) (memory.Record, error) {
	return scanRecord(tx.QueryRow(ctx, `SELECT `+recordColumns+` FROM records WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenant, id))
}

// lockMany locks records in id order, so two revisions over overlapping sets
// cannot deadlock, and returns them in the order of ids.
func lockMany(ctx context.Context, tx pgx.Tx, tenant string, ids []uuid.UUID) ([]memory.Record, error) {
	sorted := slices.Clone(ids)
	slices.SortFunc(sorted, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	byID := make(map[uuid.UUID]memory.Record, len(ids))
	for _, id := range sorted {
		r, err := lock(ctx, tx, tenant, id)
		if err != nil {
			return nil, fmt.Errorf("record %s: %w", id, err)
		}
		byID[id] = r
	}
	out := make([]memory.Record, len(ids))
	for i, id := range ids {
		out[i] = byID[id]
	}
	return out, nil
}

const getRecordSQL = `SELECT ` + recordColumns + ` FROM records WHERE tenant_id = $1 AND id = $2`

// Get returns a record, whatever its status, with its outgoing relations.
func (s *Store) Get(ctx context.Context, tenant string, id uuid.UUID) (memory.Record, error) {
	r, err := scanRecord(s.db.QueryRow(ctx, getRecordSQL, tenant, id))
	if err != nil {
		return r, err
	}
	recs := []memory.Record{r}
	if err := s.complete(ctx, tenant, recs, nil); err != nil {
		return r, err
	}
	return recs[0], nil
}
