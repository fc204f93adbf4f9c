package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/engram-dev/engram/memory"
)

// learnedTag marks the procedures consolidation learned (package
// consolidate's LearnedTag; the CLI links only api and memory).
const learnedTag = "learned"

// procedures serves `engram procedures`: the learned procedures with
// their trigger, conditions, success rate, evidence and state (issue 11,
// operator view).
func procedures(c *cli, ctx context.Context, args []string) error {
	fs := c.flags("procedures")
	var statuses listFlag
	fs.Var(&statuses, "status", "")
	if _, err := parse(fs, args, 0, "[--status S]... [--json]"); err != nil {
		return err
	}
	q := url.Values{"type": {string(memory.Competence)}, "tag": {learnedTag}, "status": statuses, "limit": {"1000"}}
	return c.call(ctx, "GET", "/v1/records", q, nil, c.orTable(c.procedureTable))
}

func (c *cli) procedureTable(b []byte) error {
	var page struct {
		Records []memory.Record `json:"records"`
	}
	if err := json.Unmarshal(b, &page); err != nil {
		return fmt.Errorf("decode page: %w", err)
	}
	if len(page.Records) == 0 {
		fmt.Fprintln(c.stdout, "no learned procedures")
		return nil
	}
	w := c.tabwriter()
	row(w, "ID", "SKILL", "TRIGGER", "CONDITIONS", "SUCCESS", "EVIDENCE", "STATE")
	for _, r := range page.Records {
		var p memory.CompetencePayload
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			return fmt.Errorf("decode procedure %s: %w", r.ID, err)
		}
		trigger, conds := "", "-"
		if len(p.Triggers) > 0 {
			trigger = shorten(p.Triggers[0].Signal)
			if c := conditionText(p.Triggers[0].Conditions); c != "" {
				conds = c
			}
		}
		row(w, r.ID.String(), p.SkillName, trigger, conds, successRate(p.Performance),
			strconv.Itoa(len(r.Provenance.Sources)), procedureState(r))
	}
	return w.Flush()
}

// successRate is "rate (s/n)", the rate smoothed as retrieval ranks by
// it, (s+1)/(s+f+2).
func successRate(perf *memory.Performance) string {
	if perf == nil {
		return "-"
	}
	n := perf.Successes + perf.Failures
	return fmt.Sprintf("%.2f (%d/%d)", memory.SuccessRate(perf.Successes, perf.Failures), perf.Successes, n)
}

// procedureState is probation, active, or the record's status.
func procedureState(r memory.Record) string {
	if r.Status == memory.Active && slices.Contains(r.Tags, memory.ProbationTag) {
		return "probation"
	}
	return string(r.Status)
}

func conditionText(conds memory.Conditions) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(conds)) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, conds[k]))
	}
	return strings.Join(parts, ", ")
}

// printRecord prints a record indented, except a competence record, whose
// recipe it prints for a person to follow; --json prints it as it came.
func (c *cli) printRecord(b []byte) error {
	var r memory.Record
	if c.json || json.Unmarshal(b, &r) != nil || r.Type != memory.Competence {
		return c.printJSON(b)
	}
	var p memory.CompetencePayload
	if err := json.Unmarshal(r.Payload, &p); err != nil {
		return c.printJSON(b)
	}
	out := &strings.Builder{}
	fmt.Fprintf(out, "%s\n", p.SkillName)
	fmt.Fprintf(out, "  record %s, version %d, %s, confidence %.2f, tags %s\n", r.ID, r.Version, procedureState(r), r.Confidence, strings.Join(r.Tags, " "))
	for _, t := range p.Triggers {
		fmt.Fprintf(out, "When: %s\n", t.Signal)
		if c := conditionText(t.Conditions); c != "" {
			fmt.Fprintf(out, "  if %s\n", c)
		}
	}
	if len(p.RequiredTools) > 0 {
		fmt.Fprintf(out, "Tools: %s\n", strings.Join(p.RequiredTools, ", "))
	}
	fmt.Fprintln(out, "Steps:")
	for i, s := range p.Recipe {
		fmt.Fprintf(out, "  %d. %s\n", i+1, s.Step)
		if vars, ok := s.ArgsSchema["variables"].(map[string]any); ok && len(vars) > 0 {
			var names []string
			for _, n := range slices.Sorted(maps.Keys(vars)) {
				names = append(names, "{"+n+"}")
			}
			fmt.Fprintf(out, "     variables: %s\n", strings.Join(names, ", "))
		}
		if s.Validation != "" {
			fmt.Fprintf(out, "     check: %s\n", s.Validation)
		}
	}
	if len(p.FailureModes) > 0 {
		fmt.Fprintln(out, "Known failures:")
		for _, f := range p.FailureModes {
			fmt.Fprintf(out, "  - %s\n", f)
		}
	}
	if len(p.Fallbacks) > 0 {
		fmt.Fprintln(out, "Otherwise try:")
		for _, f := range p.Fallbacks {
			fmt.Fprintf(out, "  - %s\n", f)
		}
	}
	if perf := p.Performance; perf != nil {
		fmt.Fprintf(out, "Record: %s, %s, success rate %s", count(perf.Successes, "success", "successes"), count(perf.Failures, "failure"), successRate(perf))
		if perf.LastSuccessAt != nil {
			fmt.Fprintf(out, ", last success %s", stamp(*perf.LastSuccessAt))
		}
		if perf.LastFailureAt != nil {
			fmt.Fprintf(out, ", last failure %s", stamp(*perf.LastFailureAt))
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintf(out, "Evidence: %s\n", count(len(r.Provenance.Sources), "source"))
	_, err := fmt.Fprint(c.stdout, out.String())
	return err
}
