package revise

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// ProvenanceConfig configures provenance signing (write-path RFC §12.4.5).
type ProvenanceConfig struct {
	// Keys are the HMAC-SHA256 signing keys by id. Stamps name the key
	// they were signed with, so a key can rotate: add the new one, make
	// it Active, keep the old one while stamps signed with it remain.
	Keys []SigningKey `yaml:"keys"`
	// Active is the id of the key new stamps are signed with; with no
	// keys, stamps are stored unsigned (and the audit counts them).
	Active string `yaml:"active"`
}

// SigningKey is one provenance signing key.
type SigningKey struct {
	ID     string `yaml:"id"`
	Secret string `yaml:"secret"`
}

// MinSigningKeyBytes is the shortest signing secret accepted.
const MinSigningKeyBytes = 32

func (p ProvenanceConfig) validate() error {
	seen := map[string]bool{}
	for i, k := range p.Keys {
		field := fmt.Sprintf("provenance.keys[%d]", i)
		if k.ID == "" || strings.ContainsFunc(k.ID, unicode.IsSpace) {
			return &GatesError{Field: field + ".id", Problem: "is required, without spaces"}
		}
		if seen[k.ID] {
			return &GatesError{Field: field + ".id", Problem: "names another key's id"}
		}
		seen[k.ID] = true
		if len(k.Secret) < MinSigningKeyBytes {
			return &GatesError{Field: field + ".secret", Problem: fmt.Sprintf("must be at least %d bytes", MinSigningKeyBytes)}
		}
	}
	if p.Active != "" && !seen[p.Active] {
		return &GatesError{Field: "provenance.active", Problem: fmt.Sprintf("%q names no key", p.Active)}
	}
	if p.Active == "" && len(p.Keys) > 0 {
		return &GatesError{Field: "provenance.active", Problem: "is required with keys: the id of the key that signs"}
	}
	return nil
}

func (p ProvenanceConfig) key(id string) []byte {
	for _, k := range p.Keys {
		if k.ID == id {
			return []byte(k.Secret)
		}
	}
	return nil
}

// Stamp is a record's provenance as the write path stamps it (§12.4.2):
// the source agent and thread, the evidence with its authority, the
// confidence stated and adjusted (§12.4.4), the approval state, the hash of
// the content at write time and the risk the approval gate saw.
type Stamp struct {
	RecordID           uuid.UUID       `json:"record_id"`
	Type               memory.Type     `json:"type"`
	Actor              string          `json:"actor"`
	AgentID            string          `json:"agent_id,omitempty"`
	ThreadID           string          `json:"thread_id,omitempty"`
	Evidence           []StampEvidence `json:"evidence"`
	AgentConfidence    float64         `json:"agent_confidence"`
	AdjustedConfidence float64         `json:"adjusted_confidence"`
	EvidenceAuthority  float64         `json:"evidence_authority"`
	Approval           string          `json:"approval"` // not_required, pending, approved, rejected
	Risk               float64         `json:"risk"`
	ContentHash        string          `json:"content_hash"`
	CreatedAt          time.Time       `json:"created_at"`
	// Approver, ApprovedAt and Justification are a person's decision on
	// the record (§12.4.2's approver_id, approval_timestamp and
	// approval_justification; §12.6.6): who approved or rejected it, when
	// and why. Empty until someone decided; left out of the signed form
	// then, so that stamps signed before they existed still verify.
	Approver      string     `json:"approver_id,omitempty"`
	ApprovedAt    *time.Time `json:"approval_timestamp,omitempty"`
	Justification string     `json:"approval_justification,omitempty"`
}

// StampEvidence is one source of a stamp's evidence with its authority.
type StampEvidence struct {
	Kind      string  `json:"kind"`
	Ref       string  `json:"ref"`
	Authority float64 `json:"authority"`
}

// Approval states of a stamp.
const (
	ApprovalNotRequired = "not_required"
	ApprovalPending     = "pending"
	ApprovalApproved    = "approved"
	ApprovalRejected    = "rejected"
)

// contentHash is the SHA-256 of a record's type and payload in canonical
// form (keys sorted), without the revision bookkeeping of a fact: the same
// content written twice hashes the same (§12.3.2, tier 1).
func contentHash(rec memory.Record) ([]byte, error) {
	var v any
	if err := json.Unmarshal(rec.Payload, &v); err != nil {
		return nil, fmt.Errorf("hash payload: %w", err)
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "revision")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("hash payload: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", rec.Type, rec.Scope)
	h.Write(b)
	return h.Sum(nil), nil
}

// fingerprint is a record's structural fingerprint (§12.3.2, tier 2): a
// fact's scope, subject, predicate, conditions, normalised object and time
// box; a procedure's skill and trigger signals; a plan's id and version.
// Other types have none.
func fingerprint(rec memory.Record) []byte {
	var parts []string
	switch rec.Type {
	case memory.Semantic:
		var p memory.SemanticPayload
		if json.Unmarshal(rec.Payload, &p) != nil {
			return nil
		}
		conds, _ := json.Marshal(p.Validity.Conditions)
		parts = []string{p.Subject, p.Predicate, string(conds), normalise(p.Object)}
		if p.Validity.Start != nil || p.Validity.End != nil {
			// A time box is part of what a fact says: the same object for
			// another period is another fact (substrate RFC §15A.8).
			box, _ := json.Marshal(memory.Validity{Start: p.Validity.Start, End: p.Validity.End})
			parts = append(parts, string(box))
		}
	case memory.Competence:
		var p struct {
			Skill    string `json:"skill_name"`
			Triggers []struct {
				Signal string `json:"signal"`
			} `json:"triggers"`
		}
		if json.Unmarshal(rec.Payload, &p) != nil {
			return nil
		}
		parts = []string{strings.ToLower(strings.TrimSpace(p.Skill))}
		for _, tr := range p.Triggers {
			parts = append(parts, normaliseText(tr.Signal))
		}
		slices.Sort(parts[1:])
	case memory.PlanGraph:
		var p memory.PlanGraphPayload
		if json.Unmarshal(rec.Payload, &p) != nil {
			return nil
		}
		parts = []string{p.PlanID, p.Version}
		if conds := p.Conditions(); len(conds) > 0 {
			// A plan for other conditions is another plan of the intent,
			// not a conflicting version of this one (substrate RFC §9:
			// several plans for one intent, selected by constraints).
			b, _ := json.Marshal(conds)
			parts = append(parts, string(b))
		}
	default:
		return nil
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s", rec.Type, rec.Scope)
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return h.Sum(nil)
}

// normalise is a JSON value with its strings folded (case, surrounding and
// repeated space), so that surface variations fingerprint alike.
func normalise(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var fold func(any) any
	fold = func(v any) any {
		switch x := v.(type) {
		case string:
			return normaliseText(x)
		case []any:
			for i := range x {
				x[i] = fold(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = fold(x[k])
			}
		}
		return v
	}
	b, _ := json.Marshal(fold(v))
	return string(b)
}

func normaliseText(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// checkCycle is the provenance gate's cycle check (write-path RFC
// §12.11.4): a write whose evidence chain — records it cites, and what
// those were derived from, superseded or forked — reaches back to the
// record itself or to the records it revises is circular reinforcement,
// and refused.
func (t *Tx) checkCycle(ctx context.Context, tenant string, rec memory.Record, ev evidence, lineage []uuid.UUID) error {
	self := append([]uuid.UUID{rec.ID}, lineage...)
	frontier := slices.Clone(ev.Records)
	for _, r := range rec.Relations {
		if r.Predicate == memory.DerivedFrom {
			frontier = append(frontier, r.TargetID)
		}
	}
	seen := map[uuid.UUID]bool{}
	const maxVisited = 10_000
	for len(frontier) > 0 && len(seen) < maxVisited {
		var next []uuid.UUID
		for _, id := range frontier {
			if slices.Contains(self, id) {
				return reject(GateProvenance, ReasonProvenanceCycle, []uuid.UUID{id},
					"the evidence of this write leads back to record %s, which it revises or is: circular reinforcement", id)
			}
			if !seen[id] {
				seen[id] = true
				next = append(next, id)
			}
		}
		if len(next) == 0 {
			break
		}
		refs, rels, err := t.evidenceEdges(ctx, tenant, next)
		if err != nil {
			return err
		}
		frontier = frontier[:0]
		for _, id := range next {
			for _, ref := range refs[id] {
				if target, err := uuid.Parse(strings.TrimPrefix(ref, "record://")); err == nil {
					frontier = append(frontier, target)
				}
			}
			frontier = append(frontier, rels[id]...)
		}
	}
	return nil
}

// stamp builds, signs and stores a record's provenance stamp.
func (t *Tx) stamp(ctx context.Context, tenant string, rec memory.Record, ch Change, ev evidence, approval string, risk float64) error {
	row, err := t.w.stampRow(tenant, rec, ch, ev, approval, risk)
	if err != nil {
		return err
	}
	return store.InsertProvenance(ctx, t.tx, row)
}

// stampRow is the provenance row of rec: its stamp, signed with the active
// key when there is one.
func (w *Writer) stampRow(tenant string, rec memory.Record, ch Change, ev evidence, approval string, risk float64) (store.ProvenanceRow, error) {
	return w.signedRow(tenant, rec, Stamp{Actor: ch.Actor, Approval: approval, Risk: risk, CreatedAt: rec.CreatedAt}, ev)
}

// signedRow is the provenance row of rec with the stamp s, whose who and
// approval it keeps: what the stamp says of rec itself — its evidence with
// each source's authority, its confidence stated and adjusted (approved
// or not, §12.4.4), its content hash — is computed afresh, and the stamp
// signed with the active key when there is one (§12.4.5).
func (w *Writer) signedRow(tenant string, rec memory.Record, s Stamp, ev evidence) (store.ProvenanceRow, error) {
	hash, err := contentHash(rec)
	if err != nil {
		return store.ProvenanceRow{}, err
	}
	s.RecordID, s.Type, s.AgentID, s.ThreadID = rec.ID, rec.Type, rec.AgentID, rec.ThreadID
	s.Evidence = make([]StampEvidence, len(rec.Provenance.Sources))
	s.AgentConfidence = rec.Confidence
	s.AdjustedConfidence = w.adjusted(rec.Confidence, ev, s.Approval == ApprovalApproved)
	s.EvidenceAuthority, s.ContentHash = ev.Best, hex.EncodeToString(hash)
	for i, src := range rec.Provenance.Sources {
		s.Evidence[i] = StampEvidence{Kind: src.Kind, Ref: src.Ref, Authority: w.cfg.Gates.Evidence.Authority[src.Kind]}
	}
	doc, err := json.Marshal(s)
	if err != nil {
		return store.ProvenanceRow{}, fmt.Errorf("encode stamp: %w", err)
	}
	row := store.ProvenanceRow{Tenant: tenant, RecordID: rec.ID, Stamp: doc, ContentHash: hash, Fingerprint: fingerprint(rec)}
	p := w.cfg.Gates.Provenance
	if p.Active != "" {
		row.KeyID, row.Signature = p.Active, sign(p.key(p.Active), doc)
	}
	return row, nil
}

// restamp rewrites rec's provenance stamp after a decision on it — a
// reviewer's approval or rejection, a release from quarantine — and signs
// it again (write-path RFC §12.4.2, §12.6.6: the approval state, the
// approver, the time and the justification are part of the provenance, and
// the approval term of the adjusted confidence, §12.4.4, counts from now).
// edit sets what the decision changes; who wrote the record, when, and the
// risk the approval gate saw are kept. A record stamped before it had a
// stamp gets one. The evidence is weighed as the gates weighed it, from
// the sources the record cites.
func (t *Tx) restamp(ctx context.Context, tenant string, rec memory.Record, edit func(*Stamp)) error {
	if rec.Type == memory.Working {
		return nil // its audit entry is its provenance
	}
	stamps, err := store.Stamps(ctx, t.tx, tenant, []uuid.UUID{rec.ID})
	if err != nil {
		return err
	}
	s := Stamp{Actor: rec.AgentID, Approval: ApprovalNotRequired, CreatedAt: rec.CreatedAt}
	if doc, ok := stamps[rec.ID]; ok {
		s = Stamp{}
		if err := json.Unmarshal(doc, &s); err != nil {
			return fmt.Errorf("decode stamp: %w", err)
		}
	}
	edit(&s)
	row, err := t.w.signedRow(tenant, rec, s, t.w.evidenceOf(rec))
	if err != nil {
		return err
	}
	return store.ReplaceProvenance(ctx, t.tx, row)
}

// decision sets a person's decision in a stamp.
func decision(approval, by, why string, at time.Time) func(*Stamp) {
	return func(s *Stamp) {
		s.Approval, s.Approver, s.Justification = approval, by, why
		s.ApprovedAt = &at
	}
}

// sign is the HMAC-SHA256 of a stamp's canonical form.
func sign(key, doc []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(doc)
	return m.Sum(nil)
}

// canonicalStamp re-encodes a stored stamp the way it was signed: the
// database keeps JSON in its own form, the signature is over the write
// path's.
func canonicalStamp(doc json.RawMessage) ([]byte, error) {
	var s Stamp
	if err := json.Unmarshal(doc, &s); err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// ProvenanceAudit counts what a provenance audit found.
type ProvenanceAudit struct {
	Checked  int `json:"checked"`
	Valid    int `json:"valid"`
	Unsigned int `json:"unsigned"`
	// UnknownKey stamps were signed with a key no longer configured.
	UnknownKey int `json:"unknown_key"`
	// Tampered stamps fail their signature; NewlyTampered were found so
	// by this audit (each gets an audit entry once).
	Tampered      int `json:"tampered"`
	NewlyTampered int `json:"newly_tampered"`
}

// AuditProvenanceActor is the actor of the audit entries the provenance
// audit writes.
const AuditProvenanceActor = "job:audit_provenance"

// AuditProvenance re-verifies the signature of every stamp after key
// after, batch at a time, and marks the ones that fail as tampered, each
// with an audit entry (write-path RFC §12.4.5: tamper detection during
// audit sweeps). progress is called after each batch with the key reached.
func (w *Writer) AuditProvenance(ctx context.Context, after store.Key, batch int, progress func(store.Key, ProvenanceAudit) error) (ProvenanceAudit, error) {
	var res ProvenanceAudit
	p := w.cfg.Gates.Provenance
	for {
		rows, err := store.ScanProvenance(ctx, w.db, after, batch)
		if err != nil {
			return res, err
		}
		var bad []store.Key
		for _, r := range rows {
			res.Checked++
			after = store.Key{Tenant: r.Tenant, ID: r.RecordID}
			key := p.key(r.KeyID)
			switch {
			case r.KeyID == "":
				res.Unsigned++
				continue
			case key == nil:
				res.UnknownKey++
				continue
			}
			doc, err := canonicalStamp(r.Stamp)
			if err == nil && hmac.Equal(sign(key, doc), r.Signature) {
				res.Valid++
				continue
			}
			res.Tampered++
			if r.TamperedAt == nil {
				bad = append(bad, after)
			}
		}
		if len(bad) > 0 {
			n, err := store.MarkTampered(ctx, w.db, bad, w.clock(), AuditProvenanceActor, "the provenance stamp does not match its signature")
			if err != nil {
				return res, err
			}
			res.NewlyTampered += int(n)
			w.metrics.tampered.Add(float64(n))
		}
		if progress != nil {
			if err := progress(after, res); err != nil {
				return res, err
			}
		}
		if len(rows) < batch {
			return res, nil
		}
	}
}

// AuditProvenanceJob is the name of the periodic provenance audit, and
// DefaultAuditProvenanceSchedule its default schedule.
const (
	AuditProvenanceJob             = "audit_provenance"
	DefaultAuditProvenanceSchedule = "@daily"
	auditBatch                     = 1000
)

// Progress is what a periodic job reports to its scheduler: a cursor, so
// that a run cut off resumes where it stopped, and counts.
type Progress interface {
	Cursor(ctx context.Context, v any) (bool, error)
	SaveCursor(ctx context.Context, v any) error
	Add(name string, n int64)
}

// RunProvenanceAudit is the audit_provenance job: one pass of
// [Writer.AuditProvenance] over every stamp, resumable, counting what it
// found (checked, valid, unsigned, unknown_key, tampered, newly_tampered).
func (w *Writer) RunProvenanceAudit(ctx context.Context, p Progress) error {
	var after store.Key
	if _, err := p.Cursor(ctx, &after); err != nil {
		return err
	}
	var prev ProvenanceAudit
	report := func(r ProvenanceAudit) {
		p.Add("checked", int64(r.Checked-prev.Checked))
		p.Add("valid", int64(r.Valid-prev.Valid))
		p.Add("unsigned", int64(r.Unsigned-prev.Unsigned))
		p.Add("unknown_key", int64(r.UnknownKey-prev.UnknownKey))
		p.Add("tampered", int64(r.Tampered-prev.Tampered))
		p.Add("newly_tampered", int64(r.NewlyTampered-prev.NewlyTampered))
		prev = r
	}
	_, err := w.AuditProvenance(ctx, after, auditBatch, func(k store.Key, r ProvenanceAudit) error {
		report(r)
		return p.SaveCursor(ctx, k)
	})
	if err != nil {
		return err
	}
	return p.SaveCursor(ctx, nil)
}
