// Package revise is engram's write path: the one door through which every
// change to memory passes (write-path RFC §12.1.1: "the single point at
// which ephemeral agent-generated content is promoted to persistent
// epistemic state"; substrate RFC §15.7). The records API, the policy
// plane, decay and every later caller write through a [Writer]; nothing
// else calls package store's writing statements, and a test holds the
// codebase to that.
//
// The write path owns what a revision means: transactions, the defaults a
// new record gets (its type's configured decay profile and deletion
// policy), the payload limit, schema validation, the revision operations of
// substrate RFC §7 and their rules, and the audit entry each writes. Package
// store only runs the statements it is given.
//
// Each operation runs in one transaction of its own, or, through
// [Writer.InTx], several compose in one: a [Tx] has the same operations,
// and they commit together or not at all.
//
// Failure cases: a refused change is a [*ConflictError] (the state of the
// records named forbids it), a [*schemas.ValidationError] (the request is
// malformed, with JSON pointers), or a [*TooLargeError]; nothing was
// written. A record of another tenant is [store.ErrNotFound].
package revise

import (
	"cmp"
	"context"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/seal"
	"github.com/engram-dev/engram/store"
)

// DefaultMaxPayloadBytes is the default limit on a record's encoded payload.
const DefaultMaxPayloadBytes = 64 << 10

// DefaultMaxClockSkew is how far ahead of the write path's clock a
// writer's created_at or last_reinforced_at may be: a writer's clock that
// runs a little fast, not a record dated in the future.
const DefaultMaxClockSkew = 5 * time.Minute

// Config configures a [Writer]. The zero value of each field is its
// documented default.
type Config struct {
	// MaxPayloadBytes caps a record's encoded payload;
	// [DefaultMaxPayloadBytes] when zero.
	MaxPayloadBytes int
	// Defaults returns the decay profile and deletion policy a new record
	// of a type gets when it names none: the configured profiles of the
	// decay package. Nil means [memory.DefaultDecay] and auto_prune.
	Defaults func(memory.Type) (memory.Decay, memory.DeletionPolicy)
	// Gain is what a successful use adds to the salience of a type's
	// records that name no gain of their own — a fact observed again from
	// a new source is reinforced by it, in the revision that counts the
	// source: the decay package's configured profiles
	// (decay.Settings.Gain). Nil means [memory.DefaultReinforcementGain].
	Gain func(memory.Type) float64
	// Now is the write path's clock; nil means time.Now.
	Now func() time.Time
	// MaxClockSkew is how far ahead of Now a new record's created_at and
	// last_reinforced_at may be: within it they are read as now, past it
	// the record is refused (a record dated in the future would never
	// decay and would escape retention). [DefaultMaxClockSkew] when zero.
	MaxClockSkew time.Duration
	// Gates configures the gates (see [Gates]); zero fields are defaults.
	Gates Gates
	// Registry receives the write path's metrics; nil registers none.
	Registry prometheus.Registerer
	// Leases bounds the leases' TTLs (see [LeaseConfig]); zero fields are
	// defaults.
	Leases LeaseConfig
	// Budgets are the write budgets per role and session (write-path RFC
	// §12.11.2) that changes made by a key ([Change.Principal]) count
	// against; the zero value is [access.DefaultBudgets].
	Budgets access.Budgets
	// Sealer seals the payloads of sensitive records at rest and opens
	// every payload the write path reads (see sealing.go); nil: nothing
	// is sealed.
	Sealer *seal.Sealer
}

// Writer is the write path over a database.
type Writer struct {
	db      pg.DBTX
	cfg     Config
	metrics *metrics
	leases  *leaseMetrics
}

// New returns the write path over db (a pool; or a transaction, in which
// each operation runs in a savepoint).
func New(db pg.DBTX, cfg Config) *Writer {
	cfg.MaxPayloadBytes = cmp.Or(cfg.MaxPayloadBytes, DefaultMaxPayloadBytes)
	cfg.MaxClockSkew = cmp.Or(cfg.MaxClockSkew, DefaultMaxClockSkew)
	if cfg.Defaults == nil {
		cfg.Defaults = func(t memory.Type) (memory.Decay, memory.DeletionPolicy) {
			return memory.DefaultDecay(t), memory.AutoPrune
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Gain == nil {
		cfg.Gain = func(memory.Type) float64 { return memory.DefaultReinforcementGain }
	}
	cfg.Gates = cfg.Gates.withDefaults()
	cfg.Leases = cfg.Leases.withDefaults()
	return &Writer{db: db, cfg: cfg, metrics: newMetrics(cfg.Registry), leases: newLeaseMetrics(cfg.Registry)}
}

// reinforced is rec's salience after a successful use at now, by its own
// gain or its type's (substrate RFC §11, §15.6).
func (w *Writer) reinforced(rec memory.Record, now time.Time) float64 {
	gain := w.cfg.Gain(rec.Type)
	if g := rec.Lifecycle.Decay.ReinforcementGain; g != nil {
		gain = *g
	}
	return rec.Reinforced(now, gain)
}

// Authority is the write path's configured authority table, the one
// retrieval ranks provenance by (write-path RFC §12.4.6).
func (w *Writer) Authority() memory.Authority { return w.cfg.Gates.Authority() }

// MaxPayloadBytes is the payload limit in force.
func (w *Writer) MaxPayloadBytes() int { return w.cfg.MaxPayloadBytes }

// clock returns the write path's time, at the database's microsecond
// precision.
func (w *Writer) clock() time.Time { return w.cfg.Now().UTC().Truncate(time.Microsecond) }

// Tx is one transaction of the write path: its operations commit together
// when the function given to [Writer.InTx] returns nil.
type Tx struct {
	w  *Writer
	tx pgx.Tx
	// canWait: the transaction is a write of its own, whose caller may
	// wait for a reviewer after it commits (the approval gate's sync tier).
	canWait bool
	// audited are the revisions the transaction made, counted in
	// [MetricRevisions] once it commits.
	audited []audited
	// reputation are the agents' reputation counts the transaction's
	// writes add, written just before it commits (see [Tx.noteLater]).
	reputation map[agentKey]store.ReputationDelta
	// charges are the revisions the transaction made for keys, by whose
	// write budget they count against, charged just before it commits.
	charges map[charge]int
	// opened are the sealed payloads the transaction read (sealing.go).
	opened map[uuid.UUID]opened
	// reads are what the gates of a batch of facts read, read ahead
	// (factreads.go); nil outside [Tx.ObserveFacts].
	reads *factReads
}

// audited is one revision of a transaction: a record's layer and the
// audit action.
type audited struct {
	layer  memory.Type
	action string
}

// InTx runs fn in one transaction and commits what it wrote when it
// returns nil; an error rolls everything back.
//
// fn may run more than once: when PostgreSQL aborts the transaction to
// break a deadlock with another (40P01) or a serialization conflict
// (40001) — a consolidation pass amending a procedure while feedback on
// it is written, say — the transaction is run again, a moment later, up
// to txAttempts times. fn must therefore keep nothing from one run to the
// next but what it assigns afresh.
func (w *Writer) InTx(ctx context.Context, fn func(ctx context.Context, tx *Tx) error) error {
	var t *Tx
	var err error
	for attempt := 1; ; attempt++ {
		err = pg.WithTx(ctx, w.db, func(ctx context.Context, tx pgx.Tx) error {
			t = &Tx{w: w, tx: tx}
			if err := fn(ctx, t); err != nil {
				return err
			}
			if err := t.chargeBudgets(ctx); err != nil {
				return err
			}
			return t.writeReputation(ctx)
		})
		if !retryable(err) || attempt == txAttempts {
			break
		}
		select {
		case <-ctx.Done():
			return w.nameFact(ctx, err)
		case <-time.After(time.Duration(attempt) * (10*time.Millisecond + rand.N(20*time.Millisecond))):
		}
	}
	if err == nil {
		for _, a := range t.audited {
			w.metrics.revisions.WithLabelValues(string(a.layer), a.action).Inc()
		}
	}
	return w.nameFact(ctx, err)
}

// inTx runs fn in a transaction of the write path's own and returns its
// value.
func inTx[T any](ctx context.Context, w *Writer, fn func(ctx context.Context, tx *Tx) (T, error)) (T, error) {
	var out T
	err := w.InTx(ctx, func(ctx context.Context, tx *Tx) error {
		var err error
		out, err = fn(ctx, tx)
		return err
	})
	return out, err
}

// txAttempts bounds the runs of a transaction aborted by a deadlock or a
// serialization conflict.
const txAttempts = 3

// retryable reports whether PostgreSQL aborted a transaction that may
// succeed when run again.
func retryable(err error) bool {
	code, _ := pg.Code(err)
	return code == pg.DeadlockDetected || code == pg.SerializationFailure
}

// Exec is the transaction, for statements that are not writes to memory
// (staging bookkeeping, say) but must commit with it. Reads through it see
// what the transaction wrote.
func (t *Tx) Exec() pgx.Tx { return t.tx }

// Change says who makes a revision and why; it becomes the audit entry
// (substrate RFC §15A.8: every revision is auditable and traceable to
// evidence).
type Change struct {
	Actor     string          `json:"actor"`
	Rationale string          `json:"rationale,omitempty"`
	Evidence  []memory.Source `json:"evidence,omitempty"`
	// Fence holds an agent's write to the leases on what it writes
	// (write-path RFC §12.8.3; see [Fence]); nil for the daemon's own
	// writes.
	Fence *Fence `json:"-"`
	// Principal is the key the change is made with (write-path RFC
	// §12.8.2): every revision it makes is authorized for it and counted
	// against its write budget. Nil is the system's own change (the policy
	// plane, decay, consolidation), which is neither.
	Principal *access.Principal `json:"-"`
	// Rules are the operator's access rules in force for the change.
	Rules []access.Rule `json:"-"`
}

// because is the change a revision caused by ch is made under: the same
// actor, key, access rules and lease fence — a revision a change causes
// (an absorbed duplicate, a superseded rival, a reactivated original) is
// held to the same rules as the change itself — with its own rationale and
// evidence.
func (ch Change) because(rationale string, evidence []memory.Source) Change {
	ch.Rationale, ch.Evidence = rationale, evidence
	return ch
}

// Audit actions, one per revision operation.
const (
	ActionCreate    = "create"
	ActionUpdate    = "update"
	ActionAppend    = "append"
	ActionSupersede = "supersede"
	ActionFork      = "fork"
	ActionContest   = "contest"
	ActionRetract   = "retract"
	ActionMerge     = "merge"
	ActionDelete    = "delete"
	ActionPurge     = "purge"
	ActionExpire    = "expire"
	ActionRestore   = "restore"
	ActionFeedback  = "feedback"
	// ActionRollback retracts a bad revision's record (write-path RFC
	// §12.5.6); ActionReactivate brings back what it had replaced.
	ActionRollback   = "rollback"
	ActionReactivate = "reactivate"
	// ActionQuarantine holds a suspect record out of retrieval for
	// investigation (write-path RFC §12.11.5); ActionRelease ends that.
	ActionQuarantine = "quarantine"
	ActionRelease    = "release"
)
