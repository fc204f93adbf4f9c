package ingest_test

import (
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkClassify measures the policy plane (the ingest worker) alone: 20,000 staged events
// over 500 threads (one in 25 a fact) classified by both partitions in
// batches of 1,000. Reported as events/s.
func BenchmarkClassify(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		bb := setupB(b)
		const n = 20_000
		raws := make([]json.RawMessage, 0, 1000)
		for i := range n {
			e := map[string]any{"kind": "observation", "agent_id": "a", "thread_id": fmt.Sprintf("t%d", i%500), "text": fmt.Sprintf("event %d", i)}
			if i%25 == 0 {
				e = map[string]any{"kind": "fact", "agent_id": "a", "thread_id": fmt.Sprintf("t%d", i%500),
					"fact": map[string]any{"subject": fmt.Sprintf("s%d", i%100), "predicate": "p", "object": i % 3}}
			}
			r, _ := json.Marshal(e)
			if raws = append(raws, r); len(raws) == cap(raws) {
				if _, err := bb.ingest.Ingest(bb.ctx, "acme", raws); err != nil {
					b.Fatal(err)
				}
				raws = raws[:0]
			}
		}
		b.StartTimer()
		for {
			k0, err := bb.worker.RunOnce(bb.ctx, 0)
			if err != nil {
				b.Fatal(err)
			}
			k1, err := bb.worker.RunOnce(bb.ctx, 1)
			if err != nil {
				b.Fatal(err)
			}
			if k0+k1 == 0 {
				break
			}
		}
	}
	b.ReportMetric(float64(b.N*20_000)/b.Elapsed().Seconds(), "events/s")
}
