package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/api"
)

// leasesCommand serves engram leases acquire|renew|release|get: the write
// locks of POST /v1/leases (write-path RFC §12.8.3).
func leasesCommand(c *cli, ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageErrorf("leases needs a command: acquire, renew, release or get")
	}
	switch args[0] {
	case "acquire":
		return c.leasesAcquire(ctx, args[1:])
	case "renew":
		return c.leasesRenew(ctx, args[1:])
	case "release":
		pos, agent, _, err := c.leaseFlags("leases release", args[1:], false)
		if err != nil {
			return err
		}
		return c.leaseCall(ctx, leasePath(pos, ":release"), api.LeaseRenewRequest{AgentID: agent})
	case "get":
		pos, err := parse(c.flags("leases get"), args[1:], 1, "ID")
		if err != nil {
			return err
		}
		return c.call(ctx, "GET", leasePath(pos[0], ""), nil, nil, c.printLease)
	case "help":
		return errHelp
	}
	return usageErrorf("unknown command leases %s", args[0])
}

func leasePath(id, suffix string) string { return "/v1/leases/" + url.PathEscape(id) + suffix }

// leasesAcquire leases a record (--record) or a scope (--scope).
func (c *cli) leasesAcquire(ctx context.Context, args []string) error {
	fs := c.flags("leases acquire")
	record := fs.String("record", "", "")
	scope := fs.String("scope", "", "")
	agent := fs.String("agent", "", "")
	ttl := fs.String("ttl", "", "")
	if _, err := parse(fs, args, 0, "--record ID | --scope S [--agent A] [--ttl 60s]"); err != nil {
		return err
	}
	req := api.LeaseRequest{Scope: *scope, AgentID: *agent}
	if (*record == "") == (*scope == "") {
		return usageErrorf("leases acquire: name a record (--record ID) or a scope (--scope S)")
	}
	if *record != "" {
		id, err := uuid.Parse(*record)
		if err != nil {
			return usageErrorf("leases acquire: %q is not a record id", *record)
		}
		req.RecordID = &id
	}
	var err error
	if req.TTLSeconds, err = ttlFlag(*ttl); err != nil {
		return err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	return c.call(ctx, "POST", "/v1/leases", nil, b, c.printLease)
}

// leasesRenew renews a lease its agent holds.
func (c *cli) leasesRenew(ctx context.Context, args []string) error {
	pos, agent, ttl, err := c.leaseFlags("leases renew", args, true)
	if err != nil {
		return err
	}
	return c.leaseCall(ctx, leasePath(pos, ":renew"), api.LeaseRenewRequest{AgentID: agent, TTLSeconds: ttl})
}

// leaseFlags parses ID [--agent A] and, for a renewal, [--ttl D].
func (c *cli) leaseFlags(name string, args []string, withTTL bool) (id, agent string, ttl int, err error) {
	fs := c.flags(name)
	a := fs.String("agent", "", "")
	what := "ID [--agent A]"
	var t *string
	if withTTL {
		t = fs.String("ttl", "", "")
		what += " [--ttl 60s]"
	}
	pos, err := parse(fs, args, 1, what)
	if err != nil {
		return "", "", 0, err
	}
	if t != nil {
		if ttl, err = ttlFlag(*t); err != nil {
			return "", "", 0, err
		}
	}
	return pos[0], *a, ttl, nil
}

// ttlFlag reads --ttl: a duration (90s, 2m) or a number of seconds; empty
// is the server's default.
func ttlFlag(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return n, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second || d%time.Second != 0 {
		return 0, usageErrorf("--ttl %q is not a whole number of seconds, such as 60 or 90s", v)
	}
	return int(d / time.Second), nil
}

func (c *cli) leaseCall(ctx context.Context, path string, req api.LeaseRenewRequest) error {
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	return c.call(ctx, "POST", path, nil, b, c.printLease)
}

// printLease prints a lease for a person: what it locks, for whom, its
// fencing token and how to write under it; or with --json as it came.
func (c *cli) printLease(b []byte) error {
	if c.json {
		return c.write(b)
	}
	var l api.Lease
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("decode lease: %w", err)
	}
	what := "scope " + strconv.Quote(l.Scope)
	if l.RecordID != nil {
		what = "record " + l.RecordID.String()
	}
	w := c.tabwriter()
	row(w, "LEASE", l.ID.String())
	row(w, "ON", what)
	row(w, "AGENT", l.AgentID)
	status := l.Status
	if l.Outcome != "" {
		status += " (" + l.Outcome + ")"
	}
	row(w, "STATUS", status)
	row(w, "FENCING TOKEN", strconv.FormatInt(l.FencingToken, 10))
	row(w, "EXPIRES", stamp(l.ExpiresAt))
	if l.ReleasedAt != nil {
		row(w, "RELEASED", stamp(*l.ReleasedAt))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if l.Status == api.LeaseActive {
		fmt.Fprintf(c.stderr, "write under it with --fencing-token %d (ENGRAM_FENCING_TOKEN)\n", l.FencingToken)
	}
	return nil
}
