package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/view"
)

// DefaultHorizon is how far ahead a decay preview looks when not told.
const DefaultHorizon = 30 * 24 * time.Hour

var errNoDecay = problem(http.StatusServiceUnavailable, "not-configured", "Not configured",
	"this server has no decay configured")

// currentSalience renders v's records with their salience at time at (see
// [decay.Current]): a record, a list of records, a page, or a map whose
// values are those. Everything else is written as it is; history versions
// among them, which show each version as stored.
func currentSalience(v any, at time.Time) any {
	switch v := v.(type) {
	case memory.Record:
		v.Salience = decay.Current(v, at)
		return v
	case []memory.Record:
		if v == nil {
			return v
		}
		out := make([]memory.Record, len(v))
		for i, r := range v {
			r.Salience = decay.Current(r, at)
			out[i] = r
		}
		return out
	case api.RecordPage:
		v.Records = currentSalience(v.Records, at).([]memory.Record)
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = currentSalience(x, at)
		}
		return out
	}
	return v
}

// feedbackRequest is the body of POST /v1/feedback.
type feedbackRequest = api.FeedbackRequest

// feedback serves POST /v1/feedback (substrate RFC §15.6).
func (s *Server) feedback(w http.ResponseWriter, r *http.Request) error {
	if s.decay == nil {
		return errNoDecay
	}
	rd := s.redaction()
	var req feedbackRequest
	if err := rd.decode(r, &req); err != nil {
		return err
	}
	ch := rd.change(r, req.Rationale)
	if err := rd.check(); err != nil {
		return err
	}
	ids := make([]uuid.UUID, len(req.RecordIDs))
	var bad []FieldError
	for i, v := range req.RecordIDs {
		id, err := uuid.Parse(v)
		if err != nil {
			bad = append(bad, FieldError{Pointer: fmt.Sprintf("/record_ids/%d", i), Message: "is not a record id"})
		}
		ids[i] = id
	}
	if len(bad) > 0 {
		p := problem(http.StatusUnprocessableEntity, "validation-failed", "Validation failed", fmt.Sprintf("%d record id(s) malformed", len(bad)))
		p.Errors = bad
		return p
	}
	ch.Evidence = req.Evidence
	res, err := s.decay.Feedback(r.Context(), principalOf(r).tenant, decay.FeedbackRequest{
		RetrievalID: req.RetrievalID, Key: req.Key, RecordIDs: ids, Outcome: decay.Outcome(req.Outcome),
	}, ch)
	if err != nil {
		return err
	}
	if req.RetrievalID != "" && s.retrieve != nil {
		s.retrieve.ObserveFeedback(req.Outcome, len(res.Applied))
	}
	out := api.FeedbackResult{Applied: len(res.Applied), Records: make([]api.FeedbackRecord, len(res.Applied)),
		Duplicate: orEmpty(res.Duplicate), NotLive: orEmpty(res.NotLive)}
	for i, rec := range res.Applied {
		out.Records[i] = api.FeedbackRecord{ID: rec.ID, Salience: rec.Salience, Version: rec.Version}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func orEmpty(ids []uuid.UUID) []uuid.UUID {
	if ids == nil {
		return []uuid.UUID{}
	}
	return ids
}

// restoreRecord serves POST /v1/records/{id}:restore.
func (s *Server) restoreRecord(w http.ResponseWriter, r *http.Request, id uuid.UUID, ch revise.Change) error {
	tenant := principalOf(r).tenant
	cur, err := s.reader.Unflagged(r.Context(), view.System(tenant), id)
	if err != nil {
		return err
	}
	if cur.Status == memory.Retracted {
		// A retraction is undone by reinstating the record.
		rec, err := s.writer.Reinstate(r.Context(), tenant, id, 0, ch)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, rec)
		return nil
	}
	if s.decay == nil {
		return errNoDecay
	}
	rec, err := s.decay.Restore(r.Context(), tenant, id, ch)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rec)
	return nil
}

// salienceStats serves GET /v1/stats/salience.
func (s *Server) salienceStats(w http.ResponseWriter, r *http.Request) error {
	if s.decay == nil {
		return errNoDecay
	}
	st, err := s.decay.Stats(r.Context(), principalOf(r).tenant)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// previewRequest is the body of POST /v1/decay/preview.
type previewRequest = api.DecayPreviewRequest

// decayPreview serves POST /v1/decay/preview.
func (s *Server) decayPreview(w http.ResponseWriter, r *http.Request) error {
	if s.decay == nil {
		return errNoDecay
	}
	var req previewRequest
	proposed := s.decay.Settings().Config()
	if isYAML(r.Header.Get("Content-Type")) {
		// The decay section as the configuration file has it, read as the
		// file is; the horizon is a parameter.
		doc, err := readAll(r)
		if err != nil {
			return err
		}
		req.At = r.URL.Query().Get("at")
		if proposed, err = parseYAMLSection(doc); err != nil {
			return err
		}
	} else if r.ContentLength != 0 {
		if err := decodeJSON(r, &req); err != nil {
			if p, ok := err.(*Problem); ok && p.Status == http.StatusUnsupportedMediaType {
				p.Detail = "send application/json (a preview request) or application/yaml (the decay section, as the configuration file has it), not " + r.Header.Get("Content-Type")
			}
			return err
		}
	}
	if len(req.Proposed) > 0 && string(req.Proposed) != "null" {
		var err error
		if proposed, err = decay.ParseConfig(req.Proposed); err != nil {
			var ce *decay.ConfigError
			if errors.As(err, &ce) {
				return fieldProblem("/proposed"+ce.Pointer(), ce.Message)
			}
			return err
		}
	}
	at, err := horizon(req.At, s.now())
	if err != nil {
		return err
	}
	pv, err := s.decay.Preview(r.Context(), principalOf(r).tenant, proposed, at)
	if err != nil {
		return err
	}
	out, err := previewAnswer(pv)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// isYAML is whether a Content-Type names YAML.
func isYAML(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	switch strings.ToLower(strings.TrimSpace(mt)) {
	case "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml":
		return true
	}
	return false
}

// parseYAMLSection reads a decay section sent as YAML, as the
// configuration file's loader reads it (decay.ParseConfig): a field's
// error points at it, relative to the section, and names its line.
func parseYAMLSection(doc []byte) (decay.Config, error) {
	c, err := decay.ParseConfig(doc)
	var ce *decay.ConfigError
	if errors.As(err, &ce) {
		msg := ce.Message
		if ce.Line > 0 {
			msg = fmt.Sprintf("%s (line %d)", msg, ce.Line)
		}
		return c, fieldProblem(ce.Pointer(), msg)
	}
	return c, err
}

// previewAnswer is pv as the API writes it: the configurations as JSON.
func previewAnswer(pv decay.Preview) (api.DecayPreview, error) {
	current, err := json.Marshal(pv.Current)
	if err != nil {
		return api.DecayPreview{}, fmt.Errorf("encode decay configuration: %w", err)
	}
	proposed, err := json.Marshal(pv.Proposed)
	if err != nil {
		return api.DecayPreview{}, fmt.Errorf("encode decay configuration: %w", err)
	}
	currentYAML, err := pv.Current.YAML()
	if err != nil {
		return api.DecayPreview{}, err
	}
	proposedYAML, err := pv.Proposed.YAML()
	if err != nil {
		return api.DecayPreview{}, err
	}
	return api.DecayPreview{Now: pv.Now, At: pv.At, Bounds: pv.Bounds, Current: current, Proposed: proposed,
		CurrentYAML: string(currentYAML), ProposedYAML: string(proposedYAML), Types: pv.Types}, nil
}

// horizon reads a preview's horizon: empty is [DefaultHorizon] from now, a
// duration ("+30d", "12h") is that far from now, anything else an RFC 3339
// time.
func horizon(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return now.Add(DefaultHorizon), nil
	}
	if d, err := decay.ParseDuration(strings.TrimPrefix(v, "+")); err == nil {
		if d < 0 {
			return time.Time{}, fieldProblem("/at", "must not be in the past")
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fieldProblem("/at", "must be a duration ahead such as +30d, or an RFC 3339 time")
	}
	if t.Before(now) {
		return time.Time{}, fieldProblem("/at", "must not be in the past")
	}
	return t, nil
}
