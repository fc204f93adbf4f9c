package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/engram-dev/engram/api"
)

// reviewsCommand serves engram reviews list|get|approve|reject.
func reviewsCommand(c *cli, ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageErrorf("reviews needs a command: list, get, approve or reject")
	}
	switch args[0] {
	case "list":
		return c.reviewsList(ctx, args[1:])
	case "get":
		pos, err := parse(c.flags("reviews get"), args[1:], 1, "ID")
		if err != nil {
			return err
		}
		return c.call(ctx, "GET", reviewPath(pos[0], ""), nil, nil, c.printJSON)
	case "approve":
		return c.reviewsDecide(ctx, "approve", args[1:])
	case "reject":
		return c.reviewsDecide(ctx, "reject", args[1:])
	case "help":
		return errHelp
	}
	return usageErrorf("unknown command reviews %s", args[0])
}

func reviewPath(id, suffix string) string { return "/v1/reviews/" + url.PathEscape(id) + suffix }

// reviewsList prints a page of the queue (pending reviews unless --status
// says otherwise), or with --all every page.
func (c *cli) reviewsList(ctx context.Context, args []string) error {
	fs := c.flags("reviews list")
	var statuses listFlag
	fs.Var(&statuses, "status", "")
	limit := fs.Int("limit", 0, "")
	cursor := fs.String("cursor", "", "")
	all := fs.Bool("all", false, "")
	if _, err := parse(fs, args, 0, "[--status S]... [--limit N] [--cursor C] [--all]"); err != nil {
		return err
	}
	q := url.Values{"status": statuses}
	if *limit != 0 {
		q.Set("limit", strconv.Itoa(*limit))
	}
	if *cursor != "" {
		q.Set("cursor", *cursor)
	}
	return c.list(ctx, listing{path: "/v1/reviews", member: "reviews", table: c.reviewTable}, q, *all)
}

func (c *cli) reviewTable(raws []json.RawMessage) error {
	w := c.tabwriter()
	row(w, "REVIEW", "TIER", "STATUS", "RISK", "CREATED", "DEADLINE", "RECORD", "SUMMARY", "REASONS")
	for _, raw := range raws {
		var r api.Review
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("decode review: %w", err)
		}
		status, deadline, summary := r.Status, stamp(r.SLADeadline), "-"
		if r.EscalatedAt != nil && r.Status == "pending" {
			deadline += " (escalated)"
		}
		if r.RejectionReason != "" {
			status += ": " + r.RejectionReason
		}
		if r.Record != nil {
			summary = summarize(r.Record.Type, r.Record.Payload)
		}
		if r.Proposal != nil {
			summary = shorten(summary + ", supersedes " + r.Proposal.Supersedes.String())
		}
		reasons := shorten(strings.Join(r.Reasons, "; "))
		if reasons == "" {
			reasons = "-"
		}
		row(w, r.ID.String(), r.Tier, status, salience(r.Risk), stamp(r.CreatedAt), deadline, r.RecordID.String(), summary, reasons)
	}
	return w.Flush()
}

// reviewsDecide approves or rejects a review, with the justification the
// audit trail keeps.
func (c *cli) reviewsDecide(ctx context.Context, op string, args []string) error {
	fs := c.flags("reviews " + op)
	justification := fs.String("justification", "", "")
	what := "ID --justification J"
	var reason *string
	if op == "reject" {
		reason = fs.String("reason", "", "")
		what = "ID --reason R --justification J"
	}
	pos, err := parse(fs, args, 1, what)
	if err != nil {
		return err
	}
	if strings.TrimSpace(*justification) == "" {
		return usageErrorf("reviews %s: --justification is required: why you decide so", op)
	}
	var body any = api.ApproveRequest{Justification: *justification}
	if reason != nil {
		if *reason == "" {
			return usageErrorf("reviews reject: --reason is required: factual_error, policy_violation, duplicate, insufficient_evidence, contradiction or other")
		}
		body = api.RejectRequest{Reason: *reason, Justification: *justification}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	return c.call(ctx, "POST", reviewPath(pos[0], ":"+op), nil, b, c.printDecision)
}

// printDecision prints a decided review in a few lines, like the other
// commands' tables: the decision, who made it and why, and the record it
// left (--json prints the API's answer, the whole review).
func (c *cli) printDecision(b []byte) error {
	if c.json {
		return c.write(b)
	}
	var r api.Review
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("decode review: %w", err)
	}
	status := r.Status
	if r.RejectionReason != "" {
		status += ": " + r.RejectionReason
	}
	w := c.tabwriter()
	row(w, "review", r.ID.String())
	row(w, "status", status)
	decided := "-"
	if r.DecidedAt != nil {
		decided = stamp(*r.DecidedAt)
	}
	row(w, "decided", decided+" by "+cmpOr(r.DecidedBy, "-"))
	row(w, "justification", cmpOr(r.Justification, "-"))
	if rec := r.Record; rec != nil {
		row(w, "record", fmt.Sprintf("%s %s, %s, version %d: %s", rec.ID, rec.Type, rec.Status, rec.Version, summarize(rec.Type, rec.Payload)))
	} else {
		row(w, "record", r.RecordID.String())
	}
	if r.Proposal != nil {
		row(w, "supersedes", r.Proposal.Supersedes.String())
	}
	return w.Flush()
}

// cmpOr is s, or def when s is empty.
func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
