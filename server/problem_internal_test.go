package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pg"
)

// A request whose transaction PostgreSQL aborted to break a deadlock or a
// serialization conflict is a 503 to send again, with Retry-After, not a
// 500: nothing was written, and the same request a moment later will
// likely pass.
func TestTransientConflictIsRetryable(t *testing.T) {
	t.Parallel()
	s := New(Config{})
	for _, code := range []string{pg.DeadlockDetected, pg.SerializationFailure} {
		err := fmt.Errorf("log retrieval: %w", &pgconn.PgError{Code: code, Message: "deadlock detected"})
		rec := httptest.NewRecorder()
		s.writeProblem(rec, httptest.NewRequest(http.MethodPost, "/v1/retrieve", nil), err)
		require.Equal(t, http.StatusServiceUnavailable, rec.Code, code)
		require.Equal(t, "1", rec.Header().Get("Retry-After"))
		require.Contains(t, rec.Body.String(), "conflict-retry")
	}
	rec := httptest.NewRecorder()
	s.writeProblem(rec, httptest.NewRequest(http.MethodGet, "/v1/records", nil), &pgconn.PgError{Code: "XX000"})
	require.Equal(t, http.StatusInternalServerError, rec.Code, "another database error is still ours")
}
