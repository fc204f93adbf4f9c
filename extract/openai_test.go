package extract_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/extract"
	"github.com/engram-dev/engram/internal/openaicompat"
	"github.com/engram-dev/engram/internal/openaitest"
)

const testKey = "sk-test-0123456789abcdef-secret"

// setup starts a local chat-completions server answering with respond and
// an extractor for it configured by cfg (BaseURL and APIKey filled in).
func setup(t *testing.T, cfg extract.Config, respond func(openaitest.Request) openaitest.Reply) (*extract.OpenAI, *openaitest.Server) {
	t.Helper()
	srv := openaitest.NewServer(t, respond)
	cfg.BaseURL, cfg.APIKey = srv.URL, testKey
	if cfg.Model == "" {
		cfg.Model = "gpt-test"
	}
	x, err := extract.NewOpenAI(cfg)
	require.NoError(t, err)
	return x, srv
}

// answer replies to every request with content.
func answer(content string) func(openaitest.Request) openaitest.Reply {
	return func(r openaitest.Request) openaitest.Reply { return openaitest.Completion(r.Model, content, "") }
}

// The request is a chat completion for the configured model, with the
// instructions and the text, asking for structured output following the
// facts schema, with the key as a bearer token; the answer becomes facts,
// their predicates in snake_case.
func TestFactsRequestAndAnswer(t *testing.T) {
	t.Parallel()
	x, srv := setup(t, extract.Config{Model: "gpt-4o-mini"}, answer(`{"facts": [
		{"subject": "user", "predicate": "Prefers Language", "object": "go", "conditions": [{"key": "project_kind", "value": "backend"}]},
		{"subject": " repo ", "predicate": "build_tool", "object": "make", "conditions": []}]}`))

	facts, err := x.Facts(context.Background(), "user: I use Go for backends\nobservation: the repo builds with make")
	require.NoError(t, err)
	require.Equal(t, []extract.Fact{
		{Subject: "user", Predicate: "prefers_language", Object: "go", Conditions: map[string]string{"project_kind": "backend"}},
		{Subject: "repo", Predicate: "build_tool", Object: "make"},
	}, facts)

	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	req := reqs[0]
	require.Equal(t, "gpt-4o-mini", req.Model)
	require.Equal(t, "Bearer "+testKey, req.Authorization)
	require.Equal(t, "application/json", req.ContentType)
	require.Len(t, req.Messages, 2)
	require.Equal(t, "system", req.Messages[0].Role)
	require.Contains(t, req.Messages[0].Content, `{"facts": [...]}`)
	require.Equal(t, "user: I use Go for backends\nobservation: the repo builds with make", req.User())
	require.Equal(t, extract.DefaultMaxTokens, req.MaxTokens)
	require.NotNil(t, req.ResponseFormat)
	require.Equal(t, "json_schema", req.ResponseFormat.Type)
	require.NotNil(t, req.ResponseFormat.JSONSchema)
	require.Equal(t, "facts", req.ResponseFormat.JSONSchema.Name)
	require.True(t, req.ResponseFormat.JSONSchema.Strict)
	var schema map[string]any
	require.NoError(t, json.Unmarshal(req.ResponseFormat.JSONSchema.Schema, &schema))
	require.Equal(t, []any{"facts"}, schema["required"])
	require.Equal(t, false, schema["additionalProperties"])
	require.Equal(t, false, req.Raw["stream"])
}

// json_object, for servers without structured outputs: no schema sent, the
// answer read as strictly.
func TestFactsAsJSONObject(t *testing.T) {
	t.Parallel()
	x, srv := setup(t, extract.Config{ResponseFormat: extract.FormatJSONObject}, answer(`{"facts": []}`))
	facts, err := x.Facts(context.Background(), "nothing to see")
	require.NoError(t, err)
	require.Empty(t, facts)
	req := srv.Requests()[0]
	require.Equal(t, "json_object", req.ResponseFormat.Type)
	require.Nil(t, req.ResponseFormat.JSONSchema)
}

func TestSummarise(t *testing.T) {
	t.Parallel()
	x, srv := setup(t, extract.Config{}, answer(`{"summary": " Fixed the linker cache; the build passes. "}`))
	s, err := x.Summarise(context.Background(), "user: build the project\noutcome (success): built")
	require.NoError(t, err)
	require.Equal(t, "Fixed the linker cache; the build passes.", s)
	req := srv.Requests()[0]
	require.Equal(t, "summary", req.ResponseFormat.JSONSchema.Name)
	require.Contains(t, req.Messages[0].Content, "summarise")
}

// A blank text asks nothing.
func TestBlankTextNoRequest(t *testing.T) {
	t.Parallel()
	x, srv := setup(t, extract.Config{}, answer(`{"facts": []}`))
	facts, err := x.Facts(context.Background(), " \n ")
	require.NoError(t, err)
	require.Nil(t, facts)
	s, err := x.Summarise(context.Background(), "")
	require.NoError(t, err)
	require.Empty(t, s)
	require.Empty(t, srv.Requests())
}

// A text longer than max_input_bytes is cut, at a character boundary.
func TestInputIsBounded(t *testing.T) {
	t.Parallel()
	x, srv := setup(t, extract.Config{MaxInputBytes: 10}, answer(`{"facts": []}`))
	_, err := x.Facts(context.Background(), "abcdefghé and much more") // é is bytes 8 and 9
	require.NoError(t, err)
	require.Equal(t, "abcdefghé", srv.Requests()[0].User())
	_, err = x.Facts(context.Background(), "abcdefghiéj")
	require.NoError(t, err)
	require.Equal(t, "abcdefghi", srv.Requests()[1].User(), "not half a character")
}

// An error status is a *StatusError with the server's message, and no
// error text carries the API key, even when the server echoes it.
func TestErrorStatusHidesKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body  string
		status      int
		wantMessage string
	}{
		{"401 with an OpenAI error", `{"error":{"message":"Incorrect API key provided: ` + testKey + `.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			http.StatusUnauthorized, "Incorrect API key provided: [redacted]."},
		{"500 with a plain body", "upstream failed for key " + testKey, http.StatusInternalServerError, "upstream failed for key [redacted]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x, _ := setup(t, extract.Config{}, func(openaitest.Request) openaitest.Reply {
				return openaitest.Reply{Status: tc.status, Body: tc.body}
			})
			_, ferr := x.Facts(context.Background(), "some text")
			_, serr := x.Summarise(context.Background(), "some text")
			for _, err := range []error{ferr, serr} {
				require.Error(t, err)
				require.NotContains(t, err.Error(), testKey)
				require.NotContains(t, fmt.Sprintf("%+v", err), testKey)
				require.NotContains(t, fmt.Sprintf("%#v", err), testKey)
				var se *extract.StatusError
				require.ErrorAs(t, err, &se)
				require.Equal(t, tc.status, se.StatusCode)
				require.Equal(t, tc.wantMessage, se.Message)
				require.NotErrorIs(t, err, extract.ErrBadResponse)
			}
		})
	}
}

// An answer that cannot be used is refused whole, with ErrBadResponse:
// never some of its facts.
func TestRefusesBadAnswers(t *testing.T) {
	t.Parallel()
	fact := func(s, p, o string) string {
		return fmt.Sprintf(`{"subject": %q, "predicate": %q, "object": %q, "conditions": []}`, s, p, o)
	}
	many := make([]string, 4)
	for i := range many {
		many[i] = fact("s", "p", fmt.Sprint(i))
	}
	for _, tc := range []struct {
		name, content, reason, want string
	}{
		{"not JSON", "The user prefers Go.", "", "decode answer"},
		{"fenced JSON", "```json\n{\"facts\": []}\n```", "", "decode answer"},
		{"a second value", `{"facts": []} {"facts": []}`, "", "more after the JSON value"},
		{"an unknown field", `{"facts": [], "notes": "x"}`, "", "an unknown field"},
		{"an unknown field of a fact", `{"facts": [{"subject": "a", "predicate": "b", "object": "c", "why": "d"}]}`, "", "an unknown field"},
		{"no facts field", `{}`, "", "no facts field"},
		{"facts not a list", `{"facts": {"subject": "a"}}`, "", "decode answer"},
		{"an object not a string", `{"facts": [{"subject": "a", "predicate": "b", "object": 3}]}`, "", "decode answer"},
		{"no object", `{"facts": [{"subject": "a", "predicate": "b"}]}`, "", "fact 0: no object"},
		{"a blank subject", `{"facts": [` + fact(" ", "b", "c") + `]}`, "", "fact 0: no subject"},
		{"a subject too long", `{"facts": [` + fact(strings.Repeat("s", extract.MaxSubjectBytes+1), "b", "c") + `]}`, "", "subject is 257 bytes"},
		{"too many facts", `{"facts": [` + strings.Join(many, ",") + `]}`, "", "4 facts, over 3"},
		{"a repeated condition", `{"facts": [{"subject": "a", "predicate": "b", "object": "c", "conditions": [{"key": "os", "value": "linux"}, {"key": "os", "value": "mac"}]}]}`, "", `condition "os" repeated`},
		{"a condition without value", `{"facts": [{"subject": "a", "predicate": "b", "object": "c", "conditions": [{"key": "os"}]}]}`, "", "without its key or value"},
		{"cut off", `{"facts": [` + fact("a", "b", "c") + `]}`, "length", "cut off at the token limit"},
		{"filtered", `{"facts": []}`, "content_filter", "content filter"},
		{"content too long", `{"facts": [], "x": "` + strings.Repeat("x", extract.MaxContentBytes) + `"}`, "", "over 65536"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x, _ := setup(t, extract.Config{MaxFacts: 3}, func(r openaitest.Request) openaitest.Reply {
				return openaitest.Completion(r.Model, tc.content, tc.reason)
			})
			facts, err := x.Facts(context.Background(), "some text")
			require.Nil(t, facts)
			require.ErrorIs(t, err, extract.ErrBadResponse)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// Answers that are not completions: no choice, a refusal, a body over the
// bound, a summary missing or too long.
func TestRefusesOtherBadAnswers(t *testing.T) {
	t.Parallel()
	t.Run("no choice", func(t *testing.T) {
		t.Parallel()
		x, _ := setup(t, extract.Config{}, func(openaitest.Request) openaitest.Reply {
			return openaitest.Reply{Status: http.StatusOK, Body: `{"id": "c", "object": "chat.completion", "choices": []}`}
		})
		_, err := x.Facts(context.Background(), "text")
		require.ErrorIs(t, err, extract.ErrBadResponse)
		require.ErrorContains(t, err, "no choice")
	})
	t.Run("refusal", func(t *testing.T) {
		t.Parallel()
		x, _ := setup(t, extract.Config{}, func(openaitest.Request) openaitest.Reply {
			return openaitest.Reply{Status: http.StatusOK, Body: `{"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "", "refusal": "I can't help with that."}}]}`}
		})
		_, err := x.Facts(context.Background(), "text")
		require.ErrorIs(t, err, extract.ErrBadResponse)
		require.ErrorContains(t, err, "refused")
	})
	t.Run("body too large", func(t *testing.T) {
		t.Parallel()
		x, _ := setup(t, extract.Config{}, answer(`{"facts": [], "pad": "`+strings.Repeat("x", extract.MaxResponseBytes)+`"}`))
		_, err := x.Facts(context.Background(), "text")
		require.ErrorIs(t, err, openaicompat.ErrResponseTooLarge)
	})
	t.Run("no summary", func(t *testing.T) {
		t.Parallel()
		x, _ := setup(t, extract.Config{}, answer(`{"facts": []}`))
		_, err := x.Summarise(context.Background(), "text")
		require.ErrorIs(t, err, extract.ErrBadResponse)
	})
	t.Run("summary too long", func(t *testing.T) {
		t.Parallel()
		x, _ := setup(t, extract.Config{}, answer(`{"summary": "`+strings.Repeat("s", extract.MaxSummaryBytes+1)+`"}`))
		_, err := x.Summarise(context.Background(), "text")
		require.ErrorIs(t, err, extract.ErrBadResponse)
		require.ErrorContains(t, err, "over 4096")
	})
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	x, _ := setup(t, extract.Config{}, answer(`{"facts": []}`))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := x.Facts(ctx, "text")
	require.ErrorIs(t, err, context.Canceled)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cfg   extract.Config
		field string
		want  string
	}{
		{"off", extract.Config{}, "", ""},
		{"off with a key from the environment", extract.Config{APIKey: "sk-x"}, "", ""},
		{"on with defaults", extract.Config{Model: "gpt-4o-mini"}, "", ""},
		{"a local server", extract.Config{Model: "llama3.1", BaseURL: "http://localhost:11434/v1", ResponseFormat: "json_object",
			Timeout: time.Minute, MaxInputBytes: 4096, MaxFacts: 5, MaxTokens: 512}, "", ""},
		{"a base URL and no model", extract.Config{BaseURL: "http://localhost:11434/v1"}, "model",
			"consolidate.model.model: is required: name the model, or remove the section"},
		{"a bad base URL", extract.Config{Model: "m", BaseURL: "/v1"}, "base_url", "consolidate.model.base_url: must be an absolute http or https URL"},
		{"a bad format", extract.Config{Model: "m", ResponseFormat: "text"}, "response_format", `consolidate.model.response_format: "text" is not json_schema or json_object`},
		{"a negative timeout", extract.Config{Model: "m", Timeout: -time.Second}, "timeout", "consolidate.model.timeout: must not be negative"},
		{"negative max_input_bytes", extract.Config{Model: "m", MaxInputBytes: -1}, "max_input_bytes", "consolidate.model.max_input_bytes: must not be negative"},
		{"negative max_facts", extract.Config{Model: "m", MaxFacts: -1}, "max_facts", "consolidate.model.max_facts: must not be negative"},
		{"negative max_tokens", extract.Config{Model: "m", MaxTokens: -1}, "max_tokens", "consolidate.model.max_tokens: must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.cfg.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
			var ce *extract.ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.field, ce.Field)
			_, err = extract.NewOpenAI(tc.cfg)
			require.Error(t, err)
		})
	}
	_, err := extract.NewOpenAI(extract.Config{APIKey: "sk-x"})
	require.EqualError(t, err, "consolidate.model.model: is required", "no model, no extractor")
}

// Instrument counts calls by operation and outcome, and times them.
func TestInstrument(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	results := []error{nil, fmt.Errorf("extract facts: %w", extract.ErrBadResponse), &extract.StatusError{StatusCode: 500}}
	n := 0
	x := extract.Instrument(extract.Funcs{
		FactsFunc: func(context.Context, string) ([]extract.Fact, error) {
			err := results[n]
			n++
			return nil, err
		},
		SummariseFunc: func(context.Context, string) (string, error) { return "s", nil },
	}, reg)
	for range results {
		_, _ = x.Facts(context.Background(), "t")
	}
	_, _ = x.Summarise(context.Background(), "t")
	mfs, err := reg.Gather()
	require.NoError(t, err)
	calls, timed := map[string]float64{}, map[string]uint64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch mf.GetName() {
			case "engram_model_calls_total":
				calls[labels["operation"]+" "+labels["outcome"]] = m.GetCounter().GetValue()
			case "engram_model_call_duration_seconds":
				timed[labels["operation"]] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	require.Equal(t, map[string]float64{"facts ok": 1, "facts bad_response": 1, "facts error": 1, "summarise ok": 1}, calls)
	require.Equal(t, map[string]uint64{"facts": 3, "summarise": 1}, timed)
}
