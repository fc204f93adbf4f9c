package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/engram-dev/engram/api"
)

// keysRotateCommands are the `engram keys` commands of encryption at rest
// (operator keys): the `keys` dispatcher hands them the arguments after
// the command's name. Keys never travel: the daemon holds the master keys
// and re-wraps or re-seals on request.
var keysRotateCommands = map[string]func(c *cli, ctx context.Context, args []string) error{
	"rotate-master": keysRotateMaster,
	"rotate-data":   keysRotateData,
	"encryption":    keysEncryption,
	"new-master":    keysNewMaster,
}

// keysRotate serves `engram keys rotate-master|rotate-data|encryption|
// new-master`; handled is false for any other command, which the `keys`
// dispatcher serves.
func keysRotate(c *cli, ctx context.Context, args []string) (handled bool, err error) {
	if len(args) == 0 {
		return false, nil
	}
	cmd, ok := keysRotateCommands[args[0]]
	if !ok {
		return false, nil
	}
	return true, cmd(c, ctx, args[1:])
}

// keysRotateMaster re-wraps every tenant's data keys under the daemon's
// current master key (the first of encryption.master_keys), without
// re-encrypting a payload.
func keysRotateMaster(c *cli, ctx context.Context, args []string) error {
	if _, err := parse(c.flags("keys rotate-master"), args, 0, ""); err != nil {
		return err
	}
	return c.call(ctx, "POST", "/v1/encryption:rotate-master", nil, nil, func(b []byte) error {
		if c.json {
			return c.write(b)
		}
		var res api.RotateMasterResult
		if err := json.Unmarshal(b, &res); err != nil {
			return fmt.Errorf("decode rotation: %w", err)
		}
		fmt.Fprintf(c.stdout, "re-wrapped %s under master key %s; the old master key may now be removed from the configuration\n", count(res.Rewrapped, "data key"), res.MasterKey)
		return nil
	})
}

// keysRotateData re-seals a tenant's values under a new data key, a
// bounded batch a request, showing progress, until none is left under an
// older key. Interrupted, it is run again and goes on where it stopped.
func keysRotateData(c *cli, ctx context.Context, args []string) error {
	fs := c.flags("keys rotate-data")
	tenant := fs.String("tenant", "", "")
	batch := fs.Int("batch-size", 0, "")
	maxSteps := fs.Int("max-batches", 0, "")
	if _, err := parse(fs, args, 0, "--tenant T [--batch-size N] [--max-batches N]"); err != nil {
		return err
	}
	if *tenant == "" {
		return usageErrorf("usage: engram keys rotate-data --tenant T [--batch-size N] [--max-batches N]")
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	body, err := json.Marshal(api.RotateDataRequest{Tenant: *tenant, BatchSize: *batch})
	if err != nil {
		return err
	}
	total := 0
	for steps := 1; ; steps++ {
		b, err := fetch(ctx, cl, "POST", "/v1/encryption:rotate-data", nil, body)
		if err != nil {
			return err
		}
		var st api.RotateDataStep
		if err := json.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("decode rotation step: %w", err)
		}
		total += st.Resealed
		if c.json {
			if err := c.write(b); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(c.stdout, "tenant %s: data key %d: re-sealed %d (%d this run), %d left\n", st.Tenant, st.Version, st.Resealed, total, st.Remaining)
		}
		if st.Done {
			if !c.json {
				fmt.Fprintf(c.stdout, "tenant %s: every value is sealed under data key %d; older keys retired\n", st.Tenant, st.Version)
			}
			return nil
		}
		if *maxSteps > 0 && steps >= *maxSteps {
			if !c.json {
				fmt.Fprintf(c.stdout, "stopped after %d batch(es); run it again to go on\n", steps)
			}
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// keysEncryption shows whether encryption at rest is on.
func keysEncryption(c *cli, ctx context.Context, args []string) error {
	if _, err := parse(c.flags("keys encryption"), args, 0, ""); err != nil {
		return err
	}
	return c.call(ctx, "GET", "/v1/encryption", nil, nil, func(b []byte) error {
		if c.json {
			return c.write(b)
		}
		var st api.EncryptionStatus
		if err := json.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("decode encryption status: %w", err)
		}
		if !st.Enabled {
			fmt.Fprintln(c.stdout, "encryption at rest: off (no master key configured)")
			return nil
		}
		fmt.Fprintf(c.stdout, "encryption at rest: on, payloads of sensitivity %s and above, master key %s\n", st.MinSensitivity, st.MasterKey)
		return nil
	})
}

// keysNewMaster prints a fresh random master key for the configuration:
// 32 random bytes in base64, as package seal reads them. It runs locally:
// the key is never sent anywhere.
func keysNewMaster(c *cli, _ context.Context, args []string) error {
	if _, err := parse(c.flags("keys new-master"), args, 0, ""); err != nil {
		return err
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	fmt.Fprintln(c.stdout, base64.StdEncoding.EncodeToString(b))
	return nil
}
