package retrieve

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// sizesTTL is how long a tenant's record counts are trusted before they are
// read again; the retrieval_stats job recounts them every five minutes by
// default.
const sizesTTL = time.Minute

// maxCachedTenants bounds the counts kept: past it, the cache starts over.
const maxCachedTenants = 100_000

// tenantSizes caches each tenant's live records by type (store.TypeDocs),
// by which a dense search chooses between the HNSW index and exact
// ranking.
type tenantSizes struct {
	mu sync.Mutex
	m  map[string]tenantSize
}

type tenantSize struct {
	docs map[string]int64
	read time.Time
}

// forget drops a tenant's counts, after the statistics job recounted them.
func (s *tenantSizes) forget(tenant string) {
	s.mu.Lock()
	delete(s.m, tenant)
	s.mu.Unlock()
}

// denseScans sets the DenseScan of each query whose tenant holds at least
// dense_index.min_records records of its type, when the query vector is
// dense and its model has an index (embedding.DenseIndexOf); the others
// rank the tenant's vectors exactly. A tenant's counts that cannot be read
// leave its searches exact: the index is advisory (substrate RFC §15.3).
func (r *Retriever) denseScans(ctx context.Context, cfg Config, tenant string, qs []store.SearchQuery) {
	if !r.hasDenseIndex {
		return
	}
	var docs map[string]int64
	for i, q := range qs {
		if q.Dense == nil || q.Type == memory.Working || q.Model != r.denseIndex.Model {
			continue
		}
		if docs == nil {
			var err error
			if docs, err = r.sizesOf(ctx, tenant); err != nil {
				r.logger.Warn("read the tenant's size; ranking dense vectors exactly", slog.String("error", err.Error()))
				return
			}
		}
		if docs[string(q.Type)] >= int64(cfg.DenseIndex.MinRecords) {
			qs[i].DenseScan = &store.DenseScan{
				Index: r.denseIndex, EfSearch: cfg.DenseIndex.EfSearch, MaxScanTuples: cfg.DenseIndex.MaxScanTuples,
			}
		}
	}
}

// sizesOf returns a tenant's live records by type, read at most sizesTTL
// ago.
func (r *Retriever) sizesOf(ctx context.Context, tenant string) (map[string]int64, error) {
	s := &r.sizes
	s.mu.Lock()
	e, ok := s.m[tenant]
	s.mu.Unlock()
	if ok && time.Since(e.read) < sizesTTL {
		return e.docs, nil
	}
	docs, err := store.TypeDocs(ctx, r.db, tenant)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.m == nil || len(s.m) >= maxCachedTenants {
		s.m = map[string]tenantSize{}
	}
	s.m[tenant] = tenantSize{docs: docs, read: time.Now()}
	s.mu.Unlock()
	return docs, nil
}
