package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
)

// call makes an API request to d with key and returns the status and body.
func (d *daemon) call(t *testing.T, key, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+d.addr+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, out
}

// runJobAndWait runs a job on d now and waits for its run to succeed.
func (d *daemon) runJobAndWait(t *testing.T, job string) api.JobRun {
	t.Helper()
	code, body := d.call(t, opsKey, "POST", "/v1/jobs/"+job+":run", nil)
	require.Equal(t, http.StatusAccepted, code, string(body))
	var started api.JobStarted
	require.NoError(t, json.Unmarshal(body, &started))
	var run api.JobRun
	require.Eventually(t, func() bool {
		_, body := d.call(t, opsKey, "GET", "/v1/jobs", nil)
		var ov api.JobsOverview
		require.NoError(t, json.Unmarshal(body, &ov))
		for _, j := range ov.Jobs {
			if j.Name == job && j.LastRun != nil && j.LastRun.ID == started.Run.ID && j.LastRun.Status != "running" {
				run = *j.LastRun
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, "succeeded", run.Status, run.Error)
	return run
}

// Over HTTP, on a real engramd: a record written with personal data is
// tagged pii by the write path; past its retention it is listed by the
// compliance report (an operator's), hidden from retrieval before the job
// runs, and deleted by the retention job although pinned; a general record
// as old stays. An event with personal data makes a PII-bearing episode.
func TestRetentionAndComplianceOverHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a daemon")
	}
	t.Parallel()
	db := pgtest.NewSchema(t)
	d := startWithYAML(t, buildEngramd(t), db, `
jobs: {retention: "off", compliance: "off"}
retention:
  pii: {max_age: 30d, action: hard_delete}
`, io.Discard)
	old := time.Now().UTC().Add(-45 * 24 * time.Hour)
	fact := func(subject, object string, s memory.Sensitivity) map[string]any {
		return map[string]any{"type": "semantic", "sensitivity": s, "confidence": 0.9, "salience": 1, "created_at": old,
			"lifecycle": map[string]any{"pinned": true, "deletion_policy": "never"},
			"payload": map[string]any{"kind": "semantic", "subject": subject, "predicate": "contact_language", "object": object,
				"validity": map[string]any{"mode": "global"}}}
	}
	code, body := d.call(t, testKey, "POST", "/v1/records", fact("alice", "writes from alice@example.com in go", memory.Low))
	require.Equal(t, http.StatusCreated, code, string(body))
	var personal memory.Record
	require.NoError(t, json.Unmarshal(body, &personal))
	require.Contains(t, personal.Tags, memory.PIITag, "the write path tags what holds personal data")
	require.Equal(t, memory.Medium, personal.Sensitivity, "and raises its sensitivity to the email's")
	code, body = d.call(t, testKey, "POST", "/v1/records", fact("bob", "writes in go", memory.Low))
	require.Equal(t, http.StatusCreated, code, string(body))
	var general memory.Record
	require.NoError(t, json.Unmarshal(body, &general))
	require.NotContains(t, general.Tags, memory.PIITag)

	// The report is the operator's, and there is none before the job runs.
	code, _ = d.call(t, testKey, "GET", "/v1/compliance", nil)
	require.Equal(t, http.StatusForbidden, code)
	code, body = d.call(t, opsKey, "GET", "/v1/compliance", nil)
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, string(body), "urn:engram:problem:no-report")

	run := d.runJobAndWait(t, "compliance")
	require.EqualValues(t, 1, run.Counts["past_retention"])
	code, body = d.call(t, opsKey, "GET", "/v1/compliance", nil)
	require.Equal(t, http.StatusOK, code, string(body))
	var rep api.ComplianceReport
	require.NoError(t, json.Unmarshal(body, &rep))
	require.Equal(t, run.ID, rep.RunID)
	require.EqualValues(t, 1, rep.PastRetention)
	require.Equal(t, "pii", rep.Retention[0].Class)
	require.Equal(t, "30d", rep.Retention[0].MaxAge)
	require.Equal(t, []api.RetentionTenant{{Tenant: "acme", PastRetention: 1, Retrievable: 1, OldestCreatedAt: personal.CreatedAt}}, rep.Retention[0].Tenants)
	require.NotContains(t, string(body), "alice@example.com")
	// engramd tracks erasures, so the report checks them: none is pending.
	require.True(t, rep.Erasures.Checked, rep.Erasures.Detail)
	require.Empty(t, rep.Erasures.Incomplete)

	// Retrieval does not return it, before the job has run.
	retrieved := func() []string {
		code, body := d.call(t, testKey, "POST", "/v1/retrieve", map[string]any{"task": map[string]any{"text": "which language does each contact write"}})
		require.Equal(t, http.StatusOK, code, string(body))
		var res api.RetrieveResult
		require.NoError(t, json.Unmarshal(body, &res))
		var ids []string
		for _, l := range res.Layers {
			for _, it := range l.Items {
				ids = append(ids, it.Record.ID.String())
			}
		}
		return ids
	}
	require.Equal(t, []string{general.ID.String()}, retrieved())

	run = d.runJobAndWait(t, "retention")
	require.EqualValues(t, 1, run.Counts["purged_pii"])
	code, _ = d.call(t, testKey, "GET", "/v1/records/"+personal.ID.String(), nil)
	require.Equal(t, http.StatusNotFound, code, "deleted, pinned as it was")
	code, _ = d.call(t, testKey, "GET", "/v1/records/"+general.ID.String(), nil)
	require.Equal(t, http.StatusOK, code, "a general record as old stays")
	d.runJobAndWait(t, "compliance")
	_, body = d.call(t, opsKey, "GET", "/v1/compliance", nil)
	require.NoError(t, json.Unmarshal(body, &rep))
	require.Zero(t, rep.PastRetention)

	// An event with personal data: its episode is PII-bearing.
	code, body = d.call(t, testKey, "POST", "/v1/events", map[string]any{"kind": "user_input", "agent_id": "a1", "thread_id": "t-pii",
		"text": "call me on +44 20 7946 0958 or mail carol@example.org"})
	require.Less(t, code, 300, string(body))
	var episode memory.Record
	require.Eventually(t, func() bool {
		code, body := d.call(t, testKey, "GET", "/v1/threads/t-pii", nil)
		if code != http.StatusOK {
			return false
		}
		var th struct {
			EpisodeID string `json:"episode_id"`
		}
		require.NoError(t, json.Unmarshal(body, &th))
		code, body = d.call(t, testKey, "GET", "/v1/records/"+th.EpisodeID, nil)
		require.Equal(t, http.StatusOK, code, string(body))
		require.NoError(t, json.Unmarshal(body, &episode))
		return strings.Contains(string(body), "REDACTED")
	}, 30*time.Second, 50*time.Millisecond)
	require.Contains(t, episode.Tags, memory.PIITag)
}
