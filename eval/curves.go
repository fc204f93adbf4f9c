package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Curves is a run's learning curves as data: what `engram-eval run` writes
// to curve.json beside report.md and curve.svg, and what engramd's console
// draws on its Learning page (console.eval_report). The points are the
// chart's: [PhaseCurve] of each agent's report.
type Curves struct {
	// Command is the command line that reproduces the run.
	Command string `json:"command"`
	// Made is when the run finished, UTC.
	Made time.Time `json:"made"`
	// Seed is the world's seed.
	Seed uint64 `json:"seed"`
	// Window is the number of episodes a point is the success rate of;
	// windows restart at the drift point and at the start of deployment,
	// so a phase's last window may be shorter.
	Window int `json:"window"`
	// X and Y say what the axes are: x the episode (a point spans
	// episodes [from, to)), y the share of those episodes that succeeded,
	// from 0 to 1.
	X string `json:"x"`
	Y string `json:"y"`
	// Episodes and Deployment are the numbers of acquisition and
	// deployment episodes the agents ran: deployment starts at episode
	// Episodes, with memory frozen.
	Episodes   int `json:"episodes"`
	Deployment int `json:"deployment"`
	// DriftAt is the episode from which the drifted problems' fixes
	// change; 0 for no drift.
	DriftAt int `json:"drift_at"`
	// Agents are the curves, one per agent, in the order of the reports
	// (engram, raw episodes, no memory).
	Agents []AgentCurve `json:"agents"`
}

// AgentCurve is one agent's learning curve.
type AgentCurve struct {
	Agent  string  `json:"agent"`
	Points []Point `json:"points"`
}

// The axes of [Curves].
const (
	CurveX = "episode"
	CurveY = "success rate"
)

// NewCurves is the learning curves of the reports of one run, made at
// made by command. The reports must share one configuration.
func NewCurves(reports []Report, command string, made time.Time) (Curves, error) {
	if len(reports) == 0 {
		return Curves{}, errors.New("curves: no report")
	}
	cfg := reports[0].Config
	for _, r := range reports[1:] {
		if r.Config != cfg {
			return Curves{}, fmt.Errorf("curves: %s ran another configuration than %s", r.Agent, reports[0].Agent)
		}
	}
	c := Curves{Command: command, Made: made.UTC(), Seed: cfg.Seed, Window: cfg.withDefaults().Window, X: CurveX, Y: CurveY,
		Episodes: cfg.Episodes, DriftAt: max(cfg.DriftAt, 0)}
	for _, o := range reports[0].Outcomes {
		if o.Phase == Deployment {
			c.Deployment++
		}
	}
	for _, r := range reports {
		c.Agents = append(c.Agents, AgentCurve{Agent: r.Agent, Points: PhaseCurve(r)})
	}
	return c, nil
}

// WriteJSON writes c as indented JSON.
func (c Curves) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encode curves: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
