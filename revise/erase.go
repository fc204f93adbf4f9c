package revise

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// Erasure on demand (write-path RFC §12.10.2): a data subject's every trace
// in a tenant is found, hard-deleted with what derives from it, or rebuilt
// without it where it can be, and the tenant is scanned to prove nothing
// is left. The steps, each in bounded transactions:
//
//  1. matching: artifacts, staged events and records (with every version
//     and timeline entry) are read in batches and matched in Go, by
//     [Writer.mentions], the one place where content meets the subject;
//  2. the transitive closure over derived_from and cited evidence: a
//     record whose every source is erased is erased (§12.10.2's E(s)); one
//     with sources left, that does not itself name the subject, is
//     rebuilt without the erased ones;
//  3. erasing, rebuilding, then scrubbing what else names the subject: the
//     audit log, the retrieval log, agents' reputation, the lexical
//     statistics;
//  4. verifying: [Writer.VerifyErasure].
//
// The erasure's own audit entry names the request, the SHA-256 of the
// subject and the counts: no personal data (step 6 of §12.10.2).

// Audit actions of an erasure.
const (
	// ActionErase: a record erased, or (naming no record) the erasure.
	ActionErase = "erase"
	// ActionRebuild: a derived record rewritten without erased sources.
	ActionRebuild = "rebuild"
)

// Erasure phases, as the erasure's status shows them.
const (
	PhaseMatching   = "matching"
	PhaseErasing    = "erasing"
	PhaseRebuilding = "rebuilding"
	PhaseScrubbing  = "scrubbing"
	PhaseVerifying  = "verifying"
	PhaseDone       = "done"
)

// Batch sizes of an erasure: rows read for matching at a time, records
// erased in one transaction.
const (
	eraseScanBatch     = 200
	eraseArtifactBatch = 16
	eraseTxBatch       = 100
	// verifyCellLimit bounds the cells of one column the verification
	// scan confirms in Go.
	verifyCellLimit = 1000
)

// StartErasure records an erasure request for subject in tenant, running.
// [Writer.Erase] carries it out.
func (w *Writer) StartErasure(ctx context.Context, tenant string, s Subject) (store.Erasure, error) {
	if s.Empty() {
		return store.Erasure{}, errors.New("start erasure: the subject names no one")
	}
	now := w.clock()
	e := store.Erasure{
		ID: uuid.Must(uuid.NewV7()), SubjectSHA256: s.SHA256(), Identifiers: s.Counts(),
		Status: api.ErasureRunning, Phase: PhaseMatching, Rebuilt: []uuid.UUID{}, RequestedAt: now, UpdatedAt: now,
	}
	if err := store.EnsureTenant(ctx, w.db, tenant); err != nil {
		return e, err
	}
	return e, store.InsertErasure(ctx, w.db, tenant, e)
}

// eraseState is what an erasure has found and done so far.
type eraseState struct {
	tenant string
	s      Subject
	e      *store.Erasure
	actor  string
	// erased are the records to erase, by type; events the staged events;
	// artifacts the matched artifacts' digests (hex).
	erased    map[uuid.UUID]memory.Type
	events    map[uuid.UUID]bool
	artifacts map[string]bool
	// gone are the refs erased sources are cited by: record://<id> and
	// evt://<id>.
	gone map[string]bool
	// rebuild are the derived records left with sources, and what they
	// cite.
	rebuild map[uuid.UUID]store.Dependent
}

// Erase carries out erasure e (from [Writer.StartErasure]) of subject s in
// tenant, by actor, writing its progress to the erasure's row after each
// step, and returns it completed with its certificate. If ctx ends first,
// the erasure is left interrupted; on another error, failed (with a
// message that names no data). What an interrupted or failed erasure
// erased stays erased: run it again to finish.
func (w *Writer) Erase(ctx context.Context, tenant string, e store.Erasure, s Subject, actor string) (store.Erasure, error) {
	e.Status, e.Error, e.CompletedAt, e.Counts, e.Rebuilt = api.ErasureRunning, "", nil, store.ErasureCounts{}, []uuid.UUID{}
	st := &eraseState{tenant: tenant, s: s, e: &e, actor: actor,
		erased: map[uuid.UUID]memory.Type{}, events: map[uuid.UUID]bool{}, artifacts: map[string]bool{},
		gone: map[string]bool{}, rebuild: map[uuid.UUID]store.Dependent{}}
	err := w.erase(ctx, st)
	if err != nil {
		end := w.clock()
		e.Status, e.Error, e.UpdatedAt, e.CompletedAt = api.ErasureFailed, "the erasure failed while "+e.Phase+"; the daemon's log has the cause: run it again", end, &end
		if ctx.Err() != nil {
			e.Status, e.Error = api.ErasureInterrupted, "the erasure was interrupted while "+e.Phase+": run it again"
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if uerr := store.UpdateErasure(wctx, w.db, tenant, e); uerr != nil {
			err = errors.Join(err, uerr)
		}
		return e, fmt.Errorf("erasure %s: %w", e.ID, err)
	}
	return e, nil
}

func (w *Writer) erase(ctx context.Context, st *eraseState) error {
	if err := w.matchSubject(ctx, st); err != nil {
		return err
	}
	if err := w.closeOver(ctx, st); err != nil {
		return err
	}
	if err := w.progress(ctx, st, PhaseErasing); err != nil {
		return err
	}
	if err := w.eraseMatched(ctx, st); err != nil {
		return err
	}
	if err := w.progress(ctx, st, PhaseRebuilding); err != nil {
		return err
	}
	if err := w.rebuildDerived(ctx, st); err != nil {
		return err
	}
	if err := w.progress(ctx, st, PhaseScrubbing); err != nil {
		return err
	}
	if err := w.scrub(ctx, st); err != nil {
		return err
	}
	if err := w.progress(ctx, st, PhaseVerifying); err != nil {
		return err
	}
	v, err := w.VerifyErasure(ctx, st.tenant, st.s)
	if err != nil {
		return err
	}
	e := st.e
	end := w.clock()
	e.Verification, e.Verified = &v, v.Verified
	e.Status, e.Phase, e.UpdatedAt, e.CompletedAt = api.ErasureCompleted, PhaseDone, end, &end
	return w.InTx(ctx, func(ctx context.Context, t *Tx) error {
		// The erasure's own audit entry: the request, the subject's hash,
		// the counts and the verification; no personal data (§12.10.2).
		doc, err := json.Marshal(map[string]any{
			"erasure": e.ID, "subject_sha256": e.SubjectSHA256, "counts": e.Counts,
			"rebuilt": len(e.Rebuilt), "verified": v.Verified, "completed_at": end,
		})
		if err != nil {
			return err
		}
		if err := store.InsertTenantAudit(ctx, t.tx, st.tenant, ActionErase, st.actor, string(doc)); err != nil {
			return err
		}
		return store.UpdateErasure(ctx, t.tx, st.tenant, *e)
	})
}

// progress writes the erasure's phase and counts so far.
func (w *Writer) progress(ctx context.Context, st *eraseState, phase string) error {
	st.e.Phase, st.e.UpdatedAt = phase, w.clock()
	return store.UpdateErasure(ctx, w.db, st.tenant, *st.e)
}

// mentions reports whether a stored document — a record row or snapshot, a
// timeline entry, a staged event, an audit or retrieval log entry, as
// JSON — names the subject. It is the one place where stored content is
// matched, and so where sealed values (encryption at rest, substrate RFC
// §15.9) are opened: a payload, entry or staged event stored encrypted is
// matched on its plaintext. A sealed value that cannot be opened (the
// daemon lacks its master key) is an error: the erasure stops rather than
// guess.
func (w *Writer) mentions(ctx context.Context, tenant string, s Subject, doc []byte) (bool, error) {
	if s.MentionedInJSON(doc) {
		return true, nil
	}
	plains, err := w.openSealed(ctx, tenant, doc)
	if err != nil {
		return false, err
	}
	for _, p := range plains {
		if s.MentionedInJSON(p) {
			return true, nil
		}
	}
	return false, nil
}

// openSealed returns the plaintext of every sealed value in doc (an object
// with a "sealed" member, at any depth).
func (w *Writer) openSealed(ctx context.Context, tenant string, doc []byte) ([][]byte, error) {
	if !bytes.Contains(doc, []byte(`"sealed"`)) {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, nil // not JSON: matched as text above
	}
	var sealed [][]byte
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if env, ok := v["sealed"].(map[string]any); ok {
				if b, err := json.Marshal(map[string]any{"sealed": env}); err == nil {
					sealed = append(sealed, b)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		case string:
			// A JSON document held as text (a staged event's row).
			if strings.Contains(v, `"sealed"`) {
				var inner any
				if json.Unmarshal([]byte(v), &inner) == nil {
					walk(inner)
				}
			}
		}
	}
	walk(v)
	if len(sealed) == 0 {
		return nil, nil
	}
	if !w.cfg.Sealer.Enabled() {
		return nil, errors.New("a sealed value cannot be matched: this daemon has no master key (encryption.master_keys)")
	}
	out := make([][]byte, 0, len(sealed))
	for _, b := range sealed {
		p, err := w.cfg.Sealer.Open(ctx, tenant, b)
		if err != nil {
			return nil, fmt.Errorf("open sealed value for matching: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// matchSubject finds what names the subject directly: artifacts, staged
// events, and records (any version, any timeline entry), with the
// episodes that hold a matched event or artifact.
func (w *Writer) matchSubject(ctx context.Context, st *eraseState) error {
	var after []byte
	for {
		arts, err := store.ArtifactTraces(ctx, w.db, st.tenant, after, eraseArtifactBatch)
		if err != nil {
			return err
		}
		for _, a := range arts {
			content := a.Content
			if a.Sealed {
				if !w.cfg.Sealer.Enabled() {
					return errors.New("a sealed artifact cannot be matched: this daemon has no master key (encryption.master_keys)")
				}
				if content, err = w.cfg.Sealer.Open(ctx, st.tenant, content); err != nil {
					return fmt.Errorf("open sealed artifact for matching: %w", err)
				}
			}
			if st.s.MentionedIn(string(content)) {
				st.artifacts[hex.EncodeToString(a.SHA256)] = true
			}
			after = a.SHA256
		}
		if len(arts) < eraseArtifactBatch {
			break
		}
	}
	for seq := int64(0); ; {
		cands, err := store.CandidateTraces(ctx, w.db, st.tenant, seq, eraseScanBatch)
		if err != nil {
			return err
		}
		for _, c := range cands {
			found, err := w.mentions(ctx, st.tenant, st.s, c.Row)
			if err != nil {
				return err
			}
			if found {
				st.events[c.ID] = true
				st.gone["evt://"+c.ID.String()] = true
			}
			seq = c.Seq
		}
		if len(cands) < eraseScanBatch {
			break
		}
	}
	for after := uuid.Nil; ; {
		recs, err := store.RecordTraces(ctx, w.db, st.tenant, after, eraseScanBatch)
		if err != nil {
			return err
		}
		for _, r := range recs {
			found, err := w.recordMentions(ctx, st, r)
			if err != nil {
				return err
			}
			if found {
				st.erased[r.ID] = r.Type
				st.gone["record://"+r.ID.String()] = true
			}
			after = r.ID
		}
		if len(recs) < eraseScanBatch {
			break
		}
	}
	return nil
}

// recordMentions reports whether a record names the subject — in its row,
// any version of it or any timeline entry — or holds a matched artifact,
// or, for an episode, a matched staged event in its timeline (an episode
// is made of its events).
func (w *Writer) recordMentions(ctx context.Context, st *eraseState, r store.RecordTrace) (bool, error) {
	docs := append([]json.RawMessage{r.Row}, r.Versions...)
	docs = append(docs, r.Entries...)
	for _, d := range docs {
		if found, err := w.mentions(ctx, st.tenant, st.s, d); found || err != nil {
			return found, err
		}
	}
	if len(st.artifacts) == 0 && (len(st.events) == 0 || r.Type != memory.Episodic) {
		return false, nil
	}
	found := false
	for _, d := range docs {
		walkJSON(d, func(v string) bool {
			found = st.artifacts[v] || (r.Type == memory.Episodic && st.gone[v] && strings.HasPrefix(v, "evt://"))
			return !found
		})
		if found {
			return true, nil
		}
	}
	return false, nil
}

// closeOver takes the transitive closure over derived_from relations and
// cited evidence (§12.10.2's E(s)): a record derived from or citing erased
// ones is erased when every source it has is erased, and otherwise, when
// it names nothing of the subject itself, rebuilt without them. The
// events of erased episodes count as erased: their staged rows go with
// them.
func (w *Writer) closeOver(ctx context.Context, st *eraseState) error {
	frontier := make([]uuid.UUID, 0, len(st.erased))
	for id := range st.erased {
		frontier = append(frontier, id)
	}
	if err := w.episodeEvents(ctx, st, frontier); err != nil {
		return err
	}
	refs := make([]string, 0, len(st.gone))
	for ref := range st.gone {
		refs = append(refs, ref)
	}
	for len(frontier) > 0 || len(refs) > 0 {
		deps, err := store.Dependents(ctx, w.db, st.tenant, frontier, refs)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if _, done := st.erased[d.ID]; !done {
				st.rebuild[d.ID] = d
			}
		}
		frontier, refs = nil, nil
		for changed := true; changed; {
			changed = false
			for id, d := range st.rebuild {
				if !st.allGone(d) {
					continue
				}
				delete(st.rebuild, id)
				st.erased[id] = d.Type
				ref := "record://" + id.String()
				st.gone[ref] = true
				frontier, refs = append(frontier, id), append(refs, ref)
				changed = true
			}
		}
		if err := w.episodeEvents(ctx, st, frontier); err != nil {
			return err
		}
	}
	return nil
}

// allGone reports whether every source of a derived record is erased.
func (st *eraseState) allGone(d store.Dependent) bool {
	for _, id := range d.DerivedFrom {
		if _, ok := st.erased[id]; !ok {
			return false
		}
	}
	for _, ref := range d.Refs {
		if !st.gone[ref] {
			return false
		}
	}
	return true
}

// episodeEvents marks the staged events of the erased episodes among ids
// as erased.
func (w *Writer) episodeEvents(ctx context.Context, st *eraseState, ids []uuid.UUID) error {
	var eps []uuid.UUID
	for _, id := range ids {
		if st.erased[id] == memory.Episodic {
			eps = append(eps, id)
		}
	}
	for len(eps) > 0 {
		n := min(len(eps), eraseScanBatch)
		recs, err := store.RecordTracesOf(ctx, w.db, st.tenant, eps[:n])
		if err != nil {
			return err
		}
		eps = eps[n:]
		for _, r := range recs {
			for _, d := range append(append([]json.RawMessage{r.Row}, r.Versions...), r.Entries...) {
				walkJSON(d, func(v string) bool {
					if id, ok := strings.CutPrefix(v, "evt://"); ok {
						if u, err := uuid.Parse(id); err == nil {
							st.events[u] = true
							st.gone[v] = true
						}
					}
					return true
				})
			}
		}
	}
	return nil
}

// eraseMatched hard-deletes the erasure set, eraseTxBatch records a
// transaction, then the staged events and the matched artifacts.
func (w *Writer) eraseMatched(ctx context.Context, st *eraseState) error {
	ids := make([]uuid.UUID, 0, len(st.erased))
	for id := range st.erased {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
	c := &st.e.Counts
	rationale := "erasure " + st.e.ID.String()
	for len(ids) > 0 {
		n := min(len(ids), eraseTxBatch)
		batch := ids[:n]
		var got store.Erased
		var staged int
		err := w.InTx(ctx, func(ctx context.Context, t *Tx) error {
			var err error
			if got, err = store.EraseRecords(ctx, t.tx, st.tenant, batch, st.actor, rationale); err != nil {
				return err
			}
			for _, ev := range got.Events {
				st.events[ev] = true
			}
			staged, err = store.DeleteCandidates(ctx, t.tx, st.tenant, got.Events, batch)
			return err
		})
		if err != nil {
			return err
		}
		ids = ids[n:]
		c.Episodic += got.ByType[memory.Episodic]
		c.Working += got.ByType[memory.Working]
		c.Semantic += got.ByType[memory.Semantic]
		c.Competence += got.ByType[memory.Competence]
		c.PlanGraph += got.ByType[memory.PlanGraph]
		c.Versions += got.Versions
		c.TimelineEntries += got.Entries
		c.Vectors += got.Vectors
		c.AuditEntries += got.Audit
		c.Artifacts += got.Artifacts
		c.StagedEvents += staged
		if err := w.progress(ctx, st, PhaseErasing); err != nil {
			return err
		}
	}
	events := make([]uuid.UUID, 0, len(st.events))
	for id := range st.events {
		events = append(events, id)
	}
	for len(events) > 0 {
		n := min(len(events), 1000)
		staged, err := store.DeleteCandidates(ctx, w.db, st.tenant, events[:n], nil)
		if err != nil {
			return err
		}
		c.StagedEvents += staged
		events = events[n:]
	}
	// What consolidation learned of the erased episodes went with them (a
	// foreign key); the features of the tenant's other episodes are
	// forgotten too, since they are derived from staged events, and the
	// next consolidation pass learns them again from what is left.
	if _, err := store.ForgetEpisodeFeatures(ctx, w.db, st.tenant); err != nil {
		return err
	}
	var shas [][]byte
	for sha := range st.artifacts {
		b, _ := hex.DecodeString(sha)
		shas = append(shas, b)
	}
	n, err := store.DeleteArtifacts(ctx, w.db, st.tenant, shas)
	c.Artifacts += n
	return err
}

// rebuildDerived rewrites each derived record left with sources as its
// next version without the erased ones: its provenance sources and its
// payload's evidence lose what was erased (its derived_from relations to
// erased records went with them), and it is stamped again. An episode is
// append-only and keeps its payload; its audit entry says what was
// dropped.
func (w *Writer) rebuildDerived(ctx context.Context, st *eraseState) error {
	ids := make([]uuid.UUID, 0, len(st.rebuild))
	for id := range st.rebuild {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
	for _, id := range ids {
		err := w.InTx(ctx, func(ctx context.Context, t *Tx) error {
			rec, err := store.Lock(ctx, t.tx, st.tenant, id)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			dropped := 0
			rec.Provenance.Sources = slices.DeleteFunc(rec.Provenance.Sources, func(s memory.Source) bool {
				if st.gone[s.Ref] {
					dropped++
					return true
				}
				return false
			})
			ch := Change{Actor: st.actor, Rationale: "erasure " + st.e.ID.String() + ": rebuilt without its erased sources"}
			if rec.Type.Revisable() {
				if rec.Payload, err = dropEvidence(rec.Payload, st.gone); err != nil {
					return err
				}
				if err := t.revise(ctx, st.tenant, &rec); err != nil {
					return err
				}
				// Stamped again (write-path RFC §12.4) without the erased
				// sources, keeping the approval it had.
				stamps, err := store.Stamps(ctx, t.tx, st.tenant, []uuid.UUID{id})
				if err != nil {
					return err
				}
				if doc, ok := stamps[id]; ok {
					var old Stamp
					if err := json.Unmarshal(doc, &old); err != nil {
						return fmt.Errorf("decode stamp: %w", err)
					}
					ev, err := t.checkEvidence(ctx, st.tenant, rec)
					if err != nil {
						ev = evidence{Mean: *t.w.cfg.Gates.Evidence.Unstated, Best: *t.w.cfg.Gates.Evidence.Unstated}
					}
					row, err := t.w.signedRow(st.tenant, rec, old, ev)
					if err != nil {
						return err
					}
					if err := store.ReplaceProvenance(ctx, t.tx, row); err != nil {
						return err
					}
				}
			}
			return t.audit(ctx, st.tenant, rec, ActionRebuild, ch)
		})
		if err != nil {
			return err
		}
		st.e.Rebuilt = append(st.e.Rebuilt, id)
	}
	return nil
}

// dropEvidence removes from a payload's evidence list the sources that are
// gone.
func dropEvidence(payload json.RawMessage, gone map[string]bool) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, fmt.Errorf("decode payload: %w", err)
	}
	raw, ok := p["evidence"]
	if !ok {
		return payload, nil
	}
	var ev []memory.Source
	if err := json.Unmarshal(raw, &ev); err != nil {
		return payload, nil // not a list of sources: nothing to drop
	}
	kept := slices.DeleteFunc(ev, func(s memory.Source) bool { return gone[s.Ref] })
	if len(kept) == 0 {
		delete(p, "evidence")
	} else {
		p["evidence"], _ = json.Marshal(kept)
	}
	return json.Marshal(p)
}

// scrub deletes what else names the subject: audit entries (of records
// that remain, or of none, such as a rebuild's rationale), retrieval log
// entries, agents' reputation; it
// takes the erased records out of the retrieval log and recomputes the
// lexical statistics, whose terms came from the erased text too.
func (w *Writer) scrub(ctx context.Context, st *eraseState) error {
	c := &st.e.Counts
	for after := int64(0); ; {
		rows, err := store.AuditTraces(ctx, w.db, st.tenant, after, eraseScanBatch)
		if err != nil {
			return err
		}
		var doomed []int64
		for _, r := range rows {
			// The erased records' own entries went with them; their erase
			// entries name no data and stay.
			found, err := w.mentions(ctx, st.tenant, st.s, r.Row)
			if err != nil {
				return err
			}
			if found {
				doomed = append(doomed, r.Seq)
			}
			after = r.Seq
		}
		if len(doomed) > 0 {
			var n int
			err := w.InTx(ctx, func(ctx context.Context, t *Tx) error {
				var err error
				n, err = store.DeleteAuditEntries(ctx, t.tx, st.tenant, doomed)
				return err
			})
			if err != nil {
				return err
			}
			c.AuditEntries += n
		}
		if len(rows) < eraseScanBatch {
			break
		}
	}
	var retrievals []uuid.UUID
	for after := uuid.Nil; ; {
		rows, err := store.RetrievalTraces(ctx, w.db, st.tenant, after, eraseScanBatch)
		if err != nil {
			return err
		}
		for _, r := range rows {
			found, err := w.mentions(ctx, st.tenant, st.s, r.Row)
			if err != nil {
				return err
			}
			if found {
				retrievals = append(retrievals, r.ID)
			}
			after = r.ID
		}
		if len(rows) < eraseScanBatch {
			break
		}
	}
	erased := make([]uuid.UUID, 0, len(st.erased))
	for id := range st.erased {
		erased = append(erased, id)
	}
	n, err := store.ScrubRetrievals(ctx, w.db, st.tenant, retrievals, erased)
	if err != nil {
		return err
	}
	c.RetrievalLogEntries += n
	var agents []string
	for after := ""; ; {
		rows, err := store.ReputationTraces(ctx, w.db, st.tenant, after, eraseScanBatch)
		if err != nil {
			return err
		}
		for _, r := range rows {
			var a struct {
				AgentID string `json:"agent_id"`
			}
			_ = json.Unmarshal(r.Row, &a)
			found, err := w.mentions(ctx, st.tenant, st.s, r.Row)
			if err != nil {
				return err
			}
			if found {
				agents = append(agents, a.AgentID)
			}
			after = a.AgentID
		}
		if len(rows) < eraseScanBatch {
			break
		}
	}
	if n, err = store.DeleteReputation(ctx, w.db, st.tenant, agents); err != nil {
		return err
	}
	c.Other += n
	if len(st.erased) > 0 {
		if _, err := store.RefreshLexicalStats(ctx, w.db, st.tenant, w.clock()); err != nil {
			return err
		}
		c.Other++
	}
	return nil
}

// VerifyErasure scans every text, JSON, text-array, tsvector and binary
// column of every table in the schema that holds tenants' rows — found in
// information_schema, so a table added later is scanned too — for the
// subject in tenant's rows: SQL selects the cells that could name it
// (patterns that cannot miss), and [Subject.MentionedInJSON] confirms
// each. It reports the columns where the subject remains, never the
// values. Tables without a tenant_id column hold no tenant's data (job
// runs, cursors) and are not scanned.
func (w *Writer) VerifyErasure(ctx context.Context, tenant string, s Subject) (store.Verification, error) {
	v := store.Verification{Remaining: []store.Remaining{}}
	cols, err := store.TenantTextColumns(ctx, w.db)
	if err != nil {
		return v, err
	}
	likes, digits := s.likePatterns()
	if w.cfg.Sealer.Enabled() {
		// Sealed cells cannot be prefiltered by their plaintext: every one
		// is read and opened (see [Writer.mentions]).
		likes = append(likes, `%"sealed"%`)
	}
	tables := map[string]bool{}
	for _, c := range cols {
		tables[c.Table] = true
		cells, err := store.ColumnCells(ctx, w.db, tenant, c, likes, digits, verifyCellLimit)
		if err != nil {
			return v, err
		}
		rows := 0
		for _, cell := range cells {
			found, err := w.mentions(ctx, tenant, s, []byte(cell))
			if err != nil {
				return v, err
			}
			if found {
				rows++
			}
		}
		if rows > 0 {
			v.Remaining = append(v.Remaining, store.Remaining{Table: c.Table, Column: c.Column, Rows: rows})
		}
	}
	v.Tables, v.Columns = len(tables), len(cols)
	v.Verified = len(v.Remaining) == 0
	v.At = w.clock()
	return v, nil
}
