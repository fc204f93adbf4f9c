package consolidate_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// hostile are strings real agents send that no test shaped: long, empty,
// not ASCII, control characters, JSON-looking, shell-looking.
var hostile = []string{
	"", " ", "\n\n", strings.Repeat("x", 5000), strings.Repeat("please fix the build ", 150),
	"ld: cache mismatch in /srv/bü🚀ld-ñ/obj.o", "ошибка: файл не найден /tmp/данные.txt", "エラー: 見つかりません",
	"error: \u202egnp.exe", "tab\tand\x01control", `{"error": {"nested": [1, 2, {"deep": null}]}}`,
	"cat <<'EOF' > a.py\nprint('hi')\nEOF", "rm -rf / --no-preserve-root; echo $((1/0))", "'unclosed \"quote `tick",
	"E8949: bundler failed on tokio-28 (line 103)", "bash: jq: command not found", "npm ERR! code E404",
	"Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: ' '", "::::", "{}", "<*>", "<path>",
}

// hostileRun is a random run of an agent: random kinds of events in a
// random order, with hostile texts, arguments and results.
func hostileRun(rng *rand.Rand, thread string) []map[string]any {
	pick := func() string { return hostile[rng.IntN(len(hostile))] }
	env := map[string]any{"os": []string{"linux", "darwin", "日本"}[rng.IntN(3)]}
	ev := func(kind string, fields map[string]any) map[string]any {
		m := map[string]any{"kind": kind, "agent_id": "fuzz", "thread_id": thread, "environment": env}
		for k, v := range fields {
			m[k] = v
		}
		return m
	}
	var out []map[string]any
	if rng.IntN(4) > 0 {
		out = append(out, ev("user_input", map[string]any{"text": cmpOr(pick(), "do the task")}))
	}
	tools := []string{"bash", "shell", "pkg", "make", "read_file", "ツール"}
	for i := range rng.IntN(25) {
		id := fmt.Sprintf("c%d", i)
		tool := tools[rng.IntN(len(tools))]
		var args any
		switch rng.IntN(5) {
		case 0:
			args = map[string]any{"command": pick()}
		case 1:
			args = []any{pick(), pick()}
		case 2:
			args = map[string]any{"action": "install", "package": pick(), "deep": map[string]any{"x": []any{pick(), 1.5, true, nil}}}
		case 3:
			args = pick()
		default:
			args = map[string]any{}
		}
		switch rng.IntN(6) {
		case 0:
			out = append(out, ev("error", map[string]any{"error": map[string]any{"message": cmpOr(pick(), "error")}}))
		case 1:
			out = append(out, ev("tool_call", map[string]any{"tool": map[string]any{"name": tool, "arguments": args}}))
		default:
			var result any = map[string]any{"exit_code": rng.IntN(3), "stdout": pick(), "stderr": pick()}
			if rng.IntN(3) == 0 {
				result = pick()
			}
			out = append(out,
				ev("tool_call", map[string]any{"tool": map[string]any{"name": tool, "call_id": id, "arguments": args}}),
				ev("tool_output", map[string]any{"tool": map[string]any{"name": tool, "call_id": id, "result": result}}))
		}
	}
	status := []string{"success", "failure"}[rng.IntN(2)]
	return append(out, ev("outcome", map[string]any{"outcome": map[string]any{"status": status}}))
}

func cmpOr(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// Random and hostile runs — long inputs, one-step runs, empty outputs,
// nested arguments, text in any script — never fail a consolidation pass:
// every pass over them succeeds (what the write path refuses is skipped
// and counted), and so does the next one.
func TestHostileEpisodesNeverFailAPass(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 26))
		for i := range 12 {
			// Each run twice, in two threads: what it teaches has the
			// support to be written, and the write path to pass.
			events := hostileRun(rng, fmt.Sprintf("fuzz-%d-%d", seed, i))
			for _, thread := range []string{"a", "b"} {
				for _, ev := range events {
					ev["thread_id"] = fmt.Sprintf("fuzz-%d-%d-%s", seed, i, thread)
				}
				status, body := e.do("POST", "/v1/events", events)
				require.Less(t, status, http.StatusInternalServerError, string(body))
			}
		}
		e.drain() // the policy plane classifies a seed's runs in its batches
		require.NoError(t, e.cons.Consolidate(context.Background(), e.run), "seed %d", seed)
	}
	require.NoError(t, e.cons.Consolidate(context.Background(), e.run))
}
