package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	if string(bytes.TrimSpace(body)) == "null" {
		return nullProblem("", "an object")
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
	for i, raw := range raws {
		raws[i] = withAgent(r, raw)
	}
	if err := s.authorizeEvents(r, raws); err != nil {
		return err
	}
	staged, err := s.ingest.Ingest(r.Context(), principalOf(r).tenant, raws)
	if err != nil {
		// Nothing was staged: the budget gets its writes back.
		if rerr := s.writer.ChargeBudget(context.WithoutCancel(r.Context()), principalOf(r).access(), -len(raws)); rerr != nil {
			s.logger.WarnContext(r.Context(), "refund write budget", slog.String("error", rerr.Error()))
		}
		return ingestProblem(err, single)
	}
	writeJSON(w, http.StatusAccepted, api.StagedEvents{Events: wireStaged(staged)})
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

// Stream tuning: a batch commits when it holds streamBatch events, or
// streamLinger after its first event was read, whichever comes first.
const (
	streamBatch  = 500
	streamLinger = 5 * time.Millisecond
)

// streamItem is one line of a stream, read and prepared: an event to
// stage, or the acknowledgement of a line refused before staging.
type streamItem struct {
	line    int
	cand    store.Candidate
	refused *api.StreamAck
}

// streamEvents serves POST /v1/events:stream: NDJSON events in, NDJSON
// acknowledgements out as each batch commits, over one long request. A bad
// line is answered with its line number and the stream goes on.
//
// Reading and staging overlap: this goroutine reads and prepares lines
// while a committer stages the batch before, so a batch fills while the
// previous one commits and acknowledgements wait for one commit, not for
// a queue of them. Acknowledgements go out in line order.
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
	in := bufio.NewReaderSize(r.Body, 64<<10)

	// items is bounded: a committer that falls behind stops the reading,
	// and TCP pushes back on the client.
	items := make(chan streamItem, streamBatch)
	failed := make(chan struct{}) // the committer could not write: stop
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		if err := s.commitStream(r, rc, json.NewEncoder(w), tenant, items); err != nil {
			close(failed)
			for range items { // let the reader finish
			}
		}
	}()
	defer func() { <-finished }() // nothing writes after the handler returns
	defer close(items)

	send := func(it streamItem) bool {
		select {
		case items <- it:
			return true
		case <-failed:
			return false
		}
	}
	max := s.ingest.MaxEventBytes()
	// Every line counts, blank ones too, so that a line number is the one
	// an editor shows.
	for line := 1; ; line++ {
		raw, err := readLine(in, max)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, errLineTooLong) {
			// The client went away or the connection broke: what was
			// acknowledged is staged; the rest was never acknowledged.
			return nil
		}
		if len(raw) > 0 || errors.Is(err, errLineTooLong) {
			it := streamItem{line: line}
			switch {
			case errors.Is(err, errLineTooLong):
				it.refused = &api.StreamAck{Line: line, Error: problem(http.StatusRequestEntityTooLarge, "too-large", "Event refused",
					fmt.Sprintf("the line is over the limit of %d bytes", max))}
			default:
				raw = withAgent(r, raw)
				cand, perr := s.ingest.Prepare(line, raw)
				if aerr := authorizeEvent(r, raw); perr == nil && aerr != nil {
					it.refused = &api.StreamAck{Line: line, Error: s.toProblem(r, aerr)}
				} else if perr != nil {
					it.refused = &api.StreamAck{Line: line, Error: s.toProblem(r, ingestProblem(perr, true))}
				} else {
					it.cand = cand
				}
			}
			if !send(it) {
				return nil
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

// commitStream stages the events of a stream a batch at a time, as they
// come, and writes each batch's acknowledgements, until items is closed.
// It returns an error when it cannot write.
func (s *Server) commitStream(r *http.Request, rc *http.ResponseController, enc *json.Encoder, tenant string, items <-chan streamItem) error {
	batch := make([]streamItem, 0, streamBatch)
	for {
		first, ok := <-items
		if !ok {
			return nil
		}
		batch = append(batch[:0], first)
		open := fillBatch(&batch, items)
		if err := s.commitBatch(r, rc, enc, tenant, batch); err != nil {
			return err
		}
		if !open {
			return nil
		}
	}
}

// fillBatch adds to batch what comes on items within streamLinger, up to
// streamBatch items; false when items was closed.
func fillBatch(batch *[]streamItem, items <-chan streamItem) bool {
	linger := time.NewTimer(streamLinger)
	defer linger.Stop()
	for len(*batch) < streamBatch {
		select {
		case it, ok := <-items:
			if !ok {
				return false
			}
			*batch = append(*batch, it)
		case <-linger.C:
			return true
		}
	}
	return true
}

// commitBatch stages a batch's events in one transaction and writes the
// acknowledgements of its lines, in order.
func (s *Server) commitBatch(r *http.Request, rc *http.ResponseController, enc *json.Encoder, tenant string, batch []streamItem) error {
	var cands []store.Candidate
	for _, it := range batch {
		if it.refused == nil {
			cands = append(cands, it.cand)
		}
	}
	acks := make([]api.StreamAck, 0, len(batch))
	var staged []store.Staged
	err := s.writer.ChargeBudget(r.Context(), principalOf(r).access(), len(cands))
	if err == nil {
		staged, err = s.ingest.Stage(r.Context(), tenant, cands)
	}
	var p *Problem
	if err != nil {
		p = s.toProblem(r, ingestProblem(err, true))
	}
	k := 0
	for _, it := range batch {
		switch {
		case it.refused != nil:
			acks = append(acks, *it.refused)
		case p != nil:
			acks = append(acks, api.StreamAck{Line: it.line, Error: p})
		default:
			acks = append(acks, api.StreamAck{Line: it.line, ID: staged[k].ID.String(), Duplicate: staged[k].Duplicate})
			k++
		}
	}
	for _, a := range acks {
		if err := enc.Encode(a); err != nil {
			return err
		}
	}
	return rc.Flush()
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
	// Staged events are raw: none above the key's clearance is shown
	// (write-path RFC §12.8.5).
	cands, err := s.reader.Events(r.Context(), viewerOf(r), status, after, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"candidates": cands})
	return nil
}

// getThread serves GET /v1/threads/{thread_id}: the thread's latest
// generation, with the ids of its episode and working memory — the record a
// runtime updates with PATCH /v1/records/{id}.
func (s *Server) getThread(w http.ResponseWriter, r *http.Request) error {
	t, err := s.reader.Thread(r.Context(), viewerOf(r), r.PathValue("thread_id"))
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
	if string(bytes.TrimSpace(body)) == "null" {
		return nullProblem("", "an object")
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

// withAgent is an event that names no agent_id given the agent the
// request acts for, as a lease request's is ([leaseAgent]): the key's own
// agent (an executor's always has one, write-path RFC §12.8.2), else
// X-Engram-Actor. An event that names its agent is left as it is, and
// authorized as it names; one with no agent to give is left for the
// ingester to refuse.
func withAgent(r *http.Request, raw json.RawMessage) json.RawMessage {
	// An event naming agent_id anywhere is taken to name its own: a
	// nested "agent_id" alone is refused as it was.
	if bytes.Contains(raw, []byte(`"agent_id"`)) {
		return raw
	}
	obj := bytes.TrimSpace(raw)
	if !bytes.HasPrefix(obj, []byte("{")) {
		return raw
	}
	agent, err := leaseAgent(r, "")
	if err != nil || agent == "" {
		return raw
	}
	q, err := json.Marshal(agent)
	if err != nil {
		return raw
	}
	rest := bytes.TrimSpace(obj[1:])
	out := append([]byte(`{"agent_id":`), q...)
	if !bytes.HasPrefix(rest, []byte("}")) {
		out = append(out, ',')
	}
	return append(out, rest...)
}
