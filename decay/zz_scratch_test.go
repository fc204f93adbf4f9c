package decay_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/store"
)

func BenchmarkZZPhases(b *testing.B) {
	db := pgtest.NewSchema(b)
	seed(b, db, "acme", 200000)
	st := store.New(db.Pool)
	ctx := context.Background()
	for round := 0; round < 3; round++ {
		var after store.Key
		var tScan, tMat, tCompute time.Duration
		for {
			t0 := time.Now()
			rows, err := st.ScanLive(ctx, "", after, 5000)
			if err != nil {
				b.Fatal(err)
			}
			tScan += time.Since(t0)
			t0 = time.Now()
			now := time.Now()
			vals := make([]store.Salience, 0, len(rows))
			for _, r := range rows {
				cur := decay.Current(r.Record, now)
				keep := r.Materialised != nil && math.Abs(*r.Materialised-cur) < 0.01
				vals = append(vals, store.Salience{Key: r.Key(), Type: r.Record.Type, Value: cur, Keep: keep})
			}
			tCompute += time.Since(t0)
			t0 = time.Now()
			var through *store.Key
			last := after
			if len(rows) > 0 {
				last = rows[len(rows)-1].Key()
			}
			if len(rows) == 5000 {
				through = &last
			}
			if err := st.MaterialiseSalience(ctx, after, through, vals, now); err != nil {
				b.Fatal(err)
			}
			tMat += time.Since(t0)
			if len(rows) < 5000 {
				break
			}
			after = last
		}
		b.Logf("round %d: scan %s compute %s materialise %s", round, tScan, tCompute, tMat)
	}
}
