package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
)

// keysCommand serves `engram keys create|list|revoke`: API keys kept in
// the database (write-path RFC §12.8.2), an operator's to manage. Later
// subcommands of keys join this dispatch.
func keysCommand(c *cli, ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageErrorf("keys needs a command: create, list or revoke")
	}
	switch args[0] {
	case "create":
		return keysCreate(c, ctx, args[1:])
	case "list":
		fs := c.flags("keys list")
		tenant := fs.String("tenant", "", "")
		if _, err := parse(fs, args[1:], 0, "[--tenant T]"); err != nil {
			return err
		}
		var q url.Values
		if *tenant != "" {
			q = url.Values{"tenant": {*tenant}}
		}
		return c.call(ctx, "GET", "/v1/keys", q, nil, c.orTable(c.keysTable))
	case "revoke":
		pos, err := parse(c.flags("keys revoke"), args[1:], 1, "NAME")
		if err != nil {
			return err
		}
		return c.call(ctx, "POST", "/v1/keys/"+url.PathEscape(pos[0])+":revoke", nil, nil, c.orTable(func(b []byte) error {
			var k api.APIKey
			if err := json.Unmarshal(b, &k); err != nil {
				return fmt.Errorf("decode key: %w", err)
			}
			fmt.Fprintf(c.stdout, "revoked %s at %s: every daemon refuses it from now on\n", k.Name, stamp(*k.RevokedAt))
			return nil
		}))
	case "help":
		return errHelp
	}
	return usageErrorf("unknown command keys %s", args[0])
}

// keysCreate makes a key and prints its secret, the one time it is shown.
func keysCreate(c *cli, ctx context.Context, args []string) error {
	fs := c.flags("keys create")
	var req api.KeyRequest
	fs.StringVar(&req.Tenant, "tenant", "", "")
	fs.StringVar(&req.Role, "role", "", "")
	fs.StringVar(&req.AgentID, "agent", "", "")
	domains := fs.String("domains", "", "")
	clearance := fs.String("clearance", "", "")
	pos, err := parse(fs, args, 1, "NAME --role ROLE [--tenant T] [--agent A] [--domains D,…] [--clearance C]")
	if err != nil {
		return err
	}
	req.Name = pos[0]
	if req.Role == "" {
		return usageErrorf("keys create needs --role: executor, verifier, orchestrator, curator or operator")
	}
	for _, d := range strings.Split(*domains, ",") {
		if d = strings.TrimSpace(d); d != "" {
			req.Domains = append(req.Domains, d)
		}
	}
	req.Clearance = memory.Sensitivity(*clearance)
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	return c.call(ctx, "POST", "/v1/keys", nil, body, c.orTable(func(b []byte) error {
		var k api.CreatedKey
		if err := json.Unmarshal(b, &k); err != nil {
			return fmt.Errorf("decode key: %w", err)
		}
		fmt.Fprintf(c.stdout, "created key %s (%s%s); its secret, shown this once:\n\n    %s\n\n", k.Name, k.Role, tenantOf(k.APIKey), k.Secret)
		return nil
	}))
}

func tenantOf(k api.APIKey) string {
	if k.Tenant == "" {
		return ", every tenant"
	}
	return " of " + k.Tenant
}

func (c *cli) keysTable(b []byte) error {
	var list api.KeyList
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("decode keys: %w", err)
	}
	w := c.tabwriter()
	row(w, "NAME", "TENANT", "ROLE", "AGENT", "DOMAINS", "CLEARANCE", "CREATED", "REVOKED")
	for _, k := range list.Keys {
		revoked := "-"
		if k.RevokedAt != nil {
			revoked = stamp(*k.RevokedAt)
		}
		domains := strings.Join(k.Domains, ",")
		row(w, k.Name, dash(k.Tenant), k.Role, dash(k.AgentID), dash(domains), string(k.Clearance), stamp(k.CreatedAt), revoked)
	}
	return w.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
