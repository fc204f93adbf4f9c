package decay_test

import (
	"context"
	"testing"
	"time"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/store"
)

func BenchmarkZZPhases(b *testing.B) {
	db := pgtest.NewSchema(b)
	seed(b, db, "acme", 100000)
	st := store.New(db.Pool)
	ctx := context.Background()
	var after store.Key
	var tScan, tMat, tCompute, tExp time.Duration
	now := time.Now()
	for {
		t0 := time.Now()
		rows, err := st.ScanLive(ctx, "", after, 5000)
		if err != nil {
			b.Fatal(err)
		}
		tScan += time.Since(t0)
		t0 = time.Now()
		vals := make([]store.Salience, 0, len(rows))
		var exp []store.Expiry
		for _, r := range rows {
			cur := decay.Current(r.Record, now)
			if cur < 0.05 {
				exp = append(exp, store.Expiry{Key: r.Key(), Version: r.Record.Version, Salience: r.Record.Salience, LastReinforcedAt: r.Record.Lifecycle.LastReinforcedAt, Rationale: "x"})
				continue
			}
			vals = append(vals, store.Salience{Key: r.Key(), Type: r.Record.Type, Value: cur})
		}
		tCompute += time.Since(t0)
		t0 = time.Now()
		if _, err := st.Expire(ctx, exp, "x", now); err != nil {
			b.Fatal(err)
		}
		tExp += time.Since(t0)
		t0 = time.Now()
		if err := st.MaterialiseSalience(ctx, vals, now); err != nil {
			b.Fatal(err)
		}
		tMat += time.Since(t0)
		if len(rows) < 5000 {
			break
		}
		after = rows[len(rows)-1].Key()
	}
	b.Logf("scan %s compute %s expire %s materialise %s", tScan, tCompute, tExp, tMat)
}
