// Package jobstest is a job run kept in memory: what a test or a benchmark
// passes to a job's function (a backfill, a sweep, a statistics refresh)
// when it runs it outside the scheduler. It holds the cursor and counts
// [jobs.Run] would persist.
package jobstest

import (
	"context"
	"encoding/json"
	"sync"
)

// Run is a job run in memory; its zero value is ready. Its cursor
// survives between runs of one test that reuse it.
type Run struct {
	mu     sync.Mutex
	cursor []byte
	counts map[string]int64
}

// Cursor decodes the saved cursor into v and reports whether there was one.
func (r *Run) Cursor(_ context.Context, v any) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cursor == nil {
		return false, nil
	}
	return true, json.Unmarshal(r.cursor, v)
}

// SaveCursor saves v as the cursor; nil clears it.
func (r *Run) SaveCursor(_ context.Context, v any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v == nil {
		r.cursor = nil
		return nil
	}
	var err error
	r.cursor, err = json.Marshal(v)
	return err
}

// Add adds n to the count name.
func (r *Run) Add(name string, n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts == nil {
		r.counts = map[string]int64{}
	}
	r.counts[name] += n
}

// Count is the count name so far.
func (r *Run) Count(name string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[name]
}
