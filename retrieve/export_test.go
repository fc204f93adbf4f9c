package retrieve

import (
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
