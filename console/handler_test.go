package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
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
	srv := httptest.NewServer(console.Handler())
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
