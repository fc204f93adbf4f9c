package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/api"
)

// erase serves `engram erase --email E --name N --user-id U --phone P
// [--wait]` and `engram erase status ID`: it starts the erasure of a data
// subject (write-path RFC §12.10.2) and, with --wait, shows its progress
// and prints its certificate.
func erase(c *cli, ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "status" {
		pos, err := parse(c.flags("erase status"), args[1:], 1, "status ID")
		if err != nil {
			return err
		}
		id, err := uuid.Parse(pos[0])
		if err != nil {
			return usageErrorf("%q is not an erasure id", pos[0])
		}
		return c.call(ctx, "GET", "/v1/erasures/"+id.String(), nil, nil, c.orCertificate)
	}
	fs := c.flags("erase")
	var req api.ErasureRequest
	fs.Var((*listFlag)(&req.Emails), "email", "")
	fs.Var((*listFlag)(&req.Names), "name", "")
	fs.Var((*listFlag)(&req.UserIDs), "user-id", "")
	fs.Var((*listFlag)(&req.PhoneNumbers), "phone", "")
	wait := fs.Bool("wait", false, "")
	if _, err := parse(fs, args, 0, "--email E --name N --user-id U --phone P (each repeatable) [--wait]"); err != nil {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	b, err := fetch(ctx, cl, "POST", "/v1/erasures", nil, body)
	if err != nil {
		return err
	}
	var e api.Erasure
	if err := json.Unmarshal(b, &e); err != nil {
		return fmt.Errorf("decode erasure: %w", err)
	}
	if !*wait {
		if c.json {
			return c.write(b)
		}
		fmt.Fprintf(c.stdout, "erasure %s started (subject sha256 %s); follow it with: engram erase status %s\n", e.ID, e.SubjectSHA256, e.ID)
		return nil
	}
	phase := ""
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for e.Status == api.ErasureRunning {
		if e.Phase != phase {
			phase = e.Phase
			fmt.Fprintf(c.stderr, "erasure %s: %s\n", e.ID, phase)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if b, err = fetch(ctx, cl, "GET", "/v1/erasures/"+e.ID.String(), nil, nil); err != nil {
			return err
		}
		if err := json.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("decode erasure: %w", err)
		}
	}
	if err := c.orCertificate(b); err != nil {
		return err
	}
	switch {
	case e.Status != api.ErasureCompleted:
		return fmt.Errorf("erasure %s %s: %s", e.ID, e.Status, e.Error)
	case !e.Verified:
		return fmt.Errorf("erasure %s completed, but the verification scan found the subject left: see remaining", e.ID)
	}
	return nil
}

// orCertificate prints an erasure as its certificate, or as JSON with
// --json.
func (c *cli) orCertificate(b []byte) error {
	if c.json {
		return c.write(b)
	}
	var e api.Erasure
	if err := json.Unmarshal(b, &e); err != nil {
		return fmt.Errorf("decode erasure: %w", err)
	}
	w := c.tabwriter()
	row(w, "erasure", e.ID.String())
	row(w, "subject sha256", e.SubjectSHA256)
	row(w, "status", e.Status+" ("+e.Phase+")")
	if e.Error != "" {
		row(w, "error", e.Error)
	}
	row(w, "requested", stamp(e.RequestedAt))
	if e.CompletedAt != nil {
		row(w, "completed", stamp(*e.CompletedAt))
	}
	n := e.Counts
	row(w, "records erased", fmt.Sprintf("episodic=%d working=%d semantic=%d competence=%d plan_graph=%d",
		n.Episodic, n.Working, n.Semantic, n.Competence, n.PlanGraph))
	row(w, "traces erased", fmt.Sprintf("staged_events=%d timeline_entries=%d versions=%d vectors=%d artifacts=%d retrieval_log_entries=%d audit_entries=%d other=%d",
		n.StagedEvents, n.TimelineEntries, n.Versions, n.Vectors, n.Artifacts, n.RetrievalLogEntries, n.AuditEntries, n.Other))
	rebuilt := make([]string, len(e.Rebuilt))
	for i, id := range e.Rebuilt {
		rebuilt[i] = id.String()
	}
	row(w, "rebuilt", strings.Join(append(rebuilt, ""), " ")+fmt.Sprintf("(%d)", len(rebuilt)))
	if v := e.Verification; v != nil {
		verdict := "verified: nothing of the subject remains"
		if !v.Verified {
			verdict = "NOT verified: the subject remains"
		}
		row(w, "verification", fmt.Sprintf("%s (%s, %s scanned at %s)", verdict, count(v.Tables, "table"), count(v.Columns, "column"), stamp(v.At)))
		for _, r := range v.Remaining {
			row(w, "  remaining", fmt.Sprintf("%s.%s: %s", r.Table, r.Column, count(int(r.Rows), "row")))
		}
	}
	return w.Flush()
}
