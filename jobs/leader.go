package jobs

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// elector holds leadership: a PostgreSQL session advisory lock on a
// connection of its own, outside the pool. The lock lasts as long as the
// session, so a daemon that dies or loses its connection loses it, and
// another takes it at its next attempt.
type elector struct {
	connect  func(context.Context) (*pgx.Conn, error)
	key      int64
	interval time.Duration
	logger   *slog.Logger
	changed  func(leader bool)

	leader atomic.Bool
	mu     sync.Mutex // guards conn, used by the loop and by confirm
	conn   *pgx.Conn
	cancel context.CancelFunc
	done   chan struct{}
}

// start runs the election loop until stop.
func (e *elector) start(ctx context.Context) {
	ctx, e.cancel = context.WithCancel(context.WithoutCancel(ctx))
	e.done = make(chan struct{})
	go func() {
		defer close(e.done)
		t := time.NewTicker(e.interval)
		defer t.Stop()
		for {
			e.attempt(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// attempt takes the lock if it is free, or checks that the session holding
// it is still there.
func (e *elector) attempt(ctx context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, e.interval+5*time.Second)
	defer cancel()
	if e.conn == nil {
		conn, err := e.connect(ctx)
		if err != nil {
			e.logger.DebugContext(ctx, "leader election: connect", slog.String("error", err.Error()))
			return
		}
		e.conn = conn
	}
	if e.leader.Load() {
		if _, err := e.conn.Exec(ctx, "SELECT 1"); err != nil {
			e.lost(ctx, err)
		}
		return
	}
	var ok bool
	if err := e.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", e.key).Scan(&ok); err != nil {
		e.lost(ctx, err)
		return
	}
	if ok {
		e.leader.Store(true)
		e.changed(true)
	}
}

// lost drops the connection, and with it the lock if it held it.
func (e *elector) lost(ctx context.Context, err error) {
	e.logger.WarnContext(ctx, "leader election: connection lost", slog.String("error", err.Error()))
	_ = e.conn.Close(context.WithoutCancel(ctx))
	e.conn = nil
	if e.leader.Swap(false) {
		e.changed(false)
	}
}

// confirm reports whether this daemon leads, asking the database: a
// session that is gone holds no lock, however recently the loop saw it.
func (e *elector) confirm(ctx context.Context) bool {
	if !e.leader.Load() {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.conn == nil {
		return false
	}
	if _, err := e.conn.Exec(ctx, "SELECT 1"); err != nil {
		e.lost(ctx, err)
		return false
	}
	return e.leader.Load()
}

// stop ends the loop and gives up leadership.
func (e *elector) stop(ctx context.Context) {
	if e.cancel == nil {
		return
	}
	e.cancel()
	<-e.done
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.conn == nil {
		return
	}
	if e.leader.Swap(false) {
		_, _ = e.conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", e.key)
		e.changed(false)
	}
	_ = e.conn.Close(ctx)
	e.conn = nil
}
