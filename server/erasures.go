package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/schemas"
	"github.com/engram-dev/engram/store"
)

// startErasure serves POST /v1/erasures (write-path RFC §12.10.2): it
// checks the subject's identifiers, records the request and answers 202
// with it at once; the erasure runs in the background on this daemon,
// through the write path, and GET /v1/erasures/{id} follows it to its
// certificate. Nothing of the identifiers is stored, logged or echoed: the
// request is named by the SHA-256 of the normalised subject.
func (s *Server) startErasure(w http.ResponseWriter, r *http.Request) error {
	var req api.ErasureRequest
	if err := decodeJSON(r, &req); err != nil {
		// A body of the wrong shape is a bad request here, as a bad
		// identifier is: 400 with the fields at fault.
		p := s.problemOf(r, err)
		if p.Status == http.StatusUnprocessableEntity {
			p.Status = http.StatusBadRequest
		}
		return p
	}
	subject, err := revise.NewSubject(req)
	var ve *schemas.ValidationError
	if errors.As(err, &ve) {
		p := problem(http.StatusBadRequest, "invalid-subject", "Invalid erasure request",
			plural(len(ve.Violations), "invalid identifier")+"; see errors")
		for _, v := range ve.Violations {
			p.Errors = append(p.Errors, FieldError{Pointer: v.Pointer, Message: v.Message})
		}
		return p
	}
	if err != nil {
		return err
	}
	tenant := principalOf(r).tenant
	e, err := s.writer.StartErasure(r.Context(), tenant, subject)
	if err != nil {
		return err
	}
	actor := change(r, "").Actor
	s.erasing.Add(1)
	go func() {
		defer s.erasing.Done()
		done, err := s.writer.Erase(s.background, tenant, e, subject, actor)
		if err != nil {
			s.logger.Error("erasure failed", slog.String("tenant", tenant), slog.String("erasure", e.ID.String()),
				slog.String("error", err.Error()))
			return
		}
		s.logger.Info("erasure completed", slog.String("tenant", tenant), slog.String("erasure", e.ID.String()),
			slog.Bool("verified", done.Verified), slog.Int("rebuilt", len(done.Rebuilt)))
	}()
	w.Header().Set("Location", "/v1/erasures/"+e.ID.String())
	writeJSON(w, http.StatusAccepted, wireErasure(e))
	return nil
}

// getErasure serves GET /v1/erasures/{id}: the erasure's status while it
// runs, and its certificate once it has completed.
func (s *Server) getErasure(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r.PathValue("id"))
	if err != nil {
		return err
	}
	e, err := store.GetErasure(r.Context(), s.db, principalOf(r).tenant, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireErasure(e))
	return nil
}

// Close stops the work the server runs in the background — erasures —
// and waits for it until ctx ends. An erasure cut off is left
// interrupted, to be submitted again. Closing twice is safe.
func (s *Server) Close(ctx context.Context) error {
	s.stopBackground()
	done := make(chan struct{})
	go func() {
		s.erasing.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close server: %w", ctx.Err())
	}
}
