package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/client"
)

// An agent's loop against the engramd at ENGRAM_URL: stream what happened,
// recall what helps with the next task, and say how it served. It prints
// ids, so it has no fixed output; TestExample runs the same code against a
// real engramd.
func Example() {
	c, err := client.New(client.Config{URL: os.Getenv("ENGRAM_URL"), Key: os.Getenv("ENGRAM_API_KEY")})
	if err != nil {
		log.Fatal(err)
	}
	if err := agentLoop(context.Background(), c, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// agentLoop is the README's example.
func agentLoop(ctx context.Context, c *client.Client, out io.Writer) error {
	// Stream events: each line is acknowledged as it is staged.
	events := []any{
		map[string]any{"kind": "observation", "agent_id": "coder", "thread_id": "task-42", "text": "the build failed: stale cache"},
		map[string]any{"kind": "observation", "agent_id": "coder", "thread_id": "task-42", "text": "cleared the cache; the build passed"},
	}
	err := c.StreamEvents(ctx, slices.Values(events), func(a api.StreamAck) error {
		if a.Error != nil {
			return fmt.Errorf("line %d: %w", a.Line, a.Error)
		}
		fmt.Fprintf(out, "staged line %d as %s\n", a.Line, a.ID)
		return nil
	})
	if err != nil {
		return err
	}

	// Recall what helps with the next task, layer by layer.
	res, err := c.Retrieve(ctx, api.RetrieveRequest{Task: api.Task{Text: "the build fails", ThreadID: "task-42"}})
	if err != nil {
		return err
	}
	var used []string
	for _, layer := range res.Layers {
		for _, it := range layer.Items {
			fmt.Fprintf(out, "%s %s %.2f\n", layer.Name, it.Record.ID, it.Score)
			used = append(used, it.Record.ID.String())
		}
	}
	if len(used) == 0 {
		fmt.Fprintln(out, "nothing recalled")
		return nil
	}

	// Say how it served: success reinforces the records used.
	fb, err := c.Feedback(ctx, api.FeedbackRequest{RetrievalID: res.RetrievalID.String(), Outcome: "used_success", RecordIDs: used})
	if err != nil {
		var e *client.Error
		if errors.As(err, &e) {
			for _, fe := range e.Problem.Errors {
				fmt.Fprintf(out, "%s: %s\n", fe.Pointer, fe.Message)
			}
		}
		return err
	}
	fmt.Fprintf(out, "reinforced %d records\n", fb.Applied)
	return nil
}

// The README's example runs against a real engramd: it streams, recalls the
// fact the curator stored, and reinforces it.
func TestExample(t *testing.T) {
	t.Parallel()
	c := newClient(t, setup(t), curatorKey)
	_, err := c.CreateRecord(t.Context(), map[string]any{"type": "semantic", "confidence": 0.9, "payload": map[string]any{
		"kind": "semantic", "subject": "build", "predicate": "fails_when", "object": "the cache is stale",
		"validity": map[string]any{"mode": "global"}}}, "")
	require.NoError(t, err)
	var out strings.Builder
	require.NoError(t, agentLoop(t.Context(), c, &out))
	require.Regexp(t, `^staged line 1 as [0-9a-f-]{36}\nstaged line 2 as [0-9a-f-]{36}\n`, out.String())
	require.Contains(t, out.String(), "\nsemantic ")
	require.True(t, strings.HasSuffix(out.String(), "reinforced 1 records\n"), out.String())
}
