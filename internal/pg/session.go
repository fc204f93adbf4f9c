package pg

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Session is what engramd sets on each of its connections so that no
// statement of a dead, stuck or partitioned daemon runs on, holds locks or
// keeps a transaction open in PostgreSQL (issue 33; substrate RFC §15.5, a
// long-lived service). A zero duration leaves PostgreSQL's setting (off).
type Session struct {
	// ApplicationName names the connections in pg_stat_activity.
	ApplicationName string
	// StatementTimeout bounds a statement of an API request (the
	// connections' default); [WithStatementTimeout] gives other work its
	// own (ingestion batches, periodic jobs).
	StatementTimeout time.Duration
	// LockTimeout bounds a wait for a lock.
	LockTimeout time.Duration
	// IdleInTransactionTimeout ends a session whose transaction waits this
	// long for its client's next statement: a client stuck or cut off by
	// the network, whose locks it would hold.
	IdleInTransactionTimeout time.Duration
	// ClientCheckInterval is how often PostgreSQL checks, while a statement
	// runs, that the client is still connected
	// (client_connection_check_interval), and cancels the statement of one
	// that is gone: a daemon killed mid-query.
	ClientCheckInterval time.Duration
	// KeepAlive is the idle time before TCP keepalives probe a silent peer,
	// on both ends (the server's tcp_keepalives_*, the client's dialer):
	// three unanswered probes KeepAlive/3 apart end the connection.
	KeepAlive time.Duration
}

// statementTimeoutParam is the CustomData key of a connection's current
// statement timeout.
const statementTimeoutParam = "engram.statement_timeout"

type statementTimeoutKey struct{}

// WithStatementTimeout returns ctx whose statements run under timeout d
// (0: none) on a pool configured by [Session.Configure], instead of the
// pool's default: the connection a statement acquires is set to it first
// (one round trip, only when its setting differs). A transaction keeps the
// setting of the connection it began on.
func WithStatementTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, statementTimeoutKey{}, d)
}

// Configure sets the session's parameters on every connection of cfg, and
// the statement timeout of the work a context names on each acquire.
func (s Session) Configure(cfg *pgxpool.Config) {
	params := cfg.ConnConfig.RuntimeParams
	setParam := func(name, v string) {
		if _, ok := params[name]; !ok && v != "" {
			params[name] = v
		}
	}
	setParam("application_name", s.ApplicationName)
	setParam("statement_timeout", millis(s.StatementTimeout))
	setParam("lock_timeout", millis(s.LockTimeout))
	setParam("idle_in_transaction_session_timeout", millis(s.IdleInTransactionTimeout))
	setParam("client_connection_check_interval", millis(s.ClientCheckInterval))
	if s.KeepAlive > 0 {
		interval := max(s.KeepAlive/3, time.Second)
		setParam("tcp_keepalives_idle", strconv.Itoa(int(s.KeepAlive.Seconds())))
		setParam("tcp_keepalives_interval", strconv.Itoa(int(interval.Seconds())))
		setParam("tcp_keepalives_count", "3")
		dialer := makeDialer(s.KeepAlive, interval)
		cfg.ConnConfig.DialFunc = dialer.DialContext
	}
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if after != nil {
			if err := after(ctx, conn); err != nil {
				return err
			}
		}
		conn.PgConn().CustomData()[statementTimeoutParam] = s.StatementTimeout
		return nil
	}
	cfg.PrepareConn = func(ctx context.Context, conn *pgx.Conn) (bool, error) {
		want, ok := ctx.Value(statementTimeoutKey{}).(time.Duration)
		if !ok {
			want = s.StatementTimeout
		}
		data := conn.PgConn().CustomData()
		if cur, ok := data[statementTimeoutParam].(time.Duration); ok && cur == want {
			return true, nil
		}
		if _, err := conn.Exec(ctx, setStatementTimeoutSQL, strconv.FormatInt(want.Milliseconds(), 10)); err != nil {
			return false, fmt.Errorf("set statement timeout: %w", err)
		}
		data[statementTimeoutParam] = want
		return true, nil
	}
}

const setStatementTimeoutSQL = `SELECT set_config('statement_timeout', $1, false)`

// millis is d as a PostgreSQL setting in milliseconds; empty for zero.
func millis(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return strconv.FormatInt(max(d.Milliseconds(), 1), 10)
}

// makeDialer is a dialer whose connections probe a silent server after
// idle, every interval, three times.
func makeDialer(idle, interval time.Duration) *net.Dialer {
	return &net.Dialer{KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: idle, Interval: interval, Count: 3}}
}
