package server

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

// listReviews serves GET /v1/reviews: the tenant's reviews whose draft the
// key may read, oldest first, pending ones unless asked for others, each
// with its draft.
func (s *Server) listReviews(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	var f store.ReviewFilter
	for _, v := range multi(q["status"]) {
		if v == "all" {
			f.Statuses = revise.ReviewStatuses
			continue
		}
		if !slices.Contains(revise.ReviewStatuses, v) {
			return badParam("status", "%q is not one of %s (or all)", v, strings.Join(revise.ReviewStatuses, ", "))
		}
		f.Statuses = append(f.Statuses, v)
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxLimit {
			return badParam("limit", "must be a whole number from 1 to %d", store.MaxLimit)
		}
		f.Limit = n
	}
	f.Cursor = q.Get("cursor")
	page, err := s.reader.Reviews(r.Context(), viewerOf(r), f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireReviewPage(page))
	return nil
}

func (s *Server) getReview(w http.ResponseWriter, r *http.Request) error {
	id, err := reviewID(r.PathValue("id"))
	if err != nil {
		return err
	}
	rv, err := s.reader.Review(r.Context(), viewerOf(r), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireReview(rv))
	return nil
}

// decideReview serves POST /v1/reviews/{id}:approve and :reject. The
// approver is the request's audit identity: the key's name, and the agent
// or person X-Engram-Actor names.
func (s *Server) decideReview(w http.ResponseWriter, r *http.Request) error {
	idText, op, ok := strings.Cut(r.PathValue("idop"), ":")
	if !ok || (op != "approve" && op != "reject") {
		return problem(http.StatusNotFound, "not-found", "Not found", "decide a review as /v1/reviews/{id}:approve or /v1/reviews/{id}:reject")
	}
	id, err := reviewID(idText)
	if err != nil {
		return err
	}
	rd := s.redaction()
	var req api.RejectRequest
	if op == "approve" {
		var a api.ApproveRequest
		err = rd.decode(r, &a)
		req.Justification = a.Justification
	} else {
		err = rd.decode(r, &req)
	}
	if err != nil {
		return err
	}
	ch := rd.change(r, req.Justification)
	if err := rd.check(); err != nil {
		return err
	}
	d := revise.Decision{Approver: ch.Actor, Justification: ch.Rationale, Reason: revise.RejectionReason(req.Reason),
		Principal: ch.Principal, Rules: ch.Rules}
	tenant := principalOf(r).tenant
	var rv revise.Review
	if op == "approve" {
		rv, _, err = s.writer.Approve(r.Context(), tenant, id, d)
	} else {
		rv, _, err = s.writer.Reject(r.Context(), tenant, id, d)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wireReview(rv))
	return nil
}

func reviewID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, problem(http.StatusNotFound, "not-found", "Not found", fmt.Sprintf("%q is not a review id", s))
	}
	return id, nil
}
