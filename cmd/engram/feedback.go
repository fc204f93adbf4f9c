package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/engram-dev/engram/api"
)

// feedback serves `engram feedback RETRIEVAL_ID --outcome O`: how the
// records a retrieval returned served the task, which reinforces or
// penalises them (substrate RFC §15.6).
func feedback(c *cli, ctx context.Context, args []string) error {
	fs := c.flags("feedback")
	var records listFlag
	fs.Var(&records, "record", "")
	outcome, rationale := fs.String("outcome", "", ""), fs.String("rationale", "", "")
	pos, err := parse(fs, args, 1, "RETRIEVAL_ID --outcome used_success|used_failure|unused [--record ID]... [--rationale R]")
	if err != nil {
		return err
	}
	if *outcome == "" {
		return usageErrorf("feedback: --outcome is required: used_success, used_failure or unused")
	}
	req := api.FeedbackRequest{RetrievalID: pos[0], Outcome: *outcome, Rationale: *rationale}
	for _, r := range records {
		req.RecordIDs = append(req.RecordIDs, strings.Split(r, ",")...)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	return c.call(ctx, "POST", "/v1/feedback", nil, body, c.orTable(func(b []byte) error {
		return c.feedbackTable(*outcome, b)
	}))
}

// feedbackTable prints what feedback did: a line of counts, then each
// record it changed with its salience and version now.
func (c *cli) feedbackTable(outcome string, b []byte) error {
	var res api.FeedbackResult
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("decode feedback: %w", err)
	}
	fmt.Fprintf(c.stdout, "%s: %d applied, %d already counted, %d no longer live\n", outcome, res.Applied, len(res.Duplicate), len(res.NotLive))
	for _, id := range res.Duplicate {
		fmt.Fprintf(c.stdout, "already counted: %s\n", id)
	}
	for _, id := range res.NotLive {
		fmt.Fprintf(c.stdout, "no longer live: %s\n", id)
	}
	if len(res.Records) == 0 {
		return nil
	}
	w := c.tabwriter()
	row(w, "ID", "SALIENCE", "VERSION")
	for _, r := range res.Records {
		row(w, r.ID.String(), salience(r.Salience), strconv.Itoa(r.Version))
	}
	return w.Flush()
}
