package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"
)

// Results are benchmark figures by name (without the Benchmark prefix and
// the GOMAXPROCS suffix: "Ingest/long-threads") and unit ("events/s"; the
// time of an operation is "sec/op").
type Results map[string]map[string]float64

// Read adds the results of a `go test -bench` output.
func (rs Results) Read(r io.Reader) error {
	br := benchfmt.NewReader(r, "bench")
	for br.Scan() {
		res, ok := br.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		base, parts := res.Name.Parts()
		name := string(base)
		for _, p := range parts {
			if !strings.HasPrefix(string(p), "-") { // -2: GOMAXPROCS
				name += string(p)
			}
		}
		m := map[string]float64{}
		for _, v := range res.Values {
			// Both as reported (rss-MB) and as benchfmt tidies it (ns/op
			// becomes sec/op).
			m[v.Unit] = v.Value
			if v.OrigUnit != "" {
				m[v.OrigUnit] = v.OrigValue
			}
		}
		rs[name] = m
	}
	return br.Err()
}

func (rs Results) get(name, unit string) (float64, bool) {
	v, ok := rs[name][unit]
	return v, ok
}

// Report is a run of the suite.
type Report struct {
	Sizes Sizes
	// Autovacuum is the server's autovacuum during the run.
	Autovacuum string
	Preset     string
	Machine    string
	// Commit is the tree measured: a commit, "+changes" when the tree
	// differed from it.
	Commit string
	// Notes say what the figures alone do not: what else the machine was
	// doing, which suites a run did not reach.
	Notes    []string
	Commands []string
	Took     time.Duration
	Results  Results
}

// row is one line of the table. key names it in whyMissed.
type row struct {
	key, what, figure, target, status, floor, ratio string
}

// missed reports whether the row's figure misses its target.
func (x row) missed() bool { return strings.HasPrefix(x.status, "**missed") }

// Table is the Markdown table of every figure.
func (r Report) Table() string {
	var b strings.Builder
	b.WriteString("| what | figure | target | status | floor, same run | figure ÷ floor |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, x := range r.rows() {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", x.what, x.figure, x.target, x.status, x.floor, x.ratio)
	}
	return b.String()
}

// Why lists, for each figure of the run that missed its target, the reason
// its profile showed (whyMissed).
func (r Report) Why() string {
	var b strings.Builder
	for _, x := range r.rows() {
		if !x.missed() {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("Why the missed targets are missed, as their profiles showed (pprof of the benchmark, `EXPLAIN (ANALYZE, BUFFERS)` of its statements; " + whyMeasured + "):\n\n")
		}
		fmt.Fprintf(&b, "- **%s**: %s\n", x.what, reason(x.key))
	}
	return b.String()
}

// Block is the report's body: how the table was made, the table, and
// why each missed target is missed.
func (r Report) Block() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured by `make bench` (sizes: `--size %s`: %s) at commit %s on %s, PostgreSQL's autovacuum %s, in %s:\n\n",
		r.Preset, r.sizeText(), cmp.Or(r.Commit, "unknown"), r.Machine, cmp.Or(r.Autovacuum, "unknown"), r.Took.Round(time.Second))
	for _, n := range r.Notes {
		b.WriteString("- " + n + "\n")
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n")
	}
	b.WriteString(r.Table())
	if why := r.Why(); why != "" {
		b.WriteString("\n" + why)
	}
	return b.String()
}

// Markdown is the whole report: the table, the commands that reproduce
// each figure, and where the raw output is.
func (r Report) Markdown(raw string) string {
	var b strings.Builder
	b.WriteString("# engram benchmarks\n\n")
	b.WriteString(r.Block())
	b.WriteString("\nEach suite on its own:\n\n```sh\n")
	for _, c := range r.Commands {
		b.WriteString(c + "\n")
	}
	name := raw[strings.LastIndex(raw, "/")+1:]
	fmt.Fprintf(&b, "```\n\nThe suites' raw output is [%s](%s) (`benchstat` reads it); `go run ./scripts/bench --from %s --size %s` renders this page from it again.\n",
		name, name, raw, r.Preset)
	return b.String()
}

// The raw output's header: what a report says beside its figures, as
// lines `go test -bench` output allows (benchfmt reads "key: value" as
// configuration).
const (
	rawTook       = "engram-took: "
	rawAutovacuum = "engram-autovacuum: "
	rawMachine    = "engram-machine: "
	rawCommit     = "engram-commit: "
	rawNote       = "engram-note: "
)

// addOnce adds v to a "; "-separated list unless it is there.
func addOnce(list, v string) string {
	if v == "" || slices.Contains(strings.Split(list, "; "), v) {
		return list
	}
	if list == "" {
		return v
	}
	return list + "; " + v
}

// RawHeader is out with the report's header before it.
func (r Report) RawHeader(out []byte) []byte {
	head := rawTook + r.Took.Round(time.Second).String() + "\n" + rawAutovacuum + r.Autovacuum + "\n" +
		rawMachine + r.Machine + "\n" + rawCommit + r.Commit + "\n"
	for _, n := range r.Notes {
		head += rawNote + n + "\n"
	}
	return append([]byte(head), out...)
}

// ReadRaw reads a raw output: its header into the report, its figures into
// its results.
func (r *Report) ReadRaw(in io.Reader) error {
	data, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	// A raw file may be several runs' outputs one after another (suites
	// run at different times): their times add up, and each commit and
	// machine is named once.
	r.Took, r.Commit, r.Machine, r.Autovacuum, r.Notes = 0, "", "", "", nil
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, rawTook):
			d, _ := time.ParseDuration(strings.TrimPrefix(line, rawTook))
			r.Took += d
		case strings.HasPrefix(line, rawAutovacuum):
			r.Autovacuum = addOnce(r.Autovacuum, strings.TrimPrefix(line, rawAutovacuum))
		case strings.HasPrefix(line, rawMachine):
			r.Machine = addOnce(r.Machine, strings.TrimPrefix(line, rawMachine))
		case strings.HasPrefix(line, rawCommit):
			r.Commit = addOnce(r.Commit, strings.TrimPrefix(line, rawCommit))
		case strings.HasPrefix(line, rawNote):
			r.Notes = append(r.Notes, strings.TrimPrefix(line, rawNote))
		}
	}
	if r.Results == nil {
		r.Results = Results{}
	}
	return r.Results.Read(strings.NewReader(string(data)))
}

func (r Report) sizeText() string {
	s := r.Sizes
	return fmt.Sprintf("%s events a case, %s records across 100 tenants, one tenant of %s records, one tenant of %s records embedded by a dense model of %d dimensions, a decay sweep over %s, consolidation of %s episodes (%d errors)",
		count(s.Events), count(s.Records), s.Scale, count(s.DenseRecords), s.DenseDims, count(s.DecayRecords), count(s.Episodes), s.Triggers)
}

// rows are the table's lines, in the order; a figure the run did
// not measure says so.
func (r Report) rows() []row {
	rs := r.Results
	var out []row
	add := func(x row) { out = append(out, x) }

	// Ingestion.
	long, hasLong := rs.get("Ingest/long-threads", "events/s")
	for _, c := range []struct{ name, what string }{
		{"long-threads", "ingestion, classified end to end, 2,000 threads, jobs off"},
		{"short-threads", "the same, a thread per two events (chat runtimes)"},
		{"jobs-on", "the same as the first with the default jobs on (the embedding backfill every 5 s)"},
	} {
		v, ok := rs.get("Ingest/"+c.name, "events/s")
		floor, hasFloor := rs.get("Ingest/"+c.name, "floor-rows/s")
		x := row{key: "ingest/" + c.name, what: c.what, target: "≥ 20,000 events/s", floor: "—", ratio: "—"}
		if c.name != "long-threads" {
			want := 0.5
			x.target = "≥ 0.5× the first row's rate"
			if c.name == "jobs-on" {
				want, x.target = 0.8, "≥ 80% of the first row"
			}
			if ok && hasLong {
				x.status = atLeast(v, want*long, fmt.Sprintf("%.0f%% of it", 100*v/long))
			}
		} else if ok {
			x.status = atLeast(v, 20_000, "")
		}
		if ok {
			x.figure = count(int(v)) + " events/s"
		}
		if hasFloor {
			x.floor = "raw `COPY` of the same events: " + count(int(floor)) + " rows/s"
			if ok {
				x.ratio = fmt.Sprintf("%.3f×", v/floor)
				if c.name == "long-threads" {
					x.target += "; ≥ 0.1× the floor"
					if v < 0.1*floor && !x.missed() {
						x.status = fmt.Sprintf("**missed**: %.3f× the floor", v/floor)
					}
				}
			}
		}
		add(fill(x, ok))
	}
	p99, ok := rs.get("Ingest/offered-10k", "ack-p99-ms")
	add(fill(row{key: "ingest/ack", what: "acknowledgement p99, 10,000 events/s offered", figure: msText(p99), target: "< 50 ms",
		status: atMost(p99, 50, ""), floor: "—", ratio: "—"}, ok))
	var rss float64
	var hasRSS bool
	for n, m := range rs {
		if v, ok := m["rss-MB"]; ok && strings.HasPrefix(n, "Ingest/") {
			rss, hasRSS = math.Max(rss, v), true
		}
	}
	add(fill(row{key: "ingest/rss", what: "daemon resident memory, the most over the ingestion runs", figure: fmt.Sprintf("%.0f MB", rss), target: "< 200 MB",
		status: atMost(rss, 200, ""), floor: "—", ratio: "—"}, hasRSS))
	v, ok := rs.get("RetrieveWhileIngesting", "p99-ms")
	acked, _ := rs.get("RetrieveWhileIngesting", "acked/s")
	x := row{key: "retrieve/while-ingesting", what: "retrieval p99 over HTTP, one tenant of 24,000 facts, while its agents stream 2,000 events/s",
		figure: fmt.Sprintf("%s (the load acknowledged at %s events/s)", msText(v), count(int(acked))),
		target: "≤ 2× the idle p99 and ≤ 50 ms", status: atMost(v, 50, ""), floor: "—", ratio: "—"}
	if idle, ok := rs.get("RetrieveWhileIngesting", "idle-p99-ms"); ok {
		x.floor = "the same retrievals with nothing ingesting: " + msText(idle)
		x.ratio = fmt.Sprintf("%.2f×", v/idle)
		x.status = atMost(v, math.Min(50, 2*idle), "")
	}
	add(fill(x, ok))

	// Retrieval.
	for _, q := range []struct{ p, what, target string }{
		{"p50", "retrieval p50, records of all types across 100 tenants", "≤ 5 ms"},
		{"p99", "retrieval p99, the same", "≤ 25 ms"},
	} {
		v, ok := rs.get("Retrieve", q.p+"-ms")
		limit, _ := strconv.ParseFloat(strings.Fields(q.target)[1], 64)
		x := row{key: "retrieve/" + q.p, what: q.what, figure: msText(v), target: q.target, status: atMost(v, limit, "")}
		var floors, ratios []string
		if f, ok := rs.get("Retrieve", "sql-"+q.p+"-ms"); ok {
			floors = append(floors, "the bare SQL engram issues: "+msText(f))
			ratios = append(ratios, fmt.Sprintf("%.2f×", v/f))
		}
		if f, ok := rs.get("Retrieve", "fts-"+q.p+"-ms"); ok {
			floors = append(floors, "plain PostgreSQL full text (`tsvector`, GIN, `ts_rank_cd`): "+msText(f))
			ratios = append(ratios, fmt.Sprintf("%.2f×", v/f))
		}
		x.floor, x.ratio = join(floors), join(ratios)
		add(fill(x, ok))
	}
	for _, p := range []struct{ name, what string }{
		{"Recall/small-tenants", "recall@10 against exact search, 100 tenants"},
		{"Recall/large-tenant", "recall@10 against exact search, one tenant of the largest size"},
	} {
		v, ok := rs.get(p.name, "recall@10")
		add(fill(row{key: p.name, what: p.what, figure: fmt.Sprintf("%.3f", v), target: "≥ 0.95", status: atLeast(v, 0.95, ""), floor: "—", ratio: "—"}, ok))
	}
	var scale []int
	for n := range rs {
		if s, ok := strings.CutPrefix(n, "RetrieveScale/records="); ok {
			if k, err := strconv.Atoi(s); err == nil {
				scale = append(scale, k)
			}
		}
	}
	slices.Sort(scale)
	for i, k := range scale {
		name := fmt.Sprintf("RetrieveScale/records=%d", k)
		p50, _ := rs.get(name, "p50-ms")
		p99, _ := rs.get(name, "p99-ms")
		x := row{key: "retrieve/scale", what: "retrieval, one tenant of " + count(k) + " records (p50 / p99)", figure: msText(p50) + " / " + msText(p99),
			target: "≤ ×2 per 10× records, up to 1,000,000", status: "the first point", floor: "—", ratio: "—"}
		if i > 0 {
			prev, _ := rs.get(fmt.Sprintf("RetrieveScale/records=%d", scale[i-1]), "p50-ms")
			growth := p50 / prev
			per10 := math.Pow(growth, 1/math.Log10(float64(k)/float64(scale[i-1])))
			x.status = atMost(per10, 2, fmt.Sprintf("p50 ×%.2f per 10×", per10))
		}
		add(x)
	}

	// Dense vectors on their HNSW index, against exact ranking.
	dense := fmt.Sprintf("one tenant of %s records, a dense model of %d dimensions", count(r.Sizes.DenseRecords), r.Sizes.DenseDims)
	v, ok = rs.get("DenseRecall", "recall@10")
	vec, _ := rs.get("DenseRecall", "vector-recall@10")
	add(fill(row{key: "dense/recall", what: "recall@10 of dense vectors on the HNSW index against exact ranking, " + dense,
		figure: fmt.Sprintf("%.3f (the vector half alone: %.3f)", v, vec), target: "≥ 0.95",
		status: atLeast(math.Min(v, vec), 0.95, ""), floor: "—", ratio: "—"}, ok))
	p50, ok := rs.get("DenseRecall", "p50-ms")
	p99, _ = rs.get("DenseRecall", "p99-ms")
	e50, hasExact := rs.get("DenseRecall", "exact-p50-ms")
	e99, _ := rs.get("DenseRecall", "exact-p99-ms")
	x = row{key: "dense/latency", what: "retrieval p50 / p99 with dense vectors on the HNSW index, the same tenant", figure: msText(p50) + " / " + msText(p99),
		target: "≤ the exact search", status: atMost(p50, e50, ""), floor: "—", ratio: "—"}
	if hasExact {
		x.floor = "exact ranking of the tenant's vectors: " + msText(e50) + " / " + msText(e99)
		x.ratio = fmt.Sprintf("%.2f×", p50/e50)
	}
	add(fill(x, ok && hasExact))

	// Decay.
	d := float64(r.Sizes.DecayRecords)
	v, ok = rs.get("Sweep/first", "records/s")
	add(fill(row{key: "decay/sweep", what: "decay: a first full sweep of " + count(int(d)) + " records", figure: count(int(v)) + " records/s",
		target: "a million in under 10 s (≥ 100,000 records/s)", status: atLeast(v, 100_000, ""), floor: "—", ratio: "—"}, ok))
	for _, f := range []struct{ name, what string }{{"facts", "facts"}, {"procedures", "procedures (a revision each)"}} {
		v, ok := rs.get("Feedback/"+f.name, "sec/op")
		add(fill(row{key: "decay/feedback-" + f.name, what: "feedback for 10,000 " + f.what + " in one call", figure: secText(v), target: "< 1 s",
			status: atMost(v, 1, ""), floor: "—", ratio: "—"}, ok))
	}

	// Consolidation.
	// A pass reads the tenant's latest 10,000 episodes whatever their
	// number, so the target stays 60 s at any size.
	v, ok = rs.get("Consolidate/full", "sec/op")
	add(fill(row{key: "consolidate/full", what: "consolidation: a first pass over " + count(r.Sizes.Episodes) + " closed episodes, " + count(r.Sizes.Triggers) + " errors",
		figure: secText(v), target: "< 60 s (set for 100,000 episodes)", status: atMost(v, 60, ""), floor: "—", ratio: "—"}, ok))
	// Issue 33: a database never analysed (a bulk load or restore with
	// autovacuum off) within twice the analysed database's time.
	full, hasFull := rs.get("Consolidate/full", "sec/op")
	v, ok = rs.get("Consolidate/never-analyzed", "sec/op")
	x = row{key: "consolidate/never-analyzed", what: "consolidation: the same first pass on the same database never analysed (no statistics, autovacuum off)",
		figure: secText(v), target: "≤ 2× the pass on the analysed database", status: "—", floor: "—", ratio: "—"}
	if ok && hasFull {
		x.status = atMost(v, 2*full, "")
		x.floor, x.ratio = "the same pass, analysed: "+secText(full), fmt.Sprintf("%.2f×", v/full)
	}
	add(fill(x, ok))
	v, ok = rs.get("Consolidate/incremental", "sec/op")
	add(fill(row{key: "consolidate/incremental", what: "consolidation: the pass after 1,000 new episodes", figure: secText(v), target: "< 2 s",
		status: atMost(v, 2, ""), floor: "—", ratio: "—"}, ok))
	return out
}

// fill marks a row the run did not measure.
func fill(x row, measured bool) row {
	if !measured {
		x.figure, x.status, x.ratio = "not measured in this run", "—", "—"
	}
	return x
}

// atLeast and atMost are a status: met, or missed by how much.
func atLeast(v, want float64, note string) string {
	if v >= want {
		return withNote("met", note)
	}
	return withNote(fmt.Sprintf("**missed** by %.1f×", want/v), note)
}

func atMost(v, want float64, note string) string {
	if v <= want {
		return withNote("met", note)
	}
	return withNote(fmt.Sprintf("**missed** by %.1f×", v/want), note)
}

func withNote(s, note string) string {
	if note == "" {
		return s
	}
	return s + " (" + note + ")"
}

func join(s []string) string {
	if len(s) == 0 {
		return "—"
	}
	return strings.Join(s, "; ")
}

func msText(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f ms", v)
	}
	return fmt.Sprintf("%.1f ms", v)
}

func secText(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.0f ms", v*1000)
	}
	return fmt.Sprintf("%.1f s", v)
}

// count writes n with thousands separators.
func count(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
