package revise

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/seal"
	"github.com/engram-dev/engram/store"
)

// Encryption at rest (substrate RFC §15.9). The write path seals the
// payload of every record at or above the configured sensitivity as it
// writes it (insert, revision), and the entries appended to such an
// episode; it opens every record it reads (the wrappers below, its only
// calls to store's record reads), so the gates, the revision operations and
// what they return see plaintext. A record read and written back with its
// payload unchanged keeps its ciphertext: an unchanged payload is not
// re-encrypted, and an episode's sealed payload does not change under the
// append-only trigger.

// Sealer is the write path's sealer, which every reader of payloads opens
// them with (nil: encryption is off).
func (w *Writer) Sealer() *seal.Sealer { return w.cfg.Sealer }

// opened is a payload the transaction read sealed: its plaintext and
// ciphertext.
type opened struct {
	plain, sealed json.RawMessage
}

// open opens the payloads of records the transaction read, remembering
// their ciphertext.
func (t *Tx) open(ctx context.Context, tenant string, recs []memory.Record) error {
	for i := range recs {
		sealed := recs[i].Payload
		if !seal.IsSealed(sealed) && !bytes.Contains(sealed, []byte(`"sealed"`)) {
			continue
		}
		if err := t.w.cfg.Sealer.OpenRecord(ctx, tenant, &recs[i]); err != nil {
			return err
		}
		if seal.IsSealed(sealed) {
			if t.opened == nil {
				t.opened = map[uuid.UUID]opened{}
			}
			t.opened[recs[i].ID] = opened{plain: recs[i].Payload, sealed: sealed}
		}
	}
	return nil
}

// sealed returns rec with its payload sealed, when its sensitivity says
// so: the ciphertext it was read with when the payload is unchanged.
func (t *Tx) sealed(ctx context.Context, tenant string, rec memory.Record) (memory.Record, error) {
	s := t.w.cfg.Sealer
	if !s.Applies(rec.Sensitivity) || seal.IsSealed(rec.Payload) {
		return rec, nil
	}
	if o, ok := t.opened[rec.ID]; ok && bytes.Equal(o.plain, rec.Payload) {
		rec.Payload = o.sealed
		return rec, nil
	}
	p, err := s.SealPayload(ctx, tenant, rec.Type, rec.Payload)
	if err != nil {
		return rec, err
	}
	rec.Payload = p
	return rec, nil
}

// sealEntries seals the entries appended to an episode of sensitivity and
// drops their search text: a sealed entry is not searchable by its words.
func (t *Tx) sealEntries(ctx context.Context, tenant string, sens memory.Sensitivity, entries []store.Entry) error {
	s := t.w.cfg.Sealer
	if !s.Applies(sens) {
		return nil
	}
	for i := range entries {
		v, err := s.Seal(ctx, tenant, entries[i].Entry)
		if err != nil {
			return err
		}
		var ref struct {
			Ref string `json:"ref"`
		}
		if json.Unmarshal(entries[i].Entry, &ref) == nil && ref.Ref != "" {
			// The reference stays in the clear (see package seal).
			var doc map[string]json.RawMessage
			if err := json.Unmarshal(v, &doc); err != nil {
				return err
			}
			doc["ref"], _ = json.Marshal(ref.Ref)
			if v, err = json.Marshal(doc); err != nil {
				return err
			}
		}
		entries[i].Entry, entries[i].Text = v, ""
	}
	return nil
}

func (t *Tx) get(ctx context.Context, tenant string, id uuid.UUID) (memory.Record, error) {
	r, err := store.Get(ctx, t.tx, tenant, id)
	if err != nil {
		return r, err
	}
	recs := []memory.Record{r}
	err = t.open(ctx, tenant, recs)
	return recs[0], err
}

func (t *Tx) lock(ctx context.Context, tenant string, id uuid.UUID) (memory.Record, error) {
	r, err := store.Lock(ctx, t.tx, tenant, id)
	if err != nil {
		return r, err
	}
	recs := []memory.Record{r}
	err = t.open(ctx, tenant, recs)
	return recs[0], err
}

func (t *Tx) lockMany(ctx context.Context, tenant string, ids []uuid.UUID) ([]memory.Record, error) {
	recs, err := store.LockMany(ctx, t.tx, tenant, ids)
	if err != nil {
		return nil, err
	}
	return recs, t.open(ctx, tenant, recs)
}

func (t *Tx) lockByID(ctx context.Context, tenant string, ids []uuid.UUID) ([]memory.Record, error) {
	recs, err := store.LockByID(ctx, t.tx, tenant, ids)
	if err != nil {
		return nil, err
	}
	return recs, t.open(ctx, tenant, recs)
}

func (t *Tx) liveFacts(ctx context.Context, tenant, scope, subject, predicate string) ([]memory.Record, error) {
	recs, err := store.LiveFacts(ctx, t.tx, tenant, scope, subject, predicate)
	if err != nil {
		return nil, err
	}
	return recs, t.open(ctx, tenant, recs)
}

func (t *Tx) sameContent(ctx context.Context, tenant string, rec memory.Record, hash, fingerprint []byte) (memory.Record, bool, error) {
	if k, ok := factKey(rec); ok {
		// A fact's content hash and fingerprint cover its key: the same
		// content is among the live facts of its key.
		live, read, err := t.liveOf(ctx, tenant, k)
		if err != nil {
			return memory.Record{}, false, err
		}
		if read {
			return sameContentOf(live, hash, fingerprint)
		}
	}
	r, exact, err := store.SameContent(ctx, t.tx, tenant, rec.Type, hash, fingerprint)
	if err != nil {
		return r, exact, err
	}
	recs := []memory.Record{r}
	err = t.open(ctx, tenant, recs)
	return recs[0], exact, err
}

func (t *Tx) history(ctx context.Context, tenant string, id uuid.UUID) ([]store.Version, error) {
	vs, err := store.History(ctx, t.tx, tenant, id)
	if err != nil {
		return nil, err
	}
	for i := range vs {
		if err := t.w.cfg.Sealer.OpenRecord(ctx, tenant, &vs[i].Record); err != nil {
			return nil, err
		}
	}
	return vs, nil
}

// insertRecord, insertNew and updateRecord are the write path's only calls
// to store's record writes: each seals what it writes.
func (t *Tx) insertRecord(ctx context.Context, tenant string, rec memory.Record, inherited bool) error {
	t.wrote(rec)
	rec, err := t.sealed(ctx, tenant, rec)
	if err != nil {
		return err
	}
	return store.InsertRecord(ctx, t.tx, tenant, rec, inherited)
}

func (t *Tx) insertNewRecords(ctx context.Context, tenant string, news []store.NewRecord) error {
	for i := range news {
		t.wrote(news[i].Record)
		var err error
		if news[i].Record, err = t.sealed(ctx, tenant, news[i].Record); err != nil {
			return err
		}
	}
	return store.InsertNew(ctx, t.tx, tenant, news)
}

func (t *Tx) updateRecord(ctx context.Context, tenant string, rec memory.Record) error {
	t.wrote(rec)
	rec, err := t.sealed(ctx, tenant, rec)
	if err != nil {
		return err
	}
	return store.UpdateRecord(ctx, t.tx, tenant, rec)
}

// ResealProgress is what one step of a data-key rotation did.
type ResealProgress struct {
	// Version is the tenant's current data key, which everything is being
	// re-sealed under.
	Version int `json:"version"`
	// Resealed is how many values this step re-sealed; Remaining, how many
	// are still sealed under an older key.
	Resealed  int   `json:"resealed"`
	Remaining int64 `json:"remaining"`
	// Done: nothing is left under an older key, which is now retired.
	Done bool `json:"done"`
}

// RotateDataKey takes one bounded step of re-sealing a tenant's values
// under a new data key (`engram keys rotate-data`): the first step makes
// the new key; each re-seals up to batch values (records, version
// snapshots, episode entries, staged events, artifacts), in its own
// transaction, forgets the episode features consolidation sealed under an
// older key (a cache it learns again), and says how many remain; the last
// retires the old keys. A rotation cut off
// is resumed by the next call, which goes on with the same new key: it is
// safe to interrupt and run again. Payloads are re-sealed, never revised:
// no version, audit entry or search text changes.
func (w *Writer) RotateDataKey(ctx context.Context, tenant string, batch int) (ResealProgress, error) {
	s := w.cfg.Sealer
	var out ResealProgress
	if !s.Enabled() {
		return out, seal.ErrNoMasterKey
	}
	current, rotating, err := s.DataKeyVersions(ctx, tenant)
	if err != nil {
		return out, err
	}
	if !rotating {
		// A new rotation: a new key, unless the tenant has sealed nothing.
		if _, err := s.NewDataKey(ctx, tenant, current+1); err != nil {
			return out, err
		}
		current++
	}
	out.Version = current
	err = w.InTx(ctx, func(ctx context.Context, t *Tx) error {
		out.Resealed = 0
		// Consolidation's episode features are derived, not memory: those
		// under an older key are forgotten, and learned again.
		if _, err := store.ForgetSealedFeatures(ctx, t.tx, tenant, current); err != nil {
			return err
		}
		left := batch
		for _, table := range store.ResealTables {
			if left <= 0 {
				break
			}
			rows, err := store.ToReseal(ctx, t.tx, table, tenant, current, left)
			if err != nil {
				return err
			}
			for i := range rows {
				plain, err := s.Open(ctx, tenant, rows[i].Value)
				if err != nil {
					return err
				}
				if rows[i].Value, err = reseal(ctx, s, tenant, rows[i].Value, plain); err != nil {
					return err
				}
			}
			if err := store.Reseal(ctx, t.tx, table, tenant, rows); err != nil {
				return err
			}
			out.Resealed += len(rows)
			left -= len(rows)
		}
		if left <= 0 {
			return nil
		}
		arts, err := store.ArtifactsToReseal(ctx, t.tx, tenant, current, left)
		if err != nil {
			return err
		}
		for i := range arts {
			plain, err := s.Open(ctx, tenant, arts[i].Content)
			if err != nil {
				return err
			}
			if arts[i].Content, err = s.Seal(ctx, tenant, plain); err != nil {
				return err
			}
		}
		if err := store.ResealArtifacts(ctx, t.tx, tenant, arts); err != nil {
			return err
		}
		out.Resealed += len(arts)
		return nil
	})
	if err != nil {
		return out, err
	}
	if out.Remaining, err = store.CountToReseal(ctx, w.db, tenant, current); err != nil {
		return out, err
	}
	if out.Remaining == 0 {
		if err := s.RetireOlder(ctx, tenant, current); err != nil {
			return out, err
		}
		out.Done = true
	}
	return out, nil
}

// reseal seals plain again under the tenant's current key, keeping the
// members a value has in the clear beside its sealed member (a payload's
// kind and a fact's identity, an entry's reference).
func reseal(ctx context.Context, s *seal.Sealer, tenant string, old, plain json.RawMessage) (json.RawMessage, error) {
	v, err := s.Seal(ctx, tenant, plain)
	if err != nil {
		return nil, err
	}
	var outer, fresh map[string]json.RawMessage
	if err := json.Unmarshal(old, &outer); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(v, &fresh); err != nil {
		return nil, err
	}
	outer["sealed"] = fresh["sealed"]
	return json.Marshal(outer)
}

// RotateMasterKey re-wraps every tenant's data keys under the current
// master key, in batches of batch, without re-encrypting anything they
// sealed (`engram keys rotate-master`); it returns how many it re-wrapped.
func (w *Writer) RotateMasterKey(ctx context.Context, batch int) (int, error) {
	s := w.cfg.Sealer
	total := 0
	for {
		n, found, err := s.RewrapBatch(ctx, batch)
		total += n
		if err != nil || found < batch {
			return total, err
		}
		if ctx.Err() != nil {
			return total, ctx.Err()
		}
	}
}
