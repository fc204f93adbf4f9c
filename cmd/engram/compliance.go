package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/engram-dev/engram/api"
)

// complianceCommand serves `engram compliance`: the latest compliance
// report (write-path RFC §12.10.5), which takes an operator key.
func complianceCommand(c *cli, ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "help" {
		return errHelp
	}
	if _, err := parse(c.flags("compliance"), args, 0, "[--json]"); err != nil {
		return err
	}
	return c.call(ctx, "GET", "/v1/compliance", nil, nil, c.orTable(c.complianceTables))
}

// complianceTables prints a compliance report: each retention class with
// what is past it, by tenant; the violations; the erasures not yet
// complete.
func (c *cli) complianceTables(b []byte) error {
	var rep api.ComplianceReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("decode compliance report: %w", err)
	}
	run := ""
	if rep.RunID != 0 {
		run = fmt.Sprintf(" by run %d", rep.RunID)
	}
	fmt.Fprintf(c.stdout, "Compliance report of %s%s: %s past retention, %s\n\n",
		stamp(rep.GeneratedAt), run, count(int(rep.PastRetention), "record"), count(len(rep.Violations), "violation"))

	w := c.tabwriter()
	row(w, "CLASS", "MAX AGE", "ACTION", "CUTOFF", "PAST RETENTION", "RETRIEVABLE")
	for _, cl := range rep.Retention {
		maxAge, cutoff := cl.MaxAge, "-"
		if maxAge == "" {
			maxAge = "none"
		}
		if cl.Cutoff != nil {
			cutoff = stamp(*cl.Cutoff)
		}
		row(w, cl.Class, maxAge, cl.Action, cutoff, num(cl.PastRetention), num(cl.Retrievable))
	}
	if err := w.Flush(); err != nil {
		return err
	}

	var shown bool
	for _, cl := range rep.Retention {
		for _, t := range cl.Tenants {
			if !shown {
				fmt.Fprintln(c.stdout)
				w = c.tabwriter()
				row(w, "TENANT", "CLASS", "PAST RETENTION", "RETRIEVABLE", "OLDEST CREATED")
				shown = true
			}
			row(w, t.Tenant, cl.Class, num(t.PastRetention), num(t.Retrievable), stamp(t.OldestCreatedAt))
		}
	}
	if shown {
		if err := w.Flush(); err != nil {
			return err
		}
	}

	fmt.Fprintln(c.stdout)
	if len(rep.Violations) == 0 {
		fmt.Fprintln(c.stdout, "no violations")
	} else {
		w = c.tabwriter()
		row(w, "SEVERITY", "VIOLATION", "TENANT", "CLASS", "COUNT", "EXAMPLES", "DETAIL")
		for _, v := range rep.Violations {
			class, ids := v.Class, strings.Join(v.RecordIDs, ",")
			if class == "" {
				class = "-"
			}
			if ids == "" {
				ids = "-"
			}
			row(w, v.Severity, v.Kind, v.Tenant, class, num(v.Count), ids, v.Detail)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}

	fmt.Fprintln(c.stdout)
	switch e := rep.Erasures; {
	case !e.Checked:
		fmt.Fprintf(c.stdout, "erasures not checked: %s\n", e.Detail)
	case len(e.Incomplete) == 0:
		fmt.Fprintln(c.stdout, "no erasure incomplete")
	default:
		w = c.tabwriter()
		row(w, "ERASURE", "STATUS", "REQUESTED", "DETAIL")
		for _, p := range e.Incomplete {
			row(w, p.ID, p.Status, stamp(p.RequestedAt), p.Detail)
		}
		return w.Flush()
	}
	return nil
}
