package client

import (
	"context"

	"github.com/engram-dev/engram/api"
)

// Retrieve recalls what helps with a task, layer by layer, with POST
// /v1/retrieve (substrate RFC §15). The answer's RetrievalID is what
// [Client.Feedback] reports on.
func (c *Client) Retrieve(ctx context.Context, req api.RetrieveRequest, opts ...CallOption) (*api.RetrieveResult, error) {
	var out api.RetrieveResult
	if err := c.Do(ctx, "POST", "/v1/retrieve", nil, req, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// Feedback reports how the records of a retrieval served the task, with
// POST /v1/feedback, which reinforces or penalises them (substrate RFC
// §15.6).
func (c *Client) Feedback(ctx context.Context, req api.FeedbackRequest, opts ...CallOption) (*api.FeedbackResult, error) {
	var out api.FeedbackResult
	if err := c.Do(ctx, "POST", "/v1/feedback", nil, req, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}
