package server

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
)

// MaxBatchOperations is the most operations one POST /v1/records:batch
// runs.
const MaxBatchOperations = 300

// batchOp is one operation of a batch, decoded and checked.
type batchOp struct {
	api.BatchOperation
	rec memory.Record // create's and supersede's record
	ch  revise.Change
}

// batchAccess is the operation each batch operation is to the record it
// names, checked before the write path runs as the single requests do.
var batchAccess = map[string]access.Op{
	api.BatchUpdate: access.OpWrite, api.BatchSupersede: access.OpWrite,
	api.BatchAppend: access.OpWrite, api.BatchDelete: access.OpDelete,
}

// batchRecords serves POST /v1/records:batch: the operations run in one
// transaction of the write path, in order, and commit together or not at
// all (substrate RFC §15.7: revisions are atomic and no partial revision
// is externally visible). Each is checked as its single request is — the
// same gates, access decisions, budgets and audit entries — and the first
// that fails undoes the batch: its problem names it (operation, and
// pointers under /operations/{i}).
func (s *Server) batchRecords(w http.ResponseWriter, r *http.Request) error {
	rd := s.redaction()
	var req api.BatchRequest
	if err := rd.decode(r, &req); err != nil {
		return err
	}
	if n := len(req.Operations); n == 0 || n > MaxBatchOperations {
		return fieldProblem("/operations", fmt.Sprintf("must hold 1 to %d operations", MaxBatchOperations))
	}
	ops := make([]batchOp, len(req.Operations))
	for i, o := range req.Operations {
		at := "/operations/" + strconv.Itoa(i)
		op := batchOp{BatchOperation: o}
		var err error
		if op.ch, err = rd.fencedChange(r, cmp.Or(o.Rationale, req.Rationale)); err != nil {
			return err
		}
		if err := checkBatchOp(o, at); err != nil {
			return err
		}
		switch o.Op {
		case api.BatchCreate, api.BatchSupersede:
			if op.rec, err = rd.decodeRecord(o.Record, at+"/record"); err != nil {
				return err
			}
			if o.Op == api.BatchCreate {
				ownRecord(r, &op.rec)
			}
		}
		if aop, ok := batchAccess[o.Op]; ok {
			if err := s.mayRevise(r, o.ID, aop); err != nil {
				return s.failedOperation(r, err, i, "")
			}
		}
		ops[i] = op
	}
	if err := rd.check(); err != nil {
		return err
	}
	tenant := principalOf(r).tenant
	var out []api.BatchOutcome
	failed := 0
	err := s.writer.InTx(r.Context(), func(ctx context.Context, tx *revise.Tx) error {
		out = make([]api.BatchOutcome, 0, len(ops)) // InTx may run this again
		for i, op := range ops {
			failed = i
			res, err := applyBatchOp(ctx, tx, tenant, op)
			if err != nil {
				return err
			}
			out = append(out, res)
		}
		return nil
	})
	if err != nil {
		at := "/operations/" + strconv.Itoa(failed)
		if ops[failed].Op == api.BatchCreate {
			at += "/record"
		}
		return s.failedOperation(r, err, failed, at)
	}
	writeJSON(w, http.StatusOK, api.BatchResult{Results: out})
	return nil
}

// checkBatchOp refuses an operation that lacks what its single request
// needs.
func checkBatchOp(o api.BatchOperation, at string) error {
	ops := []string{api.BatchCreate, api.BatchUpdate, api.BatchSupersede, api.BatchAppend, api.BatchDelete}
	if !slices.Contains(ops, o.Op) {
		return fieldProblem(at+"/op", "must be one of create, update, supersede, append, delete")
	}
	if o.Op != api.BatchCreate && o.ID == uuid.Nil {
		return fieldProblem(at+"/id", "is required: the record "+o.Op+" revises")
	}
	switch o.Op {
	case api.BatchUpdate:
		if o.Version < 1 {
			return fieldProblem(at+"/version", "is required: the version you read")
		}
		if len(o.Payload) == 0 {
			return fieldProblem(at+"/payload", "is required")
		}
	case api.BatchAppend:
		if len(o.Timeline) == 0 {
			return fieldProblem(at+"/timeline", "is required: the events to append")
		}
	}
	return nil
}

// applyBatchOp runs one operation in the batch's transaction.
func applyBatchOp(ctx context.Context, tx *revise.Tx, tenant string, op batchOp) (api.BatchOutcome, error) {
	res := api.BatchOutcome{Op: op.Op}
	var err error
	switch op.Op {
	case api.BatchCreate:
		var a revise.Admission
		if a, err = tx.Admit(ctx, tenant, op.rec, op.ch); err == nil {
			res.Record, res.Outcome = a.Record, string(a.Outcome)
		}
	case api.BatchUpdate:
		res.Record, err = tx.Update(ctx, tenant, op.ID, op.Version, op.Payload, op.Tags, op.ch)
	case api.BatchSupersede:
		var old memory.Record
		if old, res.Record, err = tx.Supersede(ctx, tenant, op.ID, op.Version, op.rec, op.ch); err == nil {
			res.Superseded = &old
		}
	case api.BatchAppend:
		res.Record, err = tx.AppendEpisode(ctx, tenant, op.ID, revise.EpisodeAppend{Timeline: op.Timeline}, op.ch)
	case api.BatchDelete:
		res.Record, err = tx.Delete(ctx, tenant, op.ID, op.ch)
	}
	return res, err
}

// failedOperation is the problem of a batch whose operation i failed:
// err's, naming the operation, its pointers under at.
func (s *Server) failedOperation(r *http.Request, err error, i int, at string) *Problem {
	p := s.problemOf(r, err)
	p.Operation = &i
	for j := range p.Errors {
		if p.Errors[j].Pointer != "" {
			p.Errors[j].Pointer = at + p.Errors[j].Pointer
		}
	}
	if p.Status < http.StatusInternalServerError {
		p.Detail = fmt.Sprintf("operation %d: %s; nothing of the batch was written", i, p.Detail)
	}
	return p
}
