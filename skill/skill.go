// Package skill renders a learned procedure (a competence record) as an
// Agent Skills SKILL.md, the format Claude Code, Codex, Cursor, Copilot and
// Letta load (issue 15, part 4). It does no I/O: a record in, a folder name
// and the file's bytes out. The server's GET /v1/records/{id}/skill.md and
// the MCP resource use it; `engram skills export` writes what the route
// answers.
//
// The format follows the Agent Skills specification
// (https://agentskills.io/specification, docs/specification.mdx of
// github.com/agentskills/agentskills): a folder per skill holding SKILL.md,
// YAML front matter with the required name (1–64 characters, lowercase
// letters, digits and hyphens, not starting or ending with a hyphen, no
// consecutive hyphens, equal to the folder's name) and description (1–1,024
// characters, what the skill does and when to use it), and the optional
// compatibility (at most 500 characters) and metadata (a map of strings to
// strings); then a Markdown body, which the specification advises keeping
// under 500 lines. The experimental allowed-tools is left out: the tools a
// procedure names are the recording agent's, not the loader's.
package skill

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/memory"
)

// The specification's limits.
const (
	MaxNameLen          = 64
	MaxDescriptionLen   = 1024
	MaxCompatibilityLen = 500
	// MaxBodyLines is the line count a body stays under.
	MaxBodyLines = 500
)

// Caps on each list of the body, so a long-lived procedure's body stays
// well under MaxBodyLines: what is left out is counted, and its record has
// it all.
const (
	maxTriggers = 20
	maxSteps    = 50
	maxNotes    = 20 // failure modes, fallbacks
	maxEvidence = 30
	maxLine     = 600 // runes of one list item
)

// ErrNotCompetence is returned for a record that is not a learned
// procedure.
var ErrNotCompetence = errors.New("not a competence record")

// suffixLen is the hex digits of the record id a name ends with: the last
// ones, random in UUIDv7 (its first ones are a timestamp).
const suffixLen = 8

// Name is the folder and front-matter name of the procedure skillName
// recorded as id: skillName folded to lowercase ASCII letters and digits
// joined by single hyphens, cut to fit, then a hyphen and the id's last
// eight hex digits — so it is stable across versions of the record and
// distinct between records.
func Name(skillName string, id uuid.UUID) string {
	hex := strings.ReplaceAll(id.String(), "-", "")
	suffix := hex[len(hex)-suffixLen:]
	var b strings.Builder
	hyphen := false
	for _, r := range strings.ToLower(skillName) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			hyphen = false
			b.WriteRune(r)
		default:
			hyphen = true
		}
	}
	slug := b.String()
	if max := MaxNameLen - suffixLen - 1; len(slug) > max {
		slug = strings.TrimRight(slug[:max], "-")
	}
	if slug == "" {
		slug = "skill"
	}
	return slug + "-" + suffix
}

// Render is rec's SKILL.md and the name of the folder to hold it. Links
// back to engram are API paths (GET /v1/records/{id}) and record:// refs,
// relative to whichever engramd served rec.
func Render(rec memory.Record) (name string, md []byte, err error) {
	if rec.Type != memory.Competence {
		return "", nil, fmt.Errorf("record %s is %s: %w", rec.ID, rec.Type, ErrNotCompetence)
	}
	var p memory.CompetencePayload
	if err := json.Unmarshal(rec.Payload, &p); err != nil {
		return "", nil, fmt.Errorf("record %s: decode competence payload: %w", rec.ID, err)
	}
	skillName := oneLine(p.SkillName)
	if skillName == "" {
		skillName = "procedure " + rec.ID.String()
	}
	name = Name(skillName, rec.ID)

	var out bytes.Buffer
	out.WriteString("---\n")
	fmt.Fprintf(&out, "name: %s\n", name)
	fmt.Fprintf(&out, "description: %s\n", quote(description(skillName, p, rec)))
	if len(p.RequiredTools) > 0 {
		fmt.Fprintf(&out, "compatibility: %s\n", quote(cut("Needs the tools "+strings.Join(p.RequiredTools, ", ")+".", MaxCompatibilityLen)))
	}
	out.WriteString("metadata:\n")
	meta := map[string]string{
		"engram-record":  rec.ID.String(),
		"engram-version": fmt.Sprint(rec.Version),
		"engram-status":  string(rec.Status),
	}
	if p.Performance != nil {
		meta["success-rate"] = fmt.Sprintf("%.2f", Rate(p.Performance))
	}
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		fmt.Fprintf(&out, "  %s: %s\n", k, quote(meta[k]))
	}
	out.WriteString("---\n\n")
	body(&out, skillName, p, rec)
	return name, out.Bytes(), nil
}

// Rate is a procedure's success rate smoothed as retrieval ranks by it,
// (s+1)/(s+f+2); 0.5 with no record.
func Rate(perf *memory.Performance) float64 {
	if perf == nil {
		return 0.5
	}
	return memory.SuccessRate(perf.Successes, perf.Failures)
}

// description says what the procedure does and when to use it, within
// MaxDescriptionLen.
func description(skillName string, p memory.CompetencePayload, rec memory.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: a procedure learned from experience by engram.", strings.TrimSuffix(skillName, "."))
	var whens []string
	for _, t := range p.Triggers {
		w := oneLine(t.Signal)
		if c := conditionText(t.Conditions); c != "" {
			w += " (when " + c + ")"
		}
		if w != "" {
			whens = append(whens, w)
		}
	}
	if len(whens) > 0 {
		fmt.Fprintf(&b, " Use it on: %s.", strings.Join(whens, "; "))
	}
	if perf := p.Performance; perf != nil {
		fmt.Fprintf(&b, " Success rate %.2f, smoothed: (successes+1)/(uses+2), %d of %d uses worked.", Rate(perf), perf.Successes, perf.Successes+perf.Failures)
	}
	return cut(b.String(), MaxDescriptionLen)
}

func body(out *bytes.Buffer, skillName string, p memory.CompetencePayload, rec memory.Record) {
	fmt.Fprintf(out, "# %s\n\n", skillName)
	fmt.Fprintf(out, "A procedure engram learned from repeated episodes (record `%s`, version %d). Follow the steps in order; check each before the next.\n\n", rec.ID, rec.Version)

	out.WriteString("## When to use\n\n")
	if len(p.Triggers) == 0 {
		out.WriteString("- No trigger was recorded: use it when the task matches the name above.\n")
	}
	list(out, p.Triggers, maxTriggers, func(t memory.Trigger) string {
		s := "On `" + code(t.Signal) + "`"
		if c := conditionText(t.Conditions); c != "" {
			s += ", when " + c
		}
		return s
	})
	if len(p.RequiredTools) > 0 {
		fmt.Fprintf(out, "\nTools needed: %s.\n", strings.Join(mapped(p.RequiredTools, func(s string) string { return "`" + code(s) + "`" }), ", "))
	}

	out.WriteString("\n## Steps\n\n")
	if len(p.Recipe) == 0 {
		out.WriteString("No steps were recorded.\n")
	}
	for i, s := range p.Recipe {
		if i == maxSteps {
			fmt.Fprintf(out, "\n%d more steps are in the record.\n", len(p.Recipe)-maxSteps)
			break
		}
		fmt.Fprintf(out, "%d. %s\n", i+1, item(s.Step))
		if s.Tool != "" {
			fmt.Fprintf(out, "   - Tool: `%s`\n", code(s.Tool))
		}
		if args, ok := s.ArgsSchema["arguments"]; ok {
			if b, err := marshal(args); err == nil {
				fmt.Fprintf(out, "   - Arguments: `%s`\n", code(cut(string(b), maxLine)))
			}
		}
		if vars, ok := s.ArgsSchema["variables"].(map[string]any); ok && len(vars) > 0 {
			fmt.Fprintf(out, "   - Fill in: %s (from the triggering message)\n", strings.Join(mapped(slices.Sorted(maps.Keys(vars)), func(n string) string { return "`{" + code(n) + "}`" }), ", "))
		}
		if s.Validation != "" {
			fmt.Fprintf(out, "   - Check: %s\n", item(s.Validation))
		} else {
			out.WriteString("   - Check: the step reports no error.\n")
		}
	}

	out.WriteString("\n## If it fails\n\n")
	if len(p.FailureModes) == 0 && len(p.Fallbacks) == 0 {
		out.WriteString("No failure was recorded under these conditions, and no fallback. If a check fails, stop and report what the step returned.\n")
	}
	if len(p.FailureModes) > 0 {
		out.WriteString("Seen to fail:\n\n")
		list(out, p.FailureModes, maxNotes, item)
	}
	if len(p.Fallbacks) > 0 {
		if len(p.FailureModes) > 0 {
			out.WriteString("\n")
		}
		out.WriteString("Then try:\n\n")
		list(out, p.Fallbacks, maxNotes, item)
	}

	out.WriteString("\n## Success record\n\n")
	if perf := p.Performance; perf != nil {
		fmt.Fprintf(out, "- Successes: %d\n- Failures: %d\n- Success rate: %.2f (smoothed, (s+1)/(s+f+2))\n", perf.Successes, perf.Failures, Rate(perf))
		last := "never"
		if perf.LastSuccessAt != nil {
			last = perf.LastSuccessAt.UTC().Format("2006-01-02T15:04:05Z")
		}
		fmt.Fprintf(out, "- Last success: %s\n", last)
		if perf.LastFailureAt != nil {
			fmt.Fprintf(out, "- Last failure: %s\n", perf.LastFailureAt.UTC().Format("2006-01-02T15:04:05Z"))
		}
	} else {
		out.WriteString("- No outcomes recorded yet.\n")
	}
	fmt.Fprintf(out, "- Status: %s, confidence %.2f\n", rec.Status, rec.Confidence)

	out.WriteString("\n## Evidence in engram\n\n")
	fmt.Fprintf(out, "- This procedure: `GET /v1/records/%s` (history: `GET /v1/records/%[1]s/history`)\n", rec.ID)
	var episodes []uuid.UUID
	for _, r := range rec.Relations {
		if r.Predicate == memory.DerivedFrom {
			episodes = append(episodes, r.TargetID)
		}
	}
	if len(episodes) > 0 {
		fmt.Fprintf(out, "- Learned from %d episodes:\n", len(episodes))
		list(out, episodes, maxEvidence, func(id uuid.UUID) string {
			return fmt.Sprintf("  `GET /v1/records/%s`", id)
		})
	}
	var others []string
	for _, s := range rec.Provenance.Sources {
		if id, ok := strings.CutPrefix(s.Ref, "record://"); ok && slices.ContainsFunc(episodes, func(e uuid.UUID) bool { return e.String() == id }) {
			continue
		}
		others = append(others, s.Kind+" `"+code(s.Ref)+"`")
	}
	if len(others) > 0 {
		out.WriteString("- Other sources:\n")
		list(out, others, maxEvidence, func(s string) string { return "  " + s })
	}
}

// list writes items as a Markdown list, at most max of them.
func list[T any](out *bytes.Buffer, items []T, max int, text func(T) string) {
	for i, it := range items {
		if i == max {
			fmt.Fprintf(out, "- … and %d more in the record\n", len(items)-max)
			return
		}
		t := text(it)
		indent := len(t) - len(strings.TrimLeft(t, " "))
		fmt.Fprintf(out, "%s- %s\n", t[:indent], t[indent:])
	}
}

func mapped(ss []string, f func(string) string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

func conditionText(conds memory.Conditions) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(conds)) {
		parts = append(parts, fmt.Sprintf("%s=%v", oneLine(k), conds[k]))
	}
	return oneLine(strings.Join(parts, ", "))
}

// item is s on one line, within maxLine runes.
func item(s string) string { return cut(oneLine(s), maxLine) }

// code is s fit for a Markdown code span: one line, no backticks.
func code(s string) string { return item(strings.ReplaceAll(s, "`", "'")) }

// oneLine folds runs of whitespace (newlines included) into one space and
// drops control characters.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f {
			return -1
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// cut is s within max bytes (so within max characters), cut at a rune
// boundary and marked with an ellipsis.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const ellipsis = "…"
	n := max - len(ellipsis)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + ellipsis
}

// quote is s as a YAML double-quoted scalar: a JSON string is one, and
// JSON escapes every control character.
func quote(s string) string {
	b, _ := marshal(s)
	return string(b)
}

func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
