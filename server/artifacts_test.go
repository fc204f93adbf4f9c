package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/ingest"
	"github.com/engram-dev/engram/internal/logtest"
	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/policy"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/seal"
	"github.com/engram-dev/engram/server"
	"github.com/engram-dev/engram/store"
)

// setupArtifacts is a server over a fresh schema with the policy given,
// sealing at rest when sealed, logging into a buffer.
func setupArtifacts(t *testing.T, policyYAML string, sealed bool) *secretsEnv {
	t.Helper()
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	var sealer *seal.Sealer
	if sealed {
		mk, err := seal.ParseMasterKey(seal.NewMasterKey())
		require.NoError(t, err)
		sealer, err = seal.New(seal.Config{DB: db.Pool, Keys: []seal.MasterKey{mk}})
		require.NoError(t, err)
	}
	wr := revise.New(db.Pool, revise.Config{Sealer: sealer})
	for _, tenant := range []string{"acme", "other"} {
		require.NoError(t, store.EnsureTenant(ctx, db.Pool, tenant))
	}
	logs := &logtest.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pol, err := policy.Parse([]byte(policyYAML), "test")
	require.NoError(t, err)
	w := ingest.NewWorker(ingest.WorkerConfig{DB: db.Pool, Writer: wr, Policy: pol, Logger: logger})
	rs, err := retrieve.NewSettings(retrieve.DefaultConfig())
	require.NoError(t, err)
	srv := server.New(server.Config{
		DB: db.Pool, Writer: wr, Logger: logger, Policy: w.Policy,
		Ingest:   ingest.New(ingest.Config{DB: db.Pool, Policy: w.Policy, Staged: w.Notify}),
		Retrieve: retrieve.New(db.Pool, rs, retrieve.WithSealer(sealer)),
		Keys:     testKeys,
	})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		require.NoError(t, srv.Close(context.Background()))
	})
	return &secretsEnv{ingestEnv: &ingestEnv{env: &env{t: t, url: hs.URL, db: db}, worker: w, logs: logs}}
}

// buildLog is a long, messy build log as an agent's runner captures it:
// CRLF and LF lines, ANSI colours, tabs, non-ASCII paths, a progress bar
// of carriage returns, and each planted value somewhere in it, in the
// shapes tools print them.
func buildLog(via string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\x1b[1m==> build %s\x1b[0m\r\n", via)
	for i := range 300 {
		fmt.Fprintf(&b, "[%04d] \x1b[32mok\x1b[0m\tcompiling /srv/bü🚀ld-ñ/pkg%03d/obj.o (%d%%)\r", i, i%17, i*100/300)
		if i%3 == 0 {
			b.WriteString("\n")
		}
		switch i {
		case 20:
			fmt.Fprintf(&b, "+ export AWS_ACCESS_KEY_ID=%s\n", plantAWSKeyID)
		case 41:
			fmt.Fprintf(&b, "+ export AWS_SECRET_ACCESS_KEY=%s\r\n", plantAWSSecret)
		case 77:
			fmt.Fprintf(&b, "remote: https://x-access-token:%s@github.com/acme/api.git\n", plantGitHub)
		case 102:
			fmt.Fprintf(&b, "curl -H 'Authorization: Bearer %s' https://api.internal/v1/me\n", plantJWT)
		case 150:
			fmt.Fprintf(&b, "cat deploy/key.pem\n%s\n", plantPEM)
		case 201:
			fmt.Fprintf(&b, "psql: connecting with DB_PASSWORD=%s\n", plantPassword)
		case 233:
			fmt.Fprintf(&b, "git log -1 --format='%%ae' → %s\n", plantEmail)
		case 280:
			fmt.Fprintf(&b, "stripe test charge card=%s declined\n", plantCard)
		}
	}
	b.WriteString("\x1b[31merror\x1b[0m: ld: cache mismatch in /srv/bü🚀ld-ñ/obj.o\n")
	return b.String()
}

// toolResult is a tool's JSON output with secrets under keys that name
// them and in free text.
func toolResult(via string) string {
	b, _ := json.MarshalIndent(map[string]any{
		"tool": "vault.read", "via": via, "status": "ok",
		"data": map[string]any{"password": plantPassword, "AWS_SECRET_ACCESS_KEY": plantAWSSecret, "token": plantGitHub,
			"owner": plantEmail, "note": "rotated; old jwt " + plantJWT},
		"stderr": []string{"warning: card " + plantCard + " on file", plantPEM},
	}, "", "\t")
	return string(b)
}

// trace is an NDJSON trace of an agent's steps, as a runtime dumps it.
func trace(via string) string {
	var lines []string
	for i, p := range plants {
		b, _ := json.Marshal(map[string]any{"step": i, "via": via, "kind": "tool_output", "output": "…" + p.text + "…"})
		lines = append(lines, string(b))
	}
	return strings.Join(lines, "\n") + "\n"
}

// storedArtifacts reads every artifact row of the schema: its bytes as
// stored and whether they are sealed.
func storedArtifacts(t *testing.T, e *secretsEnv) (contents [][]byte, sealed []bool) {
	t.Helper()
	rows, err := e.db.Pool.Query(context.Background(), `SELECT content, sealed FROM artifacts ORDER BY sha256`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var c []byte
		var s bool
		require.NoError(t, rows.Scan(&c, &s))
		contents, sealed = append(contents, c), append(sealed, s)
	}
	require.NoError(t, rows.Err())
	return contents, sealed
}

// needleIn names the first planted value found in b, ignoring case.
func needleIn(b []byte) string {
	lower := bytes.ToLower(b)
	for _, p := range plants {
		for _, n := range p.needles {
			if bytes.Contains(lower, bytes.ToLower([]byte(n))) {
				return p.name
			}
		}
	}
	return ""
}

// An agent uploads its logs, tool results and traces as artifacts, with
// every kind of planted secret in them and media types spelled as
// runtimes spell them: text is stored redacted (and sealed, when the
// daemon has a master key), reads back redacted under the digest of what
// was stored, and no planted value reaches a table, the log or a
// response; binary content holding a secret is refused, nothing stored.
func TestArtifactsNeverStoreSecrets(t *testing.T) {
	t.Parallel()
	for _, sealed := range []bool{false, true} {
		t.Run(fmt.Sprintf("sealed=%v", sealed), func(t *testing.T) {
			t.Parallel()
			e := setupArtifacts(t, "", sealed)
			texts := []struct{ contentType, body string }{
				{"text/plain", buildLog("a")},
				{"TEXT/Plain; Charset=UTF-8", buildLog("b")},
				{"text/x-log;charset=us-ascii", buildLog("c")},
				{"application/json", toolResult("d")},
				{"application/vnd.acme.tool-result+json; charset=utf8", toolResult("e")},
				{"application/x-ndjson", trace("f")},
				{"text/markdown", "## Incident\n\n" + allText() + "\n"},
			}
			var shas []string
			for _, c := range texts {
				res, ok := e.send(http.StatusCreated, "POST", "/v1/artifacts", c.body, "Content-Type", c.contentType)
				require.True(t, ok, c.contentType)
				var a store.Artifact
				res.decode(t, &a)
				require.Equal(t, "/v1/artifacts/"+a.SHA256, res.header.Get("Location"))
				got, ok := e.send(http.StatusOK, "GET", "/v1/artifacts/"+a.SHA256, nil)
				require.True(t, ok)
				require.Empty(t, needleIn(got.body), "%s reads back unredacted", c.contentType)
				require.Contains(t, string(got.body), "[REDACTED:", c.contentType)
				sum := sha256.Sum256(got.body)
				require.Equal(t, a.SHA256, hex.EncodeToString(sum[:]), "the address is the stored content's")
				require.Equal(t, int64(len(got.body)), a.Size)
				if strings.Contains(c.body, "cache mismatch") {
					require.Contains(t, string(got.body), "ld: cache mismatch in /srv/bü🚀ld-ñ/obj.o", "what is not secret is kept")
				}
				shas = append(shas, a.SHA256)
			}
			// The same log again is the same artifact.
			res, _ := e.send(http.StatusCreated, "POST", "/v1/artifacts", buildLog("a"), "Content-Type", "text/plain")
			var again store.Artifact
			res.decode(t, &again)
			require.Equal(t, shas[0], again.SHA256)

			// Binary content is stored as it is, unless it holds a secret.
			png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{0, 0xff, 0x7f, 0x10}, 64)...)
			res, _ = e.send(http.StatusCreated, "POST", "/v1/artifacts", string(png), "Content-Type", "image/png")
			var img store.Artifact
			res.decode(t, &img)
			got, _ := e.send(http.StatusOK, "GET", "/v1/artifacts/"+img.SHA256, nil)
			require.Equal(t, png, got.body)
			require.Equal(t, "image/png", got.header.Get("Content-Type"))

			before := e.count("SELECT count(*) FROM artifacts")
			for _, c := range []struct{ contentType, body, label string }{
				{"application/octet-stream", "\x00\x01" + plantAWSKeyID + "\xff\xfe", "aws_access_key"},
				{"image/png", string(png) + "tEXtComment\x00" + plantEmail, "email"},
				{"", "core dump\x00\x00" + plantPEM, "private_key"},
				{"application/gzip", "\x1f\x8b\x08\x00 DB_PASSWORD=" + plantPassword, "password_assignment"},
			} {
				res, _ := e.send(http.StatusUnprocessableEntity, "POST", "/v1/artifacts", c.body, "Content-Type", c.contentType)
				p := res.problem(t)
				require.Equal(t, "urn:engram:problem:secret-leakage", p.Type, c.contentType)
				require.Contains(t, p.Detail, c.label, c.contentType)
			}
			for _, c := range []struct{ contentType, message string }{
				{"text/plain; charset=utf-16", "UTF-8"},
				{"text/plain; charset=ISO-8859-1", "UTF-8"},
				{"plain text please", "not a media type"},
				{"text/", "not a media type"},
			} {
				res, _ := e.send(http.StatusUnsupportedMediaType, "POST", "/v1/artifacts", allText(), "Content-Type", c.contentType)
				p := res.problem(t)
				require.Equal(t, "urn:engram:problem:unsupported-media-type", p.Type)
				require.Len(t, p.Errors, 1, c.contentType)
				require.Equal(t, "Content-Type", p.Errors[0].Header)
				require.Contains(t, p.Errors[0].Message, c.message)
			}
			require.Equal(t, before, e.count("SELECT count(*) FROM artifacts"), "nothing refused is stored")

			// Nothing planted is in any artifact's bytes as stored, nor in any
			// table, the log or a response; sealed, not even what is not
			// secret is readable.
			contents, seals := storedArtifacts(t, e)
			require.Len(t, contents, len(texts)+1)
			for i, c := range contents {
				require.Empty(t, needleIn(c), "artifact %d holds a planted value", i)
				require.Equal(t, sealed, seals[i])
				if sealed {
					require.True(t, seal.IsSealed(c))
					require.NotContains(t, string(c), "compiling")
				}
			}
			e.scan()
		})
	}
}

// Under on_secret: reject a text artifact holding a secret is refused as a
// record would be, naming the labels, and nothing is stored; a clean one
// is stored.
func TestArtifactsRejectSecretsWhenPolicySaysSo(t *testing.T) {
	t.Parallel()
	e := setupArtifacts(t, "secrets: {on_secret: reject}", false)
	res, _ := e.send(http.StatusUnprocessableEntity, "POST", "/v1/artifacts", toolResult("x"), "Content-Type", "application/json")
	p := res.problem(t)
	require.Equal(t, "urn:engram:problem:secret-leakage", p.Type)
	for _, label := range []string{"github_token", "password_assignment", "email"} {
		require.Contains(t, p.Detail, label)
	}
	require.Zero(t, e.count("SELECT count(*) FROM artifacts"))
	e.send(http.StatusCreated, "POST", "/v1/artifacts", "go test ./... ok\n", "Content-Type", "text/plain")
	require.Equal(t, 1, e.count("SELECT count(*) FROM artifacts"))
	e.scan()
}

// A sealed artifact naming a person is found, deleted and verified gone
// by an erasure (write-path RFC §12.10): matching opens it.
func TestSealedArtifactIsErased(t *testing.T) {
	t.Parallel()
	e := setupArtifacts(t, "", true)
	res, _ := e.send(http.StatusCreated, "POST", "/v1/artifacts", "ticket 4411: signed by Zoë Okafor (customer u-77)\r\n", "Content-Type", "text/plain; charset=UTF-8")
	var named store.Artifact
	res.decode(t, &named)
	res, _ = e.send(http.StatusCreated, "POST", "/v1/artifacts", "unrelated build log\n", "Content-Type", "text/plain")
	var other store.Artifact
	res.decode(t, &other)
	require.Equal(t, 2, e.count("SELECT count(*) FROM artifacts WHERE sealed"))
	require.Zero(t, e.count("SELECT count(*) FROM artifacts WHERE encode(content, 'escape') ILIKE '%okafor%'"))

	res, _ = e.send(http.StatusAccepted, "POST", "/v1/erasures", api.ErasureRequest{Names: []string{"zoë  okafor"}, UserIDs: []string{"u-77"}})
	var started api.Erasure
	res.decode(t, &started)
	cert := e.waitErasure(acmeKey, started.ID)
	require.Equal(t, api.ErasureCompleted, cert.Status, cert.Error)
	require.True(t, cert.Verified, "remaining: %+v", cert.Verification)
	require.Equal(t, 1, cert.Counts.Artifacts)
	e.send(http.StatusNotFound, "GET", "/v1/artifacts/"+named.SHA256, nil)
	got, _ := e.send(http.StatusOK, "GET", "/v1/artifacts/"+other.SHA256, nil)
	require.Equal(t, "unrelated build log\n", string(got.body))
}
