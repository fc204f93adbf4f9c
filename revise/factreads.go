package revise

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// Observation is a fact to observe ([Tx.ObserveFacts]) and the change it
// is written under.
type Observation struct {
	Record memory.Record
	Change Change
}

// ObserveFacts is [Tx.ObserveFact] for a batch of facts, in order, each
// in a savepoint of its own: refusals[i] is the i-th fact's refusal (a
// [*RejectedError]) or nil, and err an error that fails the whole batch.
//
// Every fact passes the same gates, in the same order, as alone; what
// the gates read of memory — the live facts of each fact's scope, subject
// and predicate with their provenance stamps (the contradiction and dedup
// gates), the records its relations and evidence name (schema, evidence),
// their evidence edges (the provenance gate's cycle check) and its
// agent's reputation (approval) — is read for the whole batch at once, in
// a few set-based statements, instead of about a dozen round trips a fact
// (issue 13). What the batch writes keeps those reads true: a fact
// written, revised or left by one fact's admission is read afresh, from
// the database, by the next fact of its key; a record written or given a
// relation has its evidence edges read afresh. The reads are as of the
// start of the batch for what other transactions commit meanwhile: the
// policy plane's partitions take their facts' locks before they observe
// them, so none of them writes the same facts meanwhile; a write from
// elsewhere that lands in between — an active fact inserted twice, a fact
// revised underneath — runs into the database's unique index or version
// check, and that fact is observed once more with what the database
// holds then.
func (t *Tx) ObserveFacts(ctx context.Context, tenant string, obs []Observation) (admissions []Admission, refusals []error, err error) {
	if len(obs) == 0 {
		return nil, nil, nil
	}
	if err := t.readAhead(ctx, tenant, obs); err != nil {
		return nil, nil, err
	}
	defer func() { t.reads = nil }()
	admissions, refusals = make([]Admission, len(obs)), make([]error, len(obs))
	for i, o := range obs {
		a, err := t.observeRead(ctx, tenant, o)
		var ce *ConflictError
		if errors.As(err, &ce) {
			// Another transaction changed the fact's key since the batch
			// read it: observe it again with what the database holds.
			t.reads.forget(o.Record)
			a, err = t.observeRead(ctx, tenant, o)
		}
		var re *RejectedError
		switch {
		case errors.As(err, &re):
			refusals[i] = err
		case err != nil:
			return nil, nil, err
		}
		admissions[i] = a
	}
	return admissions, refusals, nil
}

// observeRead is [Tx.ObserveFact] of one observation of a batch. What
// the fact's savepoint reads into the batch's reads may show what the
// savepoint wrote: when it rolls back, that is read afresh.
func (t *Tx) observeRead(ctx context.Context, tenant string, o Observation) (Admission, error) {
	r := t.reads
	clear(r.freshKeys)
	clear(r.freshIDs)
	a, err := t.ObserveFact(ctx, tenant, o.Record, o.Change)
	if err != nil {
		for k := range r.freshKeys {
			delete(r.facts, k)
		}
		for id := range r.freshIDs {
			delete(r.exists, id)
		}
		r.forget(o.Record)
	}
	return a, err
}

// factReads are what the gates of a batch of facts read of memory, read
// ahead for the batch ([Tx.ObserveFacts]) and kept true while it writes
// ([Tx.wrote], [Tx.related]). A nil *factReads reads nothing ahead.
type factReads struct {
	tenant string
	// facts are the live facts of each key, with their provenance; a key
	// that is not here is read from the database when asked for.
	facts map[store.FactKey][]store.LiveFact
	// exists are records known to be the tenant's.
	exists map[uuid.UUID]bool
	// edges are records' evidence edges (store.EvidenceEdges).
	edges map[uuid.UUID]evidenceEdges
	// reputation are the agents' counts as stored.
	reputation map[string]store.Reputation
	// opened are the sealed payloads of what was read ahead, for the
	// transaction that reads them from here (sealing.go).
	opened map[uuid.UUID]opened
	// freshKeys and freshIDs are the keys and records read into facts
	// and exists since the current fact's savepoint began.
	freshKeys map[store.FactKey]bool
	freshIDs  map[uuid.UUID]bool
}

type evidenceEdges struct {
	refs []string
	rels []uuid.UUID
}

// factKey is the key of a fact, false for another record or a payload
// that does not say.
func factKey(rec memory.Record) (store.FactKey, bool) {
	if rec.Type != memory.Semantic {
		return store.FactKey{}, false
	}
	var p struct {
		Subject   string `json:"subject"`
		Predicate string `json:"predicate"`
	}
	if json.Unmarshal(rec.Payload, &p) != nil {
		return store.FactKey{}, false
	}
	return store.FactKey{Scope: rec.Scope, Subject: p.Subject, Predicate: p.Predicate}, true
}

// readAhead reads what the gates of obs will read: their keys' live
// facts, the records they name, those records' evidence edges and their
// agents' reputation, one statement each.
func (t *Tx) readAhead(ctx context.Context, tenant string, obs []Observation) error {
	r := &factReads{tenant: tenant, facts: map[store.FactKey][]store.LiveFact{}, exists: map[uuid.UUID]bool{},
		edges: map[uuid.UUID]evidenceEdges{}, reputation: map[string]store.Reputation{}, opened: map[uuid.UUID]opened{},
		freshKeys: map[store.FactKey]bool{}, freshIDs: map[uuid.UUID]bool{}}
	var keys []store.FactKey
	var ids []uuid.UUID
	var agents []string
	seenKey, seenID, seenAgent := map[store.FactKey]bool{}, map[uuid.UUID]bool{}, map[string]bool{}
	for _, o := range obs {
		if k, ok := factKey(o.Record); ok && !seenKey[k] {
			seenKey[k] = true
			keys = append(keys, k)
			r.facts[k] = nil
		}
		named := make([]uuid.UUID, 0, len(o.Record.Relations))
		for _, rel := range o.Record.Relations {
			named = append(named, rel.TargetID)
		}
		for _, s := range o.Record.Provenance.Sources {
			if id, ok := recordRef(s); ok {
				named = append(named, id)
			}
		}
		for _, id := range named {
			if !seenID[id] {
				seenID[id] = true
				ids = append(ids, id)
			}
		}
		if a := o.Record.AgentID; a != "" && !seenAgent[a] {
			seenAgent[a] = true
			agents = append(agents, a)
		}
	}
	if len(keys) > 0 {
		live, err := store.LiveFactsOf(ctx, t.tx, tenant, keys)
		if err != nil {
			return err
		}
		if err := r.add(ctx, t, live); err != nil {
			return err
		}
	}
	if len(ids) > 0 {
		found, err := store.ExistingIDs(ctx, t.tx, tenant, ids)
		if err != nil {
			return err
		}
		for _, id := range found {
			r.exists[id] = true
		}
		refs, rels, err := store.EvidenceEdges(ctx, t.tx, tenant, found)
		if err != nil {
			return err
		}
		for _, id := range found {
			r.edges[id] = evidenceEdges{refs: refs[id], rels: rels[id]}
		}
	}
	if len(agents) > 0 {
		reps, err := store.Reputations(ctx, t.tx, tenant, agents)
		if err != nil {
			return err
		}
		for _, a := range agents {
			rep, ok := reps[a]
			if !ok {
				rep = store.Reputation{AgentID: a}
			}
			r.reputation[a] = rep
		}
	}
	t.reads = r
	return nil
}

// recordRef is the record a source of kind record cites.
func recordRef(s memory.Source) (uuid.UUID, bool) {
	if s.Kind != SourceRecord || len(s.Ref) <= len("record://") || s.Ref[:len("record://")] != "record://" {
		return uuid.Nil, false
	}
	id, err := uuid.Parse(s.Ref[len("record://"):])
	return id, err == nil
}

// add keeps live facts read from the database, opening sealed payloads.
func (r *factReads) add(ctx context.Context, t *Tx, live []store.LiveFact) error {
	recs := make([]memory.Record, len(live))
	for i := range live {
		recs[i] = live[i].Record
	}
	sealed := t.opened
	t.opened = r.opened
	err := t.open(ctx, r.tenant, recs)
	r.opened, t.opened = t.opened, sealed
	if r.opened == nil {
		r.opened = map[uuid.UUID]opened{}
	}
	if err != nil {
		return err
	}
	for i := range live {
		live[i].Record = recs[i]
		k, ok := factKey(recs[i])
		if !ok {
			continue
		}
		r.facts[k] = append(r.facts[k], live[i])
	}
	return nil
}

// liveOf returns the live facts of a key as read ahead, reading a key
// not read yet (or read afresh since a write) from the database; ok is
// false when nothing is read ahead for tenant.
func (t *Tx) liveOf(ctx context.Context, tenant string, k store.FactKey) (live []store.LiveFact, ok bool, err error) {
	r := t.reads
	if r == nil || r.tenant != tenant {
		return nil, false, nil
	}
	live, ok = r.facts[k]
	if !ok {
		read, err := store.LiveFactsOf(ctx, t.tx, tenant, []store.FactKey{k})
		if err != nil {
			return nil, false, err
		}
		r.facts[k], r.freshKeys[k] = nil, true
		if err := r.add(ctx, t, read); err != nil {
			return nil, false, err
		}
		live = r.facts[k]
	}
	// What the transaction reads from here it may write back: its sealed
	// payloads are remembered as if it had read them itself.
	for _, f := range live {
		if o, sealed := r.opened[f.Record.ID]; sealed {
			if t.opened == nil {
				t.opened = map[uuid.UUID]opened{}
			}
			t.opened[f.Record.ID] = o
		}
	}
	return slices.Clone(live), true, nil
}

// sameContentOf is [store.SameContent] for a fact, from the live facts of
// its key read ahead: the oldest with its content hash, else with its
// fingerprint.
func sameContentOf(live []store.LiveFact, hash, fingerprint []byte) (memory.Record, bool, error) {
	var best *store.LiveFact
	bestExact := false
	for i := range live {
		f := &live[i]
		exact := f.ContentHash != nil && bytes.Equal(f.ContentHash, hash)
		if !exact && (fingerprint == nil || f.Fingerprint == nil || !bytes.Equal(f.Fingerprint, fingerprint)) {
			continue
		}
		if best == nil || exact && !bestExact || exact == bestExact && older(f.Record, best.Record) {
			best, bestExact = f, exact
		}
	}
	if best == nil {
		return memory.Record{}, false, store.ErrNotFound
	}
	return best.Record, bestExact, nil
}

// older orders records as store.SameContent does: by creation, then id.
func older(a, b memory.Record) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return bytes.Compare(a.ID[:], b.ID[:]) < 0
}

// forget drops what is read ahead of rec's key, to be read afresh.
func (r *factReads) forget(rec memory.Record) {
	if r == nil {
		return
	}
	if k, ok := factKey(rec); ok {
		delete(r.facts, k)
	} else if rec.Type == memory.Semantic {
		clear(r.facts) // a fact whose key is unknown: read every key afresh
	}
	delete(r.edges, rec.ID)
}

// wrote keeps what is read ahead true after the transaction wrote rec.
func (t *Tx) wrote(rec memory.Record) {
	if t.reads != nil {
		t.reads.forget(rec)
		t.reads.exists[rec.ID], t.reads.freshIDs[rec.ID] = true, true
	}
}

// related keeps what is read ahead true after the transaction gave
// source a relation.
func (t *Tx) related(source uuid.UUID) {
	if t.reads != nil {
		delete(t.reads.edges, source)
	}
}

// existingIDs is [store.ExistingIDs], from what is read ahead when it
// knows every id.
func (t *Tx) existingIDs(ctx context.Context, tenant string, ids []uuid.UUID) ([]uuid.UUID, error) {
	if r := t.reads; r != nil && r.tenant == tenant && !slices.ContainsFunc(ids, func(id uuid.UUID) bool { return !r.exists[id] }) {
		return slices.Clone(ids), nil
	}
	return store.ExistingIDs(ctx, t.tx, tenant, ids)
}

// evidenceEdges is [store.EvidenceEdges], from what is read ahead for the
// ids it holds.
func (t *Tx) evidenceEdges(ctx context.Context, tenant string, ids []uuid.UUID) (map[uuid.UUID][]string, map[uuid.UUID][]uuid.UUID, error) {
	r := t.reads
	if r == nil || r.tenant != tenant {
		return store.EvidenceEdges(ctx, t.tx, tenant, ids)
	}
	refs, rels := map[uuid.UUID][]string{}, map[uuid.UUID][]uuid.UUID{}
	var unread []uuid.UUID
	for _, id := range ids {
		e, ok := r.edges[id]
		if !ok {
			unread = append(unread, id)
			continue
		}
		refs[id], rels[id] = e.refs, e.rels
	}
	if len(unread) == 0 {
		return refs, rels, nil
	}
	rf, rl, err := store.EvidenceEdges(ctx, t.tx, tenant, unread)
	if err != nil {
		return nil, nil, err
	}
	for id, v := range rf {
		refs[id] = v
	}
	for id, v := range rl {
		rels[id] = v
	}
	return refs, rels, nil
}

// storedReputation is an agent's counts as stored ([store.GetReputation]),
// from what is read ahead when it holds the agent. The transaction's own
// counts are written when it commits, so the stored row does not change
// under it.
func (t *Tx) storedReputation(ctx context.Context, tenant, agent string) (store.Reputation, error) {
	if r := t.reads; r != nil && r.tenant == tenant {
		if rep, ok := r.reputation[agent]; ok {
			return rep, nil
		}
	}
	return store.GetReputation(ctx, t.tx, tenant, agent)
}

// addRelation and addRelations are the write path's only calls to
// store's relation writes: each keeps what is read ahead true.
func (t *Tx) addRelation(ctx context.Context, tenant string, source uuid.UUID, rel memory.Relation) error {
	t.related(source)
	return store.AddRelation(ctx, t.tx, tenant, source, rel)
}

func (t *Tx) addRelations(ctx context.Context, tenant string, source uuid.UUID, rels []memory.Relation) error {
	t.related(source)
	return store.AddRelations(ctx, t.tx, tenant, source, rels)
}
