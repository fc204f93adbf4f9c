package client

import (
	"context"
	"net/url"

	"github.com/engram-dev/engram/api"
)

// AcquireLease acquires a lease on a record or thread (POST /v1/leases);
// its FencingToken goes with the writes made under it ([WithFencingToken]).
func (c *Client) AcquireLease(ctx context.Context, req api.LeaseRequest, opts ...CallOption) (*api.Lease, error) {
	return call[api.Lease](ctx, c, "POST", "/v1/leases", nil, req, opts)
}

// GetLease returns a lease (GET /v1/leases/{id}).
func (c *Client) GetLease(ctx context.Context, id string, opts ...CallOption) (*api.Lease, error) {
	return call[api.Lease](ctx, c, "GET", "/v1/leases/"+escape(id), nil, nil, opts)
}

// RenewLease renews a lease (POST /v1/leases/{id}:renew).
func (c *Client) RenewLease(ctx context.Context, id string, req api.LeaseRenewRequest, opts ...CallOption) (*api.Lease, error) {
	return call[api.Lease](ctx, c, "POST", "/v1/leases/"+escape(id)+":renew", nil, req, opts)
}

// ReleaseLease releases a lease (POST /v1/leases/{id}:release).
func (c *Client) ReleaseLease(ctx context.Context, id string, req api.LeaseRenewRequest, opts ...CallOption) (*api.Lease, error) {
	return call[api.Lease](ctx, c, "POST", "/v1/leases/"+escape(id)+":release", nil, req, opts)
}

// leaseQuery is the agent_id parameter of DELETE /v1/leases/{id}.
func leaseQuery(agent string) url.Values {
	if agent == "" {
		return nil
	}
	return url.Values{"agent_id": {agent}}
}

// DeleteLease releases a lease held by agent (DELETE /v1/leases/{id}).
func (c *Client) DeleteLease(ctx context.Context, id, agent string, opts ...CallOption) (*api.Lease, error) {
	return call[api.Lease](ctx, c, "DELETE", "/v1/leases/"+escape(id), leaseQuery(agent), nil, opts)
}
