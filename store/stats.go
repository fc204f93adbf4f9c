package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/engram-dev/engram/internal/pg"

	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/memory"
)

// RecordCount is how many records of a type have a status, across tenants.
type RecordCount struct {
	Type   memory.Type
	Status memory.Status
	N      int64
}

const countRecordsSQL = `SELECT type, status, count(*) FROM records GROUP BY type, status ORDER BY type, status`

// CountRecords counts the records of every tenant by type and status, for
// metrics (substrate RFC §15.10 memory growth).
func CountRecords(ctx context.Context, db pg.DBTX) ([]RecordCount, error) {
	rows, err := db.Query(ctx, countRecordsSQL)
	if err != nil {
		return nil, fmt.Errorf("count records: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RecordCount, error) {
		var c RecordCount
		return c, row.Scan(&c.Type, &c.Status, &c.N)
	})
	if err != nil {
		return nil, fmt.Errorf("count records: %w", err)
	}
	return out, nil
}

// SalienceBuckets is the distribution of one type's materialised salience
// over a histogram's upper bounds.
type SalienceBuckets struct {
	// Counts[i] is how many records have salience at most Bounds[i], the
	// bounds given to [Store.MaterialisedSalience]; Count is every record.
	Counts []uint64
	Count  uint64
	Sum    float64
}

// salienceBucketsSQL buckets salience in one pass. width_bucket counts the
// thresholds at or below its operand; with the bounds negated (and so in
// reverse order) that is how many bounds are at or above the salience,
// which names the smallest bound the salience does not exceed.
const salienceBucketsSQL = `
SELECT type, width_bucket(-salience, $1::float8[]), count(*), sum(salience)
FROM record_salience
GROUP BY 1, 2`

// MaterialisedSalience returns the salience distribution of each type's
// live records across tenants, as of the last decay sweep, over the
// ascending upper bounds given.
func MaterialisedSalience(ctx context.Context, db pg.DBTX, bounds []float64) (map[memory.Type]*SalienceBuckets, error) {
	if !slices.IsSorted(bounds) {
		return nil, fmt.Errorf("read salience: bounds %v are not ascending", bounds)
	}
	neg := make([]float64, len(bounds))
	for i, b := range bounds {
		neg[len(bounds)-1-i] = -b
	}
	rows, err := db.Query(ctx, salienceBucketsSQL, neg)
	if err != nil {
		return nil, fmt.Errorf("read salience: %w", err)
	}
	defer rows.Close()
	out := map[memory.Type]*SalienceBuckets{}
	for rows.Next() {
		var (
			t     memory.Type
			above int
			n     uint64
			sum   float64
		)
		if err := rows.Scan(&t, &above, &n, &sum); err != nil {
			return nil, fmt.Errorf("read salience: %w", err)
		}
		b := out[t]
		if b == nil {
			b = &SalienceBuckets{Counts: make([]uint64, len(bounds))}
			out[t] = b
		}
		b.Count += n
		b.Sum += sum
		// above bounds are at or above the salience: the last ones.
		for i := len(bounds) - above; i < len(bounds); i++ {
			b.Counts[i] += n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read salience: %w", err)
	}
	return out, nil
}
