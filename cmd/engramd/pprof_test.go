package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/config"
)

// --pprof serves the profiler on its own address; without it, none.
func TestPprofIsOptIn(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(nil, func(string) string { return "" })
	require.NoError(t, err)
	require.Empty(t, cfg.Pprof, "off by default")
	cfg, err = config.Load([]string{"--pprof", "127.0.0.1:6060"}, func(string) string { return "" })
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:6060", cfg.Pprof)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	stop := servePprof(ln, slog.New(slog.DiscardHandler))
	res, err := http.Get("http://" + ln.Addr().String() + "/debug/pprof/cmdline")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.NoError(t, stop(context.Background()))
}
