package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// Concurrent supersedes of one fact: exactly one wins, every other writer
// gets a conflict, and exactly one active fact remains.
func TestConcurrentSupersedeHasOneWinner(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.create(t, fact("user", "prefers_editor", "vim", nil))

	const writers = 8
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			_, _, errs[i] = b.w.Supersede(b.ctx, b.tenant, f.ID, 0, fact("user", "prefers_editor", fmt.Sprintf("editor-%d", i), nil), b.ch)
		})
	}
	wg.Wait()

	wins := 0
	for _, err := range errs {
		if err == nil {
			wins++
			continue
		}
		var ce *revise.ConflictError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, revise.CodeNotLive, ce.Code)
	}
	require.Equal(t, 1, wins)
	require.Equal(t, 1, b.count(t, "SELECT count(*) FROM records WHERE status = 'active'"))
	require.Equal(t, 2, b.count(t, "SELECT count(*) FROM records"))
}

// Concurrent writers of one working-memory record, each re-reading and
// retrying on conflict: every write lands, none is lost.
func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.create(t, working("th-1", "executing"))

	const writers, each = 6, 10
	var wg sync.WaitGroup
	conflicts := make([]int, writers)
	for i := range writers {
		wg.Go(func() {
			for j := 0; j < each; {
				cur, err := store.Get(b.ctx, b.pool, b.tenant, w.ID)
				if err != nil {
					t.Error(err)
					return
				}
				var p memory.WorkingPayload
				if err := json.Unmarshal(cur.Payload, &p); err != nil {
					t.Error(err)
					return
				}
				p.NextActions = append(p.NextActions, fmt.Sprintf("w%d-%d", i, j))
				next, _ := json.Marshal(p)
				_, err = b.w.Update(b.ctx, b.tenant, w.ID, cur.Version, next, nil, b.ch)
				var ce *revise.ConflictError
				switch {
				case err == nil:
					j++
				case errors.As(err, &ce) && ce.Code == revise.CodeVersionConflict:
					conflicts[i]++
				default:
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()

	got, err := store.Get(b.ctx, b.pool, b.tenant, w.ID)
	require.NoError(t, err)
	require.Equal(t, 1+writers*each, got.Version)
	var p memory.WorkingPayload
	require.NoError(t, json.Unmarshal(got.Payload, &p))
	require.Len(t, p.NextActions, writers*each, "every acknowledged update is in the final state")
	hist, err := store.History(b.ctx, b.pool, b.tenant, w.ID)
	require.NoError(t, err)
	require.Len(t, hist, 1+writers*each)
	total := 0
	for _, c := range conflicts {
		total += c
	}
	t.Logf("%d conflicts retried", total)
}

// Writers racing to create contradicting versions of one conditional fact,
// under the review policy: one wins. The others are refused by the
// contradiction gate when they see the winner, or by the partial unique
// index when they do not yet.
func TestConcurrentCreatesOfOneFact(t *testing.T) {
	t.Parallel()
	b := setup(t, revise.Config{Gates: revise.Gates{Contradiction: revise.ContradictionConfig{Policy: revise.PolicyReview}}})
	const writers = 8
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			_, errs[i] = b.w.Create(b.ctx, b.tenant, fact("repo", "ci", fmt.Sprint(i), map[string]any{"os": "linux"}), b.ch)
		})
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		if err == nil {
			wins++
			continue
		}
		var re *revise.RejectedError
		if errors.As(err, &re) {
			require.Equal(t, string(revise.ReasonContradiction), re.Reason)
			continue
		}
		requireConflict(t, err, revise.CodeActiveFactExists)
	}
	require.Equal(t, 1, wins)
}
