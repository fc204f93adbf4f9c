package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/schemas"
)

// FuzzReadLine checks the event stream's line reader against a plain model
// of NDJSON: split at newlines, a line whose content is over the limit is
// refused whole, JSON whitespace around a line is dropped, blank lines are
// skipped. The reader works a bounded buffer at a time, which is what the
// small buffer here exercises.
func FuzzReadLine(f *testing.F) {
	for _, seed := range []struct {
		data string
		max  uint8
	}{
		{`{"kind": "observation"}` + "\n" + `{"a": 1}` + "\r\n", 64},
		{"\n\n  \t\n{}\n", 8},
		{"0123456789abcdefXYZ\nshort\n", 16},
		{"0123456789abcdef", 16},
		{"0123456789abcdefg", 16},
		{"\u00a0{}\u00a0\n", 8},
		{`{} xyz {"oops"`, 64},
	} {
		f.Add([]byte(seed.data), seed.max)
	}
	f.Fuzz(func(t *testing.T, data []byte, max uint8) {
		limit := int(max%64) + 1
		in := bufio.NewReaderSize(bytes.NewReader(data), 16)
		type line struct {
			text    string
			tooLong bool
		}
		var got []line
		eof := false
		for calls := 0; !eof; calls++ {
			require.LessOrEqual(t, calls, len(data)+1, "the reader makes progress")
			raw, err := readLine(in, limit)
			require.True(t, err == nil || errors.Is(err, io.EOF) || errors.Is(err, errLineTooLong), "%v", err)
			switch {
			case errors.Is(err, errLineTooLong):
				got = append(got, line{tooLong: true})
			case len(raw) > 0:
				require.NotContains(t, string(raw), "\n")
				got = append(got, line{text: string(raw)})
			}
			eof = errors.Is(err, io.EOF)
		}

		var want []line
		segs := bytes.Split(data, []byte("\n"))
		if len(segs) > 0 && len(segs[len(segs)-1]) == 0 {
			segs = segs[:len(segs)-1]
		}
		for _, seg := range segs {
			switch trimmed := bytes.Trim(seg, jsonSpace); {
			case len(seg) > limit:
				want = append(want, line{tooLong: true})
			case len(trimmed) > 0:
				want = append(want, line{text: string(trimmed)})
			}
		}
		require.Equal(t, want, got)
	})
}

// FuzzDecodeRecord feeds the record decoding of POST /v1/records (and of
// supersede, fork, contest, merge templates) anything. A refusal is always
// a client's problem, never a 500; an accepted record is strict, storable
// JSON, re-encodes and re-decodes to the same record, and its validation
// answers with violations, never an internal error.
func FuzzDecodeRecord(f *testing.F) {
	for _, seed := range []string{
		`{"type": "semantic", "confidence": 0.9, "payload": {"kind": "semantic", "subject": "user", "predicate": "prefers", "object": "go", "validity": {"mode": "global"}}}`,
		`{"type": "episodic", "tags": ["a"], "payload": {"kind": "episodic", "timeline": [{"t": "2026-01-01T00:00:00Z", "event_kind": "error", "ref": "evt://1"}]}}`,
		`{"type": "working", "payload": {"kind": "working", "thread_id": "t1", "state": "planning"}, "lifecycle": {"pinned": true}}`,
		`{"id": "0190a1b2-0000-7000-8000-000000000000", "type": "competence", "created_at": "2026-01-01T00:00:00+01:00", "payload": {}}`,
		`{"type": "semantic", "confidence": 3, "colour": "red"}`,
		`{"type": "semantic", "tags": ["\u0000"], "payload": {"\ud800": 1e131072}}`,
		`{"type": "semantic"} {}`, `null`, `[]`, `{"confidence": 1e400}`,
	} {
		f.Add([]byte(seed))
	}
	s := New(Config{})
	req := httptest.NewRequest("POST", "/v1/records", nil)

	f.Fuzz(func(t *testing.T, raw []byte) {
		rec, err := decodeRecord(raw, "/record")
		if err != nil {
			p := s.toProblem(req, err)
			require.Less(t, p.Status, 500, "%v", err)
			for _, fe := range p.Errors {
				require.Regexp(t, `^/record(/|$)`, fe.Pointer)
			}
			return
		}
		var v any
		require.NoError(t, schemas.Decode(raw, &v))
		require.True(t, utf8.Valid(raw))
		require.NoError(t, schemas.CheckStorable(raw))

		doc, err := json.Marshal(rec)
		require.NoError(t, err)
		again, err := decodeRecord(doc, "")
		require.NoError(t, err, "%s", doc)
		doc2, err := json.Marshal(again)
		require.NoError(t, err)
		require.Equal(t, string(doc), string(doc2))

		err = schemas.ValidateRecord(doc)
		var ve *schemas.ValidationError
		require.True(t, err == nil || errors.As(err, &ve), "%v", err)
	})
}

// FuzzTimeParams feeds the time parsers of the query and of a decay
// preview anything: as_of (GET /v1/records, GET /v1/records/{id}) and a
// preview's horizon ("+30d", "12h" or a time). An accepted as_of formats
// and parses back to the same instant; a horizon is never before now;
// refusals are 400s and 422s naming the parameter or field.
func FuzzTimeParams(f *testing.F) {
	for _, seed := range []string{
		"2026-01-28T00:00:00Z", "2026-01-28T00:00:00.123456789+05:30", "0000-01-01T00:00:00Z",
		"9999-12-31T23:59:59.999999999-23:59", "yesterday", "", "+30d", "12h", "-1h",
		"+9223372036854775807ns", "99999999999d", "2026-02-30T00:00:00Z", "1e9s",
	} {
		f.Add(seed)
	}
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		r := httptest.NewRequest("GET", "/v1/records?as_of="+url.QueryEscape(v), nil)
		at, err := timeParam(r, "as_of")
		switch {
		case err != nil:
			var p *Problem
			require.ErrorAs(t, err, &p)
			require.Equal(t, http.StatusBadRequest, p.Status)
			require.Equal(t, "as_of", p.Errors[0].Parameter)
		case v == "":
			require.Nil(t, at)
		default:
			back, err := time.Parse(time.RFC3339Nano, at.Format(time.RFC3339Nano))
			require.NoError(t, err)
			require.True(t, back.Equal(*at), "%s: %s != %s", v, back, *at)
		}

		h, err := horizon(v, now)
		if err != nil {
			var p *Problem
			require.ErrorAs(t, err, &p)
			require.Equal(t, http.StatusUnprocessableEntity, p.Status)
			require.Equal(t, "/at", p.Errors[0].Pointer)
			return
		}
		require.False(t, h.Before(now), "%q: %s is before now", v, h)
	})
}
