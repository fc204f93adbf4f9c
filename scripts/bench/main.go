// Command bench runs engram's benchmark suite — ingestion, retrieval, decay
// and consolidation, each a Go benchmark in its package — and writes one
// Markdown table: every figure beside its target and the floor measured in
// the same run, with the ratio. `make bench` runs it.
//
//	go run ./scripts/bench [--size quick|full] [--events N] [--records N] [--scale N,N,…]
//		[--decay-records N] [--episodes N] [--triggers N] [--dense-records N] [--dense-dims N]
//		[--only ingest,retrieve,dense,decay,consolidate]
//		[--out docs/bench/report.md] [--append] [--note text] [--from raw.txt]
//
// The report goes to docs/bench/report.md (docs/bench/report-full.md for
// --size full), and the suites' raw `go test -bench` output beside it
// (report.txt, report-full.txt): --from renders a report again from such a
// file without running anything, after a change to the table's targets or
// reasons.
//
// Each suite is `go test -run='^$' -bench=… ./pkg/` with its sizes in
// ENGRAM_BENCH_* variables: its progress streams to the terminal as it
// goes, and the command it ran is printed, so any figure can be reproduced
// on its own.
package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Sizes are a run's sizes.
type Sizes struct {
	Events       int    // events of each ingestion case
	Records      int    // records across 100 tenants, for retrieval
	Scale        string // one tenant's records, for the scaling curve
	DecayRecords int    // records the decay sweep reads
	Episodes     int    // closed episodes a consolidation pass reads
	Triggers     int    // the distinct errors among them
	DenseRecords int    // one tenant's records, embedded by a dense model, for the HNSW recall
	DenseDims    int    // that model's dimensions
}

// presets: quick fits in minutes on a 2-core machine; full is the targets'
// sizes (hours there, most of it seeding and indexing a million records
// three times). Its dense model has 384 dimensions, as small embedding
// models do: a graph of a million vectors of 1,536 needs about 8 GB of
// maintenance_work_mem to be built in memory, and days of two cores.
var presets = map[string]Sizes{
	"quick": {Events: 60_000, Records: 100_000, Scale: "1000,10000,100000", DecayRecords: 100_000, Episodes: 10_000, Triggers: 100,
		DenseRecords: 20_000, DenseDims: 384},
	"full": {Events: 200_000, Records: 1_000_000, Scale: "1000,10000,100000,1000000", DecayRecords: 1_000_000, Episodes: 100_000, Triggers: 500,
		DenseRecords: 1_000_000, DenseDims: 384},
}

// suite is one package's benchmarks.
type suite struct {
	name, pkg, bench, benchtime string
	env                         func(Sizes) []string
}

var suites = []suite{
	{name: "ingest", pkg: "./cmd/engramd/", bench: "^Benchmark(Ingest|RetrieveWhileIngesting)$", benchtime: "1x",
		env: func(s Sizes) []string { return []string{fmt.Sprint("ENGRAM_BENCH_EVENTS=", s.Events)} }},
	{name: "retrieve", pkg: "./retrieve/", bench: "^Benchmark(Retrieve|Recall|RetrieveScale)$", benchtime: "300x",
		env: func(s Sizes) []string {
			// The seeded schemas are kept (and reused by the next run of
			// the same size): the recall benchmarks run over the same
			// records as the latency ones, the large tenant over the
			// scaling curve's largest.
			return []string{fmt.Sprint("ENGRAM_BENCH_RECORDS=", s.Records), "ENGRAM_BENCH_SCALE=" + s.Scale,
				"ENGRAM_BENCH_SCALE_MAX=" + largest(s.Scale), "ENGRAM_BENCH_KEEP=1"}
		}},
	{name: "dense", pkg: "./retrieve/", bench: "^BenchmarkDenseRecall$", benchtime: "100x",
		env: func(s Sizes) []string {
			return []string{fmt.Sprint("ENGRAM_BENCH_DENSE_RECORDS=", s.DenseRecords), fmt.Sprint("ENGRAM_BENCH_DENSE_DIMS=", s.DenseDims),
				"ENGRAM_BENCH_KEEP=1"}
		}},
	{name: "decay", pkg: "./decay/", bench: "^Benchmark(Sweep|Feedback)$", benchtime: "1x",
		env: func(s Sizes) []string { return []string{fmt.Sprint("ENGRAM_BENCH_RECORDS=", s.DecayRecords)} }},
	{name: "consolidate", pkg: "./consolidate/", bench: "^BenchmarkConsolidate$", benchtime: "1x",
		env: func(s Sizes) []string {
			return []string{fmt.Sprint("ENGRAM_BENCH_EPISODES=", s.Episodes), fmt.Sprint("ENGRAM_BENCH_TRIGGERS=", s.Triggers)}
		}},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	size := fs.String("size", "quick", "preset sizes: quick (minutes) or full (the targets' sizes; hours)")
	events := fs.Int("events", 0, "events of each ingestion case (preset if 0)")
	records := fs.Int("records", 0, "records across 100 tenants for retrieval (preset if 0)")
	scale := fs.String("scale", "", "one tenant's record counts for the retrieval scaling curve, comma separated (preset if empty)")
	decayRecords := fs.Int("decay-records", 0, "records the decay sweep reads (preset if 0)")
	episodes := fs.Int("episodes", 0, "closed episodes a consolidation pass reads (preset if 0)")
	triggers := fs.Int("triggers", 0, "distinct errors among the episodes (preset if 0)")
	denseRecords := fs.Int("dense-records", 0, "one tenant's records embedded by a dense model, for the HNSW recall (preset if 0)")
	denseDims := fs.Int("dense-dims", 0, "that model's dimensions; above 2,000 the index is over halfvec (preset if 0)")
	only := fs.String("only", "", "run only these suites, comma separated: ingest, retrieve, dense, decay, consolidate")
	out := fs.String("out", "", "where to write the report (docs/bench/report.md; report-full.md for --size full)")
	note := fs.String("note", "", "a line the report shows beside this run's figures (what else the machine was doing, say)")
	appendRaw := fs.Bool("append", false, "add this run's suites to the raw output already in the report's .txt, and report on them all")
	from := fs.String("from", "", "render the report from this file of raw benchmark output (a report's .txt) instead of running the suites")
	asIs := fs.Bool("autovacuum-as-is", false, "leave the server's autovacuum as it is (by default it is on for the run)")
	dbURL := fs.String("database-url", cmp.Or(os.Getenv("TEST_DATABASE_URL"), "postgres://postgres@127.0.0.1:5432/engram_test?sslmode=disable"),
		"the database the benchmarks run in (TEST_DATABASE_URL)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	sizes, ok := presets[*size]
	if !ok {
		return fmt.Errorf("--size %q: want quick or full", *size)
	}
	override(&sizes.Events, *events)
	override(&sizes.Records, *records)
	override(&sizes.DecayRecords, *decayRecords)
	override(&sizes.Episodes, *episodes)
	override(&sizes.Triggers, *triggers)
	override(&sizes.DenseRecords, *denseRecords)
	override(&sizes.DenseDims, *denseDims)
	if *scale != "" {
		sizes.Scale = *scale
	}
	chosen, err := choose(*only)
	if err != nil {
		return err
	}

	if *out == "" {
		*out = "docs/bench/report.md"
		if *size != "quick" {
			*out = "docs/bench/report-" + *size + ".md"
		}
	}
	raw := strings.TrimSuffix(*out, ".md") + ".txt"

	report := Report{Sizes: sizes, Preset: *size, Results: Results{}}
	for _, s := range chosen {
		env := append(s.env(sizes), "TEST_DATABASE_URL="+*dbURL)
		report.Commands = append(report.Commands, command(s, env[:len(env)-1]))
	}
	if *from != "" {
		f, err := os.Open(*from)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := report.ReadRaw(f); err != nil {
			return fmt.Errorf("%s: %w", *from, err)
		}
		raw = *from
	} else {
		// Each suite's output is added to the raw file as soon as the
		// suite ends, with its own header: a run cut short keeps the
		// suites it finished, and --append adds suites run later (a full
		// run takes longer than one sitting) to those of the file.
		var runs []byte
		if *appendRaw {
			if runs, err = os.ReadFile(raw); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		if err := os.MkdirAll(dirOf(*out), 0o755); err != nil {
			return err
		}
		machine := fmt.Sprintf("%d cores (%s/%s), %s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, time.Now().UTC().Format("2006-01-02"))
		rev := commit(ctx)
		err = withAutovacuum(ctx, *dbURL, *asIs, stderr, func(setting string) error {
			for i, s := range chosen {
				env := append(s.env(sizes), "TEST_DATABASE_URL="+*dbURL)
				fmt.Fprintf(stderr, "\n== [%d/%d] %s: %s\n", i+1, len(chosen), s.name, report.Commands[i])
				t := time.Now()
				var captured bytes.Buffer
				cmd := exec.CommandContext(ctx, "go", testArgs(s)...)
				cmd.Env = append(os.Environ(), env...)
				cmd.Stdout = io.MultiWriter(stderr, &captured)
				cmd.Stderr = stderr
				if err := cmd.Run(); err != nil {
					return fmt.Errorf("%s: %w", s.name, err)
				}
				part := Report{Took: time.Since(t), Autovacuum: setting, Machine: machine, Commit: rev}
				if *note != "" {
					part.Notes = []string{s.name + ": " + *note}
				}
				runs = append(runs, part.RawHeader(captured.Bytes())...)
				if err := os.WriteFile(raw, runs, 0o644); err != nil {
					return err
				}
				fmt.Fprintf(stderr, "== %s done in %s; its output added to %s\n", s.name, part.Took.Round(time.Second), raw)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := report.ReadRaw(bytes.NewReader(runs)); err != nil {
			return fmt.Errorf("read the results: %w", err)
		}
	}

	fmt.Fprintln(stdout, report.Table())
	if why := report.Why(); why != "" {
		fmt.Fprintln(stdout, why)
	}
	if err := os.WriteFile(*out, []byte(report.Markdown(raw)), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s and %s\n", *out, raw)
	return nil
}

// testArgs are the `go test` arguments of a suite.
func testArgs(s suite) []string {
	return []string{"test", "-run=^$", "-bench=" + s.bench, "-benchtime=" + s.benchtime, "-timeout=300m", s.pkg}
}

// command is the shell command that runs a suite on its own.
func command(s suite, env []string) string {
	return strings.Join(env, " ") + " go " + strings.Join(quoteArgs(testArgs(s)), " ")
}

// commit is the checked-out commit, with "+changes" when the tree differs
// from it, or "" outside a git checkout.
func commit(ctx context.Context) string {
	head, err := exec.CommandContext(ctx, "git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(head))
	if diff, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(diff)) > 0 {
		c += "+changes"
	}
	return c
}

// largest is the largest of a comma-separated list of counts.
func largest(list string) string {
	best := 0
	for f := range strings.SplitSeq(list, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > best {
			best = n
		}
	}
	return strconv.Itoa(best)
}

func override(v *int, flagValue int) {
	if flagValue > 0 {
		*v = flagValue
	}
}

func choose(only string) ([]suite, error) {
	if only == "" {
		return suites, nil
	}
	var out []suite
	for name := range strings.SplitSeq(only, ",") {
		found := false
		for _, s := range suites {
			if s.name == strings.TrimSpace(name) {
				out, found = append(out, s), true
			}
		}
		if !found {
			return nil, fmt.Errorf("--only: no suite %q (ingest, retrieve, dense, decay, consolidate)", name)
		}
	}
	return out, nil
}

// quoteArgs quotes the arguments a shell would otherwise read.
func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$|()*") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return out
}

func dirOf(path string) string {
	if i := strings.LastIndex(path, "/"); i >= 0 {
		return path[:i]
	}
	return "."
}
