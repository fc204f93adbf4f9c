package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/cmd/engramd/config"
)

// The console's evaluation report: none by default; from the file, the
// environment or the flag, in increasing precedence; a directory is
// refused with the field named.
func TestConsoleEvalReport(t *testing.T) {
	t.Parallel()
	c, err := config.Load(nil, env(nil))
	require.NoError(t, err)
	require.Empty(t, c.Console.EvalReport)
	c, err = loadFile(t, "console: {eval_report: docs/eval/curve.json}\n")
	require.NoError(t, err)
	require.Equal(t, "docs/eval/curve.json", c.Console.EvalReport)
	c, err = config.Load(nil, env(map[string]string{"ENGRAM_CONSOLE_EVAL_REPORT": "/srv/eval/curve.json"}))
	require.NoError(t, err)
	require.Equal(t, "/srv/eval/curve.json", c.Console.EvalReport)
	c, err = config.Load([]string{"--console-eval-report", "x.json"}, env(map[string]string{"ENGRAM_CONSOLE_EVAL_REPORT": "/srv/eval/curve.json"}))
	require.NoError(t, err)
	require.Equal(t, "x.json", c.Console.EvalReport)
	_, err = config.Load(nil, env(map[string]string{"ENGRAM_CONSOLE_EVAL_REPORT": t.TempDir()}))
	require.ErrorContains(t, err, "console.eval_report: ")
}
