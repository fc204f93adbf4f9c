package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/console"
)

// The console is its embedded assets: /console redirects to /console/, the
// page and its modules are served with their types, and the policy keeps
// the page to this origin.
func TestHandler(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(console.Handler(console.Config{}))
	t.Cleanup(srv.Close)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	res, err := c.Get(srv.URL + "/console")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusMovedPermanently, res.StatusCode)
	require.Equal(t, "/console/", res.Header.Get("Location"))

	for path, typ := range map[string]string{"/console/": "text/html", "/console/app.js": "text/javascript",
		"/console/chart.js": "text/javascript", "/console/style.css": "text/css"} {
		res, err := c.Get(srv.URL + path)
		require.NoError(t, err)
		b, _ := io.ReadAll(res.Body)
		// The SVG namespace is a name, not an address fetched.
		body := strings.ReplaceAll(string(b), "http://www.w3.org/2000/svg", "")
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		require.True(t, strings.HasPrefix(res.Header.Get("Content-Type"), typ), "%s: %s", path, res.Header.Get("Content-Type"))
		require.Contains(t, res.Header.Get("Content-Security-Policy"), "default-src 'self'", path)
		require.NotContains(t, body, "http://", "%s loads nothing from elsewhere", path)
		require.NotContains(t, body, "https://", "%s loads nothing from elsewhere", path)
	}
	res, err = c.Get(srv.URL + "/console/nope.js")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusNotFound, res.StatusCode)
}

// The evaluation's curves are served from the configured path and from no
// other: 404 when none is configured, when the file is missing, or when it
// is not shaped as curves; never a file the request names.
func TestEvalReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "curve.json")
	get := func(h http.Handler, target string) (int, string, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		return rec.Code, rec.Header().Get("Content-Type"), rec.Body.String()
	}

	code, typ, _ := get(console.Handler(console.Config{}), console.EvalPath)
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, "application/problem+json", typ)

	h := console.Handler(console.Config{EvalReport: path})
	code, _, body := get(h, console.EvalPath)
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, body, "make eval")
	require.NotContains(t, body, dir, "the path is not shown")

	require.NoError(t, os.WriteFile(path, []byte(`{"secret": "not curves"}`), 0o600))
	code, _, body = get(h, console.EvalPath)
	require.Equal(t, http.StatusNotFound, code)
	require.NotContains(t, body, "secret")

	doc := `{"command": "engram-eval run", "agents": [{"agent": "engram", "points": [{"from": 0, "to": 4, "rate": 0.5}]}]}`
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
	code, typ, body = get(h, console.EvalPath)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "application/json", typ)
	require.Equal(t, doc, body)

	for _, target := range []string{console.EvalPath + "?path=/etc/passwd", "/console/curve.json", "/console/eval.json/../curve.json"} {
		code, _, body = get(h, target)
		if target == console.EvalPath+"?path=/etc/passwd" {
			require.Equal(t, http.StatusOK, code)
			require.Equal(t, doc, body, "the query names no file")
			continue
		}
		require.NotEqual(t, doc, body, target)
	}
}

// A directory is no evaluation report: configuration names the field.
func TestEvalReportValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, console.Config{}.Validate())
	require.NoError(t, console.Config{EvalReport: filepath.Join(t.TempDir(), "missing.json")}.Validate())
	require.ErrorContains(t, console.Config{EvalReport: t.TempDir()}.Validate(), "console.eval_report:")
}
