package ingest_test

import (
	"testing"

	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/loadgen"
)

// BenchmarkPrepare measures what a stream does for each line before it
// stages it (validate, redact, encode), on the load generator's events:
// the ingestion plane's CPU cost an event, on the acknowledgement's path.
//
//	go test -run='^$' -bench=Prepare -benchmem ./ingest/
func BenchmarkPrepare(b *testing.B) {
	cfg := loadgen.Config{Events: 2000, Streams: 1, Threads: 100, Agents: 10, Run: "prepare"}
	var lines [][]byte
	for ev := range cfg.Lines() {
		lines = append(lines, ev.Line)
	}
	in := ingest.New(ingest.Config{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := in.Prepare(0, lines[i%len(lines)]); err != nil {
			b.Fatal(err)
		}
	}
}
