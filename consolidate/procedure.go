package consolidate

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/engram-dev/engram/memory"
)

// DefaultProbes are the tools that only read: a call of one is left out of
// a procedure unless a later step uses what it returned. A shell call is
// judged by its command's first word.
var DefaultProbes = []string{"cat", "ls", "grep", "rg", "find", "head", "tail", "stat", "pwd", "echo", "which",
	"read_file", "list_files", "list_dir", "search", "view", "less", "file", "wc", "env", "git status", "git diff", "git log"}

// shellTools are tools whose command argument names the program run.
var shellTools = []string{"shell", "bash", "sh", "exec", "run", "terminal", "run_command", "cmd"}

// Reduce is the part of an episode's actions that made the fix (substrate
// RFC §15A.9): a step that failed and was tried again is dropped, as is
// every earlier copy of a step repeated exactly, and a read-only probe
// (one of probes) whose output no later step uses.
func Reduce(actions []Action, probes []string) []Action {
	var out []Action
	for i, a := range actions {
		later := actions[i+1:]
		if a.Failed && slices.ContainsFunc(later, func(b Action) bool { return b.Tool == a.Tool }) {
			continue // failed, then retried
		}
		if slices.ContainsFunc(later, func(b Action) bool { return b.Tool == a.Tool && reflect.DeepEqual(b.Args, a.Args) }) {
			continue // an exact repeat follows
		}
		if isProbe(a, probes) && !usedLater(a, later) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// isProbe reports whether a call only reads.
func isProbe(a Action, probes []string) bool {
	name := a.Tool
	if slices.Contains(shellTools, a.Tool) {
		name = commandName(a.Args)
	}
	return name != "" && slices.Contains(probes, name)
}

// commandName is the program a shell call runs: its first word, or its
// first two for git.
func commandName(args map[string]any) string {
	var cmd string
	for _, k := range []string{"command", "cmd", "args"} {
		if s, ok := args[k].(string); ok {
			cmd = s
			break
		}
	}
	f := strings.Fields(cmd)
	switch {
	case len(f) == 0:
		return ""
	case f[0] == "git" && len(f) > 1:
		return "git " + f[1]
	}
	return f[0]
}

// usedLater reports whether a later step's arguments contain a word of the
// probe's output that its own arguments did not.
func usedLater(probe Action, later []Action) bool {
	own, _ := json.Marshal(probe.Args)
	var out any
	_ = json.Unmarshal(probe.Result, &out)
	words := strings.FieldsFunc(fmt.Sprint(out), func(r rune) bool { return strings.ContainsRune(" \t\n\"'`,;()[]{}=", r) })
	for _, b := range later {
		args, _ := json.Marshal(b.Args)
		for _, w := range words {
			if len(w) >= 4 && !strings.Contains(string(own), w) && strings.Contains(string(args), w) {
				return true
			}
		}
	}
	return false
}

// shape is a step with the values that vary between occurrences
// normalised away: two episodes whose reduced actions have the same shapes
// followed the same procedure.
func shape(a Action) string {
	keys := slices.Sorted(maps.Keys(a.Args))
	var b strings.Builder
	b.WriteString(a.Tool)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", k, normalise(fmt.Sprint(scalarOrJSON(a.Args[k]))))
	}
	return b.String()
}

// procedureKey identifies a procedure: the shapes of its steps, under the
// signature of its trigger.
func procedureKey(signature string, steps []Action) string {
	h := sha256.New()
	h.Write([]byte(signature))
	for _, s := range steps {
		h.Write([]byte{0})
		h.Write([]byte(shape(s)))
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func scalarOrJSON(v any) any {
	switch v.(type) {
	case string, float64, bool, nil:
		return v
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Template is one step of a procedure learned from several episodes: its
// arguments with the values that varied replaced by named variables.
type Template struct {
	Tool string
	// Args are the templated arguments: a string that varied has its
	// varying words as {name}.
	Args map[string]any
	// Vars name the variables and the argument each was found in.
	Vars map[string]string
}

// Templates aligns the same step of several episodes (steps[i] is the
// i-th episode's) and replaces what varied by named variables, named for
// the argument key, or "path" for a path inside a command (substrate RFC
// §15A.9: a recipe an agent can follow without the episodes).
func Templates(steps [][]Action) []Template {
	if len(steps) == 0 {
		return nil
	}
	// A variable is named once per distinct column of values (what it
	// was in each episode): the same value used twice — a directory a
	// command names in two places, or in two steps — is one variable.
	used := map[string]int{}
	named := map[string]string{}
	name := func(base string, col []string) string {
		key := base + "\x00" + strings.Join(col, "\x00")
		if n, ok := named[key]; ok && col != nil {
			return n
		}
		used[base]++
		n := base
		if used[base] > 1 {
			n = fmt.Sprintf("%s%d", base, used[base])
		}
		named[key] = n
		return n
	}
	out := make([]Template, len(steps[0]))
	for i := range steps[0] {
		first := steps[0][i]
		t := Template{Tool: first.Tool, Args: map[string]any{}, Vars: map[string]string{}}
		for _, k := range slices.Sorted(maps.Keys(first.Args)) {
			values := make([]any, len(steps))
			for e := range steps {
				values[e] = steps[e][i].Args[k]
			}
			t.Args[k] = templateValue(k, values, t.Vars, name)
		}
		out[i] = t
	}
	return out
}

// templateValue is the templated form of one argument's values across the
// episodes.
func templateValue(key string, values []any, vars map[string]string, name func(base string, col []string) string) any {
	if allEqual(values) {
		return values[0]
	}
	strs := make([]string, len(values))
	for i, v := range values {
		s, ok := v.(string)
		if !ok {
			n := name(varName(key), nil)
			vars[n] = key
			return "{" + n + "}"
		}
		strs[i] = s
	}
	// Word by word, when the strings have as many words.
	words := make([][]string, len(strs))
	for i, s := range strs {
		words[i] = strings.Fields(s)
	}
	if !slices.ContainsFunc(words, func(w []string) bool { return len(w) != len(words[0]) }) && len(words[0]) > 1 {
		out := make([]string, len(words[0]))
		for j := range words[0] {
			col := make([]string, len(words))
			for i := range words {
				col[i] = words[i][j]
			}
			out[j] = templateWord(key, col, vars, name)
		}
		return strings.Join(out, " ")
	}
	return templateWord(key, strs, vars, name)
}

// templateWord is one word's template: itself when it never varied, else
// a variable, keeping a common path suffix ("{path}/cache").
func templateWord(key string, col []string, vars map[string]string, name func(base string, col []string) string) string {
	if !slices.ContainsFunc(col, func(s string) bool { return s != col[0] }) {
		return col[0]
	}
	base := varName(key)
	if slices.ContainsFunc(col, func(s string) bool { return strings.ContainsAny(s, `/\`) }) {
		base = "path"
	}
	suffix := commonSuffix(col)
	if i := strings.IndexAny(suffix, `/\`); i >= 0 {
		suffix = suffix[i:]
	} else {
		suffix = ""
	}
	if slices.Contains(col, suffix) || len(suffix) == 1 {
		suffix = ""
	}
	values := make([]string, len(col))
	for i, c := range col {
		values[i] = strings.TrimSuffix(c, suffix)
	}
	n := name(base, values)
	if _, ok := vars[n]; !ok {
		vars[n] = key
	}
	return "{" + n + "}" + suffix
}

// varName names a variable for an argument key.
func varName(key string) string {
	switch strings.ToLower(key) {
	case "args", "arguments", "command", "cmd", "":
		return "value"
	case "file", "filename", "dir", "directory", "filepath", "file_path":
		return "path"
	case "pkg":
		return "package"
	}
	return strings.ToLower(key)
}

func commonSuffix(ss []string) string {
	s := ss[0]
	for _, t := range ss[1:] {
		n := 0
		for n < len(s) && n < len(t) && s[len(s)-1-n] == t[len(t)-1-n] {
			n++
		}
		s = s[len(s)-n:]
	}
	return s
}

func allEqual(values []any) bool {
	return !slices.ContainsFunc(values[1:], func(v any) bool { return !reflect.DeepEqual(v, values[0]) })
}

// stepText is a recipe step as a person reads it: "run <tool> <args>".
func stepText(t Template) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(t.Args)) {
		v := t.Args[k]
		switch {
		case k == "args" || (slices.Contains(shellTools, t.Tool) && (k == "command" || k == "cmd")):
			parts = append(parts, flat(v))
		default:
			parts = append(parts, k+"="+flat(v))
		}
	}
	return strings.TrimSpace("run " + t.Tool + " " + strings.Join(parts, " "))
}

func flat(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var s []string
		for _, e := range x {
			s = append(s, flat(e))
		}
		return strings.Join(s, " ")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// argsSchema is a step's args_schema: the templated arguments and the
// variables among them.
func argsSchema(t Template) map[string]any {
	out := map[string]any{"arguments": t.Args}
	if len(t.Vars) > 0 {
		vars := map[string]any{}
		for n, k := range t.Vars {
			vars[n] = map[string]any{"type": "string", "from_argument": k}
		}
		out["variables"] = vars
	}
	return out
}

// validation is how to tell a step worked, from its results in the
// supporting episodes: the exit code they reported, the first line of
// output they shared, or no error.
func validation(results [][]byte) string {
	if code, ok := exitCode(results[0]); ok {
		return fmt.Sprintf("exit code %d", code)
	}
	lines := make([]string, len(results))
	for i, r := range results {
		lines[i] = firstLine(r)
	}
	if lines[0] != "" && !slices.ContainsFunc(lines, func(l string) bool { return l != lines[0] }) {
		return "output starts with: " + lines[0]
	}
	if norm := normalise(lines[0]); norm != "" && !slices.ContainsFunc(lines, func(l string) bool { return normalise(l) != norm }) {
		return "output matches: " + norm
	}
	return "completes without an error"
}

// conditionsOf are the environment keys constant across the supporting
// episodes and, where other episodes of the problem exist, different in at
// least one of them (substrate RFC §12: a procedure's conditions are what
// set it apart).
func conditionsOf(support, others []Episode) memory.Conditions {
	conds := memory.Conditions{}
	for k, v := range support[0].Environment {
		if slices.ContainsFunc(support[1:], func(e Episode) bool { return !reflect.DeepEqual(e.Environment[k], v) }) {
			continue
		}
		differs := len(others) == 0 || slices.ContainsFunc(others, func(e Episode) bool {
			o, ok := e.Environment[k]
			return ok && !reflect.DeepEqual(o, v)
		})
		if differs {
			conds[k] = v
		}
	}
	return conds
}

// conditionText is conditions as "k=v, k=v", sorted.
func conditionText(c memory.Conditions) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, c[k]))
	}
	return strings.Join(parts, ", ")
}

// canonical is the most frequent of the messages, the earliest on a tie.
func canonical(msgs []string) string {
	count := map[string]int{}
	best := ""
	for _, m := range msgs {
		count[m]++
		if best == "" || count[m] > count[best] {
			best = m
		}
	}
	return best
}

// holds reports whether an environment does not contradict conditions.
func holds(c memory.Conditions, env map[string]any) bool {
	for k, v := range c {
		if o, ok := env[k]; ok && !reflect.DeepEqual(o, v) {
			return false
		}
	}
	return true
}

func sortedEpisodes(eps []Episode) []Episode {
	return slices.SortedFunc(slices.Values(eps), func(a, b Episode) int {
		return cmp.Or(a.ClosedAt.Compare(b.ClosedAt), strings.Compare(a.ID.String(), b.ID.String()))
	})
}
