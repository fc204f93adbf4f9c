package eval

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// Point is a success rate over the episodes [From, To).
type Point struct {
	From int     `json:"from"`
	To   int     `json:"to"`
	Rate float64 `json:"rate"`
}

// PhaseCurve is a report's success rate per window of Config.Window
// episodes. Windows restart at the drift point and at the start of
// deployment, so that no window mixes two phases and the drop at drift
// shows where it happens; the last window of a phase may be shorter.
func PhaseCurve(r Report) []Point {
	size := r.Config.withDefaults().Window
	var out []Point
	start := 0
	for i := range r.Outcomes {
		if i > start && (i-start == size || startsPhase(r, i)) {
			out = append(out, windowRate(r.Outcomes[start:i]))
			start = i
		}
	}
	if start < len(r.Outcomes) {
		out = append(out, windowRate(r.Outcomes[start:]))
	}
	return out
}

// startsPhase reports whether the i-th outcome, not the first, starts a
// phase: the first after drift, or the first of deployment.
func startsPhase(r Report, i int) bool {
	prev, o := r.Outcomes[i-1], r.Outcomes[i]
	drift := r.Config.DriftAt
	return prev.Phase != o.Phase || (drift > 0 && prev.Episode < drift && o.Episode >= drift)
}

// windowRate is the success rate of a window of outcomes, not empty.
func windowRate(window []Outcome) Point {
	ok := 0
	for _, o := range window {
		if o.Success {
			ok++
		}
	}
	return Point{From: window[0].Episode, To: window[len(window)-1].Episode + 1, Rate: float64(ok) / float64(len(window))}
}

// deploymentStart is the first deployment episode of the reports; -1
// without deployment.
func deploymentStart(reports []Report) int {
	for _, r := range reports {
		for _, o := range r.Outcomes {
			if o.Phase == Deployment {
				return o.Episode
			}
		}
	}
	return -1
}

// The chart's geometry, in pixels: a fixed 800×400 canvas GitHub shows as
// it is, the plot on the left and the legend on the right.
const (
	chartWidth, chartHeight = 800, 400
	plotLeft, plotRight     = 60, 620
	plotTop, plotBottom     = 64, 340
	legendLeft              = 640
)

// palette colours the agents in the order of the reports: engram's blue,
// the raw-episode control's orange, no memory's grey, then others.
var palette = []string{"#0969da", "#d4760a", "#6e7781", "#1a7f37", "#8250df", "#cf222e"}

// WriteSVG draws the reports' PhaseCurve as an SVG line chart: one line
// per agent, x the episode, y the success rate from 0 to 1, a dashed
// line at the drift point and at the start of deployment. Plain SVG 1.1
// with generic fonts and no script, so that GitHub renders it.
func WriteSVG(w io.Writer, reports []Report) error {
	c := newChart(reports)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartWidth, chartHeight, chartWidth, chartHeight)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", chartWidth, chartHeight)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="16" font-weight="bold">%s</text>`+"\n", plotLeft, escape(c.title()))
	c.axes(&b)
	c.markers(&b)
	for i, r := range reports {
		c.line(&b, r, palette[i%len(palette)])
		c.legend(&b, i, r.Agent, palette[i%len(palette)])
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// chart is what the drawing needs to know of the reports.
type chart struct {
	// episodes is the number of episodes the x axis spans.
	episodes int
	window   int
	seed     uint64
	// drift and deploy are the marked episodes; -1 for none.
	drift, deploy int
}

func newChart(reports []Report) chart {
	c := chart{episodes: 1, window: Config{}.withDefaults().Window, drift: -1, deploy: deploymentStart(reports)}
	for _, r := range reports {
		c.window, c.seed = r.Config.withDefaults().Window, r.Config.Seed
		if r.Config.DriftAt > 0 {
			c.drift = r.Config.DriftAt
		}
		for _, o := range r.Outcomes {
			c.episodes = max(c.episodes, o.Episode+1)
		}
	}
	return c
}

func (c chart) title() string {
	return fmt.Sprintf("Success rate per window of %d episodes (seed %d)", c.window, c.seed)
}

// x is the abscissa of an episode boundary.
func (c chart) x(episode float64) float64 {
	return plotLeft + episode/float64(c.episodes)*(plotRight-plotLeft)
}

// y is the ordinate of a success rate.
func (c chart) y(rate float64) float64 {
	return plotBottom - rate*(plotBottom-plotTop)
}

// axes draws the frame, the grid, the ticks and the axis titles.
func (c chart) axes(b *strings.Builder) {
	for _, rate := range []float64{0, 0.25, 0.5, 0.75, 1} {
		y := c.y(rate)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#d0d7de" stroke-width="1"/>`+"\n", plotLeft, y, plotRight, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%.2f</text>`+"\n", plotLeft-6, y, rate)
	}
	step := tickStep(c.episodes)
	for e := 0; e <= c.episodes; e += step {
		x := c.x(float64(e))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#24292f" stroke-width="1"/>`+"\n", x, plotBottom, x, plotBottom+5)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x, plotBottom+18, e)
	}
	fmt.Fprintf(b, `<polyline fill="none" stroke="#24292f" stroke-width="1" points="%d,%d %d,%d %d,%d"/>`+"\n",
		plotLeft, plotTop, plotLeft, plotBottom, plotRight, plotBottom)
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">episode</text>`+"\n", (plotLeft+plotRight)/2, plotBottom+36)
	fmt.Fprintf(b, `<text x="16" y="%d" text-anchor="middle" transform="rotate(-90 16 %d)">success rate</text>`+"\n",
		(plotTop+plotBottom)/2, (plotTop+plotBottom)/2)
}

// tickStep is the least round step (1, 2 or 5 times a power of ten) that
// cuts an axis of n episodes in at most ten whole steps.
func tickStep(n int) int {
	for p := 1; ; p *= 10 {
		for _, m := range []int{1, 2, 5} {
			if n/(m*p) <= 10 {
				return m * p
			}
		}
	}
}

// markers draws the dashed lines at the drift point and at the start of
// deployment. Their labels sit above the plot, where no curve runs (a
// good curve runs along the top), each on a row of its own so that close
// markers keep them apart.
func (c chart) markers(b *strings.Builder) {
	if c.drift >= 0 && c.drift < c.episodes {
		c.marker(b, c.drift, plotTop-20, "drift")
	}
	if c.deploy >= 0 {
		c.marker(b, c.deploy, plotTop-6, "deployment (frozen)")
	}
}

// marker draws one dashed vertical line up to its label at labelY, to the
// right of the line: above the legend, which starts lower, so that a late
// marker's label may run past the plot.
func (c chart) marker(b *strings.Builder, episode, labelY int, label string) {
	x := c.x(float64(episode))
	fmt.Fprintf(b, `<line class="marker" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#57606a" stroke-width="1.5" stroke-dasharray="6 4"/>`+"\n",
		x, labelY-10, x, plotBottom)
	fmt.Fprintf(b, `<text x="%.1f" y="%d" fill="#57606a">%s</text>`+"\n", x+4, labelY, escape(label))
}

// line draws an agent's curve, a point at the middle of each window.
func (c chart) line(b *strings.Builder, r Report, colour string) {
	var pts []string
	for _, p := range PhaseCurve(r) {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", c.x(float64(p.From+p.To)/2), c.y(p.Rate)))
	}
	fmt.Fprintf(b, `<polyline class="agent" fill="none" stroke="%s" stroke-width="2.5" stroke-linejoin="round" points="%s">`,
		colour, strings.Join(pts, " "))
	fmt.Fprintf(b, `<title>%s</title></polyline>`+"\n", escape(r.Agent))
}

// legend draws the i-th agent's entry.
func (c chart) legend(b *strings.Builder, i int, agent, colour string) {
	y := plotTop + 16 + 22*i
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"/>`+"\n", legendLeft, y, legendLeft+24, y, colour)
	fmt.Fprintf(b, `<text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n", legendLeft+30, y, escape(agent))
}

// escape is s as XML character data.
func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}
