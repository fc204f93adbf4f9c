package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
)

// Working-memory states (substrate RFC §15A.7).
const (
	statePlanning  = "planning"
	stateExecuting = "executing"
	stateBlocked   = "blocked"
	stateWaiting   = "waiting"
	stateDone      = "done"
)

// maxOpenQuestions bounds the questions a thread's working memory keeps
// open: the latest ones.
const maxOpenQuestions = 32

// workingMemory is a thread's working-memory record as a batch's events
// change it (substrate RFC §6: "Working memory captures the current state
// of an ongoing task ... It is updated frequently"): read once, when the
// batch's first event of the thread comes, and written once, through the
// write path, when its last has been applied or an outcome closes the
// thread — one revision per batch per thread, not one per event.
type workingMemory struct {
	rec     memory.Record
	payload memory.WorkingPayload
	changed bool
}

// loadWorking reads a thread's working-memory record; nil when it is gone
// or no longer live (deleted by its agent, say): then there is nothing to
// keep current.
func loadWorking(ctx context.Context, tx *revise.Tx, tenant string, id *uuid.UUID) (*workingMemory, error) {
	if id == nil {
		return nil, nil
	}
	rec, err := tx.Get(ctx, tenant, *id)
	if err != nil {
		return nil, fmt.Errorf("read working memory: %w", err)
	}
	if !rec.Live() {
		return nil, nil
	}
	wm := &workingMemory{rec: rec}
	if err := json.Unmarshal(rec.Payload, &wm.payload); err != nil {
		// A payload the write path admitted decodes; one that does not is
		// left as it is rather than failing the batch.
		return nil, nil //nolint:nilerr // nothing to keep current
	}
	return wm, nil
}

// observe applies one event of the thread to its working memory, in the
// order the events came:
//
//   - a user input: planning, and it answers the questions asked (§6: the
//     task waits on input no more);
//   - a tool call or output: executing, or blocked when its result says
//     the call failed (an exit code other than 0, an error);
//   - an error: blocked on it, until the agent acts again;
//   - an outcome: done;
//   - open questions an event names: added, and waiting on the user;
//   - next actions an event names: the ones to do now, in place of the
//     ones before.
//
// Texts are copied from an event only when it is no more sensitive than
// the record, which the write path does not raise in an update; the state
// changes whatever the event's sensitivity.
func (wm *workingMemory) observe(ev memory.Event, sensitivity memory.Sensitivity) {
	p := &wm.payload
	texts := sensitivity.Rank() <= wm.rec.Sensitivity.Rank()
	set := func(state, summary string) {
		p.State = state
		if texts && summary != "" {
			p.ContextSummary = summary
		}
	}
	switch ev.Kind {
	case memory.UserInput:
		set(statePlanning, "")
		p.OpenQuestions = nil
	case memory.ToolCall, memory.ToolOutput:
		if ev.Tool != nil && toolFailed(ev.Tool.Result) {
			set(stateBlocked, ev.Tool.Name+" failed")
		} else {
			set(stateExecuting, "")
		}
	case memory.ErrorEvent:
		set(stateBlocked, ev.Summary())
	case memory.Outcome:
		set(stateDone, ev.Summary())
	}
	if len(ev.OpenQuestions) > 0 {
		p.State = stateWaiting
		if texts {
			for _, q := range ev.OpenQuestions {
				if !slices.Contains(p.OpenQuestions, q) {
					p.OpenQuestions = append(p.OpenQuestions, q)
				}
			}
			if n := len(p.OpenQuestions); n > maxOpenQuestions {
				p.OpenQuestions = p.OpenQuestions[n-maxOpenQuestions:]
			}
		}
	}
	if ev.NextActions != nil && texts {
		p.NextActions = slices.Clone(ev.NextActions)
	}
	at := ev.Time.UTC().Truncate(time.Microsecond)
	if p.LastUpdated == nil || at.After(*p.LastUpdated) {
		p.LastUpdated = &at
	}
	wm.changed = true
}

// write revises the working-memory record with what the batch's events
// made of it, through the write path, once.
func (wm *workingMemory) write(ctx context.Context, tx *revise.Tx, tenant string, ch revise.Change) error {
	if wm == nil || !wm.changed {
		return nil
	}
	payload, err := json.Marshal(wm.payload)
	if err != nil {
		return fmt.Errorf("encode working memory: %w", err)
	}
	rec, err := tx.Update(ctx, tenant, wm.rec.ID, wm.rec.Version, payload, nil, ch)
	if err != nil {
		return fmt.Errorf("update working memory: %w", err)
	}
	wm.rec, wm.changed = rec, false
	return nil
}

// toolFailed reports whether a tool's result says the call failed: an
// object whose exit code is not 0, whose is_error is true, or which holds
// an error.
func toolFailed(result json.RawMessage) bool {
	if len(result) == 0 || result[0] != '{' {
		return false
	}
	var r map[string]json.RawMessage
	if json.Unmarshal(result, &r) != nil {
		return false
	}
	for _, k := range []string{"exit_code", "exitCode", "exit_status", "returncode"} {
		if v, ok := r[k]; ok {
			var n float64
			if json.Unmarshal(v, &n) == nil && n != 0 {
				return true
			}
		}
	}
	if v, ok := r["is_error"]; ok && bytes.Equal(v, []byte("true")) {
		return true
	}
	if v, ok := r["error"]; ok && !bytes.Equal(v, []byte("null")) && !bytes.Equal(v, []byte(`""`)) && !bytes.Equal(v, []byte("false")) {
		return true
	}
	return false
}
