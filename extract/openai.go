package extract

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/engram-dev/engram/internal/openaicompat"
)

// Defaults and bounds of the [Config].
const (
	// DefaultTimeout bounds one request: a chat completion is slower than
	// an embedding.
	DefaultTimeout = 60 * time.Second
	// DefaultMaxInputBytes is how much of a text is sent.
	DefaultMaxInputBytes = 16 << 10
	// DefaultMaxFacts is how many facts one answer may hold.
	DefaultMaxFacts = 20
	// DefaultMaxTokens bounds the tokens the model may generate.
	DefaultMaxTokens = 1024
	// MaxResponseBytes bounds the body of an answer.
	MaxResponseBytes = 1 << 20
	// MaxContentBytes bounds the model's message in an answer.
	MaxContentBytes = 64 << 10
)

// Bounds of one fact and of a summary: longer is [ErrBadResponse]. They are
// within the write path's limits on what its indexes hold
// (revise.MaxSubjectBytes and the like).
const (
	MaxSubjectBytes   = 256
	MaxPredicateBytes = 128
	MaxObjectBytes    = 1024
	MaxConditions     = 8
	MaxConditionBytes = 64  // a condition's key
	MaxValueBytes     = 128 // a condition's value
	MaxSummaryBytes   = 4096
)

// Response formats (yaml consolidate.model.response_format).
const (
	// FormatJSONSchema asks for structured output following a JSON
	// Schema, strictly (OpenAI, vLLM, recent Ollama).
	FormatJSONSchema = "json_schema"
	// FormatJSONObject asks for any JSON object, for servers without
	// structured outputs; the answer is checked as strictly.
	FormatJSONObject = "json_object"
)

// Config configures an [OpenAI] extractor, the `consolidate.model` section
// of engramd's configuration file. The zero Config is off; so is one with
// only an API key (which may come from the environment).
type Config struct {
	// BaseURL is the API's root, under which POST /chat/completions is
	// served; OpenAI's when empty.
	BaseURL string `yaml:"base_url"`
	// Model is the chat model's name on the server: "gpt-4o-mini",
	// "llama3.1". Setting it turns the model on.
	Model string `yaml:"model"`
	// APIKey is sent as a bearer token; local servers often need none. It
	// never appears in an error or a log line.
	APIKey string `yaml:"api_key"`
	// ResponseFormat is json_schema (the default) or json_object.
	ResponseFormat string `yaml:"response_format"`
	// Timeout bounds one request; [DefaultTimeout] when zero.
	Timeout time.Duration `yaml:"timeout"`
	// MaxInputBytes is how much of a text is sent; [DefaultMaxInputBytes]
	// when zero.
	MaxInputBytes int `yaml:"max_input_bytes"`
	// MaxFacts is how many facts one answer may hold; more is a bad
	// answer. [DefaultMaxFacts] when zero.
	MaxFacts int `yaml:"max_facts"`
	// MaxTokens bounds the tokens the model generates; [DefaultMaxTokens]
	// when zero.
	MaxTokens int `yaml:"max_tokens"`
}

// Enabled reports whether c names a model.
func (c Config) Enabled() bool { return strings.TrimSpace(c.Model) != "" }

// Validate checks every field and names the first bad one, as a
// *[ConfigError]. A Config that sets anything but the key needs a model.
func (c Config) Validate() error {
	if !c.Enabled() {
		off := Config{APIKey: c.APIKey}
		if c != off {
			return &ConfigError{Field: "model", Message: "is required: name the model, or remove the section"}
		}
		return nil
	}
	if msg := openaicompat.CheckBaseURL(c.BaseURL); msg != "" {
		return &ConfigError{Field: "base_url", Message: msg}
	}
	switch c.ResponseFormat {
	case "", FormatJSONSchema, FormatJSONObject:
	default:
		return &ConfigError{Field: "response_format", Message: fmt.Sprintf("%q is not %s or %s", c.ResponseFormat, FormatJSONSchema, FormatJSONObject)}
	}
	switch {
	case c.Timeout < 0:
		return &ConfigError{Field: "timeout", Message: "must not be negative"}
	case c.MaxInputBytes < 0:
		return &ConfigError{Field: "max_input_bytes", Message: "must not be negative"}
	case c.MaxFacts < 0:
		return &ConfigError{Field: "max_facts", Message: "must not be negative"}
	case c.MaxTokens < 0:
		return &ConfigError{Field: "max_tokens", Message: "must not be negative"}
	}
	return nil
}

// OpenAI is an [Extractor] for any server speaking the OpenAI
// chat-completions API (POST {base}/chat/completions): OpenAI, Ollama,
// vLLM. It is safe for concurrent use.
type OpenAI struct {
	api                         *openaicompat.Client
	model, format               string
	maxInput, maxFacts, maxToks int
}

var _ Extractor = (*OpenAI)(nil)

// NewOpenAI returns an extractor for the endpoint cfg names, after
// validating cfg; a Config that names no model is refused. It makes no
// request.
func NewOpenAI(cfg Config) (*OpenAI, error) {
	if !cfg.Enabled() {
		return nil, &ConfigError{Field: "model", Message: "is required"}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &OpenAI{
		api: openaicompat.New(openaicompat.Config{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey,
			Timeout: cmp.Or(cfg.Timeout, DefaultTimeout), MaxResponseBytes: MaxResponseBytes}),
		model:    cfg.Model,
		format:   cmp.Or(cfg.ResponseFormat, FormatJSONSchema),
		maxInput: cmp.Or(cfg.MaxInputBytes, DefaultMaxInputBytes),
		maxFacts: cmp.Or(cfg.MaxFacts, DefaultMaxFacts),
		maxToks:  cmp.Or(cfg.MaxTokens, DefaultMaxTokens),
	}, nil
}

// The instructions. A text may hold redaction markers: the model is told
// not to guess what they hide.
const (
	factsPrompt = `You extract facts from the work log of an AI agent: what the user and the agent ` +
		`state about the world (people, projects, tools, preferences, environments). ` +
		`Answer with one JSON object {"facts": [...]}: each fact has "subject", "predicate" ` +
		`(snake_case, such as prefers_language), "object" (a short string) and "conditions" ` +
		`(a list of {"key", "value"} under which the fact holds, such as {"key": "os", "value": "linux"}; ` +
		`empty when it always holds). Only facts the text states, no guesses; {"facts": []} when there are none. ` +
		`Never guess what a [REDACTED:...] marker hides.`
	summaryPrompt = `You summarise the work log of an AI agent in at most three sentences: the task, ` +
		`what was done, how it ended. Answer with one JSON object {"summary": "..."}. ` +
		`Never guess what a [REDACTED:...] marker hides.`
)

// The JSON Schemas of the answers, for structured outputs (strict mode:
// every property required, no others).
var (
	factsSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["facts"],"properties":{` +
		`"facts":{"type":"array","items":{"type":"object","additionalProperties":false,` +
		`"required":["subject","predicate","object","conditions"],"properties":{` +
		`"subject":{"type":"string"},"predicate":{"type":"string"},"object":{"type":"string"},` +
		`"conditions":{"type":"array","items":{"type":"object","additionalProperties":false,` +
		`"required":["key","value"],"properties":{"key":{"type":"string"},"value":{"type":"string"}}}}}}}}}`)
	summarySchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["summary"],` +
		`"properties":{"summary":{"type":"string"}}}`)
)

// Facts asks the model for the facts text states.
func (o *OpenAI) Facts(ctx context.Context, text string) ([]Fact, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	content, err := o.complete(ctx, factsPrompt, text, "facts", factsSchema)
	if err != nil {
		return nil, fmt.Errorf("extract facts: %w", err)
	}
	facts, err := parseFacts(content, o.maxFacts)
	if err != nil {
		return nil, fmt.Errorf("extract facts: %w", err)
	}
	return facts, nil
}

// Summarise asks the model for a summary of text.
func (o *OpenAI) Summarise(ctx context.Context, text string) (string, error) {
	if strings.TrimSpace(text) == "" {
		return "", nil
	}
	content, err := o.complete(ctx, summaryPrompt, text, "summary", summarySchema)
	if err != nil {
		return "", fmt.Errorf("summarise: %w", err)
	}
	var ans struct {
		Summary *string `json:"summary"`
	}
	if err := decodeStrict(content, &ans); err != nil {
		return "", fmt.Errorf("summarise: %w", err)
	}
	switch s := strings.TrimSpace(deref(ans.Summary)); {
	case ans.Summary == nil:
		return "", fmt.Errorf("summarise: no summary: %w", ErrBadResponse)
	case len(s) > MaxSummaryBytes:
		return "", fmt.Errorf("summarise: the summary is %d bytes, over %d: %w", len(s), MaxSummaryBytes, ErrBadResponse)
	default:
		return s, nil
	}
}

// complete sends one chat completion and returns the model's message.
func (o *OpenAI) complete(ctx context.Context, prompt, text, name string, schema json.RawMessage) (string, error) {
	req := openai.ChatCompletionRequest{
		Model: o.model,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: prompt},
			{Role: openai.ChatMessageRoleUser, Content: clip(text, o.maxInput)},
		},
		MaxTokens:      o.maxToks, //nolint:staticcheck // max_tokens is what OpenAI-compatible servers (vLLM, llama.cpp, Ollama) read
		ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject},
	}
	if o.format == FormatJSONSchema {
		req.ResponseFormat = &openai.ChatCompletionResponseFormat{
			Type:       openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: name, Schema: schema, Strict: true},
		}
	}
	res, err := o.api.API.CreateChatCompletion(ctx, req)
	if err != nil {
		return "", fmt.Errorf("create chat completion: %w", o.api.Sanitize(err))
	}
	if len(res.Choices) == 0 {
		return "", fmt.Errorf("read completion: no choice: %w", ErrBadResponse)
	}
	ch := res.Choices[0]
	switch {
	case ch.Message.Refusal != "":
		return "", fmt.Errorf("read completion: the model refused: %w", ErrBadResponse)
	case ch.FinishReason == openai.FinishReasonLength:
		return "", fmt.Errorf("read completion: cut off at the token limit: %w", ErrBadResponse)
	case ch.FinishReason == openai.FinishReasonContentFilter:
		return "", fmt.Errorf("read completion: cut off by a content filter: %w", ErrBadResponse)
	case len(ch.Message.Content) > MaxContentBytes:
		return "", fmt.Errorf("read completion: %d bytes, over %d: %w", len(ch.Message.Content), MaxContentBytes, ErrBadResponse)
	}
	return ch.Message.Content, nil
}

// wireFact is a fact as the model writes it.
type wireFact struct {
	Subject    *string `json:"subject"`
	Predicate  *string `json:"predicate"`
	Object     *string `json:"object"`
	Conditions []struct {
		Key   *string `json:"key"`
		Value *string `json:"value"`
	} `json:"conditions"`
}

// parseFacts reads a facts answer strictly: one JSON object, no unknown
// field, every fact complete and within bounds, at most max of them.
func parseFacts(content string, max int) ([]Fact, error) {
	var ans struct {
		Facts *[]wireFact `json:"facts"`
	}
	if err := decodeStrict(content, &ans); err != nil {
		return nil, err
	}
	if ans.Facts == nil {
		return nil, fmt.Errorf("no facts field: %w", ErrBadResponse)
	}
	if n := len(*ans.Facts); n > max {
		return nil, fmt.Errorf("%d facts, over %d: %w", n, max, ErrBadResponse)
	}
	out := make([]Fact, 0, len(*ans.Facts))
	for i, w := range *ans.Facts {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("fact %d: %s: %w", i, fmt.Sprintf(format, args...), ErrBadResponse)
		}
		f := Fact{Subject: strings.TrimSpace(deref(w.Subject)), Predicate: predicate(deref(w.Predicate)), Object: strings.TrimSpace(deref(w.Object))}
		for _, x := range []struct {
			name  string
			value string
			limit int
		}{{"subject", f.Subject, MaxSubjectBytes}, {"predicate", f.Predicate, MaxPredicateBytes}, {"object", f.Object, MaxObjectBytes}} {
			if x.value == "" {
				return nil, bad("no %s", x.name)
			}
			if len(x.value) > x.limit {
				return nil, bad("the %s is %d bytes, over %d", x.name, len(x.value), x.limit)
			}
		}
		if len(w.Conditions) > MaxConditions {
			return nil, bad("%d conditions, over %d", len(w.Conditions), MaxConditions)
		}
		for _, c := range w.Conditions {
			k, v := strings.TrimSpace(deref(c.Key)), strings.TrimSpace(deref(c.Value))
			switch {
			case k == "" || v == "":
				return nil, bad("a condition without its key or value")
			case len(k) > MaxConditionBytes || len(v) > MaxValueBytes:
				return nil, bad("a condition over %d bytes of key or %d of value", MaxConditionBytes, MaxValueBytes)
			}
			if f.Conditions == nil {
				f.Conditions = map[string]string{}
			}
			if _, dup := f.Conditions[k]; dup {
				return nil, bad("condition %q repeated", k)
			}
			f.Conditions[k] = v
		}
		out = append(out, f)
	}
	return out, nil
}

// decodeStrict decodes exactly one JSON value into v, refusing unknown
// fields and anything after the value (a Markdown fence, a second object).
func decodeStrict(content string, v any) error {
	dec := json.NewDecoder(strings.NewReader(content))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg := err.Error()
		if strings.HasPrefix(msg, "json: unknown field") {
			msg = "an unknown field" // not quoted: the model wrote its name
		}
		return fmt.Errorf("decode answer: %s: %w", msg, ErrBadResponse)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("decode answer: more after the JSON value: %w", ErrBadResponse)
	}
	return nil
}

// predicate is a predicate in snake_case, as facts from events spell them.
func predicate(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(strings.ReplaceAll(s, "-", " "))), "_")
}

// clip cuts s to at most n bytes, at a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
