package revise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

// Create validates rec, fills in what it leaves out (id, times, status,
// lifecycle defaults for its type) and stores it as version 1.
func (w *Writer) Create(ctx context.Context, tenant string, rec memory.Record, ch Change) (memory.Record, error) {
	err := w.InTx(ctx, func(ctx context.Context, tx *Tx) error {
		var err error
		rec, err = tx.Create(ctx, tenant, rec, ch)
		return err
	})
	return rec, err
}

// Create is [Writer.Create] in the transaction.
func (t *Tx) Create(ctx context.Context, tenant string, rec memory.Record, ch Change) (memory.Record, error) {
	if err := checkChange(ch); err != nil {
		return memory.Record{}, err
	}
	return t.create(ctx, tenant, rec, memory.Active, "", ch)
}

// create stores a new record in the status it starts in; pointer prefixes
// the pointers of its validation errors.
func (t *Tx) create(ctx context.Context, tenant string, rec memory.Record, status memory.Status, pointer string, ch Change) (memory.Record, error) {
	inherited := rec.Lifecycle.Decay.Curve == "" && rec.Lifecycle.Decay.HalfLifeSeconds == 0
	if err := t.w.prepare(&rec, status, pointer); err != nil {
		return memory.Record{}, err
	}
	if err := t.checkRelations(ctx, tenant, rec.Relations, pointer); err != nil {
		return memory.Record{}, err
	}
	if err := store.InsertRecord(ctx, t.tx, tenant, rec, inherited); err != nil {
		return memory.Record{}, written(tenant, rec, err)
	}
	for _, rel := range rec.Relations {
		if err := store.AddRelation(ctx, t.tx, tenant, rec.ID, rel); err != nil {
			return memory.Record{}, err
		}
	}
	if err := t.audit(ctx, tenant, rec, ActionCreate, ch); err != nil {
		return memory.Record{}, err
	}
	return rec, nil
}

// prepare fills in a new record's defaults and validates it against the
// canonical schemas. Status and version are the write path's to set.
func (w *Writer) prepare(rec *memory.Record, status memory.Status, pointer string) error {
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

	now := w.clock()
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
	decay, policy := w.cfg.Defaults(rec.Type)
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
	return w.validate(*rec, pointer)
}

// validate checks a complete record against the canonical schemas and the
// payload size limit.
func (w *Writer) validate(rec memory.Record, pointer string) error {
	if len(rec.Payload) > w.cfg.MaxPayloadBytes {
		return &TooLargeError{Pointer: pointer + "/payload", Size: len(rec.Payload), Limit: w.cfg.MaxPayloadBytes}
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

// checkRelations makes sure every relation of a new record points at a
// record of the same tenant.
func (t *Tx) checkRelations(ctx context.Context, tenant string, rels []memory.Relation, pointer string) error {
	if len(rels) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(rels))
	for i, r := range rels {
		ids[i] = r.TargetID
	}
	found, err := store.ExistingIDs(ctx, t.tx, tenant, ids)
	if err != nil {
		return fmt.Errorf("check relation targets: %w", err)
	}
	var bad []schemas.Violation
	for i, id := range ids {
		if !slices.Contains(found, id) {
			bad = append(bad, schemas.Violation{Pointer: fmt.Sprintf("%s/relations/%d/target_id", pointer, i), Message: "no such record"})
		}
	}
	if len(bad) > 0 {
		return &schemas.ValidationError{Violations: bad}
	}
	return nil
}

// checkDecayPoints holds a custom curve's points to the rules the canonical
// schema cannot state: ages strictly increasing and salience never rising
// (substrate RFC §15A.7: decay profiles are monotonic), and a point at age
// zero keeps all of the salience, so that a record read the moment it is
// reinforced has the salience it was given.
func checkDecayPoints(points []memory.DecayPoint, pointer string) []schemas.Violation {
	var bad []schemas.Violation
	for i, p := range points {
		at := fmt.Sprintf("%s/%d", pointer, i)
		switch {
		case i > 0 && p.AgeSeconds <= points[i-1].AgeSeconds:
			bad = append(bad, schemas.Violation{Pointer: at + "/age_seconds", Message: "must be greater than the previous point's: points are in order of age"})
		case i > 0 && p.Salience > points[i-1].Salience:
			bad = append(bad, schemas.Violation{Pointer: at + "/salience", Message: "must not be above the previous point's: decay never raises salience"})
		case p.AgeSeconds == 0 && p.Salience != 1:
			bad = append(bad, schemas.Violation{Pointer: at + "/salience", Message: "must be 1 at age 0: a curve starts from the whole salience"})
		}
	}
	return bad
}

// audit writes the audit entry of an operation on rec at its version.
func (t *Tx) audit(ctx context.Context, tenant string, rec memory.Record, action string, ch Change) error {
	return store.InsertAudit(ctx, t.tx, tenant, store.AuditRow{
		RecordID: rec.ID, Version: rec.Version, Action: action, Actor: ch.Actor, Rationale: ch.Rationale, Evidence: ch.Evidence,
	})
}

// revise writes rec as its next version.
func (t *Tx) revise(ctx context.Context, tenant string, rec *memory.Record) error {
	rec.Version++
	rec.UpdatedAt = t.w.clock()
	return written(tenant, *rec, store.UpdateRecord(ctx, t.tx, tenant, *rec))
}

// Get reads a record in the transaction, whatever its status.
func (t *Tx) Get(ctx context.Context, tenant string, id uuid.UUID) (memory.Record, error) {
	return store.Get(ctx, t.tx, tenant, id)
}
