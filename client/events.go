package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"

	"github.com/engram-dev/engram/api"
)

// PostEvents stages events (each a JSON object of the event schema) with
// POST /v1/events, all or none: one refused event refuses the batch, with
// a field error per refused event.
func (c *Client) PostEvents(ctx context.Context, events []any, opts ...CallOption) (*api.StagedEvents, error) {
	var out api.StagedEvents
	if err := c.Do(ctx, "POST", "/v1/events", nil, events, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// StreamEvents streams events on POST /v1/events:stream, one NDJSON line
// each, and calls ack with each acknowledgement as the server sends it:
// the event's id, or the problem that refused that line alone. Events are
// sent while acknowledgements arrive, so a long or endless sequence
// streams in bounded memory. It returns when the server has acknowledged
// every line it read, or at the first error of ack, the connection or ctx.
func (c *Client) StreamEvents(ctx context.Context, events iter.Seq[any], ack func(api.StreamAck) error, opts ...CallOption) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	go func() {
		enc := json.NewEncoder(pw) // each Encode ends its line
		for ev := range events {
			if err := enc.Encode(ev); err != nil {
				pw.CloseWithError(fmt.Errorf("encode event: %w", err))
				return
			}
		}
		pw.Close()
	}()
	defer pr.Close() // stops the writer if the call ends first
	res, err := c.sendOnce(ctx, "POST", "/v1/events:stream", nil, pr, "application/x-ndjson", c.header(opts))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var a api.StreamAck
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			return fmt.Errorf("decode acknowledgement: %w", err)
		}
		if err := ack(a); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read acknowledgements: %w", err)
	}
	return nil
}
