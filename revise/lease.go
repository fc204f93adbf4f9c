package revise

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

// Leases are the write locks of write-path RFC §12.8.3: an agent leases a
// record, or a scope (every record whose scope it is), for a bounded time;
// each grant carries a fencing token; the write path refuses a write whose
// token is older than its record's or its scope's current one, and a write
// without the lease while another agent holds it.
//
// The algorithm is §12.8.3's AcquireLease: a resource unleased, released or
// expired is granted with a new token; one the same agent holds is renewed
// (re-entrant: same lease, same token, a later expiry); one another agent
// holds is denied, naming the holder and when its lease runs out. A record
// lease and its scope's lease also exclude each other across agents: a
// lease on a record is denied while another agent holds its scope, and a
// lease on a scope while another agent holds one of its records.
//
// Tokens come from one counter per tenant, kept in the database, so they
// never go back across releases, expiries and restarts, and a record's
// token and its scope's are comparable: a grant on either fences every
// older grant on both (a write's token must be at least the newest of
// them).
//
// Serialisation: a grant holds its resource's advisory lock exclusively
// (and a record grant its scope's shared); a write checks its record's and
// its scope's leases holding both shared, in the write's own transaction,
// so no grant can slip between the check and the commit of the write it
// allows, even on a resource leased for the first time.

// Lease defaults (write-path RFC §12.8.3: "typically 30–120 seconds").
const (
	DefaultLeaseTTL    = 60 * time.Second
	DefaultLeaseMinTTL = 30 * time.Second
	DefaultLeaseMaxTTL = 120 * time.Second
)

// LeaseConfig bounds the leases' time to live. The zero value of each field
// is its default.
type LeaseConfig struct {
	// DefaultTTL is a lease's TTL when the request names none;
	// [DefaultLeaseTTL] (kept within the bounds) when zero.
	DefaultTTL time.Duration `yaml:"default_ttl"`
	// MinTTL and MaxTTL bound the TTL a request may ask for;
	// [DefaultLeaseMinTTL] and [DefaultLeaseMaxTTL] when zero.
	MinTTL time.Duration `yaml:"min_ttl"`
	MaxTTL time.Duration `yaml:"max_ttl"`
}

func (c LeaseConfig) withDefaults() LeaseConfig {
	c.MinTTL = cmp.Or(c.MinTTL, DefaultLeaseMinTTL)
	c.MaxTTL = cmp.Or(c.MaxTTL, DefaultLeaseMaxTTL)
	if c.DefaultTTL == 0 {
		c.DefaultTTL = min(max(DefaultLeaseTTL, c.MinTTL), c.MaxTTL)
	}
	return c
}

// LeaseConfigError names a bad field of a [LeaseConfig].
type LeaseConfigError struct{ Field, Problem string }

func (e *LeaseConfigError) Error() string { return "leases." + e.Field + ": " + e.Problem }

// Validate checks c, naming the first bad field.
func (c LeaseConfig) Validate() error {
	for field, d := range map[string]time.Duration{"default_ttl": c.DefaultTTL, "min_ttl": c.MinTTL, "max_ttl": c.MaxTTL} {
		if d < 0 {
			return &LeaseConfigError{Field: field, Problem: "must not be negative"}
		}
	}
	c = c.withDefaults()
	switch {
	case c.MinTTL < time.Second:
		return &LeaseConfigError{Field: "min_ttl", Problem: "must be at least 1s"}
	case c.MaxTTL < c.MinTTL:
		return &LeaseConfigError{Field: "max_ttl", Problem: fmt.Sprintf("must be at least min_ttl (%s)", c.MinTTL)}
	case c.DefaultTTL < c.MinTTL || c.DefaultTTL > c.MaxTTL:
		return &LeaseConfigError{Field: "default_ttl", Problem: fmt.Sprintf("must be from min_ttl (%s) to max_ttl (%s)", c.MinTTL, c.MaxTTL)}
	}
	return nil
}

// Lease is a lease on a record or a scope: its resource's latest grant,
// with its status as of the answer.
type Lease = store.Lease

// LeaseResource names what a lease locks: a record, or a scope.
type LeaseResource = store.LeaseResource

// LeaseRequest asks for a lease on Resource for Agent, for TTL (the
// configured default when zero).
type LeaseRequest struct {
	Resource LeaseResource
	Agent    string
	TTL      time.Duration
}

// Fence is what a write to memory carries under the leases of write-path
// RFC §12.8.3: the agent it acts for, and the fencing token of its lease
// (0 when it carries none). A [Change] without a Fence is not an agent's
// write (ingestion, decay, consolidation, a reviewer's decision): leases do
// not hold it up.
type Fence struct {
	Agent string
	Token int64
}

// Lease conflict codes, of the [*ConflictError] of a renewal or release.
const (
	// CodeNotLeaseHolder: the lease is another agent's.
	CodeNotLeaseHolder = "not_lease_holder"
	// CodeLeaseExpired: the lease ran out; acquire the resource again, for
	// a new fencing token.
	CodeLeaseExpired = "lease_expired"
	// CodeLeaseReleased: the lease was released.
	CodeLeaseReleased = "lease_released"
)

// LeaseHeldError is a lease, or a write, refused because another agent
// holds an active lease on the resource (§12.8.3 DENIED). Nothing was
// written.
type LeaseHeldError struct {
	// Lease is the holder's.
	Lease Lease
	// At is when the refusal was decided; the lease runs out
	// Lease.ExpiresAt.Sub(At) later.
	At time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("%s is leased by agent %q until %s", leaseResource(e.Lease), e.Lease.AgentID, e.Lease.ExpiresAt.Format(time.RFC3339))
}

// RetryAfter is how long until the holder's lease runs out.
func (e *LeaseHeldError) RetryAfter() time.Duration { return e.Lease.ExpiresAt.Sub(e.At) }

// StaleTokenError is a write refused because its fencing token is older
// than the current token of its record or its scope: a newer grant exists,
// and the writer's lease is no longer the resource's (§12.8.3
// write_valid). Nothing was written.
type StaleTokenError struct {
	Token int64
	// Lease is the newer grant.
	Lease Lease
}

func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("fencing token %d is older than %d, the token of the latest lease on %s (agent %q)",
		e.Token, e.Lease.FencingToken, leaseResource(e.Lease), e.Lease.AgentID)
}

func leaseResource(l Lease) string {
	if l.RecordID != nil {
		return "record " + l.RecordID.String()
	}
	return fmt.Sprintf("scope %q", l.Scope)
}

// withStatus sets l's status as of now.
func withStatus(l Lease, now time.Time) Lease {
	switch {
	case l.ReleasedAt != nil:
		l.Status = api.LeaseReleased
	case !now.Before(l.ExpiresAt):
		l.Status = api.LeaseExpired
	default:
		l.Status = api.LeaseActive
	}
	return l
}

func active(l Lease, now time.Time) bool { return withStatus(l, now).Status == api.LeaseActive }

// MaxLeaseAgentBytes and MaxLeaseScopeBytes bound an agent id and a scope
// name.
const (
	MaxLeaseAgentBytes = 200
	MaxLeaseScopeBytes = 200
)

// leaseTTL checks a request and returns the TTL it gets.
func (w *Writer) leaseTTL(req LeaseRequest) (time.Duration, error) {
	var bad []schemas.Violation
	switch {
	case req.Resource.RecordID == nil && req.Resource.Scope == "":
		bad = append(bad, schemas.Violation{Pointer: "/record_id", Message: "name a record (record_id) or a scope (scope) to lease"})
	case req.Resource.RecordID != nil && req.Resource.Scope != "":
		bad = append(bad, schemas.Violation{Pointer: "/scope", Message: "lease a record or a scope, not both"})
	case len(req.Resource.Scope) > MaxLeaseScopeBytes:
		bad = append(bad, schemas.Violation{Pointer: "/scope", Message: fmt.Sprintf("must be at most %d bytes", MaxLeaseScopeBytes)})
	}
	return w.checkRenewal(req.Agent, req.TTL, bad...)
}

// checkRenewal checks an agent and a TTL, after the violations found
// already, and returns the TTL a lease gets.
func (w *Writer) checkRenewal(agent string, ttl time.Duration, bad ...schemas.Violation) (time.Duration, error) {
	if v := checkAgent(agent); v != nil {
		bad = append(bad, *v)
	}
	c := w.cfg.Leases
	ttl = cmp.Or(ttl, c.DefaultTTL)
	if ttl < c.MinTTL || ttl > c.MaxTTL {
		bad = append(bad, schemas.Violation{Pointer: "/ttl_seconds", Message: fmt.Sprintf("must be from %g to %g seconds", c.MinTTL.Seconds(), c.MaxTTL.Seconds())})
	}
	if len(bad) > 0 {
		return 0, &schemas.ValidationError{Violations: bad}
	}
	return ttl, nil
}

func checkAgent(agent string) *schemas.Violation {
	switch {
	case agent == "":
		return &schemas.Violation{Pointer: "/agent_id", Message: "is required: the agent the lease is for (or send X-Engram-Actor)"}
	case len(agent) > MaxLeaseAgentBytes:
		return &schemas.Violation{Pointer: "/agent_id", Message: fmt.Sprintf("must be at most %d bytes", MaxLeaseAgentBytes)}
	}
	return nil
}

// AcquireLease runs §12.8.3's AcquireLease: it grants req's resource to
// req.Agent with a new fencing token when it is unleased, released or
// expired (Outcome granted), renews the agent's own active lease (Outcome
// renewed: same id and token, expiry now + TTL), and refuses one another
// agent holds with a [*LeaseHeldError]. A record of another tenant is
// [store.ErrNotFound]; a bad request a [*schemas.ValidationError].
func (w *Writer) AcquireLease(ctx context.Context, tenant string, req LeaseRequest) (Lease, error) {
	ttl, err := w.leaseTTL(req)
	if err != nil {
		return Lease{}, err
	}
	var (
		out     Lease
		expired bool
	)
	err = w.InTx(ctx, func(ctx context.Context, tx *Tx) error {
		var err error
		out, expired, err = tx.acquireLease(ctx, tenant, req, ttl)
		return err
	})
	var held *LeaseHeldError
	switch {
	case err == nil:
		if expired {
			w.leases.requests.WithLabelValues("expired").Inc()
		}
		w.leases.requests.WithLabelValues(out.Outcome).Inc()
	case errors.As(err, &held):
		w.leases.requests.WithLabelValues("denied").Inc()
	}
	return out, err
}

// acquireLease is [Writer.AcquireLease] in a transaction; expired reports
// that the grant replaced a lease that had run out unreleased.
func (t *Tx) acquireLease(ctx context.Context, tenant string, req LeaseRequest, ttl time.Duration) (out Lease, expired bool, err error) {
	now := t.w.clock()
	res := req.Resource
	scope := res.Scope
	if res.RecordID != nil {
		rec, err := store.Get(ctx, t.tx, tenant, *res.RecordID)
		if err != nil {
			return out, false, err
		}
		if scope = rec.Scope; scope != "" {
			if err := store.LockLeaseResource(ctx, t.tx, tenant, LeaseResource{Scope: scope}, false); err != nil {
				return out, false, err
			}
		}
	}
	if err := store.LockLeaseResource(ctx, t.tx, tenant, res, true); err != nil {
		return out, false, err
	}
	cur, err := store.LockLease(ctx, t.tx, tenant, res)
	exists := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return out, false, err
	}
	if exists && active(cur, now) {
		if cur.AgentID != req.Agent {
			return out, false, &LeaseHeldError{Lease: withStatus(cur, now), At: now}
		}
		// Re-entrant: the holder asks again.
		cur.ExpiresAt = now.Add(ttl)
		if err := store.ExtendLease(ctx, t.tx, tenant, cur.ID, cur.ExpiresAt); err != nil {
			return out, false, err
		}
		cur = withStatus(cur, now)
		cur.Outcome = api.LeaseRenewed
		return cur, false, nil
	}
	// A record's lease and its scope's exclude each other across agents.
	var other Lease
	if res.RecordID != nil && scope != "" {
		other, err = store.LeaseOf(ctx, t.tx, tenant, LeaseResource{Scope: scope})
	} else if res.RecordID == nil {
		other, err = store.RecordLeaseInScope(ctx, t.tx, tenant, scope, req.Agent, now)
	} else {
		err = store.ErrNotFound
	}
	switch {
	case err == nil && active(other, now) && other.AgentID != req.Agent:
		return out, false, &LeaseHeldError{Lease: withStatus(other, now), At: now}
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return out, false, err
	}

	token, err := store.NextFencingToken(ctx, t.tx, tenant)
	if err != nil {
		return out, false, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return out, false, err
	}
	out = Lease{ID: id, RecordID: res.RecordID, Scope: res.Scope, AgentID: req.Agent, FencingToken: token, GrantedAt: now, ExpiresAt: now.Add(ttl)}
	if exists {
		err = store.ReplaceLease(ctx, t.tx, tenant, cur.ID, out)
	} else {
		err = store.InsertLease(ctx, t.tx, tenant, out)
	}
	if err != nil {
		return Lease{}, false, err
	}
	out = withStatus(out, now)
	out.Outcome = api.LeaseGranted
	return out, exists && cur.ReleasedAt == nil, nil
}

// RenewLease extends agent's active lease id to now + ttl (the configured
// default when zero), keeping its token (§12.8.3 "renewable"). A lease of
// another agent is a [CodeNotLeaseHolder] conflict; one that ran out, a
// [CodeLeaseExpired] (acquire the resource again: a new grant, a new
// token); a released one, [CodeLeaseReleased]. A lease id that is not its
// resource's current grant is [store.ErrNotFound].
func (w *Writer) RenewLease(ctx context.Context, tenant string, id uuid.UUID, agent string, ttl time.Duration) (Lease, error) {
	ttl, err := w.checkRenewal(agent, ttl)
	if err != nil {
		return Lease{}, err
	}
	var out Lease
	err = w.InTx(ctx, func(ctx context.Context, tx *Tx) error {
		now := tx.w.clock()
		cur, err := tx.holderLease(ctx, tenant, id, agent, now)
		if err != nil {
			return err
		}
		if cur.Status != api.LeaseActive {
			code, why := CodeLeaseExpired, "ran out at "+cur.ExpiresAt.Format(time.RFC3339)+": acquire it again, for a new fencing token"
			if cur.Status == api.LeaseReleased {
				code, why = CodeLeaseReleased, "was released: acquire it again, for a new fencing token"
			}
			return conflict(code, leaseRecordIDs(cur), "lease %s on %s %s", id, leaseResource(cur), why)
		}
		cur.ExpiresAt = now.Add(ttl)
		out = withStatus(cur, now)
		return store.ExtendLease(ctx, tx.tx, tenant, id, cur.ExpiresAt)
	})
	if err == nil {
		w.leases.requests.WithLabelValues(api.LeaseRenewed).Inc()
	}
	return out, err
}

// ReleaseLease releases agent's lease id at once; releasing it again
// changes nothing. A lease of another agent is a [CodeNotLeaseHolder]
// conflict. The resource keeps its fencing token: the next grant's is
// larger.
func (w *Writer) ReleaseLease(ctx context.Context, tenant string, id uuid.UUID, agent string) (Lease, error) {
	if v := checkAgent(agent); v != nil {
		return Lease{}, &schemas.ValidationError{Violations: []schemas.Violation{*v}}
	}
	var (
		out      Lease
		released bool
	)
	err := w.InTx(ctx, func(ctx context.Context, tx *Tx) error {
		now := tx.w.clock()
		cur, err := tx.holderLease(ctx, tenant, id, agent, now)
		if err != nil {
			return err
		}
		released = cur.ReleasedAt == nil
		if released {
			cur.ReleasedAt = &now
			if err := store.ReleaseLease(ctx, tx.tx, tenant, id, now); err != nil {
				return err
			}
		}
		out = withStatus(cur, now)
		return nil
	})
	if err == nil && released {
		w.leases.requests.WithLabelValues(api.LeaseReleased).Inc()
	}
	return out, err
}

// holderLease locks lease id, agent's.
func (t *Tx) holderLease(ctx context.Context, tenant string, id uuid.UUID, agent string, now time.Time) (Lease, error) {
	cur, err := store.LockLeaseByID(ctx, t.tx, tenant, id)
	if err != nil {
		return cur, err
	}
	if cur.AgentID != agent {
		return cur, conflict(CodeNotLeaseHolder, leaseRecordIDs(cur), "lease %s on %s is agent %q's, not %q's", id, leaseResource(cur), cur.AgentID, agent)
	}
	return withStatus(cur, now), nil
}

func leaseRecordIDs(l Lease) []uuid.UUID {
	if l.RecordID == nil {
		return nil
	}
	return []uuid.UUID{*l.RecordID}
}

// Lease reads the lease id, its status as of now.
func (w *Writer) Lease(ctx context.Context, tenant string, id uuid.UUID) (Lease, error) {
	l, err := store.GetLease(ctx, w.db, tenant, id)
	if err != nil {
		return l, err
	}
	return withStatus(l, w.clock()), nil
}

// checkFence holds a write to rec to the leases on it and on its scope
// (§12.8.3 write_valid), in the write's transaction: a token older than
// either's current token is a [*StaleTokenError]; a write while another
// agent holds an active lease on either, without that lease's token, a
// [*LeaseHeldError]. A write without a token when no lease is active, or
// by the holder's agent, passes. A [Change] without a Fence is not held.
func (t *Tx) checkFence(ctx context.Context, tenant string, rec memory.Record, ch Change) error {
	f := ch.Fence
	if f == nil {
		return nil
	}
	if rec.Scope != "" {
		if err := store.LockLeaseResource(ctx, t.tx, tenant, LeaseResource{Scope: rec.Scope}, false); err != nil {
			return err
		}
	}
	if err := store.LockLeaseResource(ctx, t.tx, tenant, LeaseResource{RecordID: &rec.ID}, false); err != nil {
		return err
	}
	leases, err := store.CoveringLeases(ctx, t.tx, tenant, rec.ID, rec.Scope)
	if err != nil {
		return err
	}
	now := t.w.clock()
	for _, l := range leases {
		if f.Token != 0 && f.Token < l.FencingToken {
			t.w.leases.refusals.WithLabelValues("stale_token").Inc()
			return &StaleTokenError{Token: f.Token, Lease: withStatus(l, now)}
		}
	}
	for _, l := range leases {
		if active(l, now) && l.AgentID != f.Agent && f.Token != l.FencingToken {
			t.w.leases.refusals.WithLabelValues("lease_held").Inc()
			return &LeaseHeldError{Lease: withStatus(l, now), At: now}
		}
	}
	return nil
}

// Names of the leases' metrics.
const (
	// MetricLeaseRequests counts lease requests by result: granted,
	// renewed (re-entrant acquisitions and renewals), denied (held by
	// another agent), and the ends of leases, released and expired (an
	// unreleased lease found run out by the next grant). Lock contention is
	// denied / (granted + renewed + denied).
	MetricLeaseRequests = "engram_lease_requests_total"
	// MetricLeaseWriteRefusals counts writes the leases refused, by
	// reason: stale_token, lease_held.
	MetricLeaseWriteRefusals = "engram_lease_write_refusals_total"
)

type leaseMetrics struct {
	requests *prometheus.CounterVec
	refusals *prometheus.CounterVec
}

func newLeaseMetrics(reg prometheus.Registerer) *leaseMetrics {
	m := &leaseMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricLeaseRequests,
			Help: "Lease requests and lease ends, by result: granted, renewed, denied, released, expired. Lock contention is denied / (granted + renewed + denied).",
		}, []string{"result"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricLeaseWriteRefusals,
			Help: "Writes refused under the leases, by reason: stale_token (an older fencing token than the resource's), lease_held (another agent's active lease).",
		}, []string{"reason"}),
	}
	for _, r := range []string{"granted", "renewed", "denied", "released", "expired"} {
		m.requests.WithLabelValues(r)
	}
	for _, r := range []string{"stale_token", "lease_held"} {
		m.refusals.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.refusals)
	}
	return m
}
