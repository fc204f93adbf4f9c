package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/internal/config"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
)

// syncBuffer is a log destination safe for the goroutines that log to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A reload puts a valid file's decay section and schedules in force; an
// invalid one is refused with the field named and the old one stays.
func TestReloadConfiguration(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	path := filepath.Join(t.TempDir(), "engram.yaml")
	write := func(doc string) { require.NoError(t, os.WriteFile(path, []byte(doc), 0o600)) }
	write("decay: {profiles: {semantic: {half_life: 30d}}}\n")
	load := func() (config.Config, error) {
		return config.Load([]string{"--config", path}, func(string) string { return "" })
	}
	cfg, err := load()
	require.NoError(t, err)

	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	st, settings, err := newStore(db.Pool, cfg)
	require.NoError(t, err)
	ctx := context.Background()
	p, err := startPeriodic(ctx, cfg, load, db.Pool, st, settings, prometheus.NewRegistry(), logger)
	require.NoError(t, err)
	t.Cleanup(func() { p.stop(ctx, 10*time.Second) })
	require.Equal(t, decay.Duration(30*24*time.Hour), settings.Config().Profiles[memory.Semantic].HalfLife)

	write("decay: {profiles: {semantic: {half_life: 10d}}}\njobs: {decay_sweep: \"@every 1m\", decay_purge: \"off\"}\n")
	p.reload(ctx)
	require.Equal(t, decay.Duration(10*24*time.Hour), settings.Config().Profiles[memory.Semantic].HalfLife)
	ov, err := p.scheduler.Jobs(ctx)
	require.NoError(t, err)
	require.Equal(t, "off", ov.Jobs[0].Schedule)
	require.Equal(t, "@every 1m", ov.Jobs[1].Schedule)

	for doc, field := range map[string]string{
		"decay: {profiles: {semantic: {floor: 2}}}\n":   "decay.profiles.semantic.floor",
		"decay: {profiles: {semantic: {curve: cubic}}}": "decay.profiles.semantic.curve",
		"jobs: {decay_sweeep: \"@hourly\"}\n":           "jobs.decay_sweeep: no such job",
		"decay: [not, a, mapping]\n":                    "decay: must be a mapping",
	} {
		write(doc)
		p.reload(ctx)
		require.Contains(t, logs.String(), "configuration reload refused", doc)
		require.Contains(t, logs.String(), field, doc)
		require.Equal(t, decay.Duration(10*24*time.Hour), settings.Config().Profiles[memory.Semantic].HalfLife, "the configuration in force stays")
		ov, err := p.scheduler.Jobs(ctx)
		require.NoError(t, err)
		require.Equal(t, "@every 1m", ov.Jobs[1].Schedule)
	}
}

// A schedule for a job engramd does not have is refused at start.
func TestUnknownJobRefusedAtStart(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	cfg := config.Default()
	cfg.Jobs = map[string]string{"compact": "@hourly"}
	st, settings, err := newStore(db.Pool, cfg)
	require.NoError(t, err)
	_, err = startPeriodic(context.Background(), cfg, nil, db.Pool, st, settings, nil, slog.New(slog.DiscardHandler))
	require.EqualError(t, err, "configuration: jobs.compact: no such job (there are decay_purge, decay_sweep)")
}
