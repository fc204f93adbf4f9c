package policy_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/policy"
)

// Test secrets are assembled from pieces so that secret scanners reading
// this file do not flag it; none of them is live.
var (
	openAIKey    = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zQ7rT0uV3"
	openAILegacy = "sk-" + "T3BlbkFJx8Qm2Zr7Lp4Vn9Wc1Ks6Yd3Hb5Ge0Ju8Ta2Ri"
	anthropicKey = "sk-ant-" + "api03-Xy7Kp2Lm9Qr4St6Uv8Wx1Yz3Ab5Cd7Ef9Gh0Ij2Kl4Mn6Op8-AA"
	awsKeyID     = "AKIA" + "IOSFODNN7EXAMPLE"
	awsSTSKeyID  = "ASIA" + "Y34FZKBOKMUTVV7A"
	awsSecret    = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
	githubPAT    = "ghp_" + "16C7e42F292c6912E7710c838347Ae178B4a"
	githubFine   = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
	gitlabPAT    = "glpat-" + "Ab12Cd34Ef56Gh78Ij90"
	slackBot     = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	stripeLive   = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
	stripeTest   = "sk_test_" + "4eC39HqLyjWDarjtT1zdp7dc"
	googleKey    = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
	jwt          = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." +
		"eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ." +
		"SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	pemKey = "-----BEGIN RSA " + "PRIVATE KEY-----\n" +
		"MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n" +
		"aFDrBz9vFqU4yR7Qw8m1zKx6wYb2gQ3G9W5m7lJx0pVh8n3cT4kR2sD6fH1jL9qA\n" +
		"-----END RSA " + "PRIVATE KEY-----"
)

func newRedactor(t testing.TB, literals ...string) *policy.Redactor {
	t.Helper()
	r, err := policy.NewRedactor(literals)
	require.NoError(t, err)
	return r
}

func labels(fs []policy.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Label)
	}
	return out
}

type redactCase struct {
	in     string
	want   string
	labels []string // nil: nothing found, want == in
}

// checkCases redacts each case, checks output and labels, and checks that
// redacting the output again changes and finds nothing.
func checkCases(t *testing.T, r *policy.Redactor, cases []redactCase) {
	t.Helper()
	for _, c := range cases {
		got, fs := r.String(c.in)
		want := c.want
		if c.labels == nil {
			want = c.in
		}
		require.Equal(t, want, got, "input: %q", c.in)
		require.Equal(t, c.labels, labels(fs), "input: %q", c.in)
		again, fs2 := r.String(got)
		require.Equal(t, got, again, "not idempotent: %q", c.in)
		require.Empty(t, fs2, "found again in %q", got)
	}
}

func TestSecretDetectors(t *testing.T) {
	t.Parallel()
	r := newRedactor(t)
	checkCases(t, r, []redactCase{
		// Provider keys.
		{in: "OPENAI_API_KEY=" + openAIKey, want: "OPENAI_API_KEY=[REDACTED:openai_key]", labels: []string{"openai_key"}},
		{in: "key " + openAILegacy + " rotated", want: "key [REDACTED:openai_key] rotated", labels: []string{"openai_key"}},
		{in: `{"x-api-key":"` + anthropicKey + `"}`, want: `{"x-api-key":"[REDACTED:anthropic_key]"}`, labels: []string{"anthropic_key"}},
		{in: "aws_access_key_id = " + awsKeyID, want: "aws_access_key_id = [REDACTED:aws_access_key]", labels: []string{"aws_access_key"}},
		{in: "AccessKeyId: " + awsSTSKeyID + ",", want: "AccessKeyId: [REDACTED:aws_access_key],", labels: []string{"aws_access_key"}},
		{in: "aws_secret_access_key = " + awsSecret, want: "aws_secret_access_key = [REDACTED:aws_secret_key]", labels: []string{"aws_secret_key"}},
		{in: `"SecretAccessKey": "` + awsSecret + `"`, want: `"SecretAccessKey": "[REDACTED:aws_secret_key]"`, labels: []string{"aws_secret_key"}},
		{in: "export AWS_SECRET_ACCESS_KEY=" + awsSecret, want: "export AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_key]", labels: []string{"aws_secret_key"}},
		{in: "…AWS_SECRET_ACCESS_KEY=" + awsSecret + "…", want: "…AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_key]…", labels: []string{"aws_secret_key"}},
		{in: "「aws_secret_access_key=" + awsSecret + "」です", want: "「aws_secret_access_key=[REDACTED:aws_secret_key]」です", labels: []string{"aws_secret_key"}},
		{in: "git push https://x:" + githubPAT + "@github.com/o/r", want: "git push https://x:[REDACTED:github_token]@github.com/o/r", labels: []string{"github_token"}},
		{in: "GH_TOKEN=" + githubFine, want: "GH_TOKEN=[REDACTED:github_token]", labels: []string{"github_token"}},
		{in: "private-token: " + gitlabPAT, want: "private-token: [REDACTED:gitlab_token]", labels: []string{"gitlab_token"}},
		{in: "slack " + slackBot, want: "slack [REDACTED:slack_token]", labels: []string{"slack_token"}},
		{in: "stripe " + stripeLive + " and " + stripeTest, want: "stripe [REDACTED:stripe_key] and [REDACTED:stripe_key]", labels: []string{"stripe_key"}},
		{in: "?key=" + googleKey + "&q=x", want: "?key=[REDACTED:google_api_key]&q=x", labels: []string{"google_api_key"}},
		// Tokens in JSON-escaped and URL-encoded text.
		{in: `"env":"A=1\n` + openAIKey + `\nB=2"`, want: `"env":"A=1\n[REDACTED:openai_key]\nB=2"`, labels: []string{"openai_key"}},
		{in: "q=key%3D" + githubPAT, want: "q=key%3D[REDACTED:github_token]", labels: []string{"github_token"}},

		// Bearer and Basic: keep the scheme.
		{in: "Authorization: Bearer abcDEF123456ghiJKL789", want: "Authorization: Bearer [REDACTED:bearer_token]", labels: []string{"bearer_token"}},
		{in: "-H 'authorization: bearer 0a1b2c3d4e5f6a7b8c9d'", want: "-H 'authorization: bearer [REDACTED:bearer_token]'", labels: []string{"bearer_token"}},
		{in: "Authorization: Basic dXNlcjpodW50ZXIy", want: "Authorization: Basic [REDACTED:basic_auth]", labels: []string{"basic_auth"}},

		// JWT and private keys.
		{in: "id_token " + jwt + " issued", want: "id_token [REDACTED:jwt] issued", labels: []string{"jwt"}},
		{in: "key:\n" + pemKey + "\ndone", want: "key:\n[REDACTED:private_key]\ndone", labels: []string{"private_key"}},
		{in: `{"k":"` + strings.ReplaceAll(pemKey, "\n", `\n`) + `"}`, want: `{"k":"[REDACTED:private_key]"}`, labels: []string{"private_key"}},
		{in: "-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAAAAAAAEAAAAzAAAAC3NzaC1lZDI1NTE5",
			want: "[REDACTED:private_key]", labels: []string{"private_key"}}, // truncated

		// Passwords in URLs: keep scheme, user and host.
		{in: "DATABASE_URL=postgres://engram:hunter2@db.internal:5432/engram", want: "DATABASE_URL=postgres://engram:[REDACTED:url_password]@db.internal:5432/engram", labels: []string{"url_password"}},
		{in: "redis://:s3cret@cache:6379/0", want: "redis://:[REDACTED:url_password]@cache:6379/0", labels: []string{"url_password"}},
		{in: "mongodb://app:p@ss@h1.example.com,h2.example.com/db", want: "mongodb://app:[REDACTED:url_password]@h1.example.com,h2.example.com/db", labels: []string{"url_password"}},

		// password=-style pairs: keep the key.
		{in: "DB_PASSWORD=hunter2", want: "DB_PASSWORD=[REDACTED:password_assignment]", labels: []string{"password_assignment"}},
		{in: `{"password": "correct horse battery staple", "user": "bob"}`, want: `{"password": "[REDACTED:password_assignment]", "user": "bob"}`, labels: []string{"password_assignment"}},
		{in: `{\"client_secret\":\"abc\"}`, want: `{\"client_secret\":\"[REDACTED:password_assignment]\"}`, labels: []string{"password_assignment"}},
		{in: "GET /cb?code=x&access_token=ya29a0AfH6SMB&state=1", want: "GET /cb?code=x&access_token=[REDACTED:password_assignment]&state=1", labels: []string{"password_assignment"}},
		{in: "db:\n  user: app\n  password: tiger\n", want: "db:\n  user: app\n  password: [REDACTED:password_assignment]\n", labels: []string{"password_assignment"}},
		{in: "  - POSTGRES_PASSWORD=example", want: "  - POSTGRES_PASSWORD=[REDACTED:password_assignment]", labels: []string{"password_assignment"}},
		{in: "Server=db;Database=app;User Id=sa;Pwd=Passw0rd!;", want: "Server=db;Database=app;User Id=sa;Pwd=[REDACTED:password_assignment];", labels: []string{"password_assignment"}},
		{in: "mysql -u root --password=hunter2 app", want: "mysql -u root --password=[REDACTED:password_assignment] app", labels: []string{"password_assignment"}},
		{in: "docker login --password Xk9-hunter2 reg", want: "docker login --password [REDACTED:password_assignment] reg", labels: []string{"password_assignment"}},
		{in: "curl -fsS -u admin:hunter2 https://ci.internal/api", want: "curl -fsS -u admin:[REDACTED:password_assignment] https://ci.internal/api", labels: []string{"password_assignment"}},
		{in: "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=bXlrZXk=;EndpointSuffix=core.windows.net",
			want:   "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=[REDACTED:password_assignment];EndpointSuffix=core.windows.net",
			labels: []string{"password_assignment"}},
		{in: `psql --password 'tiger' db`, want: `psql --password '[REDACTED:password_assignment]' db`, labels: []string{"password_assignment"}},
		{in: `{"password": "hunter2`, want: `{"password": "[REDACTED:password_assignment]`, labels: []string{"password_assignment"}}, // cut short
		{in: `{token:"abc123xyz"}`, want: `{token:"[REDACTED:password_assignment]"}`, labels: []string{"password_assignment"}},
		{in: `password := "hunter2"`, want: `password := "[REDACTED:password_assignment]"`, labels: []string{"password_assignment"}},
		{in: "X-Api-Key: 9f8e7d6c5b4a", want: "X-Api-Key: [REDACTED:password_assignment]", labels: []string{"password_assignment"}},
		{in: "apiKey: 'Zx81!qq'", want: "apiKey: '[REDACTED:password_assignment]'", labels: []string{"password_assignment"}},
		{in: "spring.datasource.password=s3cr3t", want: "spring.datasource.password=[REDACTED:password_assignment]", labels: []string{"password_assignment"}},
		{in: "login failed: token: Zk29xQ7p", want: "login failed: token: [REDACTED:password_assignment]", labels: []string{"password_assignment"}},
	})
}

func TestPersonalDataDetectors(t *testing.T) {
	t.Parallel()
	r := newRedactor(t)
	checkCases(t, r, []redactCase{
		{in: "contact alice.smith+tag@example.co.uk today", want: "contact [REDACTED:email] today", labels: []string{"email"}},
		{in: "Author: Jane Doe <jane@example.com>", want: "Author: Jane Doe <[REDACTED:email]>", labels: []string{"email"}},
		{in: "mailto:bob@example.org.", want: "mailto:[REDACTED:email].", labels: []string{"email"}},
		{in: `"to":"a\nbob@example.org"`, want: `"to":"a\n[REDACTED:email]"`, labels: []string{"email"}},

		{in: "call +1 (415) 555-2671 now", want: "call [REDACTED:phone] now", labels: []string{"phone"}},
		{in: "tel:+44 20 7946 0958", want: "tel:[REDACTED:phone]", labels: []string{"phone"}},
		{in: "+33 1 23 45 67 89", want: "[REDACTED:phone]", labels: []string{"phone"}},
		{in: "mobile +4915112345678.", want: "mobile [REDACTED:phone].", labels: []string{"phone"}},
		{in: "+49 (0)30 901820", want: "[REDACTED:phone]", labels: []string{"phone"}},
		{in: "office (415) 555-2671", want: "office [REDACTED:phone]", labels: []string{"phone"}},
		{in: "office 415-555-2671, fax 415.555.2672", want: "office [REDACTED:phone], fax [REDACTED:phone]", labels: []string{"phone"}},
		{in: "toll free 1-800-555-0199", want: "toll free [REDACTED:phone]", labels: []string{"phone"}},
		{in: "room 12 415-555-2671", want: "room 12 [REDACTED:phone]", labels: []string{"phone"}},
		{in: "London 020 7946 0958", want: "London [REDACTED:phone]", labels: []string{"phone"}},
		{in: "Berlin 030 901820", want: "Berlin [REDACTED:phone]", labels: []string{"phone"}},
		{in: "Paris 01 23 45 67 89", want: "Paris [REDACTED:phone]", labels: []string{"phone"}},
		{in: "Handy 0151-12345678", want: "Handy [REDACTED:phone]", labels: []string{"phone"}},

		{in: "card 4111111111111111 exp 12/27", want: "card [REDACTED:card_number] exp 12/27", labels: []string{"card_number"}},
		{in: "4111 1111 1111 1111", want: "[REDACTED:card_number]", labels: []string{"card_number"}},
		{in: "mc 5555-5555-5555-4444.", want: "mc [REDACTED:card_number].", labels: []string{"card_number"}},
		{in: "amex 3782 822463 10005", want: "amex [REDACTED:card_number]", labels: []string{"card_number"}},
		{in: "amex 378282246310005", want: "amex [REDACTED:card_number]", labels: []string{"card_number"}},
		{in: "discover 6011111111111117", want: "discover [REDACTED:card_number]", labels: []string{"card_number"}},
		{in: "mc2 2223003122003222", want: "mc2 [REDACTED:card_number]", labels: []string{"card_number"}},
		{in: "visa19 4111 1111 1111 1111 003", want: "visa19 [REDACTED:card_number]", labels: []string{"card_number"}},
		{in: "on 2024-05-13 4111 1111 1111 1111 paid", want: "on 2024-05-13 [REDACTED:card_number] paid", labels: []string{"card_number"}},
		{in: `{"pan":"4012888888881881"}`, want: `{"pan":"[REDACTED:card_number]"}`, labels: []string{"card_number"}},

		{in: "IBAN DE89370400440532013000", want: "IBAN [REDACTED:iban]", labels: []string{"iban"}},
		{in: "IBAN: GB82 WEST 1234 5698 7654 32 (GBP)", want: "IBAN: [REDACTED:iban] (GBP)", labels: []string{"iban"}},
		{in: "FR1420041010050500013M02606", want: "[REDACTED:iban]", labels: []string{"iban"}},
		{in: "to NL91ABNA0417164300.", want: "to [REDACTED:iban].", labels: []string{"iban"}},
	})
}

// TestNearMisses are values one edit away from a detector's shape, or
// lookalikes, that must come back unchanged.
func TestNearMisses(t *testing.T) {
	t.Parallel()
	r := newRedactor(t)
	cases := []string{
		// Keys: too short, wrong alphabet, glued to a word, kebab-case names.
		"sk-" + "abc123", "task-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv", "sk-learn-preprocessing-pipeline-final",
		"AKIA" + "IOSFODNN7", "AKIA" + "IOSFODNN7EXAMPLEXX", "XAKIA" + "IOSFODNN7EXAMPLE",
		"ghp_" + "short", "glpat-" + "short", "xoxb-" + "notatoken", "sk_live_" + "short",
		"AIza" + "SyShort", "aws_secret_access_key = " + awsSecret[:39],
		"eyJhbGciOiJIUzI1NiJ9", "eyJhbGciOiJIUzI1NiJ9.notjson.sig",
		// Bearer and Basic in prose.
		"Authorization header missing: expected Bearer authentication",
		"bearer tokens are described in RFC 6750", "Bearer <token>", "Bearer $TOKEN",
		"Basic usage: engram [flags]", "basic functionality works",
		// Public PEM blocks.
		"-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUJ\n-----END CERTIFICATE-----",
		"-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
		// URLs without a password, or with a placeholder.
		"postgres://engram@localhost:5432/engram?sslmode=disable",
		"postgres://user:${DB_PASSWORD}@db:5432/app", "postgres://%s:%s@%s/%s",
		"https://user:<password>@example.com", "http://[::1]:8080/health",
		// password= pairs that are code, types, paths, placeholders or comparisons.
		`token := r.Header.Get("Authorization")`, `if password == "" {`, `password = os.environ["DB_PASSWORD"]`,
		"const token = await getToken();", "def login(username: str, password: str) -> Token:",
		"    password: str", "  password?: string;", "\tToken: tok,", "apiKey: process.env.OPENAI_API_KEY,",
		"PASSWORD=$DB_PASSWORD", `password: "{{ vault_db_password }}"`, "password: ********", "token=",
		"password=password", "PWD=/work/main", "OLDPWD=/tmp", "grep: /etc/passwd: Permission denied",
		"error: invalid token: signature is invalid", "Token: refreshed successfully", "secret: true",
		`{"token_type": "Bearer", "expires_in": 3600}`, `{"max_tokens": 4096, "total_tokens": 1801}`,
		"kubectl get secret db-creds -o yaml", "  secretName: db-creds", "--token-file ./token.txt",
		"docker login --password-stdin", "docker run -u 1000:1000 img", "git push -u origin main", "curl -u $CI_USER:$CI_PASS x", `"eos_token": "</s>", "pad_token": "[PAD]"`,
		`env = append(env, "PWD="+dir)`, `if strings.HasPrefix(kv, "PWD=") {`, `println("failed to revert token:", err.Error())`,
		"\t\tPassword: password16,", "\t\tSecret: Bug4Secret{1},", "# groupname:password:GID:user_list",
		"\tSIOCGLIFTOKEN = -0x3f879678", "level=INFO msg=granted token=REDACTED_TOKEN",
		// Emails: remotes, URL user@host, accounts, assets, packages.
		"git@github.com:engram-dev/engram.git", "https://alice@example.com/repo.git",
		"ssh ubuntu@ec2-3-91-12-34.compute-1.amazonaws.com", "scp a.tgz deploy@staging.example.com:/var/www/",
		"icon@2x.png", "logo@dark.svg", "npm i @types/node@20.11.5 lodash@4.17.21",
		"github.com/foo/bar@v1.2.3", "java.lang.Object@1b6d3586", "user@localhost",
		// Numbers: failing Luhn, wrong network, plain runs, dates, times, versions, ids.
		"4111111111111112", "1234567812345670", "4111 1111 1111 111", "card 41111111111111111111",
		"0.4111111111111111", "epoch 1715600000123 ns 1715600000123456789", "snowflake 1790123456789012345",
		"4155552671", "123-456-7890", "415-555-26710", "2024-05-13", "10:22:01", "v1.2.3", "v1.415.555.2671",
		"+12345", "+0200", "192.168.100.200", "2024.05.13.1042", "01/02/2024 10:30", "05.06.2024 12:00",
		"table 123 456 7890", "ISBN 978-3-16-148410-0", "dd.trace_id=5476193473830473487 dd.span_id=3012345678901234567",
		"00000010  02 00 3e 00 01 00 00 00  10 04 40 00 00 00 00 00  |..>.......@.....|", "00 44 20 79 46",
		"DE89370400440532013001", "GB82 WEST 1234 5698 7654 33", "DE8937040044053201300", "XX89370400440532013000",
		"-4507534739750823898, 4234737173186232084", "476837158203125", "user@1000.service getty@tty1.service",
		"7f7d7797c000-7f7d77b36000 r-xp 00000000 fc:01 1180226 /lib/x86_64-linux-gnu/libc-2.19.so",
		"010.000.015.001", `"01:02-03-04-05-06"`, "11 12 13 013 014 015", "1f ff 81 03 01 01 05 50 6f 69", "01110/11110",
		"Thu Feb 04 21:00:57 +1130 2010", "m=+123.456789000", "https://user:xxxxx@example.com/foo/bar",
	}
	for _, in := range cases {
		got, fs := r.String(in)
		require.Equal(t, in, got)
		require.Empty(t, fs, "input: %q", in)
	}
}

// benignTrace is what agents stream all day: commands, output, paths,
// SHAs, UUIDs, timestamps, versions, stack traces, base64 blobs, code.
// None of it may be redacted.
var benignTrace = []string{
	"$ go test ./... -race -count=1",
	"ok  \tgithub.com/engram-dev/engram/store\t12.345s",
	"--- FAIL: TestCreate (0.03s)\n    store_test.go:142: Error Trace:\t/work/main/store/store_test.go:142",
	"commit 3f9a1c2b7d4e5f60718293a4b5c6d7e8f9012345\nDate:   Mon May 13 10:22:01 2024 +0200",
	"2024-05-13T10:22:01.123456Z INFO server started addr=127.0.0.1:8080",
	"request_id=550e8400-e29b-41d4-a716-446655440000 duration_ms=12.7",
	"trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7",
	"git clone https://github.com/engram-dev/engram.git && cd engram",
	"node_modules/.pnpm/@babel+core@7.22.5/node_modules/@babel/core/lib/index.js:42:13",
	"/.pnpm/eslint-plugin-import@2.27.5_eslint@8.45.0/node_modules",
	"panic: runtime error: index out of range [5] with length 3\n\ngoroutine 1 [running]:\nmain.main()\n\t/work/main/cmd/engramd/main.go:27 +0x1d\nexit status 2",
	"github.com/jackc/pgx/v5/pgxpool.(*Pool).Acquire(0xc000123456, {0x1a2b3c0, 0xc000abc123})",
	"Traceback (most recent call last):\n  File \"/usr/lib/python3.12/site-packages/requests/api.py\", line 59, in request",
	"    at Object.<anonymous> (/app/src/index.ts:10:5)\n    at Module._compile (node:internal/modules/cjs/loader:1256:14)",
	"java.lang.NullPointerException\n\tat com.example.Foo.bar(Foo.java:42)",
	"docker pull postgres:16.2-alpine@sha256:4f2b5c1e8a7d6c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b",
	"Successfully installed numpy-1.26.4 pandas-2.2.1 scikit-learn==1.4.2",
	"go version go1.26.8 linux/amd64; Python 3.12.2; semver 2.0.0-rc.1+build.5",
	"drwxr-xr-x  5 agent staff   160 May 13 10:22 src\n-rw-r--r--  1 agent staff  4096 May 13 10:22 go.mod",
	"PWD=/work/main\nOLDPWD=/tmp\nHOME=/home/agent\nPATH=/usr/local/bin:/usr/bin:/bin\nGOFLAGS=-mod=mod",
	`time=2024-05-13T10:22:01Z level=info msg="token refreshed" token_ttl=3600`,
	`{"usage": {"prompt_tokens": 1234, "completion_tokens": 567, "total_tokens": 1801}, "model": "gpt-4o-2024-05-13"}`,
	"@@ -12,7 +12,8 @@ func main() {\n 5 files changed, 120 insertions(+), 30 deletions(-)",
	"task-runner-service-production-2024 disk-usage 87%",
	"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
	"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
	"epoch 1715600000 ms 1715600000123 ns 1715600000123456789 snowflake 1790123456789012345",
	"Processing 10000 items in 2.5s (4000 items/s); order total 1234.56 EUR, qty 3",
	"Listening on http://0.0.0.0:8080; IP 192.168.100.200 port 5432",
	"0x7ffd5fbff8a0 0xdeadbeef 00000010: 0200 3e00 0100 0000 1004 4000 0000 0000  ..>.......@.....",
	"Mon, 13 May 2024 10:22:01 GMT; dates 01/02/2024 05.06.2024 13.05.2024 10:30",
	"Mounting /dev/sda1 at /mnt/data (uuid=5f3c2a1e-9b7d-4c6e-8f0a-1b2c3d4e5f6a)",
	"Windows 10.0.19045.3930; build 2024.05.13.1042; version 0.12.3-beta.1",
	`{"id": "cus_NffrFeUfNV2Hib", "object": "customer", "created": 1680893993}`,
	"The secret to good tests is isolation. Password reset emails are rate limited.",
	"| id | value |\n|----|-------|\n| 1  | 42    |",
	"+ set -euo pipefail\n+ make test",
	"kind: Secret\nmetadata:\n  name: db-creds\ntype: Opaque",
	"curl -s -H 'Accept: application/json' https://api.github.com/repos/engram-dev/engram/commits?per_page=5",
	"src/components/Header.tsx(12,5): error TS2322: Type 'string' is not assignable to type 'number'.",
	"FROM golang:1.26-alpine AS build\nRUN go build -o /bin/engramd ./cmd/engramd",
	"memory: 512Mi; cpu: 250m; replicas: 3; image: ghcr.io/engram-dev/engram:v0.4.1",
}

func TestBenignTraceUnchanged(t *testing.T) {
	t.Parallel()
	r := newRedactor(t)
	for _, in := range benignTrace {
		got, fs := r.String(in)
		require.Equal(t, in, got)
		require.Empty(t, fs, "input: %q", in)
	}
	joined := strings.Join(benignTrace, "\n")
	got, fs := r.String(joined)
	require.Equal(t, joined, got)
	require.Empty(t, fs)
}

func TestOverlappingMatches(t *testing.T) {
	t.Parallel()
	r := newRedactor(t)
	checkCases(t, r, []redactCase{
		// A URL whose user is an email address: the password goes as a URL
		// password, the user as an email, and password@host is no address.
		{in: "postgres://alice@example.com:hunter2@db.example.com/app",
			want:   "postgres://[REDACTED:email]:[REDACTED:url_password]@db.example.com/app",
			labels: []string{"email", "url_password"}},
		{in: "https://admin:s3cret@db.example.com", want: "https://admin:[REDACTED:url_password]@db.example.com", labels: []string{"url_password"}},
		// A JWT carried as a bearer token is redacted once, as a JWT.
		{in: "Authorization: Bearer " + jwt, want: "Authorization: Bearer [REDACTED:jwt]", labels: []string{"jwt"}},
		// A key assigned to a secret-named variable is reported as the key.
		{in: "OPENAI_API_KEY=" + openAIKey + "\nDB_PASSWORD=hunter2",
			want:   "OPENAI_API_KEY=[REDACTED:openai_key]\nDB_PASSWORD=[REDACTED:password_assignment]",
			labels: []string{"openai_key", "password_assignment"}},
		{in: `{"access_token": "` + jwt + `"}`, want: `{"access_token": "[REDACTED:jwt]"}`, labels: []string{"jwt"}},
		// An Anthropic key is not also an OpenAI one.
		{in: anthropicKey, want: "[REDACTED:anthropic_key]", labels: []string{"anthropic_key"}},
		// A key inside a URL's password.
		{in: "https://x:" + gitlabPAT + "@gitlab.com/g/p.git", want: "https://x:[REDACTED:gitlab_token]@gitlab.com/g/p.git", labels: []string{"gitlab_token"}},
		// Already redacted text, in our markers and the RFC's.
		{in: "password=[REDACTED:password_assignment] token=<REDACTED:api_key>", labels: nil},
		{in: "Bearer [REDACTED:jwt] and https://u:[REDACTED:url_password]@h", labels: nil},
	})
}

// TestLongText plants values after hundreds of number-like runs (a
// timestamp on every line), past any fixed-size buffer.
func TestLongText(t *testing.T) {
	t.Parallel()
	r := newRedactor(t)
	var b strings.Builder
	for i := range 500 {
		fmt.Fprintf(&b, "2024-05-13 10:%02d:%02d GB%02d line %d ok\n", i/60%60, i%60, i%100, i)
	}
	head := b.String()
	got, fs := r.String(head + "card 4111 1111 1111 1111, call +44 20 7946 0958, IBAN DE89370400440532013000, mail bob@example.com")
	require.Equal(t, head+"card [REDACTED:card_number], call [REDACTED:phone], IBAN [REDACTED:iban], mail [REDACTED:email]", got)
	require.Equal(t, []string{"card_number", "email", "iban", "phone"}, labels(fs))
}

// adversarial are inputs built to make a careless scanner rescan: many
// anchors whose matches fail late.
func adversarial(n int) map[string]string {
	rep := func(s string) string { return strings.Repeat(s, n/len(s)+1)[:n] }
	return map[string]string{
		"sk":       rep("sk-"),
		"akia":     rep("AKIA"),
		"jwt":      rep("eyJhbGciOiJIUzI1NiJ9."),
		"begin":    rep("-----BEGIN RSA PRIVATE KEY-----"),
		"bearer":   rep("Bearer aaaaaaaaaaaaaaaa"),
		"basic":    rep("basic QUJDREVGR0g"),
		"url":      rep("a://b:c@"),
		"secret":   rep("secret_"),
		"assign":   rep(`password="$`),
		"flags":    rep("--password $x "),
		"at":       rep("a.b@"),
		"digits":   rep("4111 "),
		"phone":    rep("+1 2"),
		"iban":     rep("DE89 "),
		"markers":  rep("[REDACTED:email]x@y.com "),
		"literal":  rep("acme-internal-"),
		"newlines": rep("password: x\n"),
	}
}

// TestAdversarialInput checks that pathological inputs are redacted
// without panicking and idempotently; BenchmarkRedactAdversarial shows
// their cost grows linearly.
func TestAdversarialInput(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, "acme-internal-9")
	for name, in := range adversarial(64 << 10) {
		once, _ := r.String(in)
		twice, fs := r.String(once)
		require.Equal(t, once, twice, name)
		require.Empty(t, fs, name)
	}
}

func TestLiterals(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, "acme-internal-9", "acme-internal-9-prod", "tiger")
	got, fs := r.String("deploy acme-internal-9-prod then acme-internal-9; tiger tiger")
	require.Equal(t, "deploy [REDACTED:literal_secret] then [REDACTED:literal_secret]; [REDACTED:literal_secret] [REDACTED:literal_secret]", got)
	require.Equal(t, []policy.Finding{{Label: "literal_secret", Sensitivity: memory.High}}, fs)

	// A literal that is part of a marker does not break markers.
	r = newRedactor(t, "REDACTED", "card")
	got, fs = r.String("4111111111111111 card REDACTED")
	require.Equal(t, "[REDACTED:card_number] [REDACTED:literal_secret] [REDACTED:literal_secret]", got)
	require.Equal(t, []string{"card_number", "literal_secret"}, labels(fs))
	again, fs := r.String(got)
	require.Equal(t, got, again)
	require.Empty(t, fs)
}

func TestNewRedactorRejectsShortLiterals(t *testing.T) {
	t.Parallel()
	for _, lits := range [][]string{{"long-enough", "abc"}, {"long-enough", "  ab  "}, {"long-enough", ""}} {
		_, err := policy.NewRedactor(lits)
		require.ErrorContains(t, err, "literal secret 1")
		require.NotContains(t, err.Error(), lits[1]+"\"", "the error must not echo the value")
	}
	r, err := policy.NewRedactor([]string{"äöüß", " padded-secret\n"})
	require.NoError(t, err, "four characters, eight bytes")
	got, _ := r.String("x äöüß padded-secret y")
	require.Equal(t, "x [REDACTED:literal_secret] [REDACTED:literal_secret] y", got, "literals are trimmed")
}

func TestFindingsSensitivity(t *testing.T) {
	t.Parallel()
	r := newRedactor(t)
	_, fs := r.String("mail bob@example.com, call +44 20 7946 0958")
	require.Equal(t, []policy.Finding{{Label: "email", Sensitivity: memory.Medium}, {Label: "phone", Sensitivity: memory.Medium}}, fs)
	require.Equal(t, memory.Medium, policy.MaxSensitivity(fs))

	_, fs = r.String("bob@example.com " + pemKey + " 4111111111111111 bob@example.com")
	require.Equal(t, []string{"card_number", "email", "private_key"}, labels(fs))
	require.Equal(t, memory.Hyper, policy.MaxSensitivity(fs))

	_, fs = r.String("nothing here")
	require.Nil(t, fs)
	require.Equal(t, memory.Sensitivity(""), policy.MaxSensitivity(fs))
}

func TestValue(t *testing.T) {
	t.Parallel()
	r := newRedactor(t)
	inner := []any{"ok", "bob@example.com", 42.0, true, nil}
	v := map[string]any{
		"tool":      "psql",
		"arguments": map[string]any{"dsn": "postgres://app:hunter2@db/app", "password": "held-by-its-key"},
		"result":    inner,
		"env":       map[string]string{"TOKEN": githubPAT, "HOME": "/home/bob"},
		"lines":     []string{"fine", "card 4111 1111 1111 1111"},
		"count":     3.0,
	}
	got, fs := r.Value(v)
	require.Equal(t, map[string]any{
		"tool":      "psql",
		"arguments": map[string]any{"dsn": "postgres://app:[REDACTED:url_password]@db/app", "password": "[REDACTED:password_assignment]"},
		"result":    []any{"ok", "[REDACTED:email]", 42.0, true, nil},
		"env":       map[string]string{"TOKEN": "[REDACTED:github_token]", "HOME": "/home/bob"},
		"lines":     []string{"fine", "card [REDACTED:card_number]"},
		"count":     3.0,
	}, got)
	require.Equal(t, []string{"card_number", "email", "github_token", "password_assignment", "url_password"}, labels(fs))
	require.Equal(t, "[REDACTED:email]", inner[1], "redacted in place")

	s, fs := r.Value("DB_PASSWORD=hunter2")
	require.Equal(t, "DB_PASSWORD=[REDACTED:password_assignment]", s)
	require.Len(t, fs, 1)

	n, fs := r.Value(12.5)
	require.Equal(t, 12.5, n)
	require.Nil(t, fs)
}

// Values under keys that name secrets are secrets, whatever they look
// like; keys that are secrets are renamed (SR-1).
func TestValueKeys(t *testing.T) {
	t.Parallel()
	r := newRedactor(t)
	v := map[string]any{
		"environment": map[string]any{
			"AWS_SECRET_ACCESS_KEY": awsSecret,
			"DB_PASSWORD":           "hunter2",
			"PWD":                   "/home/bob/project",
			"max_tokens":            json.Number("4096"),
			"pin_count":             json.Number("3"),
			"author":                "bob",
		},
		"arguments": map[string]any{
			"api_key":       "abc123",
			"apiKey":        json.Number("12345678"),
			"Authorization": "Bearer " + jwt,
			"credentials":   map[string]any{"user": "bob", "pass": "x", "ok": true, "ports": []any{22.0}},
			"password":      "${DB_PASSWORD}",
			"client_secret": "****",
			"token":         "hunter2 bob@example.com",
			"next_token":    "eyJwYWdlIjoyfQ",
			"token_count":   7.0,
		},
		"conditions": map[string]any{
			githubPAT:         "a token used as a name",
			"bob@example.com": "one address",
			"amy@example.com": "another",
		},
	}
	got, fs := r.Value(v)
	require.Equal(t, map[string]any{
		"environment": map[string]any{
			"AWS_SECRET_ACCESS_KEY": "[REDACTED:aws_secret_key]",
			"DB_PASSWORD":           "[REDACTED:password_assignment]",
			"PWD":                   "/home/bob/project",
			"max_tokens":            json.Number("4096"),
			"pin_count":             json.Number("3"),
			"author":                "bob",
		},
		"arguments": map[string]any{
			"api_key":       "[REDACTED:password_assignment]",
			"apiKey":        "[REDACTED:password_assignment]",
			"Authorization": "Bearer [REDACTED:jwt]",
			"credentials":   map[string]any{"user": "[REDACTED:password_assignment]", "pass": "[REDACTED:password_assignment]", "ok": true, "ports": []any{"[REDACTED:password_assignment]"}},
			"password":      "${DB_PASSWORD}",
			"client_secret": "****",
			"token":         "[REDACTED:password_assignment]",
			"next_token":    "eyJwYWdlIjoyfQ",
			"token_count":   7.0,
		},
		"conditions": map[string]any{
			"[REDACTED:github_token]": "a token used as a name",
			"[REDACTED:email]":        "another",
			"[REDACTED:email]#2":      "one address",
		},
	}, got)
	require.Equal(t, []string{"aws_secret_key", "email", "github_token", "jwt", "password_assignment"}, labels(fs))

	again, fs := r.Value(got)
	require.Equal(t, got, again)
	require.Nil(t, fs, "redacting twice finds nothing")

	s, fs := r.Value(map[string]string{"x-api-key": "k-12345", "Cookie": "sid=abc", "sort_key": "name"})
	require.Equal(t, map[string]string{"x-api-key": "[REDACTED:password_assignment]", "Cookie": "[REDACTED:password_assignment]", "sort_key": "name"}, s)
	require.Len(t, fs, 1)
}

// Which keys name a secret: the key's last word decides, so that counts,
// names, types and paths of secrets, and page cursors, stay readable.
func TestSecretKeyNames(t *testing.T) {
	t.Parallel()
	r := newRedactor(t)
	secret := []string{
		"password", "PASSWORD", "DB_PASSWORD", "db-password", "db.password", "dbPassword", "passwd", "passphrase",
		"DB_PWD", "SMTP_PASS", "secret", "client_secret", "clientSecret", "WEBHOOK_SECRET", "secrets",
		"token", "access_token", "refreshToken", "x-auth-token", "GITHUB_TOKEN", "aws_session_token", "id_token",
		"api_key", "apikey", "apiKey", "APIKey", "x-api-key", "API-KEY", "AWS_SECRET_ACCESS_KEY", "SecretAccessKey",
		"aws_access_key", "private_key", "privateKey", "AccountKey", "APP_KEY", "signing_key", "session_key",
		"credential", "credentials", "creds", "auth", "basic_auth", "Authorization", "Proxy-Authorization",
		"cookie", "Set-Cookie", "cookies",
	}
	plain := []string{
		"token_count", "max_tokens", "tokens", "input_tokens", "tokens_limit", "author", "authenticated", "auth_type",
		"auth_method", "oauth", "secret_name", "password_file", "password_policy", "token_type", "tokenizer",
		"next_token", "NextToken", "page_token", "continuationToken", "PWD", "OLDPWD", "pass", "bypass",
		"key", "sort_key", "public_key", "idempotency_key", "primary_key", "private_key_id", "AWS_ACCESS_KEY_ID",
		"credential_id", "session", "session_id", "cookie_name", "keyboard", "monkey", "passport", "compass",
	}
	for _, k := range secret {
		got, fs := r.Value(map[string]any{k: "s3cr3t-v4lue"})
		require.NotEqual(t, "s3cr3t-v4lue", got.(map[string]any)[k], "%s holds a secret", k)
		require.NotEmpty(t, fs, k)
	}
	for _, k := range plain {
		got, fs := r.Value(map[string]any{k: "s3cr3t-v4lue"})
		require.Equal(t, "s3cr3t-v4lue", got.(map[string]any)[k], "%s names no secret", k)
		require.Empty(t, fs, k)
	}
}

func TestStrings(t *testing.T) {
	t.Parallel()
	r := newRedactor(t)
	tags := []string{"source:session", "owner:bob@example.com", "stripe:" + stripeLive}
	got, fs := r.Strings(tags)
	require.Equal(t, []string{"source:session", "owner:[REDACTED:email]", "stripe:[REDACTED:stripe_key]"}, got)
	require.Equal(t, []string{"email", "stripe_key"}, labels(fs))
	require.Equal(t, "owner:bob@example.com", tags[1], "the caller's slice is left alone")

	clean := []string{"a", "b"}
	got, fs = r.Strings(clean)
	require.Equal(t, clean, got)
	require.Nil(t, fs)
	got, fs = r.Strings(nil)
	require.Nil(t, got)
	require.Nil(t, fs)
}

func TestInvalidUTF8(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, "s\xffcret-literal")
	in := "\xff\xfe bob@example.com\xff DB_PASSWORD=hun\xffter2 \xc3 4111111111111111\xe2\x82 s\xffcret-literal Bearer \xffabc \x80"
	got, fs := r.String(in)
	require.Equal(t, "\xff\xfe [REDACTED:email]\xff DB_PASSWORD=[REDACTED:password_assignment] \xc3 [REDACTED:card_number]\xe2\x82 [REDACTED:literal_secret] Bearer \xffabc \x80", got)
	require.Equal(t, []string{"card_number", "email", "literal_secret", "password_assignment"}, labels(fs))
	require.False(t, utf8.ValidString(got), "invalid bytes are kept, not rewritten")
}

// TestIdempotentOverCorpus redacts every test input glued to every other
// and checks that a second pass is a no-op.
func TestIdempotentOverCorpus(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, "acme-internal-9")
	parts := append([]string{
		openAIKey, anthropicKey, awsKeyID, "aws_secret_access_key=" + awsSecret, githubPAT, githubFine, gitlabPAT, slackBot,
		stripeLive, googleKey, jwt, pemKey, "Bearer " + jwt, "Basic dXNlcjpodW50ZXIy", "postgres://a@b.com:pw@h/db",
		"password=hunter2", "bob@example.com", "+44 20 7946 0958", "415-555-2671", "4111111111111111",
		"DE89370400440532013000", "acme-internal-9",
	}, benignTrace[:10]...)
	for _, a := range parts {
		for _, b := range parts {
			for _, sep := range []string{"", " ", "\n", "=", ":", "@", "-"} {
				in := a + sep + b
				once, _ := r.String(in)
				twice, fs := r.String(once)
				require.Equal(t, once, twice, "input: %q", in)
				require.Empty(t, fs, "input: %q", in)
			}
		}
	}
}

func FuzzRedact(f *testing.F) {
	r, err := policy.NewRedactor([]string{"acme-internal-9"})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range benignTrace {
		f.Add(s)
	}
	for _, s := range []string{openAIKey, jwt, pemKey, "postgres://a@b.com:pw@h/db", "password=x", "+1 (415) 555-2671", "4111 1111 1111 1111", "GB82 WEST 1234 5698 7654 32"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		once, _ := r.String(in)
		twice, fs := r.String(once)
		if once != twice || len(fs) > 0 {
			t.Fatalf("not idempotent:\n in:    %q\n once:  %q\n twice: %q (%v)", in, once, twice, fs)
		}
	})
}

// FuzzNoLeak plants values between arbitrary texts, set off by spaces,
// and checks that no part of them that identifies them survives.
func FuzzNoLeak(f *testing.F) {
	r, err := policy.NewRedactor([]string{"acme-internal-9"})
	if err != nil {
		f.Fatal(err)
	}
	planted := []struct{ value, body string }{
		{githubPAT, githubPAT[4:]},
		{openAIKey, openAIKey[8:]},
		{awsKeyID, awsKeyID[4:]},
		{jwt, jwt[36:]},
		{"4111 1111 1111 1111", "4111 1111 1111 1111"},
		{"bob.smith@example.com", "bob.smith@"},
		{"acme-internal-9", "acme-internal-9"},
	}
	for _, s := range benignTrace[:8] {
		f.Add(s, s, uint8(0))
	}
	f.Add("-----BEGIN RSA PRIVATE KEY-----", "", uint8(0))
	f.Add("password=", "Bearer", uint8(1))
	f.Fuzz(func(t *testing.T, before, after string, which uint8) {
		p := planted[int(which)%len(planted)]
		out, _ := r.String(before + " " + p.value + " " + after)
		if strings.Contains(out, p.body) && !strings.Contains(before+after, p.body) {
			t.Fatalf("leaked %q:\n in:  %q\n out: %q", p.body, before+" "+p.value+" "+after, out)
		}
	})
}

func ExampleRedactor_String() {
	r, err := policy.NewRedactor([]string{"acme-internal-9"})
	if err != nil {
		panic(err)
	}
	s, fs := r.String("DATABASE_URL=postgres://app:hunter2@db:5432/app; mail ops@example.com; tenant acme-internal-9")
	fmt.Println(s)
	fmt.Println(fs, policy.MaxSensitivity(fs))
	// Output:
	// DATABASE_URL=postgres://app:[REDACTED:url_password]@db:5432/app; mail [REDACTED:email]; tenant [REDACTED:literal_secret]
	// [{email medium} {literal_secret high} {url_password high}] high
}

// BenchmarkRedactAdversarial redacts 64 KB and 256 KB of each adversarial
// input: the time per byte must stay flat.
func BenchmarkRedactAdversarial(b *testing.B) {
	r := newRedactor(b, "acme-internal-9")
	for _, n := range []int{64 << 10, 256 << 10} {
		for name, in := range adversarial(n) {
			b.Run(fmt.Sprintf("%s/%dKB", name, n>>10), func(b *testing.B) {
				b.SetBytes(int64(n))
				for b.Loop() {
					r.String(in)
				}
			})
		}
	}
}

// typicalEvent is about 1 KB of tool output with nothing to redact.
var typicalEvent = strings.Join([]string{
	"$ go test ./store/... -run TestCreate -count=1 -v",
	"=== RUN   TestCreate",
	"2024-05-13T10:22:01.123456Z INFO pool connected addr=127.0.0.1:5432 db=engram_test conns=4",
	"    store_test.go:142: created record 550e8400-e29b-41d4-a716-446655440000 (rev 3) in 12.7ms",
	"--- PASS: TestCreate (0.03s)",
	"=== RUN   TestCreateConflict",
	"    store_test.go:188: Error Trace:\t/work/main/store/store_test.go:188",
	"        \tError:      \tNot equal: expected: 409, actual: 500",
	"        \tTest:       \tTestCreateConflict",
	"--- FAIL: TestCreateConflict (0.01s)",
	"panic: runtime error: invalid memory address or nil pointer dereference [recovered]",
	"goroutine 23 [running]:",
	"github.com/jackc/pgx/v5/pgxpool.(*Pool).Acquire(0xc000123456, {0x1a2b3c0, 0xc000abc123})",
	"\t/home/agent/go/pkg/mod/github.com/jackc/pgx/v5@v5.12.0/pgxpool/pool.go:512 +0x1d4",
	"github.com/engram-dev/engram/store.(*Store).Create(...)",
	"\t/work/main/store/store.go:97 +0x2f1",
	"commit 3f9a1c2b7d4e5f60718293a4b5c6d7e8f9012345 (HEAD -> main, origin/main)",
	"FAIL\tgithub.com/engram-dev/engram/store\t0.412s",
	"exit status 1; took 1.93s; max_tokens=4096 usage.total_tokens=1801",
}, "\n")

// secretEvent is typicalEvent with a password in a URL and an email address.
var secretEvent = strings.Replace(strings.Replace(typicalEvent,
	"addr=127.0.0.1:5432", "dsn=postgres://engram:hunter2@127.0.0.1:5432/engram", 1),
	"(rev 3)", "(owner alice@example.com)", 1)

// BenchmarkRedactTypicalEvent measures redaction of one ~1 KB tool output,
// which runs on every ingested event.
func BenchmarkRedactTypicalEvent(b *testing.B) {
	r := newRedactor(b, "acme-internal-9")
	for _, bc := range []struct {
		name  string
		event string
		found int
	}{
		{"clean", typicalEvent, 0},
		{"two_secrets", secretEvent, 2},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if _, fs := r.String(bc.event); len(fs) != bc.found {
				b.Fatalf("found %v, want %d findings", fs, bc.found)
			}
			b.SetBytes(int64(len(bc.event)))
			b.ReportAllocs()
			for b.Loop() {
				r.String(bc.event)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
