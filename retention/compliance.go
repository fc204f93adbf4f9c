package retention

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// PendingErasure is an erasure request not yet complete.
type PendingErasure = api.PendingErasure

// Report is a compliance report.
type Report = api.ComplianceReport

// SeverityP0 is the severity of every violation (write-path RFC §12.10.5:
// "flag violations as P0 incidents").
const SeverityP0 = "P0"

// clockSkew is how far in the future a record's creation time may be
// before the report calls it a violation: the clocks of the daemons that
// wrote it may disagree that much.
const clockSkew = 5 * time.Minute

// Check builds the compliance report (write-path RFC §12.10.5), saves it
// as the latest for GET /v1/compliance, sets the past-retention gauge, and
// counts in p the records past retention and the violations. runID names
// the job run in the report (0 for none).
func (r *Retainer) Check(ctx context.Context, p Progress, runID int64) (Report, error) {
	rep, err := r.Report(ctx)
	if err != nil {
		return rep, err
	}
	rep.RunID = runID
	b, err := json.Marshal(rep)
	if err != nil {
		return rep, fmt.Errorf("encode compliance report: %w", err)
	}
	// Reports are the operator's, not memory: they go to their own table,
	// not through the write path.
	if err := store.SaveComplianceReport(ctx, r.db, runID, rep.GeneratedAt, b); err != nil {
		return rep, err
	}
	for _, c := range rep.Retention {
		r.metrics.past.WithLabelValues(c.Class).Set(float64(c.PastRetention))
	}
	p.Add("past_retention", rep.PastRetention)
	p.Add("violations", int64(len(rep.Violations)))
	p.Add("erasures_incomplete", int64(len(rep.Erasures.Incomplete)))
	if len(rep.Violations) > 0 {
		r.logger.LogAttrs(ctx, slog.LevelWarn, "compliance violations", slog.Int("violations", len(rep.Violations)),
			slog.Int64("past_retention", rep.PastRetention))
	}
	return rep, nil
}

// Report builds the compliance report without saving it. What it checks:
//
//   - Past retention: per class and tenant, the records created before the
//     class's cutoff that retention has yet to act on (under hard_delete
//     every one still stored, whatever its status; under soft_delete those
//     not expired yet), and how many of them are still live. Retrieval
//     never returns them; reading one by id still does until the job runs.
//   - Violations, each a P0: records past retention by more than
//     overdue_after (the job is off, failing or behind); records tagged
//     pii whose sensitivity is below medium, which trust gating would
//     serve to any caller; records created in the future, out of
//     retention's reach.
//   - Erasures not yet complete, when the retainer was given an
//     [ErasureCheck]; otherwise the section says it was not checked.
func (r *Retainer) Report(ctx context.Context) (Report, error) {
	cfg := r.settings.Config()
	now := r.clock()
	rep := Report{GeneratedAt: now, Retention: []api.RetentionClassReport{}, Violations: []api.ComplianceViolation{}}
	for _, rc := range memory.RetentionClasses {
		cl := cfg.Class(rc)
		cr := api.RetentionClassReport{Class: string(rc), Action: string(cl.Action)}
		cutoff, ok := cfg.Cutoff(rc, now)
		if !ok {
			rep.Retention = append(rep.Retention, cr)
			continue
		}
		cr.MaxAge, cr.Cutoff = cl.MaxAge.String(), &cutoff
		withExpired := cl.Action == HardDelete
		counts, err := store.PastRetention(ctx, r.db, rc, cutoff, withExpired)
		if err != nil {
			return rep, err
		}
		at := map[string]int{}
		for _, c := range counts {
			i, seen := at[c.Tenant]
			if !seen {
				i = len(cr.Tenants)
				at[c.Tenant] = i
				cr.Tenants = append(cr.Tenants, api.RetentionTenant{Tenant: c.Tenant, OldestCreatedAt: c.OldestCreated})
			}
			t := &cr.Tenants[i]
			t.PastRetention += c.Count
			if c.OldestCreated.Before(t.OldestCreatedAt) {
				t.OldestCreatedAt = c.OldestCreated
			}
			if c.Status == memory.Active || c.Status == memory.Contested {
				t.Retrievable += c.Count
			}
		}
		for _, t := range cr.Tenants {
			cr.PastRetention += t.PastRetention
			cr.Retrievable += t.Retrievable
		}
		rep.PastRetention += cr.PastRetention
		rep.Retention = append(rep.Retention, cr)

		overdue, err := store.PastRetention(ctx, r.db, rc, cutoff.Add(-time.Duration(cfg.OverdueAfter)), withExpired)
		if err != nil {
			return rep, err
		}
		byTenant := map[string]int64{}
		var tenants []string
		for _, c := range overdue {
			if _, seen := byTenant[c.Tenant]; !seen {
				tenants = append(tenants, c.Tenant)
			}
			byTenant[c.Tenant] += c.Count
		}
		for _, t := range tenants {
			rep.Violations = append(rep.Violations, api.ComplianceViolation{
				Kind: api.ViolationRetentionOverdue, Severity: SeverityP0, Tenant: t, Class: string(rc), Count: byTenant[t],
				Detail: fmt.Sprintf("records of class %s still stored more than %s past their retention of %s: is the %s job running?",
					rc, cfg.OverdueAfter, cl.MaxAge, Job),
			})
		}
	}

	unmarked, err := store.UnmarkedPII(ctx, r.db, memory.Medium)
	if err != nil {
		return rep, err
	}
	for _, c := range unmarked {
		rep.Violations = append(rep.Violations, api.ComplianceViolation{
			Kind: api.ViolationPIIUnmarked, Severity: SeverityP0, Tenant: c.Tenant, Count: c.Count, RecordIDs: c.Examples,
			Detail: "records tagged pii have a sensitivity below medium: trust gating serves them to callers without clearance for personal data",
		})
	}
	future, err := store.CreatedAfter(ctx, r.db, now.Add(clockSkew))
	if err != nil {
		return rep, err
	}
	for _, c := range future {
		rep.Violations = append(rep.Violations, api.ComplianceViolation{
			Kind: api.ViolationCreatedInFuture, Severity: SeverityP0, Tenant: c.Tenant, Count: c.Count, RecordIDs: c.Examples,
			Detail: "records were created in the future: retention counts from their creation and does not reach them until then",
		})
	}

	rep.Erasures = api.ErasureReport{Incomplete: []api.PendingErasure{}}
	if r.erasures == nil {
		rep.Erasures.Detail = "erasure requests are not tracked by this daemon"
		return rep, nil
	}
	pending, err := r.erasures(ctx)
	if err != nil {
		return rep, fmt.Errorf("check erasures: %w", err)
	}
	rep.Erasures.Checked = true
	rep.Erasures.Incomplete = append(rep.Erasures.Incomplete, pending...)
	return rep, nil
}
