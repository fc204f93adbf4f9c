package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
)

// count is n things in words: "1 skill", "2 skills"; many is the plural
// form, when it is not one+"s" ("1 success", "2 successes").
func count(n int, one string, many ...string) string {
	if n == 1 {
		return "1 " + one
	}
	if len(many) > 0 {
		return strconv.Itoa(n) + " " + many[0]
	}
	return strconv.Itoa(n) + " " + one + "s"
}

// summaryWidth bounds the summary column, in characters.
const summaryWidth = 72

// write prints b as it came, ending in a newline.
func (c *cli) write(b []byte) error {
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	_, err := c.stdout.Write(b)
	return err
}

// printJSON prints an API answer indented, or as it came with --json.
func (c *cli) printJSON(b []byte) error {
	if c.json {
		return c.write(b)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, bytes.TrimSpace(b), "", "  "); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	out.WriteByte('\n')
	_, err := out.WriteTo(c.stdout)
	return err
}

// orTable prints an API answer with table, or as it came with --json.
func (c *cli) orTable(table func([]byte) error) func([]byte) error {
	return func(b []byte) error {
		if c.json {
			return c.write(b)
		}
		return table(b)
	}
}

func (c *cli) tabwriter() *tabwriter.Writer {
	return tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
}

func row(w io.Writer, cols ...string) { fmt.Fprintln(w, strings.Join(cols, "\t")) }

func (c *cli) recordTable(raws []json.RawMessage) error {
	w := c.tabwriter()
	row(w, "ID", "TYPE", "STATUS", "VERSION", "SENSITIVITY", "SALIENCE", "SUMMARY")
	for _, raw := range raws {
		var r memory.Record
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("decode record: %w", err)
		}
		row(w, r.ID.String(), string(r.Type), string(r.Status), strconv.Itoa(r.Version), string(r.Sensitivity), salience(r.Salience), summarize(r.Type, r.Payload))
	}
	return w.Flush()
}

func (c *cli) historyTable(b []byte) error {
	var h api.RecordHistory
	if err := json.Unmarshal(b, &h); err != nil {
		return fmt.Errorf("decode history: %w", err)
	}
	w := c.tabwriter()
	row(w, "VERSION", "RECORDED", "STATUS", "SENSITIVITY", "SALIENCE", "SUMMARY")
	for _, v := range h.Versions {
		r := v.Record
		row(w, strconv.Itoa(v.Version), stamp(v.RecordedAt), string(r.Status), string(r.Sensitivity), salience(r.Salience), summarize(r.Type, r.Payload))
	}
	return w.Flush()
}

func (c *cli) auditTable(b []byte) error {
	var a api.AuditTrail
	if err := json.Unmarshal(b, &a); err != nil {
		return fmt.Errorf("decode audit: %w", err)
	}
	w := c.tabwriter()
	row(w, "AT", "ACTION", "VERSION", "ACTOR", "EVIDENCE", "RATIONALE")
	for _, e := range a.Entries {
		version := "-"
		if e.Version != nil {
			version = strconv.Itoa(*e.Version)
		}
		rationale := shorten(e.Rationale)
		if rationale == "" {
			rationale = "-"
		}
		row(w, stamp(e.At), e.Action, version, e.Actor, strconv.Itoa(len(e.Evidence)), rationale)
	}
	return w.Flush()
}

func (c *cli) relationsTable(b []byte) error {
	var r api.RecordRelations
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("decode relations: %w", err)
	}
	w := c.tabwriter()
	row(w, "SOURCE", "PREDICATE", "TARGET", "WEIGHT", "CREATED")
	for _, e := range r.Relations {
		weight := "-"
		if e.Weight != nil {
			weight = salience(*e.Weight)
		}
		row(w, e.SourceID.String(), string(e.Predicate), e.TargetID.String(), weight, stamp(e.CreatedAt))
	}
	return w.Flush()
}

func salience(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// summarize describes a payload in a line of the summary column.
func summarize(typ memory.Type, payload json.RawMessage) string {
	return api.Summarize(typ, payload, summaryWidth)
}

// shorten fits s on one line of the summary column.
func shorten(s string) string { return api.OneLine(s, summaryWidth) }
