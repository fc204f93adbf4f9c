// Package view is the read door (ARCHITECTURE.md, "Two doors"): every read
// of memory goes through it, as every write goes through package revise. A
// read names who reads — a key's principal and the operator's access
// rules, or the system (a job) — and gets back what it may see already
// opened (sealed payloads and sealed events decrypted, substrate RFC
// §15.9), filtered by what the reader may see (write-path RFC §12.8.5) and
// flagged (derived_from_quarantined, 003 §12.11.5). No caller assembles
// that pipeline by hand, so none can forget a step of it.
//
// What the door reads: records, now and as of a time, with their
// history, audit trail and relations; staged events ([Reader.Events]);
// threads ([Reader.Thread]); reviews with their drafts ([Reader.Reviews],
// [Reader.Review]); artifacts ([Reader.Artifact]). Package store's
// statements that read them are called only here and in the write path; a
// test holds that (door_test.go).
//
// What it does not read: counts. The health page's aggregates
// (store.HeldRecords, store.HealthSeries, store.CompetencePerformance)
// return numbers by type, status, time bucket and outcome — never a
// record, an id or a payload — over the whole tenant, as the page of
// substrate RFC §15.10 is defined; there is nothing to open and nothing to
// filter per record, so they stay outside the door with the other
// statistics.
package view

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/seal"
	"github.com/engram-dev/engram/store"
)

// Reader reads memory for a [Viewer]. Its zero value is not usable; make
// one with [New].
type Reader struct {
	db     pg.DBTX
	sealer *seal.Sealer
}

// New returns a reader of db that opens sealed payloads with sealer (nil:
// nothing is sealed).
func New(db pg.DBTX, sealer *seal.Sealer) *Reader {
	return &Reader{db: db, sealer: sealer}
}

// Over returns a reader of the same memory on db: a streaming replica, say,
// for reads that may be a little stale, or a transaction, for what it
// wrote as it will be if it commits.
func (r *Reader) Over(db pg.DBTX) *Reader {
	return &Reader{db: db, sealer: r.sealer}
}

// Viewer is who reads: a tenant, and the key reading it with the access
// rules in force, or no key — the system's own reads (consolidation,
// decay), which see every record of the tenant.
type Viewer struct {
	Tenant    string
	Principal *access.Principal
	Rules     []access.Rule
}

// System is the system's viewer of tenant.
func System(tenant string) Viewer { return Viewer{Tenant: tenant} }

// As is the viewer of key p under the access rules in force.
func As(p access.Principal, rules []access.Rule) Viewer {
	return Viewer{Tenant: p.Tenant, Principal: &p, Rules: rules}
}

// May refuses, with a [*access.DeniedError] naming the rule, a record v
// may not read (write-path RFC §12.8.5). A direct read of such a record is
// a 403, never its content: record ids are random and no listing,
// retrieval or relation shows a reader the id of a record it may not read,
// so the refusal tells it nothing it did not hold already, and says which
// rule to take up with the operator.
func (v Viewer) May(rec memory.Record) error {
	if v.Principal == nil {
		return nil
	}
	return access.Visible(*v.Principal, access.TargetOf(rec), v.Rules).Err()
}

// Ceiling is the most sensitive a record v reads may be: its key's
// clearance; empty for the system, which has none.
func (v Viewer) Ceiling() memory.Sensitivity {
	if v.Principal == nil {
		return ""
	}
	return v.Principal.Ceiling()
}

// visibility is what a listing for v selects in SQL, nil when it reads
// every record of the tenant.
func (v Viewer) visibility() *store.Visibility {
	if v.Principal == nil {
		return nil
	}
	layers, own, ceiling, domains := v.Principal.Filter()
	if len(layers) == len(memory.Types) && ceiling == memory.Hyper && len(domains) == 0 {
		return nil
	}
	return &store.Visibility{Layers: layers, Own: own, Agent: v.Principal.Agent, MaxSensitivity: ceiling, Domains: domains}
}

// Record is a record as it is now, opened and flagged; a record v may not
// read is refused with a [*access.DeniedError] naming the rule, one that
// is not the tenant's is [store.ErrNotFound].
func (r *Reader) Record(ctx context.Context, v Viewer, id uuid.UUID) (memory.Record, error) {
	rec, err := r.current(ctx, v, id)
	if err != nil {
		return memory.Record{}, err
	}
	recs := []memory.Record{rec}
	if err := store.AttachFlags(ctx, r.db, v.Tenant, recs); err != nil {
		return memory.Record{}, err
	}
	return recs[0], nil
}

// RecordAsOf is a record as it was at at, opened; flags are current state
// with no history, so a past read has none.
func (r *Reader) RecordAsOf(ctx context.Context, v Viewer, id uuid.UUID, at time.Time) (memory.Record, error) {
	rec, err := store.GetAsOf(ctx, r.db, v.Tenant, id, at)
	if err != nil {
		return memory.Record{}, err
	}
	if err := r.open(ctx, v.Tenant, &rec); err != nil {
		return memory.Record{}, err
	}
	return rec, v.May(rec)
}

// Unflagged is a record as it is now, opened, without its flags: for a
// caller that reads a record to revise it.
func (r *Reader) Unflagged(ctx context.Context, v Viewer, id uuid.UUID) (memory.Record, error) {
	return r.current(ctx, v, id)
}

func (r *Reader) current(ctx context.Context, v Viewer, id uuid.UUID) (memory.Record, error) {
	rec, err := store.Get(ctx, r.db, v.Tenant, id)
	if err != nil {
		return memory.Record{}, err
	}
	if err := r.open(ctx, v.Tenant, &rec); err != nil {
		return memory.Record{}, err
	}
	return rec, v.May(rec)
}

// Records is a page of the records f selects that v may read, opened, and
// flagged unless it is a past read (f.AsOf). The page's cursor is the
// store's: a page may hold fewer records than its limit when access rules
// hide some of it.
func (r *Reader) Records(ctx context.Context, v Viewer, f store.Filter) (store.Page, error) {
	f.Visible = v.visibility()
	page, err := store.List(ctx, r.db, v.Tenant, f)
	if err != nil {
		return store.Page{}, err
	}
	if err := r.openAll(ctx, v.Tenant, page.Records); err != nil {
		return store.Page{}, err
	}
	if v.Principal != nil && access.Hides(*v.Principal, v.Rules) {
		kept := page.Records[:0]
		for _, rec := range page.Records {
			if v.May(rec) == nil {
				kept = append(kept, rec)
			}
		}
		page.Records = kept
	}
	if f.AsOf == nil {
		if err := store.AttachFlags(ctx, r.db, v.Tenant, page.Records); err != nil {
			return store.Page{}, err
		}
	}
	if page.Records == nil {
		page.Records = []memory.Record{}
	}
	return page, nil
}

// History is every version of a record v may read as it is now, each
// opened.
func (r *Reader) History(ctx context.Context, v Viewer, id uuid.UUID) ([]store.Version, error) {
	if err := r.see(ctx, v, id); err != nil {
		return nil, err
	}
	versions, err := store.History(ctx, r.db, v.Tenant, id)
	if err != nil {
		return nil, err
	}
	for i := range versions {
		if err := r.open(ctx, v.Tenant, &versions[i].Record); err != nil {
			return nil, err
		}
	}
	return versions, nil
}

// Audit is the audit trail of a record v may read. The trail outlives a
// purged record (it names no content): a purged record's trail is for
// viewers that read every record of the tenant, whose role, clearance and
// domains restrict nothing — the record's layer and classification are
// gone with it.
func (r *Reader) Audit(ctx context.Context, v Viewer, id uuid.UUID) ([]store.AuditEntry, error) {
	switch err := r.see(ctx, v, id); {
	case err == nil:
	case errors.Is(err, store.ErrNotFound) && v.visibility() == nil:
		// Purged, or never the tenant's: the store answers not found when
		// there is no trail either.
	case errors.Is(err, store.ErrNotFound):
		if _, err := store.Audit(ctx, r.db, v.Tenant, id); err != nil {
			return nil, err // no trail either: not found
		}
		return nil, &access.DeniedError{Rule: "purged", Reason: access.ReasonRole,
			Detail: "the record is purged: its audit trail is for keys that read every record of the tenant"}
	default:
		return nil, err
	}
	return store.Audit(ctx, r.db, v.Tenant, id)
}

// Relations are the relations of a record v may read whose other end v
// may read too: a relation shows no one the id of a record they may not
// read.
func (r *Reader) Relations(ctx context.Context, v Viewer, id uuid.UUID) ([]store.Edge, error) {
	if err := r.see(ctx, v, id); err != nil {
		return nil, err
	}
	edges, err := store.Relations(ctx, r.db, v.Tenant, id)
	if err != nil {
		return nil, err
	}
	out := []store.Edge{}
	for _, e := range edges {
		other := e.TargetID
		if other == id {
			other = e.SourceID
		}
		rec, err := store.Get(ctx, r.db, v.Tenant, other)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if v.May(rec) == nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// Events are the staged events with status, oldest first, after the one
// with sequence number after, at most limit of them, each opened. Staged
// events are raw — classified, not yet through the write path's gates —
// so none above v's clearance is shown (write-path RFC §12.8.5): a page
// may hold fewer than limit.
func (r *Reader) Events(ctx context.Context, v Viewer, status string, after int64, limit int) ([]store.Candidate, error) {
	cands, err := store.Candidates(ctx, r.db, v.Tenant, status, after, limit)
	if err != nil {
		return nil, err
	}
	if v.Principal != nil {
		ceiling := v.Ceiling().Rank()
		cands = slices.DeleteFunc(cands, func(c store.Candidate) bool { return c.Sensitivity.Rank() > ceiling })
	}
	for i := range cands {
		if cands[i].Event, err = r.sealer.Open(ctx, v.Tenant, cands[i].Event); err != nil {
			return nil, err
		}
	}
	if cands == nil {
		cands = []store.Candidate{}
	}
	return cands, nil
}

// Thread is the latest generation of a thread, open or closed, that v may
// read: a thread is its agent's session, read as its episode is
// (write-path RFC §12.8.2).
func (r *Reader) Thread(ctx context.Context, v Viewer, threadID string) (store.Thread, error) {
	t, err := store.LatestThread(ctx, r.db, v.Tenant, threadID)
	if err != nil {
		return store.Thread{}, err
	}
	if v.Principal != nil {
		target := access.Target{Layer: memory.Episodic, Agent: t.AgentID}
		if err := access.Decide(*v.Principal, access.OpRead, target, v.Rules).Err(); err != nil {
			return store.Thread{}, err
		}
	}
	return t, nil
}

// Reviews is a page of the reviews f selects whose draft v may read, each
// with its draft opened as it stands now (write-path RFC §12.6). The
// page's cursor is the store's: a page may hold fewer reviews than its
// limit when access rules hide some of them. A review whose draft is gone
// (purged) shows no record, and is kept.
func (r *Reader) Reviews(ctx context.Context, v Viewer, f store.ReviewFilter) (store.ReviewPage, error) {
	page, err := store.ListReviews(ctx, r.db, v.Tenant, f)
	if err != nil {
		return store.ReviewPage{}, err
	}
	page.Reviews = slices.DeleteFunc(page.Reviews, func(rv store.Review) bool {
		return rv.Record != nil && v.May(*rv.Record) != nil
	})
	for _, rv := range page.Reviews {
		if rv.Record != nil {
			if err := r.open(ctx, v.Tenant, rv.Record); err != nil {
				return store.ReviewPage{}, err
			}
		}
	}
	if page.Reviews == nil {
		page.Reviews = []store.Review{}
	}
	return page, nil
}

// Review is a review with its draft opened as it stands now; the review of
// a draft v may not read is refused with a [*access.DeniedError], as the
// draft itself is ([Reader.Record]).
func (r *Reader) Review(ctx context.Context, v Viewer, id uuid.UUID) (store.Review, error) {
	rv, err := store.GetReviewWithRecord(ctx, r.db, v.Tenant, id)
	if err != nil {
		return store.Review{}, err
	}
	if rv.Record == nil {
		return rv, nil
	}
	if err := r.open(ctx, v.Tenant, rv.Record); err != nil {
		return store.Review{}, err
	}
	if err := v.May(*rv.Record); err != nil {
		return store.Review{}, err
	}
	return rv, nil
}

// Artifact is an artifact of v's tenant, by hex SHA-256, and its content
// opened: the plaintext of a sealed one (substrate RFC §15.9). An artifact
// has no classification of its own — a record that references it has —
// so every viewer of the tenant reads it; one not the tenant's is
// [store.ErrNotFound].
func (r *Reader) Artifact(ctx context.Context, v Viewer, sha string) (store.Artifact, []byte, error) {
	a, content, err := store.GetArtifact(ctx, r.db, v.Tenant, sha)
	if err != nil {
		return store.Artifact{}, nil, err
	}
	if !a.Sealed {
		return a, content, nil
	}
	if content, err = r.sealer.Open(ctx, v.Tenant, content); err != nil {
		return store.Artifact{}, nil, fmt.Errorf("open artifact: %w", err)
	}
	return a, content, nil
}

// see refuses a read about record id (its history, audit trail,
// relations) when v may not read the record as it is now.
func (r *Reader) see(ctx context.Context, v Viewer, id uuid.UUID) error {
	rec, err := store.Get(ctx, r.db, v.Tenant, id)
	if err != nil {
		return err
	}
	return v.May(rec)
}

func (r *Reader) open(ctx context.Context, tenant string, rec *memory.Record) error {
	if r.sealer == nil {
		return nil
	}
	return r.sealer.OpenRecord(ctx, tenant, rec)
}

func (r *Reader) openAll(ctx context.Context, tenant string, recs []memory.Record) error {
	if r.sealer == nil {
		return nil
	}
	return r.sealer.OpenRecords(ctx, tenant, recs)
}
