// Package policy is engram's policy plane: what may be stored, and how.
//
// Redaction (OpenWOP memory RFC §D, invariant SR-1): before an event's
// content and tags reach any table, a [Redactor] replaces secrets (provider
// API keys, bearer tokens, JWTs, private-key blocks, passwords in URLs and in
// password=-style pairs, the operator's literal secret values) and personal
// data (email addresses, phone numbers, payment card numbers that pass Luhn,
// IBANs that pass mod-97) with [REDACTED:<label>] markers. In JSON values
// it reads keys too: a key that names a secret (DB_PASSWORD, api_key,
// AWS_SECRET_ACCESS_KEY, Authorization) makes what it holds a secret
// whatever it looks like, and a key that is itself a secret is renamed to
// its marker. It reports what
// it found as [Finding] values, which carry the label and the sensitivity
// the record must be raised to, never the value, so the caller can raise the
// record's sensitivity ([MaxSensitivity]) or, when the operator's policy
// says so, reject the write with a secret_leakage problem instead.
//
// Redaction is idempotent: markers are never matched again, so redacting
// redacted text changes nothing and finds nothing. Detectors are tuned
// against false positives on ordinary agent traces (paths, commands, SHAs,
// UUIDs, timestamps, versions, stack traces), so some secrets in unusual
// shapes pass; the literal list is the operator's backstop for values it
// knows.
package policy
