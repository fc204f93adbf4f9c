package jobs

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// runLocks holds the locks of the runs in progress on this daemon:
// PostgreSQL session advisory locks, all on one connection of their own,
// outside the pool. A run that held a pooled connection for its lock while
// it worked would, with as many runs at once as the pool has connections
// (four jobs whose schedules fall on one second, on two cores), leave none
// for the runs' own queries or for the API, and hang the daemon.
//
// The locks last as long as the session: a daemon that dies, or loses this
// connection, gives them up, and the runs it had are marked abandoned by
// the next run of their job.
type runLocks struct {
	connect func(context.Context) (*pgx.Conn, error)
	logger  *slog.Logger

	mu   sync.Mutex // serialises the connection's use
	conn *pgx.Conn
	gen  int // counts connections: a lock is held on the one it was taken on
	// held are the keys this daemon holds: a session's advisory locks
	// stack, so the database would grant this session a key it holds.
	held map[int64]bool
}

// lockTimeout bounds a statement on the lock connection.
const lockTimeout = 10 * time.Second

// tryLock takes key if no session holds it, connecting first if need be,
// and returns the connection's generation, which unlock takes.
func (l *runLocks) tryLock(ctx context.Context, key int64) (locked bool, gen int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, lockTimeout)
	defer cancel()
	if l.held[key] {
		return false, l.gen, nil
	}
	if l.conn == nil {
		conn, err := l.connect(ctx)
		if err != nil {
			return false, 0, err
		}
		l.conn = conn
		l.gen++
	}
	if err := l.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&locked); err != nil {
		l.drop(ctx, err)
		return false, 0, err
	}
	if locked {
		if l.held == nil {
			l.held = map[int64]bool{}
		}
		l.held[key] = true
	}
	return locked, l.gen, nil
}

// unlock gives key back. A lock that cannot be given back dies with the
// connection, and so do the others it holds.
func (l *runLocks) unlock(key int64, gen int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil || gen != l.gen {
		return // lost with the connection it was taken on
	}
	ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
	defer cancel()
	if _, err := l.conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", key); err != nil {
		l.drop(ctx, err)
		return
	}
	delete(l.held, key)
}

// drop closes the connection after an error, giving up every lock on it.
func (l *runLocks) drop(ctx context.Context, err error) {
	if len(l.held) > 0 {
		l.logger.WarnContext(ctx, "job locks: connection lost; the runs in progress no longer hold their locks",
			slog.Int("runs", len(l.held)), slog.String("error", err.Error()))
	}
	_ = l.conn.Close(context.WithoutCancel(ctx))
	l.conn, l.held = nil, nil
}

// close closes the connection, giving up any lock still held.
func (l *runLocks) close(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		_ = l.conn.Close(ctx)
		l.conn, l.held = nil, nil
	}
}
