package skill_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/skill"
)

var nameRule = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

var id = uuid.MustParse("01a21517-dadb-73fa-ac29-0846bd8cd920")

func record(t *testing.T, p memory.CompetencePayload) memory.Record {
	t.Helper()
	p.Kind = memory.Competence
	b, err := json.Marshal(p)
	require.NoError(t, err)
	return memory.Record{ID: id, Type: memory.Competence, Status: memory.Active, Version: 2, Confidence: 0.75, Payload: b,
		Relations:  []memory.Relation{{Predicate: memory.DerivedFrom, TargetID: uuid.MustParse("01a21517-d86d-7727-a46a-f39ab6fd11da")}},
		Provenance: memory.Provenance{Sources: []memory.Source{{Kind: "record", Ref: "record://01a21517-d86d-7727-a46a-f39ab6fd11da"}, {Kind: "outcome", Ref: "run-7"}}}}
}

type frontMatter struct {
	Name          string            `yaml:"name"`
	Description   string            `yaml:"description"`
	Compatibility string            `yaml:"compatibility"`
	Metadata      map[string]string `yaml:"metadata"`
}

// render renders rec and holds the result to the specification's rules; it
// returns the front matter and the body.
func render(t *testing.T, rec memory.Record) (frontMatter, string) {
	t.Helper()
	name, md, err := skill.Render(rec)
	require.NoError(t, err)
	require.True(t, utf8.Valid(md))
	s := string(md)
	require.True(t, strings.HasPrefix(s, "---\n"))
	front, body, ok := strings.Cut(s[4:], "\n---\n")
	require.True(t, ok)
	var fm frontMatter
	dec := yaml.NewDecoder(strings.NewReader(front))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&fm), front)
	require.Equal(t, name, fm.Name)
	require.Regexp(t, nameRule, fm.Name)
	require.LessOrEqual(t, len(fm.Name), skill.MaxNameLen)
	require.NotEmpty(t, fm.Description)
	require.LessOrEqual(t, utf8.RuneCountInString(fm.Description), skill.MaxDescriptionLen)
	require.LessOrEqual(t, utf8.RuneCountInString(fm.Compatibility), skill.MaxCompatibilityLen)
	require.Less(t, strings.Count(body, "\n"), skill.MaxBodyLines)
	for _, section := range []string{"## When to use", "## Steps", "## If it fails", "## Success record", "## Evidence in engram"} {
		require.Contains(t, body, "\n"+section+"\n")
	}
	return fm, body
}

func TestRenderProcedure(t *testing.T) {
	t.Parallel()
	last := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	fm, body := render(t, record(t, memory.CompetencePayload{
		SkillName: "fix ld: cache mismatch in <path> (os=linux)",
		Triggers:  []memory.Trigger{{Signal: "ld: cache mismatch in <path>", Conditions: memory.Conditions{"os": "linux"}}},
		Recipe: []memory.Step{
			{Step: "run shell rm -rf {path}/cache", Tool: "shell", Validation: "exit code 0",
				ArgsSchema: map[string]any{"arguments": map[string]any{"command": "rm -rf {path}/cache"}, "variables": map[string]any{"path": map[string]any{"type": "string"}}}},
			{Step: "run make build", Tool: "make"},
		},
		FailureModes:  []string{"run make clean did not fix it"},
		Fallbacks:     []string{"run shell ccache --clear"},
		RequiredTools: []string{"shell", "make"},
		Performance:   &memory.Performance{Successes: 3, Failures: 1, LastSuccessAt: &last},
	}))
	require.Equal(t, "fix-ld-cache-mismatch-in-path-os-linux-bd8cd920", fm.Name)
	require.Equal(t, "fix ld: cache mismatch in <path> (os=linux): a procedure learned from experience by engram. Use it on: ld: cache mismatch in <path> (when os=linux). Success rate 0.67, smoothed: (successes+1)/(uses+2), 3 of 4 uses worked.", fm.Description)
	require.Equal(t, "Needs the tools shell, make.", fm.Compatibility)
	require.Equal(t, map[string]string{"engram-record": id.String(), "engram-version": "2", "engram-status": "active", "success-rate": "0.67"}, fm.Metadata)
	for _, want := range []string{
		"- On `ld: cache mismatch in <path>`, when os=linux\n",
		"1. run shell rm -rf {path}/cache\n   - Tool: `shell`\n   - Arguments: `{\"command\":\"rm -rf {path}/cache\"}`\n   - Fill in: `{path}` (from the triggering message)\n   - Check: exit code 0\n",
		"2. run make build\n   - Tool: `make`\n   - Check: the step reports no error.\n",
		"Seen to fail:\n\n- run make clean did not fix it\n\nThen try:\n\n- run shell ccache --clear\n",
		"- Successes: 3\n- Failures: 1\n- Success rate: 0.67",
		"- Last success: 2026-11-25T10:00:00Z\n",
		"- This procedure: `GET /v1/records/" + id.String() + "`",
		"  - `GET /v1/records/01a21517-d86d-7727-a46a-f39ab6fd11da`\n",
		"- Other sources:\n  - outcome `run-7`\n",
	} {
		require.Contains(t, body, want)
	}
	require.NotContains(t, body, "record://01a21517-d86d", "an episode is linked once, by its API path")
}

// A new version of a procedure keeps its name; another record gets
// another.
func TestNameStableAndDistinct(t *testing.T) {
	t.Parallel()
	a := skill.Name("fix the build", id)
	require.Equal(t, a, skill.Name("fix the build", id))
	other := uuid.MustParse("01a21517-dadb-73fa-ac29-0846bd8cd921")
	require.NotEqual(t, a, skill.Name("fix the build", other), "same skill name, same creation millisecond")
}

func TestNameEdgeCases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{strings.Repeat("very long skill name ", 20), "very-long-skill-name-very-long-skill-name-very-long-ski-bd8cd920"},
		{"Fix: `make` -- FAILED!!", "fix-make-failed-bd8cd920"},
		{"Réparer le cache — 日本語", "r-parer-le-cache-bd8cd920"},
		{"日本語だけ", "skill-bd8cd920"},
		{"", "skill-bd8cd920"},
		{"---", "skill-bd8cd920"},
		{"a--b", "a-b-bd8cd920"},
	} {
		got := skill.Name(tc.in, id)
		require.Regexp(t, nameRule, got, "%q", tc.in)
		require.LessOrEqual(t, len(got), skill.MaxNameLen, "%q", tc.in)
		require.NotContains(t, got, "--")
		require.True(t, strings.HasSuffix(got, "-bd8cd920"), got)
		if tc.want != "" {
			require.Equal(t, tc.want, got, "%q", tc.in)
		}
	}
	long := skill.Name(strings.Repeat("abcdefghij", 20), id)
	require.Len(t, long, skill.MaxNameLen)
	cutAtHyphen := skill.Name(strings.Repeat("a", 54)+" b", id)
	require.Equal(t, strings.Repeat("a", 54)+"-bd8cd920", cutAtHyphen, "no hyphen left where the cut falls")
}

// No fallbacks, no failure modes, no performance, no triggers, no steps:
// every section still says so.
func TestRenderEmptyProcedure(t *testing.T) {
	t.Parallel()
	fm, body := render(t, record(t, memory.CompetencePayload{SkillName: "   "}))
	require.Equal(t, "procedure-01a21517-dadb-73fa-ac29-0846bd8cd920-bd8cd920", fm.Name)
	require.Contains(t, body, "No trigger was recorded")
	require.Contains(t, body, "No steps were recorded.")
	require.Contains(t, body, "No failure was recorded under these conditions, and no fallback.")
	require.Contains(t, body, "- No outcomes recorded yet.\n")
	require.NotContains(t, body, "Then try:")
	require.NotContains(t, body, "Seen to fail:")
	require.Empty(t, fm.Compatibility)
}

// Everything too long or too many: the description is cut to 1,024
// characters at a rune boundary, the body stays under 500 lines, and
// newlines, backticks and YAML's own syntax in the payload break neither.
func TestRenderOversized(t *testing.T) {
	t.Parallel()
	var p memory.CompetencePayload
	p.SkillName = "ü: \"quoted\" # not a comment\n---\nname: evil"
	for i := range 200 {
		p.Triggers = append(p.Triggers, memory.Trigger{Signal: fmt.Sprintf("érror %d: `boom`\nsecond line ---", i), Conditions: memory.Conditions{"os": "linux"}})
		p.Recipe = append(p.Recipe, memory.Step{Step: fmt.Sprintf("step %d\n## not a heading", i), Tool: "shell", Validation: "ok",
			ArgsSchema: map[string]any{"arguments": map[string]any{"command": strings.Repeat("x", 2000)}}})
		p.FailureModes = append(p.FailureModes, fmt.Sprintf("failure %d", i))
		p.Fallbacks = append(p.Fallbacks, fmt.Sprintf("fallback %d", i))
		p.RequiredTools = append(p.RequiredTools, fmt.Sprintf("tool-%d", i))
	}
	p.Performance = &memory.Performance{Successes: 1000, Failures: 10}
	rec := record(t, p)
	for i := range 200 {
		rec.Relations = append(rec.Relations, memory.Relation{Predicate: memory.DerivedFrom, TargetID: uuid.New()})
		rec.Provenance.Sources = append(rec.Provenance.Sources, memory.Source{Kind: "outcome", Ref: fmt.Sprintf("run-%d", i)})
	}
	fm, body := render(t, rec)
	require.Equal(t, "quoted-not-a-comment-name-evil-bd8cd920", fm.Name, "ü is not a letter the rule allows: dropped")
	require.Equal(t, skill.MaxDescriptionLen, len(fm.Description), "cut to the limit in bytes, so within it in characters")
	require.True(t, strings.HasSuffix(fm.Description, "…"))
	require.NotContains(t, fm.Description, "\n")
	require.NotContains(t, body, "\n## not a heading", "a newline in the payload does not make a section")
	require.NotContains(t, body, "`boom`", "backticks cannot close a code span early")
	require.Contains(t, body, "- … and 180 more in the record\n")
	require.Contains(t, body, "\n150 more steps are in the record.\n")
	require.Equal(t, 1, strings.Count(body, "\n## Steps\n"))
}

func TestRenderRefusesOtherTypes(t *testing.T) {
	t.Parallel()
	_, _, err := skill.Render(memory.Record{ID: id, Type: memory.Semantic, Payload: json.RawMessage(`{"kind":"semantic"}`)})
	require.ErrorIs(t, err, skill.ErrNotCompetence)
	_, _, err = skill.Render(memory.Record{ID: id, Type: memory.Competence, Payload: json.RawMessage(`[1]`)})
	require.Error(t, err)
	require.NotErrorIs(t, err, skill.ErrNotCompetence)
}
