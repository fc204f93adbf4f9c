package extract

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of a model call, as engram_model_calls_total names them.
const (
	OutcomeOK          = "ok"
	OutcomeBadResponse = "bad_response"
	OutcomeError       = "error"
)

// Instrument returns x counting its calls by operation (facts, summarise)
// and outcome ([OutcomeOK], [OutcomeBadResponse], [OutcomeError]: an error
// status, a transport failure, a timeout) and timing them, registered with
// reg.
func Instrument(x Extractor, reg prometheus.Registerer) Extractor {
	in := &instrumented{x: x,
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "engram_model_calls_total",
			Help: "Calls to the language model, by operation (facts, summarise) and outcome (ok, bad_response, error).",
		}, []string{"operation", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "engram_model_call_duration_seconds",
			Help:    "How long a call to the language model took, by operation.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"operation"}),
	}
	if reg != nil {
		reg.MustRegister(in.calls, in.latency)
	}
	return in
}

type instrumented struct {
	x       Extractor
	calls   *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

func (in *instrumented) Summarise(ctx context.Context, text string) (string, error) {
	if strings.TrimSpace(text) == "" {
		return in.x.Summarise(ctx, text) // no call to count
	}
	start := time.Now()
	s, err := in.x.Summarise(ctx, text)
	in.observe("summarise", start, err)
	return s, err
}

func (in *instrumented) Facts(ctx context.Context, text string) ([]Fact, error) {
	if strings.TrimSpace(text) == "" {
		return in.x.Facts(ctx, text) // no call to count
	}
	start := time.Now()
	fs, err := in.x.Facts(ctx, text)
	in.observe("facts", start, err)
	return fs, err
}

func (in *instrumented) observe(op string, start time.Time, err error) {
	in.latency.WithLabelValues(op).Observe(time.Since(start).Seconds())
	outcome := OutcomeOK
	switch {
	case errors.Is(err, ErrBadResponse):
		outcome = OutcomeBadResponse
	case err != nil:
		outcome = OutcomeError
	}
	in.calls.WithLabelValues(op, outcome).Inc()
}
