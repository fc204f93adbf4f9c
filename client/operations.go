package client

import (
	"context"
	"net/url"
	"time"

	"github.com/engram-dev/engram/api"
)

// Jobs returns the background jobs and their recent runs (GET /v1/jobs;
// an operator's key).
func (c *Client) Jobs(ctx context.Context, opts ...CallOption) (*api.JobsOverview, error) {
	return call[api.JobsOverview](ctx, c, "GET", "/v1/jobs", nil, nil, opts)
}

// RunJob starts a run of the job name now (POST /v1/jobs/{name}:run).
func (c *Client) RunJob(ctx context.Context, name string, opts ...CallOption) (*api.JobStarted, error) {
	return call[api.JobStarted](ctx, c, "POST", "/v1/jobs/"+escape(name)+":run", nil, nil, opts)
}

// WriteStats returns the write path's statistics (GET /v1/stats/writes;
// an operator's key).
func (c *Client) WriteStats(ctx context.Context, opts ...CallOption) (*api.WriteStats, error) {
	return call[api.WriteStats](ctx, c, "GET", "/v1/stats/writes", nil, nil, opts)
}

// SalienceStats returns the tenant's salience by type (GET
// /v1/stats/salience).
func (c *Client) SalienceStats(ctx context.Context, opts ...CallOption) (*api.SalienceStats, error) {
	return call[api.SalienceStats](ctx, c, "GET", "/v1/stats/salience", nil, nil, opts)
}

// HealthQuery narrows [Client.Health]: zero fields take the server's
// defaults (the last 30 days, in day buckets, the key's own tenant).
type HealthQuery struct {
	// Tenant is the tenant to read: required with an operator's key.
	Tenant string
	// From and To bound the range; Bucket is hour, day or week.
	From, To time.Time
	Bucket   string
}

// Health returns a tenant's memory metrics over time and its composite
// health score (GET /v1/stats/health).
func (c *Client) Health(ctx context.Context, q HealthQuery, opts ...CallOption) (*api.HealthStats, error) {
	v := url.Values{}
	if q.Tenant != "" {
		v.Set("tenant", q.Tenant)
	}
	if !q.From.IsZero() {
		v.Set("from", q.From.UTC().Format(time.RFC3339Nano))
	}
	if !q.To.IsZero() {
		v.Set("to", q.To.UTC().Format(time.RFC3339Nano))
	}
	if q.Bucket != "" {
		v.Set("bucket", q.Bucket)
	}
	return call[api.HealthStats](ctx, c, "GET", "/v1/stats/health", v, nil, opts)
}

// Tenants lists the tenants the database holds (GET /v1/tenants; an
// operator's key).
func (c *Client) Tenants(ctx context.Context, opts ...CallOption) (*api.Tenants, error) {
	return call[api.Tenants](ctx, c, "GET", "/v1/tenants", nil, nil, opts)
}

// Whoami says whom the client's key speaks for: its name, tenant, role and
// agent (GET /v1/whoami; any key).
func (c *Client) Whoami(ctx context.Context, opts ...CallOption) (*api.Whoami, error) {
	return call[api.Whoami](ctx, c, "GET", "/v1/whoami", nil, nil, opts)
}

// DecayPreview projects what a proposed decay configuration would do,
// beside the one in force (POST /v1/decay/preview).
func (c *Client) DecayPreview(ctx context.Context, req api.DecayPreviewRequest, opts ...CallOption) (*api.DecayPreview, error) {
	return call[api.DecayPreview](ctx, c, "POST", "/v1/decay/preview", nil, req, opts)
}

// Compliance returns the retention and erasure report (GET
// /v1/compliance; an operator's key).
func (c *Client) Compliance(ctx context.Context, opts ...CallOption) (*api.ComplianceReport, error) {
	return call[api.ComplianceReport](ctx, c, "GET", "/v1/compliance", nil, nil, opts)
}

// StartErasure starts erasing a data subject (POST /v1/erasures; a
// curator's key).
func (c *Client) StartErasure(ctx context.Context, req api.ErasureRequest, opts ...CallOption) (*api.Erasure, error) {
	return call[api.Erasure](ctx, c, "POST", "/v1/erasures", nil, req, opts)
}

// GetErasure returns an erasure and, once done, its certificate (GET
// /v1/erasures/{id}).
func (c *Client) GetErasure(ctx context.Context, id string, opts ...CallOption) (*api.Erasure, error) {
	return call[api.Erasure](ctx, c, "GET", "/v1/erasures/"+escape(id), nil, nil, opts)
}

// CreateKey creates an API key kept in the database (POST /v1/keys); the
// answer holds its secret, shown once.
func (c *Client) CreateKey(ctx context.Context, req api.KeyRequest, opts ...CallOption) (*api.CreatedKey, error) {
	return call[api.CreatedKey](ctx, c, "POST", "/v1/keys", nil, req, opts)
}

// ListKeys lists the API keys, of one tenant when tenant is set (GET
// /v1/keys).
func (c *Client) ListKeys(ctx context.Context, tenant string, opts ...CallOption) (*api.KeyList, error) {
	var q url.Values
	if tenant != "" {
		q = url.Values{"tenant": {tenant}}
	}
	return call[api.KeyList](ctx, c, "GET", "/v1/keys", q, nil, opts)
}

// RevokeKey revokes the key name (POST /v1/keys/{name}:revoke).
func (c *Client) RevokeKey(ctx context.Context, name string, opts ...CallOption) (*api.APIKey, error) {
	return call[api.APIKey](ctx, c, "POST", "/v1/keys/"+escape(name)+":revoke", nil, nil, opts)
}

// EncryptionStatus returns the state of encryption at rest (GET
// /v1/encryption).
func (c *Client) EncryptionStatus(ctx context.Context, opts ...CallOption) (*api.EncryptionStatus, error) {
	return call[api.EncryptionStatus](ctx, c, "GET", "/v1/encryption", nil, nil, opts)
}

// RotateMaster rewraps every tenant's data key under the current master
// key (POST /v1/encryption:rotate-master).
func (c *Client) RotateMaster(ctx context.Context, opts ...CallOption) (*api.RotateMasterResult, error) {
	return call[api.RotateMasterResult](ctx, c, "POST", "/v1/encryption:rotate-master", nil, nil, opts)
}

// RotateData takes one step of re-encrypting a tenant's data under a new
// data key (POST /v1/encryption:rotate-data); call it until Done.
func (c *Client) RotateData(ctx context.Context, req api.RotateDataRequest, opts ...CallOption) (*api.RotateDataStep, error) {
	return call[api.RotateDataStep](ctx, c, "POST", "/v1/encryption:rotate-data", nil, req, opts)
}
