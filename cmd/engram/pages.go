package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
)

// listing is a paged list of the API (records, reviews): its path, the
// member its page holds the items in, and how the CLI prints them.
type listing struct {
	path, member string
	table        func([]json.RawMessage) error
}

// list prints the page of l that q asks for, or with all every page,
// following the cursor; --json prints the API's answer (with all, one
// document of every item, as they came).
func (c *cli) list(ctx context.Context, l listing, q url.Values, all bool) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	var items []json.RawMessage
	for {
		b, err := fetch(ctx, cl, "GET", l.path, q, nil)
		if err != nil {
			return err
		}
		// The page's items stay as they came: --json --all passes them
		// through.
		var page map[string]json.RawMessage
		var got []json.RawMessage
		var next string
		if err := json.Unmarshal(b, &page); err != nil {
			return fmt.Errorf("decode page: %w", err)
		}
		if raw := page[l.member]; raw != nil {
			if err := json.Unmarshal(raw, &got); err != nil {
				return fmt.Errorf("decode page: %w", err)
			}
		}
		if raw := page["next_cursor"]; raw != nil {
			if err := json.Unmarshal(raw, &next); err != nil {
				return fmt.Errorf("decode page: %w", err)
			}
		}
		if !all {
			if c.json {
				return c.write(b)
			}
			if err := l.table(got); err != nil {
				return err
			}
			if next != "" {
				fmt.Fprintf(c.stderr, "more %s: --cursor %s (or --all)\n", l.member, next)
			}
			return nil
		}
		items = append(items, got...)
		if next == "" {
			break
		}
		if next == q.Get("cursor") {
			return fmt.Errorf("list %s: the server repeated cursor %s", l.member, next)
		}
		q.Set("cursor", next)
	}
	if c.json {
		if items == nil {
			items = []json.RawMessage{}
		}
		b, err := json.Marshal(map[string]any{l.member: items})
		if err != nil {
			return fmt.Errorf("encode %s: %w", l.member, err)
		}
		return c.write(append(b, '\n'))
	}
	return l.table(items)
}
