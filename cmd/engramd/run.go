package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/engram-dev/engram/cmd/engramd/config"
	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/internal/version"
	"github.com/engram-dev/engram/migrations"
	"github.com/engram-dev/engram/openintent"
	"github.com/engram-dev/engram/openwop"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

const usage = `engramd is the engram memory daemon.

Usage:
  engramd run [--migrate] [flags]   serve the API (migrating the database first with --migrate)
  engramd migrate [flags]           apply pending database migrations and exit
  engramd --version                 which build this is

Flags (each also settable in the YAML file and as ENGRAM_* environment variables):
  --config FILE              YAML configuration (ENGRAM_CONFIG)
  --listen ADDR              HTTP address (ENGRAM_LISTEN, default 127.0.0.1:8080)
  --pprof-listen ADDR        serve Go's profiler there, off by default (ENGRAM_PPROF_LISTEN)
  --database-url URL         PostgreSQL URL (DATABASE_URL)
  --max-payload-bytes N      record payload limit (ENGRAM_MAX_PAYLOAD_BYTES, default 65536)
  --shutdown-timeout D       graceful stop deadline (ENGRAM_SHUTDOWN_TIMEOUT, default 15s)
  --log-level LEVEL          debug, info, warn, error (ENGRAM_LOG_LEVEL)
  --log-format FORMAT        text or json (ENGRAM_LOG_FORMAT)
  --max-clock-skew D         how far ahead of this clock a record's times may be (ENGRAM_MAX_CLOCK_SKEW, default 5m)
  --strict                   refuse to start with unsigned provenance stamps or no encryption at rest (ENGRAM_STRICT)
  --log-requests LEVEL       a line a request at info (default) or debug, or off (ENGRAM_LOG_REQUESTS)
API keys: ENGRAM_API_KEYS=[role@]tenant:key[,…] or api_keys in the file; a key
  with no role is an orchestrator with clearance medium (curator@tenant:key
  for a person's key); *:key is an operator key (the jobs, across every tenant).
`

// run is engramd's whole life: it returns when ctx is cancelled (a signal)
// and the daemon has stopped, or on a start-up error.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		return nil
	}
	if args[0] == "version" || args[0] == "--version" || args[0] == "-version" {
		fmt.Fprintln(stdout, "engramd", version.String())
		return nil
	}
	cmd, args := args[0], args[1:]
	migrate := false
	if cmd == "run" && len(args) > 0 && (args[0] == "--migrate" || args[0] == "-migrate") {
		migrate, args = true, args[1:]
	}
	cfg, err := config.Load(args, getenv)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	logger := newLogger(cfg, os.Stderr)
	switch cmd {
	case "migrate":
		return migrateDB(ctx, cfg, logger)
	case "run":
		if migrate {
			if err := migrateDB(ctx, cfg, logger); err != nil {
				return err
			}
		}
		return serve(ctx, cfg, func() (config.Config, error) { return config.Load(args, getenv) }, logger, stdout)
	}
	return fmt.Errorf("unknown command %q (try engramd help)", cmd)
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// openSQL opens the database for migrations, on the direct connection
// (database.lock_url when set: goose's lock is a session's, which a pooler
// in transaction mode would lose). The URL is parsed as the pool parses
// it, so that the pool's own parameters (pool_max_conns) are not sent to
// the server as settings it does not know.
func openSQL(cfg config.Config) (*sql.DB, error) {
	pc, err := pgxpool.ParseConfig(cfg.Database.LockDSN(cfg.DatabaseURL))
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	return stdlib.OpenDB(*pc.ConnConfig), nil
}

func migrateDB(ctx context.Context, cfg config.Config, logger *slog.Logger) error {
	db, err := openSQL(cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := migrations.Up(ctx, db, nil)
	if err != nil {
		return err
	}
	for _, r := range res {
		logger.Info("migrated", slog.String("migration", r.Source.Path), slog.Duration("duration", r.Duration))
	}
	logger.Info("database is up to date", slog.Int("applied", len(res)))
	return migrateDenseIndex(ctx, cfg, logger)
}

// serve runs the daemon; load reads the configuration again on SIGHUP.
func serve(ctx context.Context, cfg config.Config, load func() (config.Config, error), logger *slog.Logger, stdout io.Writer) error {
	db, err := openSQL(cfg)
	if err != nil {
		return err
	}
	// A database migrated by a newer engramd is refused before anything
	// reads it: this build's statements may not fit its schema.
	if err := migrations.Newer(ctx, db); err != nil {
		db.Close()
		return err
	}
	pending, err := migrations.Pending(ctx, db)
	db.Close()
	if err != nil {
		return fmt.Errorf("check migrations: %w", err)
	}
	if pending {
		return errors.New("the database has pending migrations: run `engramd migrate` or `engramd run --migrate`")
	}

	// Every connection bounds its statements, lock waits and idle
	// transactions, and PostgreSQL ends the statements of a daemon gone
	// (database.*): API requests run under the pool's statement timeout,
	// ingestion batches, jobs and erasures under their own.
	pool, err := newPool(ctx, cfg, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	ingestCtx := pg.WithStatementTimeout(ctx, cfg.Database.IngestStatementTimeout)
	jobCtx := pg.WithStatementTimeout(ctx, cfg.Database.JobStatementTimeout)
	checkIterativeScan(ctx, cfg, pool, logger)
	// The session-level locks' own pool, past any pooler: the dense index
	// build holds one while it builds.
	lockPool := pool
	if cfg.Database.LockURL != "" {
		if lockPool, err = pg.NewPool(ctx, cfg.Database.LockURL, func(c *pgxpool.Config) { c.MaxConns = 2 }); err != nil {
			return fmt.Errorf("database.lock_url: %w", err)
		}
		defer lockPool.Close()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerPoolMetrics(reg, pool)
	writer, settings, err := newWriter(pool, cfg, reg)
	if err != nil {
		return err
	}
	// A daemon that could not open what the database holds sealed refuses
	// to start, naming the master key it lacks by id (never a key).
	if err := writer.Sealer().Check(ctx); err != nil {
		return err
	}
	if s := writer.Sealer(); s.Enabled() {
		logger.Info("encryption at rest", slog.String("master_key", s.CurrentMasterKey()), slog.String("min_sensitivity", string(s.MinSensitivity())))
	}
	if err := checkInsecure(cfg, writer.Sealer().Enabled(), logger); err != nil {
		return err
	}

	keys, err := apiKeys(cfg, stdout)
	if err != nil {
		return err
	}
	warnUnroled(keys, logger)
	for _, k := range keys {
		if k.Role == server.RoleOperator {
			continue // an operator key has no tenant
		}
		if err := store.EnsureTenant(ctx, pool, k.Tenant); err != nil {
			return err
		}
	}

	ing, worker, err := startPlanes(ingestCtx, cfg, pool, writer, logger, reg)
	if err != nil {
		return err
	}
	// Stopped after the HTTP server and before the pool closes: a batch cut
	// off rolls back and its events stay staged for the next start.
	defer func() { _ = worker.Stop(context.WithoutCancel(ctx)) }()
	ret, err := newRetrieval(cfg, pool, worker.Policy, reg, logger, retrieve.WithSealer(writer.Sealer()), retrieve.WithAuthority(writer.Authority()))
	if err != nil {
		return err
	}
	if ret.backfiller != nil {
		ret.backfiller.YieldTo(worker.Busy, 0)
	}
	// Retrieval goes before classification when both want the cores.
	worker.YieldTo(ret.retriever.Busy, 0)
	// Cut off when serve returns, and awaited before the pool closes;
	// building an index takes as long as it takes.
	denseCtx, stopDense := context.WithCancel(pg.WithStatementTimeout(ctx, 0))
	waitDense := startDenseIndex(denseCtx, lockPool, ret.embedder, logger)
	defer func() { stopDense(); waitDense() }()
	per, err := startPeriodic(jobCtx, cfg, load, pool, writer, settings, ret, reg, logger)
	if err != nil {
		return err
	}
	// Stopped after the HTTP server, before the pool closes: a run cut off
	// saves its cursor and the next run resumes from it.
	defer per.stop(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	reads, err := startReplicas(ctx, cfg, pool, reg, logger)
	if err != nil {
		return err
	}
	defer reads.stop()
	srv := server.New(server.Config{
		DB:           pool,
		Reads:        reads.router,
		Writer:       writer,
		Keys:         keys,
		Logger:       logger,
		Ready:        pool.Ping,
		MaxBodyBytes: int64(4*cfg.MaxPayloadBytes + 1<<20),
		Registry:     reg,
		Ingest:       ing,
		Policy:       worker.Policy,
		Decay:        per.decayer,
		Jobs:         per.scheduler,
		Retrieve:     ret.retriever,
		OpenIntent: openintent.Config{EpisodicCapacity: cfg.OpenIntent.EpisodicCapacity,
			WorkingCapacity: cfg.OpenIntent.WorkingCapacity},
		OpenWOP:    openwopConfig(cfg),
		Console:    cfg.Console,
		Background: jobCtx,
		// The request log: info unless configured debug or off.
		RequestLogLevel: map[string]slog.Level{"debug": slog.LevelDebug}[cfg.LogRequests],
		NoRequestLog:    cfg.LogRequests == "off",
	})
	httpServer := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	logger.Info("engramd serving", slog.String("addr", ln.Addr().String()), slog.Int("tenants", countTenants(keys)))
	if cfg.PprofListen != "" {
		stopProfiler, err := serveProfiler(ctx, cfg.PprofListen, logger)
		if err != nil {
			return err
		}
		defer stopProfiler()
	}

	errc := make(chan error, 1)
	go func() { errc <- httpServer.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("engramd stopping", slog.Duration("deadline", cfg.ShutdownTimeout))
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if err := httpServer.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	// Erasures still running are interrupted and say so.
	if err := srv.Close(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("engramd stopped")
	return nil
}

// insecure are the settings a production daemon should not run with, and
// what to set instead: the loud warnings of start-up, and what --strict
// refuses to start with.
func insecure(cfg config.Config, encrypted bool) []string {
	var out []string
	if len(cfg.WritePath.Provenance.Keys) == 0 {
		// Unsigned stamps cannot show that a record's provenance is the
		// one the write path stamped (write-path RFC §12.4.2).
		// OpenWOP memoryRefs are signed with the same keys: without one, with
		// a secret of this process only.
		out = append(out, "no provenance signing key: provenance stamps are stored UNSIGNED and cannot be verified, and OpenWOP memoryRefs stop resolving when engramd restarts and on other daemons; set write_path.provenance.keys or ENGRAM_PROVENANCE_KEYS=id:secret")
	}
	if !encrypted {
		out = append(out, "encryption at rest is OFF: no master key, so sensitive payloads are stored in the clear; set encryption.master_keys, encryption.master_key_file or ENGRAM_MASTER_KEY")
	}
	return out
}

// checkInsecure logs each insecure setting loudly, at error level so that
// no log filter hides it, or, with --strict, refuses to start and names
// them all.
func checkInsecure(cfg config.Config, encrypted bool, logger *slog.Logger) error {
	bad := insecure(cfg, encrypted)
	if len(bad) == 0 {
		return nil
	}
	if cfg.Strict {
		return fmt.Errorf("strict: refusing to start: %s", strings.Join(bad, "; "))
	}
	for _, b := range bad {
		logger.Error("INSECURE: " + b + " (engramd run --strict refuses to start so)")
	}
	return nil
}

// warnUnroled warns of each tenant key configured without a role: it has
// the least privilege of server.DefaultRole and DefaultClearance, where
// before it was a curator with clearance hyper. Naming the role ends the
// warning.
func warnUnroled(keys []server.Key, logger *slog.Logger) {
	for _, k := range keys {
		if server.Unroled(k) {
			logger.Warn("API key names no role: it is an "+string(server.DefaultRole)+" with clearance "+
				string(cmp.Or(k.Clearance, server.DefaultClearance))+" (it was a curator with clearance hyper before); "+
				"to keep that, set role: curator (ENGRAM_API_KEYS=curator@tenant:key), or name the role it needs",
				slog.String("key", k.Name), slog.String("tenant", k.Tenant))
		}
	}
}

// apiKeys returns the configured keys, or generates a curator's key for
// the default tenant and an operator key and prints them: the one place a
// key is ever shown.
func apiKeys(cfg config.Config, stdout io.Writer) ([]server.Key, error) {
	var keys []server.Key
	for _, k := range cfg.APIKeys {
		role := server.Role(k.Role)
		name := cmp.Or(k.Name, k.Tenant, string(cmp.Or(role, server.DefaultRole)))
		keys = append(keys, server.Key{Tenant: k.Tenant, Name: name, Secret: k.Key, Role: role,
			Agent: k.AgentID, Domains: k.Domains, Clearance: k.Clearance})
	}
	if len(keys) > 0 {
		return keys, nil
	}
	tenant, err := newSecret()
	if err != nil {
		return nil, err
	}
	operator, err := newSecret()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "engramd: no API keys configured; this run accepts tenant %q with a curator's key:\n\n    %s\n\n"+
		"  export ENGRAM_API_KEY=%s\n\n"+
		"and an operator key, for the periodic jobs across every tenant (engram jobs list):\n\n    %s\n\n"+
		"  (set ENGRAM_API_KEYS=curator@%s:<key>,*:<operator key> to choose lasting ones)\n\n",
		config.DefaultTenant, tenant, tenant, operator, config.DefaultTenant)
	return []server.Key{
		// The person who started the daemon holds it: a curator.
		{Tenant: config.DefaultTenant, Name: "generated", Secret: tenant, Role: server.RoleCurator},
		{Name: "generated-operator", Secret: operator, Role: server.RoleOperator},
	}, nil
}

// newSecret returns a new random API key.
func newSecret() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate api key: %w", err)
	}
	return "ek_" + hex.EncodeToString(b), nil
}

func countTenants(keys []server.Key) int {
	seen := map[string]bool{}
	for _, k := range keys {
		if k.Tenant != "" {
			seen[k.Tenant] = true
		}
	}
	return len(seen)
}

// serveProfiler serves Go's profiler (net/http/pprof) on addr, a listener
// of its own so that the API never exposes it, until the returned stop.
func serveProfiler(ctx context.Context, addr string, logger *slog.Logger) (stop func(), err error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pprof listen: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
	go func() { _ = srv.Serve(ln) }()
	logger.Warn("the Go profiler is served: keep its address private", slog.String("addr", ln.Addr().String()))
	return func() { _ = srv.Close() }, nil
}

// openwopConfig is the OpenWOP adapter's configuration: its section, and
// the provenance signing keys as the secrets its memoryRefs are signed
// with, the active one first (it signs; the others still resolve the refs
// they signed).
func openwopConfig(cfg config.Config) openwop.Config {
	c := cfg.OpenWOP
	p := cfg.WritePath.Provenance
	for _, k := range p.Keys {
		if k.ID == p.Active {
			c.RefKeys = append([]string{k.Secret}, c.RefKeys...)
		} else {
			c.RefKeys = append(c.RefKeys, k.Secret)
		}
	}
	return c
}
