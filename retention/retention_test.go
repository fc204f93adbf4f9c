package retention_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/internal/clocktest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/jobs/jobstest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/retention"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

type bundle struct {
	ctx      context.Context
	db       *pgtest.Schema
	clock    *clocktest.Clock
	w        *revise.Writer
	settings *retention.Settings
	keep     *retention.Retainer
	ch       revise.Change
}

// setup is a migrated schema, the write path and a retainer on one test
// clock, and tenants acme and other. edit, when given, edits the default retention.
func setup(t *testing.T, edit func(*retention.Config)) *bundle {
	t.Helper()
	db := pgtest.NewSchema(t)
	clk := clocktest.New(time.Now().UTC().Add(-100 * 24 * time.Hour).Truncate(time.Microsecond))
	cfg := retention.DefaultConfig()
	if edit != nil {
		edit(&cfg)
	}
	settings, err := retention.NewSettings(cfg)
	require.NoError(t, err)
	w := revise.New(db.Pool, revise.Config{Now: clk.Now})
	ctx := context.Background()
	for _, tenant := range []string{"acme", "other"} {
		require.NoError(t, store.EnsureTenant(ctx, db.Pool, tenant))
	}
	keep := retention.New(retention.Options{DB: db.Pool, Writer: w, Settings: settings, Now: clk.Now})
	return &bundle{ctx: ctx, db: db, clock: clk, w: w, settings: settings, keep: keep, ch: revise.Change{Actor: "test"}}
}

func (b *bundle) create(t *testing.T, tenant string, rec memory.Record) memory.Record {
	t.Helper()
	out, err := b.w.Create(b.ctx, tenant, rec, b.ch)
	require.NoError(t, err)
	return out
}

func (b *bundle) status(t *testing.T, tenant string, id uuid.UUID) memory.Status {
	t.Helper()
	rec, err := store.Get(b.ctx, b.db.Pool, tenant, id)
	if err == store.ErrNotFound {
		return ""
	}
	require.NoError(t, err)
	return rec.Status
}

func (b *bundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, sql, args...).Scan(&n))
	return n
}

// fact is a fact of sensitivity s with tags, pinned, as salient as can be
// and never to be deleted by decay: everything relevance has to keep it.
func fact(subject string, s memory.Sensitivity, tags ...string) memory.Record {
	p, _ := json.Marshal(map[string]any{
		"kind": "semantic", "subject": subject, "predicate": "prefers_language", "object": "go", "validity": map[string]any{"mode": "global"},
	})
	return memory.Record{Type: memory.Semantic, Sensitivity: s, Tags: tags, Confidence: 0.9, Salience: 1, Payload: p,
		Lifecycle: memory.Lifecycle{Pinned: true, DeletionPolicy: memory.Never}}
}

func classOf(rep api.ComplianceReport, class memory.RetentionClass) api.RetentionClassReport {
	for _, c := range rep.Retention {
		if c.Class == string(class) {
			return c
		}
	}
	return api.RetentionClassReport{}
}

// seeded are the records of the main scenario: created 90 days and an hour
// ago, a
// PII-bearing record tagged pii, one made from personal data (the write
// path tags it), one high; a record of each other class; then, today, a
// PII-bearing record inside its limit.
type seeded struct {
	tagged, personal, high    memory.Record
	business, general, public memory.Record
	fresh, otherTenant        memory.Record
}

func (b *bundle) seed(t *testing.T) seeded {
	t.Helper()
	var s seeded
	s.tagged = b.create(t, "acme", fact("alice", memory.Medium, memory.PIITag))
	personal := fact("bob", memory.Medium)
	personal.PersonalData = true
	s.personal = b.create(t, "acme", personal)
	require.Contains(t, s.personal.Tags, memory.PIITag, "the write path tags a record made from personal data")
	s.high = b.create(t, "acme", fact("carol", memory.High))
	s.business = b.create(t, "acme", fact("dave", memory.Medium))
	s.general = b.create(t, "acme", fact("erin", memory.Low))
	s.public = b.create(t, "acme", fact("frank", memory.Public))
	s.otherTenant = b.create(t, "other", fact("alice", memory.Medium, memory.PIITag))
	// Ninety days and an hour later: past the PII limit of 90 days, not
	// yet overdue (a day past it).
	b.clock.Advance(90*24*time.Hour + time.Hour)
	s.fresh = b.create(t, "acme", fact("grace", memory.Medium, memory.PIITag))
	// The old PII record is reinforced today: as salient and recently
	// useful as a record can be.
	err := b.w.InTx(b.ctx, func(ctx context.Context, tx *revise.Tx) error {
		todo, _, err := tx.FeedbackTargets(ctx, "acme", revise.Feedback{Scope: "r1", RecordIDs: []uuid.UUID{s.tagged.ID}, Outcome: revise.OutcomeSuccess}, b.clock.Now())
		if err != nil {
			return err
		}
		_, err = tx.Reinforce(ctx, "acme", todo, []revise.Reinforcement{{ID: s.tagged.ID, Salience: 1}}, b.clock.Now(), b.ch)
		return err
	})
	require.NoError(t, err)
	return s
}

// Retention hard-deletes PII-bearing records past their limit, pinned,
// salient and never-delete as they are, with an audit entry each and in
// batches; a PII record inside its limit and records of the other classes
// stay. The compliance report lists them before the job runs, and
// retrieval never returns them even then.
func TestRetentionHardDeletesPIIPastItsLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *retention.Config) { c.BatchSize = 2 })
	s := b.seed(t)
	doomed := []memory.Record{s.tagged, s.personal, s.high}

	// Before the job: the report lists them, by tenant.
	run := &jobstest.Run{}
	rep, err := b.keep.Check(b.ctx, run, 7)
	require.NoError(t, err)
	require.EqualValues(t, 4, rep.PastRetention)
	require.EqualValues(t, 4, run.Count("past_retention"))
	pii := classOf(rep, memory.ClassPII)
	require.Equal(t, "90d", pii.MaxAge)
	require.Equal(t, "hard_delete", pii.Action)
	require.EqualValues(t, 4, pii.PastRetention)
	require.EqualValues(t, 4, pii.Retrievable)
	require.Len(t, pii.Tenants, 2)
	require.Equal(t, "acme", pii.Tenants[0].Tenant)
	require.EqualValues(t, 3, pii.Tenants[0].PastRetention)
	require.Equal(t, "other", pii.Tenants[1].Tenant)
	for _, c := range []memory.RetentionClass{memory.ClassBusinessSensitive, memory.ClassGeneral, memory.ClassPublic} {
		require.Zero(t, classOf(rep, c).PastRetention, c)
	}
	require.Empty(t, rep.Violations, "past retention, but not overdue yet")
	require.False(t, rep.Erasures.Checked)
	saved, err := store.LatestComplianceReport(b.ctx, b.db.Pool)
	require.NoError(t, err)
	var back api.ComplianceReport
	require.NoError(t, json.Unmarshal(saved, &back))
	require.EqualValues(t, 7, back.RunID)
	require.EqualValues(t, 4, back.PastRetention)

	// Retrieval never returns them, before the job as after.
	rsettings, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(t, err)
	ret := retrieve.New(b.db.Pool, rsettings, retrieve.WithClock(b.clock.Now),
		retrieve.WithRetention(func(rec memory.Record, now time.Time) bool { return b.settings.Config().Past(rec, now) }))
	require.NoError(t, ret.RefreshStats(b.ctx, &jobstest.Run{}))
	res, err := ret.Retrieve(b.ctx, "acme", retrieve.Request{Task: retrieve.Task{Text: "which language does each user prefer"},
		Trust: retrieve.Trust{Clearance: memory.Hyper}})
	require.NoError(t, err)
	var got []uuid.UUID
	for _, l := range res.Layers {
		for _, it := range l.Items {
			got = append(got, it.Record.ID)
		}
	}
	require.ElementsMatch(t, []uuid.UUID{s.business.ID, s.general.ID, s.public.ID, s.fresh.ID}, got)

	// The job.
	run = &jobstest.Run{}
	require.NoError(t, b.keep.Enforce(b.ctx, run))
	require.EqualValues(t, 4, run.Count("purged_pii"), "in batches of two: the three of acme and the one of other")
	for _, r := range doomed {
		require.Empty(t, b.status(t, "acme", r.ID), "record %s is gone", r.ID)
		require.Zero(t, b.count(t, "SELECT count(*) FROM record_versions WHERE record_id = $1", r.ID), "and its versions")
		audit, err := store.Audit(b.ctx, b.db.Pool, "acme", r.ID)
		require.NoError(t, err)
		last := audit[len(audit)-1]
		require.Equal(t, revise.ActionPurge, last.Action)
		require.Equal(t, retention.Actor, last.Actor)
		require.Contains(t, last.Rationale, "past the maximum retention of 90d of class pii")
	}
	require.Empty(t, b.status(t, "other", s.otherTenant.ID), "every tenant's")
	for _, r := range []memory.Record{s.business, s.general, s.public, s.fresh} {
		require.Equal(t, memory.Active, b.status(t, "acme", r.ID), "record %s stays", r.ID)
	}

	rep, err = b.keep.Check(b.ctx, &jobstest.Run{}, 8)
	require.NoError(t, err)
	require.Zero(t, rep.PastRetention)
}

// Under soft delete, records past retention become expired, pinned or not,
// with an audit entry, and decay's purge takes them after its grace period.
func TestRetentionSoftDeletes(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *retention.Config) { c.PII.Action = retention.SoftDelete })
	s := b.seed(t)

	run := &jobstest.Run{}
	require.NoError(t, b.keep.Enforce(b.ctx, run))
	require.EqualValues(t, 4, run.Count("expired_pii"), "the three of acme and the one of other")
	for _, r := range []memory.Record{s.tagged, s.personal, s.high} {
		rec, err := store.Get(b.ctx, b.db.Pool, "acme", r.ID)
		require.NoError(t, err)
		require.Equal(t, memory.Expired, rec.Status)
		require.True(t, rec.Lifecycle.Pinned, "expired although pinned")
		audit, err := store.Audit(b.ctx, b.db.Pool, "acme", r.ID)
		require.NoError(t, err)
		last := audit[len(audit)-1]
		require.Equal(t, revise.ActionExpire, last.Action)
		require.Equal(t, retention.Actor, last.Actor)
	}
	for _, r := range []memory.Record{s.business, s.general, s.public, s.fresh} {
		require.Equal(t, memory.Active, b.status(t, "acme", r.ID), "record %s stays", r.ID)
	}

	// Done: the report no longer counts them, and a second run does
	// nothing.
	rep, err := b.keep.Report(b.ctx)
	require.NoError(t, err)
	require.Zero(t, rep.PastRetention)
	run = &jobstest.Run{}
	require.NoError(t, b.keep.Enforce(b.ctx, run))
	require.Zero(t, run.Count("expired_pii"))

	// Decay's purge deletes them after the grace period.
	b.clock.Advance(time.Duration(decay.DefaultPurgeGrace) + time.Hour)
	res, err := b.w.PurgeExpired(b.ctx, b.clock.Now().Add(-time.Duration(decay.DefaultPurgeGrace)), 100, decay.Actor)
	require.NoError(t, err)
	require.Equal(t, 4, res.Records, "the three of acme and the one of other")
	require.Empty(t, b.status(t, "acme", s.tagged.ID))
}

// Records still past retention well after their cutoff are violations, as
// are PII-tagged records below medium and records created in the future.
func TestComplianceViolations(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *retention.Config) { c.OverdueAfter = decay.Duration(24 * time.Hour) })
	b.create(t, "acme", fact("alice", memory.Medium, memory.PIITag))
	unmarked := b.create(t, "acme", fact("bob", memory.Low, memory.PIITag))
	// The write path dates no record ahead of its clock (issue 28): a
	// record created in the future is one written by a daemon whose clock
	// ran 400 days ahead.
	ahead := revise.New(b.db.Pool, revise.Config{Now: func() time.Time { return b.clock.Now().Add(400 * 24 * time.Hour) }})
	future, err := ahead.Create(b.ctx, "other", fact("carol", memory.Low), b.ch)
	require.NoError(t, err)
	b.clock.Advance(100 * 24 * time.Hour)

	rep, err := b.keep.Report(b.ctx)
	require.NoError(t, err)
	kinds := map[string]api.ComplianceViolation{}
	for _, v := range rep.Violations {
		require.Equal(t, retention.SeverityP0, v.Severity)
		kinds[v.Kind] = v
	}
	require.Len(t, kinds, 3)
	overdue := kinds[api.ViolationRetentionOverdue]
	require.Equal(t, "acme", overdue.Tenant)
	require.Equal(t, "pii", overdue.Class)
	require.EqualValues(t, 2, overdue.Count, "both PII records are ten days past their retention")
	require.Equal(t, []string{unmarked.ID.String()}, kinds[api.ViolationPIIUnmarked].RecordIDs)
	require.Equal(t, []string{future.ID.String()}, kinds[api.ViolationCreatedInFuture].RecordIDs)
	require.Equal(t, "other", kinds[api.ViolationCreatedInFuture].Tenant)
}

// The compliance report's erasure section says what the erasure check
// found when there is one.
func TestComplianceErasures(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	at := b.clock.Now()
	keep := retention.New(retention.Options{DB: b.db.Pool, Writer: b.w, Settings: b.settings, Now: b.clock.Now,
		Erasures: func(context.Context) ([]retention.PendingErasure, error) {
			return []retention.PendingErasure{{ID: "e1", Status: "running", RequestedAt: at}}, nil
		}})
	rep, err := keep.Report(b.ctx)
	require.NoError(t, err)
	require.True(t, rep.Erasures.Checked)
	require.Equal(t, []api.PendingErasure{{ID: "e1", Status: "running", RequestedAt: at}}, rep.Erasures.Incomplete)

	keep = retention.New(retention.Options{DB: b.db.Pool, Writer: b.w, Settings: b.settings, Now: b.clock.Now,
		Erasures: func(context.Context) ([]retention.PendingErasure, error) { return nil, fmt.Errorf("boom") }})
	_, err = keep.Report(b.ctx)
	require.ErrorContains(t, err, "check erasures: boom")
}

// The erasures the database records as unfinished are the report's,
// named by id, tenant and phase, never by subject.
func TestUnfinishedErasures(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	at := b.clock.Now()
	e := store.Erasure{ID: uuid.New(), SubjectSHA256: strings.Repeat("ab", 32), Identifiers: map[string]int{"email": 1},
		Status: api.ErasureRunning, Phase: "erasing", Rebuilt: []uuid.UUID{}, RequestedAt: at}
	require.NoError(t, store.InsertErasure(b.ctx, b.db.Pool, "acme", e))
	got, err := retention.Unfinished(b.db.Pool, 10)(b.ctx)
	require.NoError(t, err)
	require.Equal(t, []retention.PendingErasure{{ID: e.ID.String(), Status: "running", RequestedAt: at,
		Detail: "tenant acme, phase erasing"}}, got)
}

// The database's retention class of a record is memory.ClassOf's, for
// every sensitivity, with and without the pii tag.
func TestRetentionClassAgreesWithTheDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for _, s := range memory.Sensitivities {
		for _, tags := range [][]string{{}, {"x"}, {"x", memory.PIITag}} {
			var got string
			require.NoError(t, b.db.Pool.QueryRow(b.ctx, "SELECT engram_retention_class($1, $2)", tags, string(s)).Scan(&got))
			require.Equal(t, string(memory.ClassOf(s, tags)), got, "%s %v", s, tags)
		}
	}
	require.Equal(t, memory.ClassPII, memory.ClassOf(memory.Public, []string{memory.PIITag}))
	require.Equal(t, memory.ClassPII, memory.ClassOf(memory.Hyper, nil))
	require.Equal(t, memory.ClassBusinessSensitive, memory.ClassOf(memory.Medium, nil))
	require.Equal(t, memory.ClassGeneral, memory.ClassOf(memory.Low, nil))
	require.Equal(t, memory.ClassPublic, memory.ClassOf(memory.Public, nil))
}
