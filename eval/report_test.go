package eval

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteMarkdown(t *testing.T) {
	t.Parallel()
	r := newRun(t)
	var b strings.Builder
	meta := ReportMeta{Command: "make eval SEED=12", Chart: "eval.svg"}
	require.NoError(t, WriteMarkdown(&b, []Report{r.engram, r.raw, r.none}, meta))
	doc := b.String()

	// Everything that reproduces the run.
	require.Contains(t, doc, "```sh\nmake eval SEED=12\n```")
	v := reflect.ValueOf(r.cfg)
	for _, f := range reflect.VisibleFields(v.Type()) {
		require.Contains(t, doc, fmt.Sprintf("| %s | %v |\n", f.Name, v.FieldByIndex(f.Index).Interface()))
	}
	require.Contains(t, doc, "| deployment episodes | 2 |\n")
	require.Contains(t, doc, "![success rate per window of episodes](eval.svg)")

	// The five targets are met in this run.
	require.Equal(t, 5, strings.Count(section(doc, "## Targets"), "✓"))
	require.Contains(t, doc, "| memory correctness impact (engram − no memory, success rate) | 0.8 | ≥ 0.5 | ✓ |")
	require.Contains(t, doc, "| steps per success in deployment (engram − raw episodes) | -3 | < 0 | ✓ |")

	require.Contains(t, doc, "| engram | 0.75 | 3.3 | 0.75 | 3.0 | 1.00 | 4.0 |")
	require.Contains(t, doc, "| no memory | 0.00 | n/a | 0.00 | n/a | 0.00 | n/a |")
	// Per problem: engram, raw episodes, no memory.
	require.Contains(t, doc, "| 0 | no | 4 / 0 | 1 | n/a | 1 | n/a | never | n/a |")
	require.Contains(t, doc, "| 1 | yes | 2 / 2 | 0 | 1 | never | never | never | never |")
	require.Contains(t, doc, "| engram | 10 | 7 | 6 | 0.60 | 0.70 |")
	require.Contains(t, doc, "works as it stands in ≥ 90% of later ones (max; median over drifted problems) | 1; 1 |")
	require.Contains(t, doc, "| competence | 2 | 0 | 0 |")
	require.Contains(t, doc, "| **total** | 12 | 10 | 0 |")
	requireTablesWellFormed(t, doc)
}

// A run without drift nor deployment still makes a well-formed report,
// with the figures it cannot measure marked n/a.
func TestWriteMarkdownNoDriftNoDeployment(t *testing.T) {
	t.Parallel()
	cfg := Config{Seed: 3, Episodes: 3}
	var b strings.Builder
	require.NoError(t, WriteMarkdown(&b, []Report{script(t, engramAgent, cfg, "0-9 0+3 0+3")}, ReportMeta{}))
	doc := b.String()
	require.Contains(t, doc, "| deployment episodes | 0 |\n")
	require.Contains(t, doc, "| memory correctness impact (engram − no memory, success rate) | n/a | ≥ 0.5 | n/a |")
	require.NotContains(t, doc, "![")
	require.NotContains(t, doc, "```sh")
	requireTablesWellFormed(t, doc)
}

func TestWriteMarkdownRefuses(t *testing.T) {
	t.Parallel()
	require.Error(t, WriteMarkdown(io.Discard, nil, ReportMeta{}))
	r := newRun(t)
	other := r.raw
	other.Config.Seed++
	require.ErrorContains(t, WriteMarkdown(io.Discard, []Report{r.engram, other}, ReportMeta{}), "another configuration")
	require.ErrorIs(t, WriteMarkdown(failingWriter{}, []Report{r.engram}, ReportMeta{}), errWrite)
}

var errWrite = errors.New("disk full")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errWrite }

// section is doc from the heading to the next one.
func section(doc, heading string) string {
	_, rest, ok := strings.Cut(doc, heading+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		return rest[:i]
	}
	return rest
}

// requireTablesWellFormed checks that every row of every Markdown table
// has as many cells as the table's header.
func requireTablesWellFormed(t *testing.T, doc string) {
	t.Helper()
	header := -1
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "|") {
			header = -1
			continue
		}
		n := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|")
		if header < 0 {
			header = n
		}
		require.Equal(t, header, n, "row %q", line)
	}
}

func TestWriteSVG(t *testing.T) {
	t.Parallel()
	r := newRun(t)
	r.none.Agent = `no <memory> & "friends"`
	reports := []Report{r.engram, r.raw, r.none}
	var b bytes.Buffer
	require.NoError(t, WriteSVG(&b, reports))

	svg := parseSVG(t, b.Bytes())
	require.Len(t, svg.lines, 3, "one polyline per agent")
	for i, l := range svg.lines {
		require.Equal(t, reports[i].Agent, l.title)
		require.Len(t, l.points, len(PhaseCurve(reports[i])))
		for _, p := range l.points {
			require.True(t, p[0] >= plotLeft && p[0] <= plotRight && p[1] >= plotTop && p[1] <= plotBottom, "point %v off the plot", p)
		}
	}
	// The engram agent's last window (deployment, 2 of 2) is at the top,
	// in the middle of episodes 8 and 9 of 10.
	last := svg.lines[0].points[len(svg.lines[0].points)-1]
	require.Equal(t, [2]float64{plotLeft + 0.9*(plotRight-plotLeft), plotTop}, last)
	require.Contains(t, svg.texts, "drift")
	require.Contains(t, svg.texts, "deployment (frozen)")
	require.Contains(t, svg.texts, r.none.Agent, "the legend")
	require.Equal(t, 2, svg.markers)
}

func TestWriteSVGNoDriftNoDeployment(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, WriteSVG(&b, []Report{script(t, engramAgent, Config{Episodes: 3}, "0-9 0+3 0+3")}))
	svg := parseSVG(t, b.Bytes())
	require.Len(t, svg.lines, 1)
	require.NotContains(t, svg.texts, "drift")
	require.NotContains(t, svg.texts, "deployment (frozen)")
	require.Zero(t, svg.markers)
}

// chartSeen is what a test reads back of a chart.
type chartSeen struct {
	lines   []lineSeen
	texts   []string
	markers int
}

type lineSeen struct {
	title  string
	points [][2]float64
}

// parseSVG decodes the whole document as XML, failing on any error, and
// collects the agents' lines, the texts and the markers.
func parseSVG(t *testing.T, doc []byte) chartSeen {
	t.Helper()
	var out chartSeen
	d := xml.NewDecoder(bytes.NewReader(doc))
	var stack []string
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		switch tok := tok.(type) {
		case xml.StartElement:
			stack = append(stack, tok.Name.Local)
			if len(stack) == 1 {
				require.Equal(t, "svg", tok.Name.Local)
				require.Equal(t, "http://www.w3.org/2000/svg", tok.Name.Space)
			}
			require.NotEqual(t, "script", tok.Name.Local)
			switch attr(tok, "class") {
			case "agent":
				out.lines = append(out.lines, lineSeen{points: parsePoints(t, attr(tok, "points"))})
			case "marker":
				out.markers++
				require.NotEmpty(t, attr(tok, "stroke-dasharray"), "a marker is dashed")
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) == 0 {
				continue
			}
			switch stack[len(stack)-1] {
			case "text":
				out.texts = append(out.texts, string(tok))
			case "title":
				out.lines[len(out.lines)-1].title = string(tok)
			}
		}
	}
	require.Empty(t, stack, "every element is closed")
	return out
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func parsePoints(t *testing.T, s string) [][2]float64 {
	t.Helper()
	var out [][2]float64
	for _, pair := range strings.Fields(s) {
		xs, ys, ok := strings.Cut(pair, ",")
		require.True(t, ok, pair)
		x, err := strconv.ParseFloat(xs, 64)
		require.NoError(t, err)
		y, err := strconv.ParseFloat(ys, 64)
		require.NoError(t, err)
		out = append(out, [2]float64{x, y})
	}
	return out
}

// Windows restart at drift (episode 4) and at deployment (episode 8).
func TestPhaseCurve(t *testing.T) {
	t.Parallel()
	r := newRun(t)
	got := PhaseCurve(r.engram)
	require.Equal(t, []Point{
		{From: 0, To: 3, Rate: 2.0 / 3},
		{From: 3, To: 4, Rate: 1},
		{From: 4, To: 7, Rate: 2.0 / 3},
		{From: 7, To: 8, Rate: 1},
		{From: 8, To: 10, Rate: 1},
	}, got)
	require.Empty(t, PhaseCurve(Report{}))
}

func TestTickStep(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]int{1: 1, 10: 1, 11: 2, 21: 2, 22: 5, 54: 5, 55: 10, 110: 20, 400: 50, 1000: 100} {
		require.Equal(t, want, tickStep(n), "n=%d", n)
	}
}

func TestSparkline(t *testing.T) {
	t.Parallel()
	// 0.5 is level 3.5 of 0–7, rounded up to ▅; out of range clamps; not
	// measured is blank.
	require.Equal(t, "▁▅█ █▁", Sparkline([]float64{0, 0.5, 1, NotMeasured, 1.5, -1}))
	require.Empty(t, Sparkline(nil))
}

func TestProgressBar(t *testing.T) {
	t.Parallel()
	require.Equal(t, "[█████░░░░░] 5/10", ProgressBar(5, 10, 10))
	require.Equal(t, "[██░░░░] 1/3", ProgressBar(1, 3, 6))
	require.Equal(t, "[░░░░] 0/0", ProgressBar(0, 0, 4))
	require.Equal(t, "[█████] 12/10", ProgressBar(12, 10, 5))
	require.Equal(t, "[░░░] -1/10", ProgressBar(-1, 10, 3))
}
