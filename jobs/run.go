package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/engram-dev/engram/internal/pg"
)

// Run is one run of a job: what its function reports counts to and keeps
// its cursor in. A run's counts and cursor are saved together, so a run
// stopped part-way shows what it had done, and the next run resumes where
// it stopped.
type Run struct {
	ID        int64
	Job       string
	Trigger   string
	StartedAt time.Time

	pool *pgxpool.Pool

	mu     sync.Mutex
	counts map[string]int64
}

// Triggers: what started a run.
const (
	TriggerSchedule = "schedule"
	TriggerManual   = "manual"
)

// Add adds n to the run's count of name.
func (r *Run) Add(name string, n int64) {
	r.mu.Lock()
	r.counts[name] += n
	r.mu.Unlock()
}

// Counts returns a copy of the run's counts.
func (r *Run) Counts() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.counts)
}

const readCursorSQL = `SELECT cursor FROM job_cursors WHERE job = $1`

// Cursor reads the job's saved cursor into v, reporting whether there was
// one.
func (r *Run) Cursor(ctx context.Context, v any) (bool, error) {
	var raw []byte
	err := r.pool.QueryRow(ctx, readCursorSQL, r.Job).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read cursor of %s: %w", r.Job, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("decode cursor of %s: %w", r.Job, err)
	}
	return true, nil
}

const (
	saveCursorSQL = `
INSERT INTO job_cursors (job, cursor, run_id, updated_at) VALUES ($1, $2, $3, now())
ON CONFLICT (job) DO UPDATE SET cursor = excluded.cursor, run_id = excluded.run_id, updated_at = excluded.updated_at`
	clearCursorSQL = `DELETE FROM job_cursors WHERE job = $1`
	saveCountsSQL  = `UPDATE job_runs SET counts = $2 WHERE id = $1`
)

// cursorTimeout bounds saving a cursor, which happens even while the run's
// context is being cancelled: the work it records is done.
const cursorTimeout = 10 * time.Second

// SaveCursor saves v as the job's cursor, with the run's counts so far; nil
// clears the cursor, for a run that finished its walk.
func (r *Run) SaveCursor(ctx context.Context, v any) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cursorTimeout)
	defer cancel()
	var raw []byte
	if v != nil {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return fmt.Errorf("encode cursor of %s: %w", r.Job, err)
		}
	}
	counts := r.Counts()
	err := pg.WithTx(ctx, r.pool, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		if raw == nil {
			_, err = tx.Exec(ctx, clearCursorSQL, r.Job)
		} else {
			_, err = tx.Exec(ctx, saveCursorSQL, r.Job, raw, r.ID)
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, saveCountsSQL, r.ID, counts)
		return err
	})
	if err != nil {
		return fmt.Errorf("save cursor of %s: %w", r.Job, err)
	}
	return nil
}
