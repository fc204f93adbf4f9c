package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
)

// condFlag is the repeatable --cond KEY=VALUE: a task condition, its value
// a boolean, a number or a string.
type condFlag map[string]any

func (f condFlag) String() string { return fmt.Sprint(map[string]any(f)) }

func (f condFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, such as os=linux")
	}
	if _, dup := f[k]; dup {
		return fmt.Errorf("%s is given twice", k)
	}
	f[k] = conditionValue(val)
	return nil
}

// conditionValue reads a condition's value: true and false are booleans,
// a JSON number is a number, a JSON string ("1.20") is that string, and
// anything else is the string as written.
func conditionValue(v string) any {
	switch v {
	case "true":
		return true
	case "false":
		return false
	}
	if v == "" {
		return v
	}
	switch c := v[0]; {
	case c == '-' || c >= '0' && c <= '9':
		if !json.Valid([]byte(v)) {
			return v
		}
		// Valid JSON that starts so is a number.
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsInf(n, 0) {
			return v
		}
		return n
	case c == '"':
		var s string
		if json.Unmarshal([]byte(v), &s) == nil {
			return s
		}
	}
	return v
}

// layerFlag is the repeatable --layer LAYER=N: items for one layer.
type layerFlag map[api.LayerName]int

func (f layerFlag) String() string { return fmt.Sprint(map[api.LayerName]int(f)) }

func (f layerFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	n, err := strconv.Atoi(val)
	if !ok || k == "" || err != nil {
		return fmt.Errorf("want LAYER=N, such as semantic=5")
	}
	f[api.LayerName(k)] = n
	return nil
}

// recall serves `engram recall`: what memory helps with a task, from POST
// /v1/retrieve, printed layer by layer.
func recall(c *cli, ctx context.Context, args []string) error {
	fs := c.flags("recall")
	var (
		req             api.RetrieveRequest
		clearance       string
		signals, tools  listFlag
		conds           = condFlag{}
		layers          = layerFlag{}
		items, tokens   int
		unauthenticated bool
	)
	t := &req.Task
	fs.StringVar(&t.Intent, "intent", "", "")
	fs.Var(&signals, "signal", "")
	fs.Var(&tools, "tool", "")
	fs.Var(conds, "cond", "")
	fs.StringVar(&t.ThreadID, "thread", "", "")
	fs.StringVar(&t.AgentID, "agent", "", "")
	fs.StringVar(&t.Scope, "scope", "", "")
	fs.StringVar(&clearance, "clearance", "", "")
	fs.BoolVar(&unauthenticated, "unauthenticated", false, "")
	fs.StringVar(&req.Trust.Environment, "env", "", "")
	fs.IntVar(&items, "items", 0, "")
	fs.IntVar(&tokens, "tokens", 0, "")
	fs.Var(layers, "layer", "")
	pos, err := parseAll(fs, args)
	if err != nil {
		return err
	}
	t.Text = strings.Join(pos, " ")
	if strings.TrimSpace(t.Text) == "" && t.Intent == "" && len(signals) == 0 && len(tools) == 0 && t.ThreadID == "" {
		return usageErrorf("recall needs TEXT, or --intent, --signal, --tool or --thread")
	}
	// Sent as given, not split at commas: an error message's commas are its
	// own.
	t.Signals, t.Tools = signals, tools
	if len(conds) > 0 {
		t.Conditions = conds
	}
	req.Trust.Clearance = memory.Sensitivity(clearance)
	if unauthenticated {
		no := false
		req.Trust.Authenticated = &no
	}
	fs.Visit(func(f *flag.Flag) {
		// Sent when given, even out of range: the server says what is.
		switch f.Name {
		case "items":
			req.Budget.Items = &items
		case "tokens":
			req.Budget.Tokens = &tokens
		}
	})
	if len(layers) > 0 {
		req.Budget.Layers = layers
	}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	return c.call(ctx, "POST", "/v1/retrieve", nil, body, c.orTable(c.recallAnswer))
}

// recallAnswer prints an answer of POST /v1/retrieve: a header with the
// retrieval, its clearance and what it spent, then each layer with an item
// a line, best first; the empty layers are named together at the end.
func (c *cli) recallAnswer(b []byte) error {
	var res api.RetrieveResult
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "retrieval %s at clearance %s: %d of %d items, %d of %d tokens, %d withheld\n",
		res.RetrievalID, res.Clearance, res.Budget.Items, res.Budget.ItemsLimit, res.Budget.Tokens, res.Budget.TokensLimit, res.Withheld)
	switch notes := strings.Join(res.Notes, "; "); {
	case res.LexicalOnly && notes != "":
		fmt.Fprintf(&out, "lexical only: %s\n", notes)
	case res.LexicalOnly:
		out.WriteString("lexical only\n")
	case notes != "":
		fmt.Fprintf(&out, "note: %s\n", notes)
	}
	var empty []string
	for _, l := range res.Layers {
		if len(l.Items) == 0 && l.Omitted == 0 {
			empty = append(empty, string(l.Name))
			continue
		}
		fmt.Fprintf(&out, "\n%s\n", l.Name)
		for _, it := range l.Items {
			line := recallSummary(it.Record, it.Why.MatchedSignal, it.Why.SuccessRate)
			if g, ok := gated[it.Gating]; ok {
				line += "  (" + g + ")"
			}
			fmt.Fprintf(&out, "  %s  %s  %s\n", salience(it.Score), it.Record.ID, line)
			if it.Record.Type == "competence" && it.Gating == api.GatingReturn {
				out.WriteString(recipeLines(it.Record.Payload, it.Why.Bindings))
			}
		}
		if l.Omitted > 0 {
			fmt.Fprintf(&out, "  %d more left out by the budget\n", l.Omitted)
		}
		if l.NeedsDisambiguation {
			if len(l.SeparatingKeys) > 0 {
				fmt.Fprintf(&out, "  needs disambiguation: separate by %s\n", strings.Join(l.SeparatingKeys, ", "))
			} else {
				out.WriteString("  needs disambiguation: several match about equally well\n")
			}
		}
	}
	if len(empty) > 0 {
		fmt.Fprintf(&out, "\nno %s memory matched\n", orList(empty))
	}
	_, err := fmt.Fprint(c.stdout, out.String())
	return err
}

// recallSummary describes an item in a line: a fact, task or plan as the
// record tables do; a procedure with the signal it matched and its success
// rate; an episode by its outcome and first events.
func recallSummary(r memory.Record, signal string, rate *float64) string {
	var p struct {
		SkillName      string `json:"skill_name"`
		PlanID         string `json:"plan_id"`
		Intent         string `json:"intent"`
		State          string `json:"state"`
		ContextSummary string `json:"context_summary"`
		Outcome        string `json:"outcome"`
		Timeline       []struct {
			EventKind string `json:"event_kind"`
			Summary   string `json:"summary"`
		} `json:"timeline"`
	}
	_ = json.Unmarshal(r.Payload, &p)
	var parts []string
	switch r.Type {
	case "competence", "plan_graph":
		// The name alone: the trigger follows as "on …".
		parts = append(parts, p.SkillName)
		if r.Type == memory.PlanGraph {
			parts[0] = p.PlanID
			if p.Intent != "" {
				parts[0] = p.Intent + " (" + p.PlanID + ")"
			}
		}
		if rate != nil {
			parts = append(parts, "success "+strconv.Itoa(int(math.Round(*rate*100)))+"%")
		}
		if signal != "" {
			parts = append(parts, "on "+strconv.Quote(signal))
		}
	case "working":
		parts = append(parts, p.State)
		if p.ContextSummary != "" {
			parts[0] += ": " + p.ContextSummary
		}
	case "episodic":
		if p.Outcome != "" {
			parts = append(parts, p.Outcome)
		}
		for i, e := range p.Timeline {
			if i == 2 {
				more := len(p.Timeline) - 2
				parts = append(parts, fmt.Sprintf("%d more event%s", more, plural(more)))
				break
			}
			if e.Summary != "" {
				parts = append(parts, e.Summary)
			} else {
				parts = append(parts, e.EventKind)
			}
		}
		if len(parts) == 0 {
			parts = append(parts, "no events")
		}
	default:
		parts = append(parts, summarize(r.Type, r.Payload))
	}
	return shorten(strings.Join(parts, ", "))
}

// maxSteps bounds the steps of a recalled procedure the CLI prints.
const maxSteps = 8

// recipeLines are a recalled procedure's steps, indented under its line,
// with the values its trigger bound from the task's signals put in
// ("npm install {package}" with package=dayjs is "npm install dayjs"), and
// the bindings named first: what an agent would run.
func recipeLines(payload json.RawMessage, bindings map[string]string) string {
	var p struct {
		Recipe []struct {
			Step string `json:"step"`
		} `json:"recipe"`
	}
	if json.Unmarshal(payload, &p) != nil || len(p.Recipe) == 0 {
		return ""
	}
	const indent = "        "
	var out strings.Builder
	if len(bindings) > 0 {
		names := slices.Sorted(maps.Keys(bindings))
		pairs := make([]string, len(names))
		for i, n := range names {
			pairs[i] = n + "=" + bindings[n]
		}
		fmt.Fprintf(&out, "%swith %s\n", indent, strings.Join(pairs, " "))
	}
	for i, st := range p.Recipe {
		if i == maxSteps {
			fmt.Fprintf(&out, "%s%d more step%s\n", indent, len(p.Recipe)-i, plural(len(p.Recipe)-i))
			break
		}
		step := st.Step
		for n, v := range bindings {
			step = strings.ReplaceAll(step, "{"+n+"}", v)
		}
		fmt.Fprintf(&out, "%s%d. %s\n", indent, i+1, shorten(step))
	}
	return out.String()
}

// gated says what trust gating did to an item it did not return as
// stored.
var gated = map[api.Gating]string{api.GatingSummarise: "summarised", api.GatingRedact: "redacted"}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// orList writes names as "a", "a or b", "a, b or c".
func orList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
