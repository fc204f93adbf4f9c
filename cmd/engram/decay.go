package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
)

// decayCommand serves `engram decay preview` and `engram decay stats`.
func decayCommand(c *cli, ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageErrorf("decay needs a command: preview or stats")
	}
	switch args[0] {
	case "preview":
		return decayPreviewCommand(c, ctx, args[1:])
	case "stats":
		if _, err := parse(c.flags("decay stats"), args[1:], 0, ""); err != nil {
			return err
		}
		return c.call(ctx, "GET", "/v1/stats/salience", nil, nil, c.orTable(c.statsTable))
	case "help":
		return errHelp
	}
	return usageErrorf("unknown command decay %s", args[0])
}

// decayPreviewCommand sends the decay section of a configuration file to
// POST /v1/decay/preview and prints what it would do beside the
// configuration in force. It changes nothing.
func decayPreviewCommand(c *cli, ctx context.Context, args []string) error {
	fs := c.flags("decay preview")
	file := fs.String("config", "", "")
	at := fs.String("at", "+30d", "")
	if _, err := parse(fs, args, 0, "--config FILE [--at +30d|TIME]"); err != nil {
		return err
	}
	if *file == "" {
		return usageErrorf("decay preview: --config FILE is required: an engramd configuration with the decay section to preview")
	}
	proposed, err := decaySection(*file)
	if err != nil {
		return err
	}
	body, err := json.Marshal(api.DecayPreviewRequest{At: *at, Proposed: proposed})
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	return c.call(ctx, "POST", "/v1/decay/preview", nil, body, c.orTable(c.previewTable))
}

// decaySection reads the decay section of an engramd configuration file as
// JSON; a file without one proposes the defaults.
func decaySection(path string) (json.RawMessage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("read %s: not YAML: %w", path, err)
	}
	section, ok := doc["decay"]
	if !ok || section == nil {
		section = map[string]any{}
	}
	out, err := json.Marshal(section)
	if err != nil {
		return nil, fmt.Errorf("read %s: the decay section: %w", path, err)
	}
	return out, nil
}

func (c *cli) previewTable(b []byte) error {
	var pv api.DecayPreview
	if err := json.Unmarshal(b, &pv); err != nil {
		return fmt.Errorf("decode preview: %w", err)
	}
	// Of the configurations, the table shows the prune threshold.
	var current, proposed struct {
		PruneThreshold float64 `json:"prune_threshold"`
	}
	if err := errors.Join(json.Unmarshal(pv.Current, &current), json.Unmarshal(pv.Proposed, &proposed)); err != nil {
		return fmt.Errorf("decode preview: %w", err)
	}
	horizon := "+" + span(pv.At.Sub(pv.Now))
	fmt.Fprintf(c.stdout, "Decay preview: now %s and at %s (%s); nothing was changed.\n", stamp(pv.Now), stamp(pv.At), horizon)
	fmt.Fprintf(c.stdout, "Prune threshold: %s in force, %s proposed.\n\n", salience(current.PruneThreshold), salience(proposed.PruneThreshold))
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"TYPE", "RECORDS", "PROFILES", "WHEN"}
	for _, b := range pv.Bounds {
		head = append(head, "≤"+strconv.FormatFloat(b, 'f', -1, 64))
	}
	head = append(head, ">"+strconv.FormatFloat(pv.Bounds[len(pv.Bounds)-1], 'f', -1, 64), "MEAN", "PRUNED", "")
	row(w, head...)
	shown := false
	for _, t := range memory.Types {
		tp := pv.Types[t]
		if tp == nil || tp.Records == 0 {
			continue
		}
		shown = true
		for _, p := range []struct {
			name string
			pr   api.SalienceProjection
		}{{"in force", tp.Current}, {"proposed", tp.Proposed}} {
			for _, when := range []struct {
				name  string
				h     api.SalienceHistogram
				prune int
			}{{"now", p.pr.Now, p.pr.PruneNow}, {horizon, p.pr.At, p.pr.PruneAt}} {
				cols := []string{string(t), strconv.Itoa(tp.Records), p.name, when.name}
				for _, n := range when.h.Counts {
					cols = append(cols, strconv.Itoa(n))
				}
				row(w, append(cols, salience(when.h.Mean), strconv.Itoa(when.prune), "")...)
			}
		}
	}
	if !shown {
		fmt.Fprintln(c.stdout, "No live records.")
		return nil
	}
	return w.Flush()
}

func (c *cli) statsTable(b []byte) error {
	var st api.SalienceStats
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("decode statistics: %w", err)
	}
	fmt.Fprintf(c.stdout, "Salience of the active set at %s; prune threshold %s.\n\n", stamp(st.At), salience(st.PruneThreshold))
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"TYPE", "RECORDS"}
	for _, b := range st.Bounds {
		head = append(head, "≤"+strconv.FormatFloat(b, 'f', -1, 64))
	}
	row(w, append(head, ">"+strconv.FormatFloat(st.Bounds[len(st.Bounds)-1], 'f', -1, 64), "MEAN", "PRUNABLE", "")...)
	for _, t := range memory.Types {
		ts := api.SalienceTypeStats{}
		if st.Types[t] != nil {
			ts = *st.Types[t]
		}
		cols := []string{string(t), strconv.Itoa(ts.Records)}
		for _, n := range ts.Salience.Counts {
			cols = append(cols, strconv.Itoa(n))
		}
		row(w, append(cols, salience(ts.Salience.Mean), strconv.Itoa(ts.Prunable), "")...)
	}
	return w.Flush()
}

// span writes a horizon to the minute, in whole days or hours when it is
// one: 30d, 12h, 1h30m0s.
func span(d time.Duration) string {
	d = d.Round(time.Minute)
	switch {
	case d > 0 && d%(24*time.Hour) == 0:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	case d > 0 && d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	}
	return d.String()
}
