package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/revise"
)

// A sync-tier write refused by its review is a 409 problem of its own
// kind, naming the draft: approval-timeout at the deadline (fail-closed),
// review-rejected when a reviewer rejected it.
func TestApprovalProblems(t *testing.T) {
	t.Parallel()
	s := New(Config{})
	r := httptest.NewRequest(http.MethodPost, "/v1/records", nil)
	record := uuid.Must(uuid.NewV7())

	p := s.toProblem(r, &revise.ApprovalTimeoutError{ReviewID: uuid.Must(uuid.NewV7()), RecordID: record, Deadline: time.Now()})
	require.Equal(t, http.StatusConflict, p.Status)
	require.Equal(t, "urn:engram:problem:approval-timeout", p.Type)
	require.Equal(t, []uuid.UUID{record}, p.RecordIDs)
	require.Contains(t, p.Detail, "is refused")

	p = s.toProblem(r, &revise.ReviewRejectedError{Review: revise.Review{RecordID: record, Status: "rejected", RejectionReason: "factual_error", Justification: "not so"}})
	require.Equal(t, http.StatusConflict, p.Status)
	require.Equal(t, "urn:engram:problem:review-rejected", p.Type)
	require.Equal(t, []uuid.UUID{record}, p.RecordIDs)
	require.Contains(t, p.Detail, "factual_error")
	require.Contains(t, p.Detail, "not so")
}
