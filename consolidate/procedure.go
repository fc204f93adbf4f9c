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
	"github.com/engram-dev/engram/signature"
)

// DefaultProbes are the tools that only read: a call of one is left out of
// a procedure unless a later step uses what it returned. A shell call is
// judged by its command's first word.
var DefaultProbes = []string{"cat", "ls", "grep", "rg", "find", "head", "tail", "stat", "pwd", "echo", "which",
	"read_file", "list_files", "list_dir", "search", "view", "less", "file", "wc", "env", "git status", "git diff", "git log"}

// Reduce is the part of an episode's actions that made the fix (substrate
// RFC §15A.9): a step that failed is dropped — tried again, the later
// call carries it; never tried again, it was a wrong try — as is every
// earlier copy of a step repeated exactly, and a read-only probe (one of
// probes) whose output no later step uses.
func Reduce(actions []Action, probes []string) []Action {
	return pick(actions, reduction(actions, probes))
}

// reduction is [Reduce] as the indexes among actions of the steps it
// keeps, in order; nil when it keeps none.
func reduction(actions []Action, probes []string) []int {
	var out []int
	for i, a := range actions {
		later := actions[i+1:]
		if a.Failed {
			continue
		}
		if slices.ContainsFunc(later, func(b Action) bool { return b.Tool == a.Tool && reflect.DeepEqual(b.Args, a.Args) }) {
			continue // an exact repeat follows
		}
		if isProbe(a, probes) && !usedLater(a, later) {
			continue
		}
		out = append(out, i)
	}
	return out
}

// pick is the actions at idx, in order, as steps: a step kept is one that
// did not fail, or one whose failure does not count (see
// [Episode.tried]), so none is failed. It is nil when idx is.
func pick(actions []Action, idx []int) []Action {
	if idx == nil {
		return nil
	}
	out := make([]Action, len(idx))
	for k, i := range idx {
		out[k] = actions[i]
		out[k].Failed = false
	}
	return out
}

// isProbe reports whether a call only reads: a probe tool, or a shell
// command line each of whose commands is a probe program and that writes
// no file (a heredoc or a redirection into a file is a write).
func isProbe(a Action, probes []string) bool {
	if len(probes) == 0 {
		return false
	}
	if !slices.Contains(shellTools, a.Tool) {
		return slices.Contains(probes, a.Tool) || slices.Contains(probes, identity(a))
	}
	cmd := commandLine(a.Args)
	if cmd == "" || writes(cmd) {
		return false
	}
	segs := segments(shellWords(cmd))
	for _, seg := range segs {
		prog, rest := program(seg)
		if prog == "cd" {
			continue
		}
		name := prog
		if prog == "git" && len(rest) > 0 {
			name = "git " + rest[0]
		}
		if !slices.Contains(probes, name) {
			return false
		}
	}
	return len(segs) > 0
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
// followed the same procedure. A value of the episode's trigger an
// argument holds (vals, its [triggerValues]: a path, a path's directory, a
// quoted name) is a placeholder first, as it will be a variable of the
// procedure's template: "package=libapp-3fa20c" under "… (package
// 'libapp-3fa20c')" is "package=<q>", whatever the package.
func shape(a Action, vals []triggerValue) string {
	keys := slices.Sorted(maps.Keys(a.Args))
	var b strings.Builder
	b.WriteString(a.Tool)
	for _, k := range keys {
		v := placeholders(fmt.Sprint(scalarOrJSON(a.Args[k])), vals)
		fmt.Fprintf(&b, " %s=%s", k, signature.Normalise(v))
	}
	return b.String()
}

// procedureKey identifies a procedure: the shapes of its steps, under the
// signature of its trigger. vals are the trigger's values.
func procedureKey(sig string, vals []triggerValue, steps []Action) string {
	h := sha256.New()
	h.Write([]byte(sig))
	for _, s := range steps {
		h.Write([]byte{0})
		h.Write([]byte(shape(s, vals)))
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
	if norm := signature.Normalise(lines[0]); norm != "" && !slices.ContainsFunc(lines, func(l string) bool { return signature.Normalise(l) != norm }) {
		return "output matches: " + norm
	}
	return "completes without an error"
}

// conditionsOf are the conditions of a procedure: the environment keys that
// set it apart from what else happened to its trigger (substrate RFC §12).
// contrary holds, for each other recipe of the trigger, the episodes it
// succeeded in, and the episodes that followed this procedure and failed;
// a failure of another recipe says nothing about this one.
//
// A key can be a condition when it has one value across the supporting
// episodes; the conditions are the fewest such keys on which every contrary
// episode has another value, chosen greedily: the key that tells the most
// apart first — every key tied for most, since nothing tells which of them
// matters. A contrary group with an episode in the
// support's very environment (every such key at the support's value)
// cannot be told apart by any condition — the world changed, or a step was
// flaky — and is left to the statistics (the procedure's failures, its
// lifecycle). With nothing contrary there are no conditions: two episodes
// that happened to share a toolchain do not make it one.
func conditionsOf(support []Episode, contrary [][]Episode) memory.Conditions {
	constant := constantEnvironment(support)
	var apart []Episode
	for _, g := range contrary {
		if !slices.ContainsFunc(g, func(e Episode) bool { return len(differing(constant, e)) == 0 }) {
			apart = append(apart, g...)
		}
	}
	conds := memory.Conditions{}
	for len(apart) > 0 {
		keys := mostTelling(constant, apart)
		if len(keys) == 0 {
			break
		}
		for _, k := range keys {
			conds[k] = constant[k]
		}
		apart = slices.DeleteFunc(apart, func(e Episode) bool {
			return slices.ContainsFunc(keys, func(k string) bool { return slices.Contains(differing(constant, e), k) })
		})
	}
	return conds
}

// mostTelling are the keys of env on which the most episodes have another
// value (none when no episode has): all of them on a tie, for nothing
// tells which of them the procedure depends on.
func mostTelling(env map[string]any, eps []Episode) []string {
	told := map[string]int{}
	most := 0
	for _, e := range eps {
		for _, k := range differing(env, e) {
			told[k]++
			most = max(most, told[k])
		}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(told)) {
		if told[k] == most {
			out = append(out, k)
		}
	}
	return out
}

// constantEnvironment is the environment keys with one value across
// episodes (reported by all of them).
func constantEnvironment(eps []Episode) map[string]any {
	out := map[string]any{}
	for k, v := range eps[0].Environment {
		if !slices.ContainsFunc(eps[1:], func(e Episode) bool { return !reflect.DeepEqual(e.Environment[k], v) }) {
			out[k] = v
		}
	}
	return out
}

// differing are the keys of env an episode reports with another value,
// sorted.
func differing(env map[string]any, e Episode) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if o, ok := e.Environment[k]; ok && !reflect.DeepEqual(o, env[k]) {
			out = append(out, k)
		}
	}
	return out
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
