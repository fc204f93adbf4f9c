package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/api"
)

// ReviewFilter is the query of [Client.ListReviews]; the zero filter lists
// the pending reviews.
type ReviewFilter struct {
	Statuses []string // "all" for every status
	Limit    int
	Cursor   string
}

// ListReviews returns one page of the review queue (GET /v1/reviews).
func (c *Client) ListReviews(ctx context.Context, f ReviewFilter, opts ...CallOption) (*api.ReviewPage, error) {
	q := url.Values{"status": f.Statuses}
	if f.Limit != 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Cursor != "" {
		q.Set("cursor", f.Cursor)
	}
	return call[api.ReviewPage](ctx, c, "GET", "/v1/reviews", q, nil, opts)
}

// GetReview returns a review (GET /v1/reviews/{id}).
func (c *Client) GetReview(ctx context.Context, id uuid.UUID, opts ...CallOption) (*api.Review, error) {
	return call[api.Review](ctx, c, "GET", "/v1/reviews/"+id.String(), nil, nil, opts)
}

// Approve approves a review's draft (POST /v1/reviews/{id}:approve).
func (c *Client) Approve(ctx context.Context, id uuid.UUID, req api.ApproveRequest, opts ...CallOption) (*api.Review, error) {
	return call[api.Review](ctx, c, "POST", "/v1/reviews/"+id.String()+":approve", nil, req, opts)
}

// Reject rejects a review's draft (POST /v1/reviews/{id}:reject).
func (c *Client) Reject(ctx context.Context, id uuid.UUID, req api.RejectRequest, opts ...CallOption) (*api.Review, error) {
	return call[api.Review](ctx, c, "POST", "/v1/reviews/"+id.String()+":reject", nil, req, opts)
}
