package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// servePprof serves Go's profiler on ln (--pprof), apart from the API and
// without its authentication: for measuring on a machine one controls, off
// unless asked for. It returns a function that stops it.
func servePprof(ln net.Listener, logger *slog.Logger) (stop func(context.Context) error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("pprof server failed", slog.String("error", err.Error()))
		}
	}()
	logger.Warn("serving the Go profiler, unauthenticated", slog.String("addr", ln.Addr().String()))
	return srv.Shutdown
}
