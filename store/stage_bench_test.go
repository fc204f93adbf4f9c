package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/loadgen"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/store"
)

// BenchmarkStage measures staging alone: the load generator's 10,000
// events staged in batches of 50 (a stream that trickles: what the stream
// handler gathers in its 5 ms linger), 500 (its most, under load), 1,000
// and 5,000 (large atomic POSTs), each as arrays in one INSERT and with
// COPY through a temporary table. events/s is the throughput of one
// connection; db-cpu-µs/event the CPU time of the database backend, a
// measure a busy machine does not blur as much.
//
//	go test -run='^$' -bench=Stage -benchtime=3x ./store/
func BenchmarkStage(b *testing.B) {
	cfg := loadgen.Config{Events: 10_000, Streams: 1, Threads: 1000, Agents: 10, Run: "stage"}
	var events []store.Candidate
	for ev := range cfg.Lines() {
		var head struct {
			Kind memory.EventKind `json:"kind"`
		}
		require.NoError(b, json.Unmarshal(ev.Line, &head))
		events = append(events, store.Candidate{
			AgentID: ev.Agent, ThreadID: ev.Thread, Kind: head.Kind, Time: time.Now().UTC(),
			Event: ev.Line, Sensitivity: memory.Public,
		})
	}
	for _, size := range []int{50, 500, 1000, 5000} {
		for _, way := range stageWays {
			b.Run(fmt.Sprintf("batch=%d/%s", size, way.name), func(b *testing.B) {
				db := pgtest.NewSchema(b)
				ctx := context.Background()
				require.NoError(b, store.EnsureTenant(ctx, db.Pool, "acme"))
				cpu0 := backendCPU(b, db.Pool)
				run := 0
				for b.Loop() {
					b.StopTimer()
					// Fresh ids and keys: every event of every run is new.
					cands := make([]store.Candidate, len(events))
					for i, c := range events {
						c.ID = uuid.Must(uuid.NewV7())
						var k [16]byte
						binary.BigEndian.PutUint64(k[:], uint64(run))
						binary.BigEndian.PutUint64(k[8:], uint64(i))
						sum := sha256.Sum256(k[:])
						c.DedupKey = sum[:]
						cands[i] = c
					}
					run++
					b.StartTimer()
					for i := 0; i < len(cands); i += size {
						if _, err := store.StageVia(ctx, db.Pool, "acme", cands[i:min(i+size, len(cands))], way.copyMin); err != nil {
							b.Fatal(err)
						}
					}
				}
				n := float64(b.N * len(events))
				b.ReportMetric(n/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric((backendCPU(b, db.Pool)-cpu0).Seconds()*1e6/n, "db-cpu-µs/event")
			})
		}
	}
}

// backendCPU is the CPU time the PostgreSQL backends of pool's idle
// connections used so far (user and system, from /proc: the database runs
// on this machine in the benchmark's setting); zero where /proc cannot
// tell.
func backendCPU(b *testing.B, pool *pgxpool.Pool) time.Duration {
	var total time.Duration
	for _, c := range pool.AcquireAllIdle(context.Background()) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Conn().PgConn().PID()))
		c.Release()
		if err != nil {
			b.Logf("backend cpu: %v", err)
			return 0
		}
		// utime and stime are the 14th and 15th fields, in clock ticks (100
		// a second on Linux); the command before them may hold spaces.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		for _, v := range f[11:13] {
			ticks, _ := strconv.ParseInt(v, 10, 64)
			total += time.Duration(ticks) * 10 * time.Millisecond
		}
	}
	return total
}
