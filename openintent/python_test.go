package openintent_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/openintent"
)

// replay is the OpenIntent SDK's five calls as its httpx client makes
// them, replayed with the standard library's urllib, and its response
// handling: entries parsed by datetime.fromisoformat (as Python 3.10 reads
// them: isoformat's own output, six fraction digits and an offset), a 409
// read as a version conflict only when "lease" appears nowhere in its
// body, a 400's message and errors.
const replay = `
import json, os, re, sys, urllib.error, urllib.request
from datetime import datetime

URL, KEY, AGENT = os.environ["ENGRAM_URL"], os.environ["ENGRAM_KEY"], os.environ["ENGRAM_AGENT"]
HEADERS = {"X-API-Key": KEY, "X-Agent-ID": AGENT, "Content-Type": "application/json"}
FIELDS = {"id", "agent_id", "namespace", "key", "value", "memory_type", "version", "scope", "tags", "ttl",
          "pinned", "priority", "sensitivity", "curated_by", "created_at", "updated_at", "expires_at"}
PY310 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$")

def call(method, path, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(URL + path, data=data, method=method, headers={**HEADERS, **(headers or {})})
    try:
        with urllib.request.urlopen(req) as res:
            raw = res.read()
            return res.status, (json.loads(raw) if raw else {})
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, (json.loads(raw) if raw else {})

def entry(e):
    assert set(e) == FIELDS, set(e) ^ FIELDS
    for f in ("created_at", "updated_at"):
        assert PY310.match(e[f]), e[f]
        datetime.fromisoformat(e[f])
    return e

status, e = call("POST", "/api/v1/memory", {"agent_id": AGENT, "namespace": "research", "key": "competitors",
    "value": {"competitors": ["Acme", "Globex"]}, "memory_type": "episodic", "tags": ["research", "2026"]})
assert status == 201, (status, e)
entry(e)
status, got = call("GET", "/api/v1/memory/" + e["id"])
assert status == 200 and entry(got) == e, (status, got)
status, listed = call("GET", "/api/v1/agents/%s/memory?namespace=research&memory_type=episodic&tags=research,2026&limit=50&offset=0" % AGENT)
assert status == 200 and isinstance(listed, list) and [x["id"] for x in listed] == [e["id"]], listed
status, up = call("PATCH", "/api/v1/memory/" + e["id"], {"value": {"competitors": ["Acme"]}}, {"If-Match": str(1)})
assert status == 200 and entry(up)["version"] == 2, (status, up)
status, data = call("PATCH", "/api/v1/memory/" + e["id"], {"value": {}}, {"If-Match": str(1)})
assert status == 409 and "lease" not in str(data).lower(), data
assert data.get("message") and data.get("current_version") == 2, data
status, data = call("PATCH", "/api/v1/memory/" + e["id"], {"value": {}})
assert status == 428 and data.get("message"), (status, data)
status, data = call("POST", "/api/v1/memory", {"agent_id": AGENT, "key": "k", "value": {}})
assert status == 400 and data.get("message") and data.get("errors"), data
status, _ = call("DELETE", "/api/v1/memory/" + e["id"])
assert status == 204, status
status, _ = call("GET", "/api/v1/memory/" + e["id"])
assert status == 404, status
status, d = call("GET", "/.well-known/openintent.json")
assert status == 200 and "memory" in d["capabilities"], (status, d)
print("ok")
`

// The SDK's request shapes, replayed by Python against a real engramd,
// with a curator's key and with an agent's own (executor) key; then its
// discover().
func TestPythonReplay(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	e := setup(t, openintent.Config{})
	script := filepath.Join(t.TempDir(), "replay.py")
	require.NoError(t, os.WriteFile(script, []byte(replay), 0o600))
	for key, agent := range map[string]string{acmeKey: "agent_py", executorKey: "a1"} {
		cmd := exec.CommandContext(t.Context(), python, script)
		cmd.Env = append(os.Environ(), "ENGRAM_URL="+e.url, "ENGRAM_KEY="+key, "ENGRAM_AGENT="+agent)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s: %s", agent, out)
		require.Equal(t, "ok\n", string(out), agent)
	}
}
