package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/engram-dev/engram/cmd/engramd/config"
	"github.com/engram-dev/engram/embedding"
	"github.com/engram-dev/engram/extract"
	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/retention"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
)

// startPlanes builds the ingestion plane and starts the policy plane's
// worker; the caller stops the worker.
func startPlanes(ctx context.Context, cfg config.Config, db pg.DBTX, writer *revise.Writer, logger *slog.Logger, reg prometheus.Registerer) (*ingest.Ingester, *ingest.Worker, error) {
	pol := policy.Default()
	if cfg.PolicyFile != "" {
		var err error
		if pol, err = policy.Load(cfg.PolicyFile); err != nil {
			return nil, nil, err
		}
	}
	w := ingest.NewWorker(ingest.WorkerConfig{
		DB: db, Writer: writer, Policy: pol, Logger: logger, Registry: reg,
		Partitions: cfg.Ingest.Partitions, BatchSize: cfg.Ingest.BatchSize, MaxAttempts: cfg.Ingest.MaxAttempts,
	})
	in := ingest.New(ingest.Config{
		DB: db, Policy: w.Policy, Staged: w.Notify, Registry: reg, Sealer: writer.Sealer(),
		MaxEventBytes: cfg.MaxPayloadBytes, MaxSkew: cfg.Ingest.MaxSkew,
		AgentRate: cfg.Ingest.AgentRate, AgentBurst: cfg.Ingest.AgentBurst, MaxBacklog: cfg.Ingest.MaxBacklog,
	})
	if err := w.Start(ctx); err != nil {
		return nil, nil, err
	}
	if cfg.PolicyFile != "" {
		go reloadPolicyOnHUP(ctx, cfg.PolicyFile, w, logger)
	}
	logger.Info("policy plane started", slog.String("policy", pol.Source()), slog.Int("partitions", cfg.Ingest.Partitions))
	return in, w, nil
}

// reloadPolicyOnHUP reloads the policy file on SIGHUP. A file that does not
// validate is refused, with the rule and field named, and the policy in
// force stays.
func reloadPolicyOnHUP(ctx context.Context, path string, w *ingest.Worker, logger *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			p, err := policy.Load(path)
			if err != nil {
				logger.Error("policy reload refused; the previous policy stays in force", slog.String("error", err.Error()))
				continue
			}
			w.SetPolicy(p)
			logger.Info("policy reloaded", slog.String("policy", path))
		}
	}
}

// retrieval is engramd's retrieval plane: the retriever, its settings, and
// the backfiller of the vector index (nil with no embedder).
type retrieval struct {
	retriever  *retrieve.Retriever
	settings   *retrieve.Settings
	backfiller *embedding.Backfiller
	// embedder is the configured embedder (nil: none).
	embedder embedding.Embedder
	// redactor is the redactor of the policy in force (nil: the built-in
	// one), which consolidation also applies to what a model says.
	redactor func() *policy.Redactor
	// retention is the retention configuration in force: the retriever
	// never returns a record past it, and the retention job enforces it.
	retention *retention.Settings
}

// newRetrieval builds the embedder the configuration names and the
// retriever over it. pol is the policy in force (the policy plane's, which
// SIGHUP reloads): gating's redact takes its redactor, with the operator's
// literals, from it at every answer. Nil means the built-in redactor.
func newRetrieval(cfg config.Config, db pg.DBTX, pol func() *policy.Policy, reg prometheus.Registerer, logger *slog.Logger, extra ...retrieve.Option) (*retrieval, error) {
	settings, err := retrieve.NewSettings(cfg.Retrieve)
	if err != nil {
		return nil, err
	}
	var emb embedding.Embedder
	switch cfg.Embedding.Provider {
	case config.EmbeddingLexical:
		emb = embedding.NewLexical()
	case config.EmbeddingOpenAI:
		if emb, err = embedding.NewOpenAI(cfg.Embedding.OpenAI); err != nil {
			return nil, err
		}
	}
	rs, err := retention.NewSettings(cfg.Retention)
	if err != nil {
		return nil, err
	}
	opts := append([]retrieve.Option{retrieve.WithLogger(logger), retrieve.WithRegistry(reg),
		retrieve.WithRetention(func(rec memory.Record, now time.Time) bool { return rs.Config().Past(rec, now) })}, extra...)
	out := &retrieval{settings: settings, embedder: emb, retention: rs}
	if pol != nil {
		out.redactor = func() *policy.Redactor { return pol().Redactor() }
		opts = append(opts, retrieve.WithRedactor(out.redactor))
	}
	if emb != nil {
		opts = append(opts, retrieve.WithEmbedder(emb))
		out.backfiller = embedding.NewBackfiller(db, emb, cfg.Embedding.BatchSize, logger)
		logger.Info("vector index", slog.String("model", emb.Model()))
	}
	out.retriever = retrieve.New(db, settings, opts...)
	return out, nil
}

// newExtractor is the language model consolidation asks for facts in free
// text, nil when the configuration names none (the default: no model is
// ever called). Its calls are counted and timed in reg; neither the log
// nor an error names its key.
func newExtractor(cfg config.Config, reg prometheus.Registerer, logger *slog.Logger) (extract.Extractor, error) {
	if !cfg.Consolidate.Model.Enabled() {
		return nil, nil
	}
	x, err := extract.NewOpenAI(cfg.Consolidate.Model)
	if err != nil {
		return nil, err
	}
	logger.Info("language model for consolidation", slog.String("model", cfg.Consolidate.Model.Model))
	return extract.Instrument(x, reg), nil
}
