package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/store"
)

// postEvents serves POST /v1/events: one event or an array, staged
// atomically. 202: every event is durable and will be classified.
func (s *Server) postEvents(w http.ResponseWriter, r *http.Request) error {
	if s.ingest == nil {
		return errNoIngest
	}
	var body json.RawMessage
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	single := !bytes.HasPrefix(bytes.TrimSpace(body), []byte("["))
	raws := []json.RawMessage{body}
	if !single {
		if err := json.Unmarshal(body, &raws); err != nil {
			return problem(http.StatusBadRequest, "malformed-json", "Malformed JSON", err.Error())
		}
		if len(raws) == 0 {
			return fieldProblem("", "send at least one event")
		}
	}
	staged, err := s.ingest.Ingest(r.Context(), principalOf(r).tenant, raws)
	if err != nil {
		return ingestProblem(err, single)
	}
	writeJSON(w, http.StatusAccepted, api.StagedEvents{Events: staged})
	return nil
}

var errNoIngest = problem(http.StatusServiceUnavailable, "not-ready", "Ingestion is not running", "this server was started without the ingestion plane")

// ingestProblem turns the ingester's errors into a problem. In a batch,
// pointers are prefixed with the event's index.
func ingestProblem(err error, single bool) error {
	var (
		rl *ingest.RateLimitError
		bl *ingest.BacklogError
	)
	switch {
	case errors.As(err, &rl):
		p := problem(http.StatusTooManyRequests, "rate-limited", "Too many events", rl.Error())
		p.RetryAfter = rl.RetryAfter
		return p
	case errors.As(err, &bl):
		p := problem(http.StatusServiceUnavailable, "backlog", "Classification is behind", bl.Error())
		p.RetryAfter = bl.RetryAfter
		return p
	}
	var evs []*ingest.EventError
	var multi interface{ Unwrap() []error }
	if errors.As(err, &multi) {
		for _, e := range multi.Unwrap() {
			var ee *ingest.EventError
			if errors.As(e, &ee) {
				evs = append(evs, ee)
			}
		}
	} else {
		var ee *ingest.EventError
		if errors.As(err, &ee) {
			evs = append(evs, ee)
		}
	}
	if len(evs) == 0 {
		return err
	}
	kind := evs[0].Kind
	for _, e := range evs {
		if e.Kind != kind {
			kind = "invalid-event"
		}
	}
	status := http.StatusUnprocessableEntity
	if kind == "too-large" {
		status = http.StatusRequestEntityTooLarge
	}
	detail := evs[0].Detail
	if !single {
		detail = fmt.Sprintf("%d of the events were refused; nothing was stored", len(evs))
	}
	p := problem(status, kind, "Event refused", detail)
	for _, e := range evs {
		prefix := ""
		if !single {
			prefix = "/" + strconv.Itoa(e.Index)
		}
		if len(e.Violations) == 0 {
			p.Errors = append(p.Errors, FieldError{Pointer: prefix, Message: e.Detail})
		}
		for _, v := range e.Violations {
			p.Errors = append(p.Errors, FieldError{Pointer: prefix + v.Pointer, Message: v.Message})
		}
	}
	return p
}

// Stream tuning: a batch commits when it holds streamBatch events, or when
// the client has sent nothing more for streamLinger.
const (
	streamBatch  = 500
	streamLinger = 5 * time.Millisecond
)

// streamEvents serves POST /v1/events:stream: NDJSON events in, NDJSON
// acknowledgements out as each batch commits, over one long request. A bad
// line is answered with its line number and the stream goes on.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) error {
	if s.ingest == nil {
		return errNoIngest
	}
	rc := http.NewResponseController(w)
	if err := rc.EnableFullDuplex(); err != nil {
		return fmt.Errorf("enable full duplex: %w", err)
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	tenant := principalOf(r).tenant
	enc := json.NewEncoder(w)
	in := bufio.NewReaderSize(r.Body, 64<<10)

	type pending struct {
		line int
		cand store.Candidate
	}
	var (
		batch []pending
		acks  []api.StreamAck
		line  int
	)
	commit := func() error {
		if len(batch) > 0 {
			cands := make([]store.Candidate, len(batch))
			for i, p := range batch {
				cands[i] = p.cand
			}
			staged, err := s.ingest.Stage(r.Context(), tenant, cands)
			if err != nil {
				p := s.toProblem(r, ingestProblem(err, true))
				for _, b := range batch {
					acks = append(acks, api.StreamAck{Line: b.line, Error: p})
				}
			} else {
				for i, st := range staged {
					acks = append(acks, api.StreamAck{Line: batch[i].line, ID: st.ID.String(), Duplicate: st.Duplicate})
				}
			}
			batch = batch[:0]
		}
		if len(acks) == 0 {
			return nil
		}
		// Acknowledge in line order: refused lines interleave with staged ones.
		sortAcks(acks)
		for _, a := range acks {
			if err := enc.Encode(a); err != nil {
				return err
			}
		}
		acks = acks[:0]
		return rc.Flush()
	}

	max := s.ingest.MaxEventBytes()
	for {
		raw, err := readLine(in, max)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, errLineTooLong) {
			// The client went away or the connection broke: what was
			// acknowledged is staged; the rest was never acknowledged.
			_ = commit()
			return nil
		}
		if len(raw) > 0 || errors.Is(err, errLineTooLong) {
			line++
			switch {
			case errors.Is(err, errLineTooLong):
				acks = append(acks, api.StreamAck{Line: line, Error: problem(http.StatusRequestEntityTooLarge, "too-large", "Event refused",
					fmt.Sprintf("the line is over the limit of %d bytes", max))})
			default:
				cand, perr := s.ingest.Prepare(line, raw)
				if perr != nil {
					p := s.toProblem(r, ingestProblem(perr, true))
					acks = append(acks, api.StreamAck{Line: line, Error: p})
				} else {
					batch = append(batch, pending{line: line, cand: cand})
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return commit()
		}
		if len(batch) >= streamBatch || in.Buffered() == 0 && !moreSoon(in, streamLinger) {
			if err := commit(); err != nil {
				return nil
			}
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine reads one NDJSON line without its newline and the JSON
// whitespace around it (only that: a line is then parsed exactly as a
// request body is). A line whose content is over max bytes is consumed and
// reported as errLineTooLong.
func readLine(in *bufio.Reader, max int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := in.ReadSlice('\n')
		n := len(buf) + len(chunk)
		if err == nil {
			n-- // the newline
		}
		if n > max {
			// Skip to the end of the line.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = in.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, errLineTooLong
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.Trim(buf, jsonSpace), err
	}
}

// jsonSpace is the whitespace JSON allows around a value (RFC 8259 §2).
const jsonSpace = " \t\r\n"

// moreSoon waits up to d for more input to arrive on in.
func moreSoon(in *bufio.Reader, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if in.Buffered() > 0 {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return in.Buffered() > 0
}

func sortAcks(a []api.StreamAck) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].Line < a[j-1].Line; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// listCandidates serves GET /v1/candidates: staged events by status
// (pending, done, dropped, dead), with the reason a dead one failed.
func (s *Server) listCandidates(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	status := q.Get("status")
	if status == "" {
		status = store.CandidateDead
	}
	switch status {
	case store.CandidatePending, store.CandidateDone, store.CandidateDropped, store.CandidateDead:
	default:
		return badParam("status", "%q is not pending, done, dropped or dead", status)
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxLimit {
			return badParam("limit", "must be a whole number from 1 to %d", store.MaxLimit)
		}
		limit = n
	}
	var after int64
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return badParam("after", "must be the seq of a candidate")
		}
		after = n
	}
	cands, err := store.Candidates(r.Context(), s.db, principalOf(r).tenant, status, after, limit)
	if err != nil {
		return err
	}
	if cands == nil {
		cands = []store.Candidate{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"candidates": cands})
	return nil
}

// getThread serves GET /v1/threads/{thread_id}: the thread's latest
// generation, with the ids of its episode and working memory — the record a
// runtime updates with PATCH /v1/records/{id}.
func (s *Server) getThread(w http.ResponseWriter, r *http.Request) error {
	t, err := store.LatestThread(r.Context(), s.db, principalOf(r).tenant, r.PathValue("thread_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

// explainPolicy serves POST /v1/policy:explain: what the policy in force
// would do with an event, and which rule decided it. Nothing is stored.
func (s *Server) explainPolicy(w http.ResponseWriter, r *http.Request) error {
	if s.ingest == nil {
		return errNoIngest
	}
	var body json.RawMessage
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	x, err := s.ingest.Explain(body)
	if err != nil {
		return ingestProblem(err, true)
	}
	writeJSON(w, http.StatusOK, x)
	return nil
}

// retryAfter renders a Retry-After header value in whole seconds.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(int(math.Ceil(max(d.Seconds(), 1))))
}
