package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

type benchDB struct {
	pool *pgxpool.Pool
	w    *revise.Writer
}

// benchStore is a migrated schema seeded with n semantic facts, n/4 of
// them tagged "hot".
func benchStore(b *testing.B, n int) (*benchDB, []uuid.UUID) {
	b.Helper()
	db := pgtest.NewSchema(b)
	s := &benchDB{pool: db.Pool, w: revise.New(db.Pool, revise.Config{})}
	ctx := context.Background()
	require.NoError(b, store.EnsureTenant(ctx, db.Pool, "acme"))
	ids := make([]uuid.UUID, 0, n)
	ch := revise.Change{Actor: "bench"}
	for i := range n {
		r := fact(fmt.Sprintf("subject-%d", i), "prefers", i, nil)
		if i%4 == 0 {
			r.Tags = []string{"hot"}
		}
		rec, err := s.w.Create(ctx, "acme", r, ch)
		require.NoError(b, err)
		ids = append(ids, rec.ID)
	}
	// Measure the steady state autovacuum reaches, not the planner's view
	// of a table it has not analyzed yet.
	_, err := db.Pool.Exec(ctx, "ANALYZE")
	require.NoError(b, err)
	return s, ids
}

// BenchmarkCreate measures, through the write path, one audited, versioned create per operation:
// schema validation, the record row, its snapshot and its audit entry in
// one transaction.
func BenchmarkCreate(b *testing.B) {
	s, _ := benchStore(b, 0)
	ctx := context.Background()
	ch := revise.Change{Actor: "bench"}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if _, err := s.w.Create(ctx, "acme", fact(fmt.Sprintf("s-%d", i), "p", i, nil), ch); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkCreateParallel is BenchmarkCreate from several goroutines, as a
// daemon under load runs it.
func BenchmarkCreateParallel(b *testing.B) {
	s, _ := benchStore(b, 0)
	ctx := context.Background()
	ch := revise.Change{Actor: "bench"}
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.w.Create(ctx, "acme", fact(uuid.NewString(), "p", 1, nil), ch); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkGet reads records by id, with their relations, from 10,000.
func BenchmarkGet(b *testing.B) {
	s, ids := benchStore(b, 10_000)
	ctx := context.Background()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if _, err := store.Get(ctx, s.pool, "acme", ids[i%len(ids)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
}

// BenchmarkList pages through 10,000 records 50 at a time, unfiltered and
// by tag.
func BenchmarkList(b *testing.B) {
	s, _ := benchStore(b, 10_000)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		f    store.Filter
	}{
		{"all", store.Filter{Limit: 50}},
		{"tag", store.Filter{Limit: 50, Tags: []string{"hot"}}},
		{"type", store.Filter{Limit: 50, Types: []memory.Type{memory.Semantic}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := c.f
			for b.Loop() {
				page, err := store.List(ctx, s.pool, "acme", f)
				if err != nil {
					b.Fatal(err)
				}
				f.Cursor = page.NextCursor // wrap to the first page at the end
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
		})
	}
}
