package revise

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

// Update replaces the payload (and, when tags is non-nil, the tags) of a
// working-memory record, the only type that may be edited freely (substrate
// RFC §6, §15A.3). version must be the version the caller read: a record
// that changed since is a [CodeVersionConflict], never a lost update.
func (t *Tx) Update(ctx context.Context, tenant string, id uuid.UUID, version int, payload json.RawMessage, tags []string, ch Change) (memory.Record, error) {
	if err := checkChange(ch); err != nil {
		return memory.Record{}, err
	}
	if version < 1 {
		return memory.Record{}, &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/version", Message: "is required: the version you read"}}}
	}
	rec, err := t.lockLive(ctx, tenant, id, version)
	if err != nil {
		return memory.Record{}, err
	}
	if rec.Type != memory.Working {
		return memory.Record{}, conflict(CodeNotAllowed, []uuid.UUID{id}, "only working memory is updated in place; %s is revised by supersede, fork, contest or retract", rec.Type.ARecord())
	}
	rec.Payload = payload
	if tags != nil {
		rec.Tags = tags
	}
	if err := t.w.validate(rec, ""); err != nil {
		return memory.Record{}, err
	}
	if err := t.revise(ctx, tenant, &rec); err != nil {
		return memory.Record{}, err
	}
	if err := t.audit(ctx, tenant, rec, ActionUpdate, ch); err != nil {
		return memory.Record{}, err
	}
	return rec, nil
}

// EpisodeAppend is what may be added to an episode: more timeline events,
// tool-graph nodes and artifacts, and an outcome once.
type EpisodeAppend struct {
	Timeline  []memory.TimelineEntry `json:"timeline,omitempty"`
	ToolGraph []map[string]any       `json:"tool_graph,omitempty"`
	Artifacts []string               `json:"artifacts,omitempty"`
	Outcome   string                 `json:"outcome,omitempty"`
}

// AppendEpisode extends an episodic record. Episodes never change otherwise
// (substrate RFC §5); the database refuses any other edit. Timeline and
// tool-graph entries are stored as rows of their own (episode_entries);
// artifacts and the outcome are a revision of the payload.
func (t *Tx) AppendEpisode(ctx context.Context, tenant string, id uuid.UUID, add EpisodeAppend, ch Change) (memory.Record, error) {
	if err := checkChange(ch); err != nil {
		return memory.Record{}, err
	}
	if err := checkTimeline(add.Timeline); err != nil {
		return memory.Record{}, err
	}
	if err := t.appendEpisode(ctx, tenant, id, add, ch); err != nil {
		return memory.Record{}, err
	}
	return t.get(ctx, tenant, id)
}

// appendEpisode writes add to episode id: the artifacts and outcome as a
// revision of its payload, the timeline and tool-graph entries as rows.
func (t *Tx) appendEpisode(ctx context.Context, tenant string, id uuid.UUID, add EpisodeAppend, ch Change) error {
	rec, err := t.lockLive(ctx, tenant, id, 0)
	if err != nil {
		return err
	}
	if rec.Type != memory.Episodic {
		return conflict(CodeNotAllowed, []uuid.UUID{id}, "only episodic records have a timeline to append to")
	}
	// Timeline entries are audited in bulk, not by audit: the leases
	// hold the append here.
	if err := t.checkFence(ctx, tenant, rec, ch); err != nil {
		return err
	}
	if len(add.Artifacts) > 0 || add.Outcome != "" {
		var p map[string]json.RawMessage
		if err := json.Unmarshal(rec.Payload, &p); err != nil {
			return fmt.Errorf("decode episode: %w", err)
		}
		if err := appendJSON(p, "artifacts", add.Artifacts); err != nil {
			return err
		}
		if add.Outcome != "" {
			if p["outcome"] != nil {
				return conflict(CodeImmutable, []uuid.UUID{id}, "episode %s already has its outcome", id)
			}
			p["outcome"], _ = json.Marshal(add.Outcome)
		}
		if rec.Payload, err = json.Marshal(p); err != nil {
			return fmt.Errorf("encode episode: %w", err)
		}
		if err := t.w.validate(rec, ""); err != nil {
			return err
		}
		if err := t.revise(ctx, tenant, &rec); err != nil {
			return err
		}
	}
	a := TimelineAppend{EpisodeID: id, Entries: add.Timeline, ToolGraph: add.ToolGraph}
	if len(a.Entries) == 0 && len(a.ToolGraph) == 0 {
		return t.audit(ctx, tenant, rec, ActionAppend, ch)
	}
	return t.AppendTimelines(ctx, tenant, []TimelineAppend{a}, ch)
}

// checkTimeline refuses timeline entries with a field left out: an episode
// is append-only, so a bad entry could never be taken back.
func checkTimeline(entries []memory.TimelineEntry) error {
	var bad []schemas.Violation
	for i, e := range entries {
		at := fmt.Sprintf("/timeline/%d", i)
		if e.T.IsZero() {
			bad = append(bad, schemas.Violation{Pointer: at + "/t", Message: "is required: when the event happened"})
		}
		if e.EventKind == "" {
			bad = append(bad, schemas.Violation{Pointer: at + "/event_kind", Message: "is required"})
		}
		if e.Ref == "" {
			bad = append(bad, schemas.Violation{Pointer: at + "/ref", Message: "is required: a reference to the event"})
		}
	}
	if len(bad) > 0 {
		return &schemas.ValidationError{Violations: bad}
	}
	return nil
}

// appendJSON appends items to the array at key in p.
func appendJSON[T any](p map[string]json.RawMessage, key string, items []T) error {
	if len(items) == 0 {
		return nil
	}
	var cur []json.RawMessage
	if raw := p[key]; raw != nil {
		if err := json.Unmarshal(raw, &cur); err != nil {
			return fmt.Errorf("decode episode %s: %w", key, err)
		}
	}
	for _, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			return fmt.Errorf("encode episode %s: %w", key, err)
		}
		cur = append(cur, b)
	}
	b, err := json.Marshal(cur)
	p[key] = b
	return err
}

// Supersede replaces a record with next (substrate RFC §7 "replacement"):
// next is created active with a supersedes relation to the old record, which
// leaves the active set. Fields next leaves out (type, scope, sensitivity,
// tags) are taken from the old record. version, when non-zero, must be the
// old record's current version. It returns the old and the new record.
func (t *Tx) Supersede(ctx context.Context, tenant string, id uuid.UUID, version int, next memory.Record, ch Change) (old, created memory.Record, err error) {
	if err := checkChange(ch); err != nil {
		return old, created, err
	}
	if err := t.w.checkKeeping(next, ch, "/record"); err != nil {
		return old, created, err
	}
	if old, err = t.lockRevisable(ctx, tenant, id, version); err != nil {
		return memory.Record{}, memory.Record{}, err
	}
	if next.Type == "" {
		next.Type = old.Type
	}
	if next.Type != old.Type {
		return memory.Record{}, memory.Record{}, &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/record/type", Message: fmt.Sprintf("must be %q, the type of the record it supersedes", old.Type)}}}
	}
	inherit(&next, old)
	if next.ID == uuid.Nil {
		if next.ID, err = uuid.NewV7(); err != nil {
			return memory.Record{}, memory.Record{}, err
		}
	}
	if old.Type == memory.Semantic {
		if next.Payload, err = setRevision(next.Payload, func(r *memory.Revision) { r.Supersedes = old.ID.String() }); err != nil {
			return memory.Record{}, memory.Record{}, err
		}
		if old.Payload, err = setRevision(old.Payload, func(r *memory.Revision) { r.SupersededBy = next.ID.String() }); err != nil {
			return memory.Record{}, memory.Record{}, err
		}
	}
	if err := t.leave(ctx, tenant, &old, memory.Superseded, ActionSupersede, ch); err != nil {
		return memory.Record{}, memory.Record{}, err
	}
	next.Relations = slices.DeleteFunc(next.Relations, func(r memory.Relation) bool { return r.TargetID == old.ID })
	if created, err = t.create(ctx, tenant, next, memory.Active, "/record", ch, old.ID); err != nil {
		return memory.Record{}, memory.Record{}, err
	}
	rel := memory.Relation{Predicate: memory.Supersedes, TargetID: old.ID}
	created.Relations = append(created.Relations, rel)
	if err := t.addRelation(ctx, tenant, created.ID, rel); err != nil {
		return memory.Record{}, memory.Record{}, err
	}
	return old, created, nil
}

// Fork replaces a semantic fact with conditional variants whose conditions
// are pairwise disjoint, so that they coexist in the active set (substrate
// RFC §7 "conditional fork"). Each variant keeps the fact's subject and
// predicate and gets a forked_from relation to it; the original leaves the
// active set.
func (t *Tx) Fork(ctx context.Context, tenant string, id uuid.UUID, version int, variants []memory.Record, ch Change) (old memory.Record, created []memory.Record, err error) {
	if err := checkChange(ch); err != nil {
		return old, nil, err
	}
	if len(variants) < 2 {
		return old, nil, &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/variants", Message: "a fork needs at least two variants; to replace a fact with one, supersede it"}}}
	}
	for i, v := range variants {
		if err := t.w.checkKeeping(v, ch, fmt.Sprintf("/variants/%d", i)); err != nil {
			return old, nil, err
		}
	}
	if old, err = t.lockRevisable(ctx, tenant, id, version); err != nil {
		return memory.Record{}, nil, err
	}
	if old.Type != memory.Semantic {
		return memory.Record{}, nil, conflict(CodeNotAllowed, []uuid.UUID{id}, "only semantic facts fork by condition; %s has no validity conditions", old.Type.ARecord())
	}
	var fact memory.SemanticPayload
	if err := json.Unmarshal(old.Payload, &fact); err != nil {
		return memory.Record{}, nil, fmt.Errorf("decode fact: %w", err)
	}
	if err := checkVariants(fact, variants); err != nil {
		return memory.Record{}, nil, err
	}
	if err := t.leave(ctx, tenant, &old, memory.Superseded, ActionFork, ch); err != nil {
		return memory.Record{}, nil, err
	}
	for i, v := range variants {
		if v.Type == "" {
			v.Type = memory.Semantic
		}
		inherit(&v, old)
		c, err := t.create(ctx, tenant, v, memory.Active, fmt.Sprintf("/variants/%d", i), ch, old.ID)
		if err != nil {
			return memory.Record{}, nil, err
		}
		rel := memory.Relation{Predicate: memory.ForkedFrom, TargetID: old.ID}
		if err := t.addRelation(ctx, tenant, c.ID, rel); err != nil {
			return memory.Record{}, nil, err
		}
		c.Relations = append(c.Relations, rel)
		created = append(created, c)
	}
	return old, created, nil
}

// checkVariants holds a fork to its rule: same subject and predicate,
// conditional validity, conditions pairwise disjoint.
func checkVariants(fact memory.SemanticPayload, variants []memory.Record) error {
	var bad []schemas.Violation
	conds := make([]memory.Conditions, len(variants))
	for i, v := range variants {
		at := fmt.Sprintf("/variants/%d/payload", i)
		var p memory.SemanticPayload
		if err := json.Unmarshal(v.Payload, &p); err != nil {
			bad = append(bad, schemas.Violation{Pointer: at, Message: "must be a semantic payload: " + err.Error()})
			continue
		}
		if p.Subject != fact.Subject {
			bad = append(bad, schemas.Violation{Pointer: at + "/subject", Message: fmt.Sprintf("must be %q, the forked fact's subject", fact.Subject)})
		}
		if p.Predicate != fact.Predicate {
			bad = append(bad, schemas.Violation{Pointer: at + "/predicate", Message: fmt.Sprintf("must be %q, the forked fact's predicate", fact.Predicate)})
		}
		if p.Validity.Mode != memory.Conditional || len(p.Validity.Conditions) == 0 {
			bad = append(bad, schemas.Violation{Pointer: at + "/validity", Message: "a fork variant must be conditional, with at least one condition"})
		}
		conds[i] = p.Validity.Conditions
		for j := range i {
			if conds[j] != nil && conds[i] != nil && !conds[i].Disjoint(conds[j]) {
				bad = append(bad, schemas.Violation{Pointer: at + "/validity/conditions", Message: fmt.Sprintf("overlaps variant %d: variants must differ in the value of at least one shared condition", j)})
			}
		}
	}
	if len(bad) > 0 {
		return &schemas.ValidationError{Violations: bad}
	}
	return nil
}

// Contest marks records as contradicting each other, uncertain until
// resolved (substrate RFC §7 "contestation"): each becomes contested, with
// contradicts relations both ways between every pair. With next, a new
// record is created already contested, for contradicting evidence that
// arrives while a fact is active.
func (t *Tx) Contest(ctx context.Context, tenant string, ids []uuid.UUID, next *memory.Record, ch Change) ([]memory.Record, error) {
	if err := checkChange(ch); err != nil {
		return nil, err
	}
	if err := checkIDs(ids, 1, "/record_ids"); err != nil {
		return nil, err
	}
	if next == nil && len(ids) < 2 {
		return nil, &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/record_ids", Message: "name at least two records to contest, or one and a new contradicting record"}}}
	}
	if next != nil {
		if err := t.w.checkKeeping(*next, ch, "/record"); err != nil {
			return nil, err
		}
	}
	recs, err := t.lockMany(ctx, tenant, ids)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		if err := checkRevisable(recs[i], 0); err != nil {
			return nil, err
		}
		if recs[i].Type != recs[0].Type {
			return nil, conflict(CodeNotAllowed, ids, "contested records must share a type: %s and %s", recs[0].Type, recs[i].Type)
		}
	}
	for i := range recs {
		if recs[i].Status == memory.Contested {
			if err := t.audit(ctx, tenant, recs[i], ActionContest, ch); err != nil {
				return nil, err
			}
			continue
		}
		if err := t.leave(ctx, tenant, &recs[i], memory.Contested, ActionContest, ch); err != nil {
			return nil, err
		}
	}
	if next != nil {
		n := *next
		if n.Type == "" {
			n.Type = recs[0].Type
		}
		inherit(&n, recs[0])
		c, err := t.create(ctx, tenant, n, memory.Contested, "/record", ch, ids...)
		if err != nil {
			return nil, err
		}
		recs = append(recs, c)
	}
	for i := range recs {
		for j := range recs {
			if i == j {
				continue
			}
			rel := memory.Relation{Predicate: memory.Contradicts, TargetID: recs[j].ID}
			if err := t.addRelation(ctx, tenant, recs[i].ID, rel); err != nil {
				return nil, err
			}
			recs[i].Relations = append(recs[i].Relations, rel)
		}
	}
	return recs, nil
}

// Retract withdraws a record: it leaves the active set and stays readable
// in history (substrate RFC §7).
func (t *Tx) Retract(ctx context.Context, tenant string, id uuid.UUID, version int, ch Change) (memory.Record, error) {
	if err := checkChange(ch); err != nil {
		return memory.Record{}, err
	}
	rec, err := t.lockRevisable(ctx, tenant, id, version)
	if err != nil {
		return memory.Record{}, err
	}
	if err := t.leave(ctx, tenant, &rec, memory.Retracted, ActionRetract, ch); err != nil {
		return memory.Record{}, err
	}
	return rec, nil
}

// Reinstate brings a retracted record back to the status it had before
// its retraction (active, or contested), as its next version, audited as
// reactivated: a retraction is undone by an operator, not by rollback,
// which undoes revisions that replaced a record (substrate RFC §7: a
// retracted record stays in history; §8: a procedure given up can be
// restored). version, when non-zero, must be id's current version. A fact
// that would collide with another active one is [CodeActiveFactExists].
func (t *Tx) Reinstate(ctx context.Context, tenant string, id uuid.UUID, version int, ch Change) (memory.Record, error) {
	if err := checkChange(ch); err != nil {
		return memory.Record{}, err
	}
	rec, err := t.lock(ctx, tenant, id)
	if err != nil {
		return memory.Record{}, err
	}
	if version != 0 && rec.Version != version {
		return memory.Record{}, conflict(CodeVersionConflict, []uuid.UUID{id}, "record %s is at version %d, not %d", id, rec.Version, version)
	}
	if rec.Status != memory.Retracted {
		return memory.Record{}, conflict(CodeNotAllowed, []uuid.UUID{id}, "record %s is %s: only retracted records are reinstated", id, rec.Status)
	}
	status := memory.Active
	prev, err := store.StatusAt(ctx, t.tx, tenant, id, rec.Version-1)
	if err != nil {
		return memory.Record{}, err
	}
	if prev == memory.Contested {
		status = prev
	}
	if err := t.leave(ctx, tenant, &rec, status, ActionReactivate, ch); err != nil {
		return memory.Record{}, err
	}
	return t.get(ctx, tenant, id)
}

// Merge folds duplicates into one new record (substrate RFC §15.7 duplicate
// resolution): the union of their provenance and tags, the highest
// confidence, salience and sensitivity, the earliest created_at, and a
// merged_into relation from each. The merged payload is template's when it
// has one, else the most confident source's. Sources must share type and
// scope; they leave the active set.
func (t *Tx) Merge(ctx context.Context, tenant string, ids []uuid.UUID, template *memory.Record, ch Change) (memory.Record, error) {
	if err := checkChange(ch); err != nil {
		return memory.Record{}, err
	}
	if err := checkIDs(ids, 2, "/record_ids"); err != nil {
		return memory.Record{}, err
	}
	srcs, err := t.lockMany(ctx, tenant, ids)
	if err != nil {
		return memory.Record{}, err
	}
	for _, r := range srcs {
		if err := checkRevisable(r, 0); err != nil {
			return memory.Record{}, err
		}
		if r.Type == memory.Working {
			return memory.Record{}, conflict(CodeNotAllowed, []uuid.UUID{r.ID}, "working memory is not merged; it ends with its task")
		}
		if r.Type != srcs[0].Type || r.Scope != srcs[0].Scope || r.Visibility != srcs[0].Visibility ||
			r.AgentID != srcs[0].AgentID || r.ThreadID != srcs[0].ThreadID {
			return memory.Record{}, conflict(CodeNotAllowed, ids, "merged records must share type, scope and visibility")
		}
	}
	merged := mergeOf(srcs, template)
	for i := range srcs {
		if err := t.leave(ctx, tenant, &srcs[i], memory.Merged, ActionMerge, ch); err != nil {
			return memory.Record{}, err
		}
	}
	if merged, err = t.create(ctx, tenant, merged, memory.Active, "/record", ch, ids...); err != nil {
		return memory.Record{}, err
	}
	for _, src := range srcs {
		if err := t.addRelation(ctx, tenant, src.ID, memory.Relation{Predicate: memory.MergedInto, TargetID: merged.ID}); err != nil {
			return memory.Record{}, err
		}
	}
	return merged, nil
}

// mergeOf computes the merged record of srcs.
func mergeOf(srcs []memory.Record, template *memory.Record) memory.Record {
	best := srcs[0]
	for _, r := range srcs[1:] {
		if r.Confidence > best.Confidence {
			best = r
		}
	}
	m := memory.Record{
		Type: best.Type, Scope: best.Scope, Sensitivity: best.Sensitivity, Confidence: best.Confidence,
		Visibility: best.Visibility, AgentID: best.AgentID, ThreadID: best.ThreadID,
		Salience: best.Salience, CreatedAt: best.CreatedAt, Lifecycle: best.Lifecycle, Payload: best.Payload,
		Provenance: memory.Provenance{CreatedBy: best.Provenance.CreatedBy},
	}
	if template != nil {
		if len(template.Payload) > 0 {
			m.Payload = template.Payload
		}
		if template.Provenance.CreatedBy != "" {
			m.Provenance.CreatedBy = template.Provenance.CreatedBy
		}
		m.Tags = append(m.Tags, template.Tags...)
		m.Provenance.Sources = append(m.Provenance.Sources, template.Provenance.Sources...)
		m.Relations = template.Relations
	}
	if m.Type == memory.Semantic {
		// The merged fact starts its own revision history.
		m.Payload, _ = setRevision(m.Payload, func(r *memory.Revision) { *r = memory.Revision{} })
	}
	for _, r := range srcs {
		m.Confidence = max(m.Confidence, r.Confidence)
		m.Salience = max(m.Salience, r.Salience)
		m.Sensitivity = m.Sensitivity.Max(r.Sensitivity)
		if r.CreatedAt.Before(m.CreatedAt) {
			m.CreatedAt = r.CreatedAt
		}
		if r.Lifecycle.LastReinforcedAt.After(m.Lifecycle.LastReinforcedAt) {
			m.Lifecycle.LastReinforcedAt = r.Lifecycle.LastReinforcedAt
		}
		m.Tags = append(m.Tags, r.Tags...)
		m.Provenance.Sources = append(m.Provenance.Sources, r.Provenance.Sources...)
	}
	slices.Sort(m.Tags)
	m.Tags = slices.Compact(m.Tags)
	seen := map[memory.Source]bool{}
	m.Provenance.Sources = slices.DeleteFunc(m.Provenance.Sources, func(src memory.Source) bool {
		k := memory.Source{Kind: src.Kind, Ref: src.Ref, Hash: src.Hash}
		if seen[k] {
			return true
		}
		seen[k] = true
		return false
	})
	return m
}

// Delete soft-deletes a record: it leaves the active set and listings (unless
// asked for by status), stays readable by id, in history and in audit, and
// can be purged for good with [Tx.Purge]. Records whose deletion
// policy is never are refused.
func (t *Tx) Delete(ctx context.Context, tenant string, id uuid.UUID, ch Change) (memory.Record, error) {
	if err := checkChange(ch); err != nil {
		return memory.Record{}, err
	}
	rec, err := t.lock(ctx, tenant, id)
	if err != nil {
		return memory.Record{}, err
	}
	if rec.Status == memory.Deleted {
		return memory.Record{}, conflict(CodeNotLive, []uuid.UUID{id}, "record %s is already deleted", id)
	}
	if rec.Lifecycle.DeletionPolicy == memory.Never {
		return memory.Record{}, conflict(CodeNotAllowed, []uuid.UUID{id}, "record %s has deletion policy never", id)
	}
	if err := t.leave(ctx, tenant, &rec, memory.Deleted, ActionDelete, ch); err != nil {
		return memory.Record{}, err
	}
	return rec, nil
}

// Purge hard-deletes a soft-deleted or expired record with its version
// history and relations. What remains is an audit entry that names the
// record's id and no content.
func (t *Tx) Purge(ctx context.Context, tenant string, id uuid.UUID, ch Change) error {
	if err := checkChange(ch); err != nil {
		return err
	}
	rec, err := t.lock(ctx, tenant, id)
	if err != nil {
		return err
	}
	if rec.Status != memory.Deleted && rec.Status != memory.Expired {
		return conflict(CodeNotAllowed, []uuid.UUID{id}, "record %s is %s: delete it before purging", id, rec.Status)
	}
	if err := store.PurgeRecord(ctx, t.tx, tenant, id); err != nil {
		return err
	}
	rec.Version++
	return t.audit(ctx, tenant, rec, ActionPurge, ch.because(ch.Rationale, nil))
}

// lockLive locks a record that must be in the active set and, when version
// is non-zero, at that version.
func (t *Tx) lockLive(ctx context.Context, tenant string, id uuid.UUID, version int) (memory.Record, error) {
	rec, err := t.lock(ctx, tenant, id)
	if err != nil {
		return rec, err
	}
	if version != 0 && rec.Version != version {
		return rec, conflict(CodeVersionConflict, []uuid.UUID{id}, "record %s is at version %d, not %d: read it again", id, rec.Version, version)
	}
	if !rec.Live() {
		return rec, conflict(CodeNotLive, []uuid.UUID{id}, "record %s is %s", id, rec.Status)
	}
	return rec, nil
}

// lockRevisable is lockLive for the revision operations, which episodic
// records do not take (substrate RFC §15B: revisability of all non-episodic
// memory).
func (t *Tx) lockRevisable(ctx context.Context, tenant string, id uuid.UUID, version int) (memory.Record, error) {
	rec, err := t.lock(ctx, tenant, id)
	if err != nil {
		return rec, err
	}
	return rec, checkRevisable(rec, version)
}

func checkRevisable(rec memory.Record, version int) error {
	if version != 0 && rec.Version != version {
		return conflict(CodeVersionConflict, []uuid.UUID{rec.ID}, "record %s is at version %d, not %d: read it again", rec.ID, rec.Version, version)
	}
	if !rec.Type.Revisable() {
		return conflict(CodeNotAllowed, []uuid.UUID{rec.ID}, "episodic records are append-only: corrections belong in higher layers")
	}
	if !rec.Live() {
		return conflict(CodeNotLive, []uuid.UUID{rec.ID}, "record %s is %s", rec.ID, rec.Status)
	}
	return nil
}

// leave moves a locked record to status as its next version, and audits it.
func (t *Tx) leave(ctx context.Context, tenant string, rec *memory.Record, status memory.Status, action string, ch Change) error {
	rec.Status = status
	if rec.Type == memory.Semantic {
		p, err := setRevision(rec.Payload, func(r *memory.Revision) { r.Status = revisionStatus(status) })
		if err != nil {
			return err
		}
		rec.Payload = p
	}
	if err := t.revise(ctx, tenant, rec); err != nil {
		return err
	}
	return t.audit(ctx, tenant, *rec, action, ch)
}

// inherit fills what a replacement leaves out from the record it replaces.
func inherit(next *memory.Record, old memory.Record) {
	if next.Scope == "" {
		next.Scope = old.Scope
	}
	if next.Sensitivity == "" {
		next.Sensitivity = old.Sensitivity
	}
	if next.Tags == nil {
		next.Tags = old.Tags
	}
	if next.Visibility == "" {
		next.Visibility, next.AgentID, next.ThreadID = old.Visibility, old.AgentID, old.ThreadID
	}
}

// revisionStatus is the canonical payload's revision status for a record
// status (substrate RFC §15A.8 knows active, contested and retracted).
func revisionStatus(s memory.Status) string {
	switch s {
	case memory.Contested, memory.Retracted:
		return string(s)
	case memory.Active:
		return string(memory.Active)
	}
	return ""
}

// setRevision edits the revision object of a semantic payload, keeping
// every other field as it was.
func setRevision(payload json.RawMessage, edit func(*memory.Revision)) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/payload", Message: "must be a JSON object"}}}
	}
	var r memory.Revision
	if raw := p["revision"]; raw != nil {
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: "/payload/revision", Message: "must be an object of supersedes, superseded_by and status"}}}
		}
	}
	edit(&r)
	if r == (memory.Revision{}) {
		delete(p, "revision")
	} else {
		p["revision"], _ = json.Marshal(r)
	}
	return json.Marshal(p)
}

func checkIDs(ids []uuid.UUID, least int, pointer string) error {
	if len(ids) < least {
		return &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: pointer, Message: fmt.Sprintf("must name at least %d records", least)}}}
	}
	seen := make(map[uuid.UUID]bool, len(ids))
	for i, id := range ids {
		if seen[id] {
			return &schemas.ValidationError{Violations: []schemas.Violation{{Pointer: fmt.Sprintf("%s/%d", pointer, i), Message: "names a record twice"}}}
		}
		seen[id] = true
	}
	return nil
}
