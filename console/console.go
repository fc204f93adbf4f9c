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
// assets/chart.js, each with a data table as its text alternative.
package console

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed assets
var assets embed.FS

// Prefix is where the console is mounted.
const Prefix = "/console/"

// Handler serves the console under [Prefix]; /console itself redirects
// there. The pages load scripts, styles and data from this origin only
// (the Content-Security-Policy says so), and the API they call is /v1.
func Handler() http.Handler {
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
		files.ServeHTTP(w, r)
	})
}
