// Package console is engramd's operator console: a web UI at /console,
// served from assets embedded in the binary (no build step, no CDN, no
// network at run time). It is a client of the /v1 API like any other: the
// browser signs in with an engram key, keeps it in sessionStorage and sends
// it as a bearer token, so every page sees exactly what the key's role and
// tenant may (an operator key the health of every tenant and the jobs, a
// tenant's key that tenant's records, learning, reviews and decay).
//
// Pages (substrate RFC §14, §15.10; write-path RFC §12.12): Health, the
// metrics over time and the composite health score; Records, a browser and
// each record's payload, versions as diffs, audit, provenance, relations
// and salience curve; Learning, each learned procedure and plan with its
// success rate over time and revisions; Reviews, the write path's queue;
// Decay, a profile editor beside the preview of what it would do; Jobs,
// the periodic jobs and their runs. Charts are inline SVG drawn by
// assets/chart.js, each with a data table as its text alternative. The
// Learning page also draws the learning curves of the last evaluation
// (engram-eval's curve.json), when [Config.EvalReport] names one.
package console

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
)

//go:embed assets
var assets embed.FS

// Prefix is where the console is mounted.
const Prefix = "/console/"

// EvalPath is where the console serves the evaluation's curves.
const EvalPath = Prefix + "eval.json"

// maxEvalBytes caps the curves file served: a full evaluation's is a few
// kilobytes.
const maxEvalBytes = 4 << 20

// Config is the console's configuration (yaml console.*).
type Config struct {
	// EvalReport is the path of the curve.json an evaluation wrote
	// (`make eval` writes docs/eval/curve.json), served at [EvalPath] and
	// drawn on the Learning page. Empty (the default) serves none. It is
	// read on each request, so a new evaluation shows without a restart,
	// and a missing file is no error: the page says how to make one.
	// yaml console.eval_report, ENGRAM_CONSOLE_EVAL_REPORT,
	// --console-eval-report.
	EvalReport string `yaml:"eval_report"`
}

// Validate names the bad field: an evaluation report that is a directory.
func (c Config) Validate() error {
	if c.EvalReport == "" {
		return nil
	}
	if fi, err := os.Stat(c.EvalReport); err == nil && fi.IsDir() {
		return fmt.Errorf("console.eval_report: %q is a directory: name the curve.json an evaluation wrote", c.EvalReport)
	}
	return nil
}

// Handler serves the console under [Prefix]; /console itself redirects
// there. The pages load scripts, styles and data from this origin only
// (the Content-Security-Policy says so), and the API they call is /v1.
func Handler(cfg Config) http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix(Prefix, http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/console" {
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// The assets change with the binary: revalidate each load.
		h.Set("Cache-Control", "no-cache")
		if r.URL.Path == EvalPath {
			serveEval(w, cfg.EvalReport)
			return
		}
		files.ServeHTTP(w, r)
	})
}

// serveEval serves the evaluation's curves from the one configured path;
// nothing of the request names a file.
//
// It is served without a key, like the console's assets: the curves are
// of a simulated world (engram-eval's agents on seeded problems), the same
// figures as the repository's docs/eval, and hold no tenant's data. So
// that a path set by mistake cannot publish another file, only a document
// shaped as curves is served: a JSON object whose agents each have a name
// and points.
func serveEval(w http.ResponseWriter, path string) {
	if path == "" {
		notFound(w, "No evaluation report is configured (console.eval_report).")
		return
	}
	b, err := readEval(path)
	if err != nil {
		notFound(w, "No evaluation report: "+err.Error()+".")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// readEval reads the curves file and checks its shape. Its errors name no
// path: they are shown to whoever asks.
func readEval(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("the file is not there yet (make eval writes it)")
	}
	if err != nil {
		return nil, errors.New("the file cannot be read")
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxEvalBytes+1))
	if err != nil {
		return nil, errors.New("the file cannot be read")
	}
	if len(b) > maxEvalBytes {
		return nil, errors.New("the file is too large for an evaluation's curves")
	}
	var doc struct {
		Agents []struct {
			Agent  string `json:"agent"`
			Points []struct {
				From *int     `json:"from"`
				To   *int     `json:"to"`
				Rate *float64 `json:"rate"`
			} `json:"points"`
		} `json:"agents"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Agents) == 0 {
		return nil, errors.New("the file is not an evaluation's curves")
	}
	for _, a := range doc.Agents {
		if a.Agent == "" || len(a.Points) == 0 {
			return nil, errors.New("the file is not an evaluation's curves")
		}
		for _, p := range a.Points {
			if p.From == nil || p.To == nil || p.Rate == nil {
				return nil, errors.New("the file is not an evaluation's curves")
			}
		}
	}
	return b, nil
}

// notFound answers 404 as an RFC 9457 problem.
func notFound(w http.ResponseWriter, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(http.StatusNotFound)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "about:blank", "title": "Not Found", "status": http.StatusNotFound, "detail": detail})
}
