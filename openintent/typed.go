package openintent

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
)

// An entry's typed record is what engram learns from and retrieves (see
// the package comment, "Typed memory"): an episodic entry's episode, a
// semantic entry's fact. A working entry has none: it is working memory.

// FactPredicate is the predicate of a semantic entry's fact: its subject
// is "<namespace>/<key>", its object the entry's value.
const FactPredicate = "is"

// ObservationKind is the event_kind of the timeline events of an episodic
// entry's episode: one per version of the entry.
const ObservationKind = "observation"

// maxSummaryBytes caps the text of an observation: what lexical retrieval
// matches an episode on.
const maxSummaryBytes = 4 << 10

// typedRef is what a typed record's payload holds of its entry, under
// [payloadKey].
type typedRef struct {
	EntryID   string `json:"entry_id"`
	AgentID   string `json:"agent_id,omitempty"`
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
}

// hasTyped reports whether entries of tier have a typed record.
func hasTyped(tier string) bool { return tier == TierEpisodic || tier == TierSemantic }

// subjectOf is the subject of a semantic entry's fact: its namespace and
// key, so that the write path's one active fact per (scope, subject,
// predicate) matches RFC-0015 §1.2's one semantic entry per (namespace,
// key).
func subjectOf(s stored) string { return s.Namespace + "/" + s.Key }

// meta are the record fields an entry and its typed record share.
type meta struct {
	tags        []string
	sensitivity *memory.Sensitivity
	expiresAt   *time.Time
}

func (m meta) apply(rec map[string]any) {
	rec["tags"] = nonNil(m.tags)
	if m.sensitivity != nil {
		rec["sensitivity"] = *m.sensitivity
	}
	if m.expiresAt != nil {
		rec["lifecycle"] = map[string]any{"expires_at": m.expiresAt.UTC().Format(time.RFC3339Nano)}
	}
}

// metaOf is the shared fields of a stored entry's record.
func metaOf(rec memory.Record) meta {
	sens := rec.Sensitivity
	return meta{tags: rec.Tags, sensitivity: &sens, expiresAt: rec.Lifecycle.ExpiresAt}
}

// typedRecord is the /v1 record document of an entry's typed record, new
// with id: its fact, or its episode with the observation of version.
func typedRecord(id, entry uuid.UUID, s stored, m meta, version int, now time.Time) map[string]any {
	ref := typedRef{EntryID: entry.String(), Namespace: s.Namespace, Key: s.Key}
	rec := map[string]any{"id": id, "type": memory.Type(s.MemoryType), "scope": s.Namespace, "agent_id": s.AgentID}
	m.apply(rec)
	if s.MemoryType == TierSemantic {
		// A fact: shared knowledge (RFC-0015 §2.3), visible to the tenant
		// like the entry.
		rec["visibility"] = memory.VisibilityTenant
		rec["payload"] = map[string]any{"kind": memory.Semantic, "subject": subjectOf(s), "predicate": FactPredicate,
			"object": s.Value, "validity": map[string]any{"mode": "global"}, payloadKey: ref}
		return rec
	}
	// An episode: what the agent noted (RFC-0015 §2.2), personal to it.
	ref.AgentID = s.AgentID
	rec["visibility"] = memory.VisibilityAgent
	rec["payload"] = map[string]any{"kind": memory.Episodic, "timeline": []memory.TimelineEntry{observation(entry, s, version, now)},
		payloadKey: ref}
	return rec
}

// observation is the timeline event of version of an episodic entry: its
// namespace, key and value as text, which retrieval matches.
func observation(entry uuid.UUID, s stored, version int, now time.Time) memory.TimelineEntry {
	text := s.Namespace + "/" + s.Key + ": " + string(s.Value)
	if len(text) > maxSummaryBytes {
		text = text[:maxSummaryBytes]
		for !utf8.ValidString(text) {
			text = text[:len(text)-1]
		}
	}
	return memory.TimelineEntry{T: now.UTC(), EventKind: ObservationKind,
		Ref: "openintent:memory/" + entry.String() + "@" + strconv.Itoa(version), Summary: text}
}

// typedID is the id of an entry's typed record, or uuid.Nil.
func (s stored) typedID() uuid.UUID {
	id, _ := uuid.Parse(s.TypedID)
	return id
}

// plan is what one OpenIntent request writes: the operations of one /v1
// batch, one transaction of the write path (substrate RFC §15.7), and
// what to purge once it committed (RFC-0015 §9.3).
type plan struct {
	ops   []api.BatchOperation
	purge []uuid.UUID
	// owner is, for each operation, the index of the request's item it
	// belongs to (a batch's entries), so that a failure names the item.
	owner []int
	item  int
}

func (p *plan) add(op api.BatchOperation) int {
	p.ops = append(p.ops, op)
	p.owner = append(p.owner, p.item)
	return len(p.ops) - 1
}

// create adds the records of a new entry: the entry, then its typed
// record, each with an id of its own; it returns the entry's id and the
// index of its operation.
func (p *plan) create(req createRequest, now time.Time) (uuid.UUID, int, error) {
	entry, err := uuid.NewV7()
	if err != nil {
		return entry, 0, err
	}
	s := req.stored
	var typed uuid.UUID
	if hasTyped(s.MemoryType) {
		if typed, err = uuid.NewV7(); err != nil {
			return entry, 0, err
		}
		s.TypedID = typed.String()
	}
	doc := recordOf(createRequest{stored: s, Tags: req.Tags, Sensitivity: req.Sensitivity, ExpiresAt: req.ExpiresAt}, now)
	doc["id"] = entry
	i := p.add(api.BatchOperation{Op: api.BatchCreate, Record: mustJSON(doc), Rationale: "OpenIntent memory.created"})
	if typed != uuid.Nil {
		m := meta{tags: req.Tags, expiresAt: req.expiry(now)}
		if req.Sensitivity != nil {
			sens := sensitivityFrom(*req.Sensitivity)
			m.sensitivity = &sens
		}
		p.add(api.BatchOperation{Op: api.BatchCreate, Record: mustJSON(typedRecord(typed, entry, s, m, 1, now)),
			Rationale: "OpenIntent memory.created: the entry's " + typedNoun(s.MemoryType)})
	}
	return entry, i, nil
}

// update adds the revision of entry rec (whose stored entry was old) to
// next at version: the entry's next version, and its typed record's — an
// observation appended to its episode, or its fact superseded by one with
// the new value. A typed record that is gone (decayed, or an entry older
// than typed records) is made anew. It returns the index of the entry's
// operation.
func (p *plan) update(rec memory.Record, typed *memory.Record, next stored, tags []string, version int, now time.Time) (int, error) {
	entry := rec.ID
	var typedOp *api.BatchOperation
	if hasTyped(next.MemoryType) {
		m := metaOf(rec)
		m.tags = tags
		switch {
		case typed != nil && typed.Status == memory.Active && next.MemoryType == TierEpisodic:
			typedOp = &api.BatchOperation{Op: api.BatchAppend, ID: typed.ID, Rationale: "OpenIntent memory.updated",
				Timeline: []memory.TimelineEntry{observation(entry, next, version+1, now)}}
		case typed != nil && typed.Status == memory.Active:
			id, err := uuid.NewV7()
			if err != nil {
				return 0, err
			}
			next.TypedID = id.String()
			typedOp = &api.BatchOperation{Op: api.BatchSupersede, ID: typed.ID, Version: typed.Version,
				Record: mustJSON(typedRecord(id, entry, next, m, version+1, now)), Rationale: "OpenIntent memory.updated"}
		default:
			id, err := uuid.NewV7()
			if err != nil {
				return 0, err
			}
			next.TypedID = id.String()
			typedOp = &api.BatchOperation{Op: api.BatchCreate, Record: mustJSON(typedRecord(id, entry, next, m, version+1, now)),
				Rationale: "OpenIntent memory.updated: the entry's " + typedNoun(next.MemoryType)}
		}
	}
	payload := mustJSON(payloadOf(next))
	i := p.add(api.BatchOperation{Op: api.BatchUpdate, ID: entry, Version: version, Payload: payload, Tags: nonNil(tags),
		Rationale: "OpenIntent memory.updated"})
	if typedOp != nil {
		p.add(*typedOp)
	}
	return i, nil
}

// remove adds the deletion of an entry and of its typed record, and their
// purge after the batch.
func (p *plan) remove(f found, rationale string) {
	p.add(api.BatchOperation{Op: api.BatchDelete, ID: f.rec.ID, Rationale: rationale})
	p.purge = append(p.purge, f.rec.ID)
	if id := f.stored.typedID(); id != uuid.Nil {
		p.add(api.BatchOperation{Op: api.BatchDelete, ID: id, Rationale: rationale})
		p.purge = append(p.purge, id)
	}
}

// typedNoun names the typed record of a tier.
func typedNoun(tier string) string {
	if tier == TierSemantic {
		return "fact"
	}
	return "episode"
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("openintent: encode a record: " + err.Error()) // maps of strings, numbers and raw JSON
	}
	return b
}

// run writes p in one transaction, then purges what it deleted (a key
// that may not purge leaves that to the purge job). A failure is the
// failed operation's problem, whose Operation names it.
func (h *Handler) run(cl *call, p *plan) (*api.BatchResult, error) {
	if len(p.ops) == 0 {
		return &api.BatchResult{}, nil
	}
	res, err := cl.c.Batch(cl.ctx, api.BatchRequest{Operations: p.ops})
	if err != nil {
		return nil, err
	}
	for _, id := range p.purge {
		if err := h.purge(cl, id); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// failedOp is the index of the operation a batch's error names, or -1.
func failedOp(err error) int {
	ce, ok := apiError(err)
	if !ok || ce.Problem.Operation == nil {
		return -1
	}
	return *ce.Problem.Operation
}

// typedOf reads an entry's typed record, nil when it has none or it is
// gone.
func (h *Handler) typedOf(cl *call, s stored) (*memory.Record, error) {
	id := s.typedID()
	if id == uuid.Nil {
		return nil, nil
	}
	rec, err := cl.c.GetRecord(cl.ctx, id)
	if ce, ok := apiError(err); ok && ce.Problem.Status == http.StatusNotFound {
		return nil, nil
	}
	return rec, err
}
