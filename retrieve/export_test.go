package retrieve

import (
	"context"
	"time"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// SearchQueries are the searches Retrieve issues for req, for the
// benchmark that times them bare.
func SearchQueries(cfg Config, req Request, c memory.Sensitivity, now time.Time) []store.SearchQuery {
	return (&Retriever{}).queries(cfg, req.Task, queryText(req.Task), c, now)
}

// QueryText is what a task is searched by.
var QueryText = queryText

// Searches are the searches Retrieve issues for req in tenant, with the
// task's vector and the dense index choice, for the tests that explain
// them.
func (r *Retriever) Searches(ctx context.Context, tenant string, req Request) []store.SearchQuery {
	cfg := r.settings.Config()
	qs, _, _, _ := r.searches(ctx, cfg, tenant, req.Task, clearance(cfg.Trust, req.Trust), r.now().UTC())
	return qs
}
