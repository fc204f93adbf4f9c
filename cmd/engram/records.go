package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/client"
	"github.com/engram-dev/engram/memory"
)

// recordCommands are the subcommands of engram records.
var recordCommands = map[string]func(c *cli, ctx context.Context, args []string) error{
	"get":        (*cli).recordsGet,
	"list":       (*cli).recordsList,
	"history":    (*cli).recordsHistory,
	"audit":      (*cli).recordsAudit,
	"relations":  (*cli).recordsRelations,
	"create":     (*cli).recordsCreate,
	"update":     (*cli).recordsUpdate,
	"supersede":  (*cli).recordsSupersede,
	"fork":       (*cli).recordsFork,
	"contest":    (*cli).recordsContest,
	"retract":    (*cli).recordsRetract,
	"rollback":   (*cli).recordsRollback,
	"restore":    (*cli).recordsRestore,
	"quarantine": (*cli).recordsQuarantine,
	"release":    (*cli).recordsRelease,
	"append":     (*cli).recordsAppend,
	"merge":      (*cli).recordsMerge,
	"delete":     (*cli).recordsDelete,
	"purge":      (*cli).recordsPurge,
	"pin":        (*cli).recordsPin,
	"unpin":      (*cli).recordsUnpin,
	"reclassify": (*cli).recordsReclassify,
	"annotate":   (*cli).recordsAnnotate,
}

// listFlag is a repeatable flag; each value may also be a comma-separated
// list, as the API takes them.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

func recordPath(id string, suffix string) string { return "/v1/records/" + url.PathEscape(id) + suffix }

func (c *cli) recordsGet(ctx context.Context, args []string) error {
	fs := c.flags("records get")
	asOf := fs.String("as-of", "", "")
	form := fs.String("form", "", "")
	pos, err := parse(fs, args, 1, "ID [--as-of TIME] [--form rfc]")
	if err != nil {
		return err
	}
	q := url.Values{}
	if *asOf != "" {
		q.Set("as_of", *asOf)
	}
	if *form != "" {
		// The record as the substrate RFC's canonical schemas have it
		// (§15A), engram's extensions under x-engram: printed as JSON.
		q.Set("form", *form)
		return c.call(ctx, "GET", recordPath(pos[0], ""), q, nil, c.printJSON)
	}
	return c.call(ctx, "GET", recordPath(pos[0], ""), q, nil, c.printRecord)
}

func (c *cli) recordsList(ctx context.Context, args []string) error {
	fs := c.flags("records list")
	var types, statuses, tags, sensitivities listFlag
	fs.Var(&types, "type", "")
	fs.Var(&statuses, "status", "")
	fs.Var(&tags, "tag", "")
	fs.Var(&sensitivities, "sensitivity", "")
	scope := fs.String("scope", "", "")
	subject := fs.String("subject", "", "")
	predicate := fs.String("predicate", "", "")
	flagged := fs.String("flag", "", "")
	limit := fs.Int("limit", 0, "")
	cursor := fs.String("cursor", "", "")
	asOf := fs.String("as-of", "", "")
	all := fs.Bool("all", false, "")
	if _, err := parse(fs, args, 0, "[FILTERS] [--all]"); err != nil {
		return err
	}
	q := url.Values{"type": types, "status": statuses, "tag": tags, "sensitivity": sensitivities}
	set := func(name, v string) {
		if v != "" {
			q.Set(name, v)
		}
	}
	set("subject", *subject)
	set("predicate", *predicate)
	set("flag", *flagged)
	set("cursor", *cursor)
	set("as_of", *asOf)
	if *limit != 0 {
		q.Set("limit", strconv.Itoa(*limit))
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "scope" {
			// Even empty: scope= lists the records without a scope.
			q.Set("scope", *scope)
		}
	})

	return c.list(ctx, listing{path: "/v1/records", member: "records", table: c.recordTable}, q, *all)
}

func (c *cli) recordsHistory(ctx context.Context, args []string) error {
	pos, err := parse(c.flags("records history"), args, 1, "ID")
	if err != nil {
		return err
	}
	return c.call(ctx, "GET", recordPath(pos[0], "/history"), nil, nil, c.orTable(c.historyTable))
}

func (c *cli) recordsAudit(ctx context.Context, args []string) error {
	pos, err := parse(c.flags("records audit"), args, 1, "ID")
	if err != nil {
		return err
	}
	return c.call(ctx, "GET", recordPath(pos[0], "/audit"), nil, nil, c.orTable(c.auditTable))
}

func (c *cli) recordsRelations(ctx context.Context, args []string) error {
	pos, err := parse(c.flags("records relations"), args, 1, "ID")
	if err != nil {
		return err
	}
	return c.call(ctx, "GET", recordPath(pos[0], "/relations"), nil, nil, c.orTable(c.relationsTable))
}

func (c *cli) recordsCreate(ctx context.Context, args []string) error {
	fs := c.flags("records create")
	file := fs.String("f", "", "")
	rationale := fs.String("rationale", "", "")
	form := fs.String("form", "", "")
	if _, err := parse(fs, args, 0, "-f FILE [--form rfc] [--rationale R]"); err != nil {
		return err
	}
	rec, err := c.readJSON(*file)
	if err != nil {
		return err
	}
	q := url.Values{}
	if *form != "" {
		q.Set("form", *form)
	}
	if *rationale != "" {
		// The body is the record itself; the rationale goes in the query.
		q.Set("rationale", *rationale)
	}
	return c.call(ctx, "POST", "/v1/records", q, rec, c.printJSON)
}

func (c *cli) recordsUpdate(ctx context.Context, args []string) error {
	fs := c.flags("records update")
	file, version, rationale := fs.String("f", "", ""), fs.Int("version", 0, ""), fs.String("rationale", "", "")
	pos, err := parse(fs, args, 1, "ID -f FILE --version N [--rationale R]")
	if err != nil {
		return err
	}
	payload, err := c.readJSON(*file)
	if err != nil {
		return err
	}
	return c.send(ctx, "PATCH", recordPath(pos[0], ""), api.UpdateRequest{Version: *version, Rationale: *rationale, Payload: payload})
}

func (c *cli) recordsSupersede(ctx context.Context, args []string) error {
	fs := c.flags("records supersede")
	file, version, rationale := fs.String("f", "", ""), fs.Int("version", 0, ""), fs.String("rationale", "", "")
	pos, err := parse(fs, args, 1, "ID -f FILE [--version N] [--rationale R]")
	if err != nil {
		return err
	}
	rec, err := c.readJSON(*file)
	if err != nil {
		return err
	}
	return c.send(ctx, "POST", recordPath(pos[0], ":supersede"), api.ReviseRequest{Version: *version, Rationale: *rationale, Record: rec})
}

func (c *cli) recordsFork(ctx context.Context, args []string) error {
	fs := c.flags("records fork")
	file, version, rationale := fs.String("f", "", ""), fs.Int("version", 0, ""), fs.String("rationale", "", "")
	pos, err := parse(fs, args, 1, "ID -f FILE [--version N] [--rationale R]")
	if err != nil {
		return err
	}
	variants, err := c.readJSON(*file)
	if err != nil {
		return err
	}
	r := api.ReviseRequest{Version: *version, Rationale: *rationale}
	if !bytes.HasPrefix(bytes.TrimSpace(variants), []byte("[")) || json.Unmarshal(variants, &r.Variants) != nil {
		return usageErrorf("records fork: FILE must hold a JSON array of variant records")
	}
	return c.send(ctx, "POST", recordPath(pos[0], ":fork"), r)
}

func (c *cli) recordsContest(ctx context.Context, args []string) error {
	fs := c.flags("records contest")
	var against listFlag
	fs.Var(&against, "against", "")
	file, rationale := fs.String("f", "", ""), fs.String("rationale", "", "")
	pos, err := parse(fs, args, 1, "ID [--against ID]... [-f FILE] [--rationale R]")
	if err != nil {
		return err
	}
	r := api.ReviseRequest{Rationale: *rationale}
	for _, a := range against {
		ids, err := recordIDs("records contest", strings.Split(a, ","))
		if err != nil {
			return err
		}
		r.Against = append(r.Against, ids...)
	}
	if *file != "" {
		if r.Record, err = c.readJSON(*file); err != nil {
			return err
		}
	}
	return c.send(ctx, "POST", recordPath(pos[0], ":contest"), r)
}

func (c *cli) recordsRetract(ctx context.Context, args []string) error {
	fs := c.flags("records retract")
	version, rationale := fs.Int("version", 0, ""), fs.String("rationale", "", "")
	pos, err := parse(fs, args, 1, "ID [--version N] [--rationale R]")
	if err != nil {
		return err
	}
	return c.send(ctx, "POST", recordPath(pos[0], ":retract"), api.ReviseRequest{Version: *version, Rationale: *rationale})
}

func (c *cli) recordsRollback(ctx context.Context, args []string) error {
	fs := c.flags("records rollback")
	version, rationale := fs.Int("version", 0, ""), fs.String("rationale", "", "")
	pos, err := parse(fs, args, 1, "ID [--version N] [--rationale R]")
	if err != nil {
		return err
	}
	return c.send(ctx, "POST", recordPath(pos[0], ":rollback"), api.ReviseRequest{Version: *version, Rationale: *rationale})
}

func (c *cli) recordsRestore(ctx context.Context, args []string) error {
	fs := c.flags("records restore")
	rationale := fs.String("rationale", "", "")
	pos, err := parse(fs, args, 1, "ID [--rationale R]")
	if err != nil {
		return err
	}
	return c.send(ctx, "POST", recordPath(pos[0], ":restore"), api.ReviseRequest{Rationale: *rationale})
}

func (c *cli) recordsQuarantine(ctx context.Context, args []string) error {
	return c.governance(ctx, "quarantine", args)
}

func (c *cli) recordsRelease(ctx context.Context, args []string) error {
	return c.governance(ctx, "release", args)
}

// governance sends a quarantine or a release, which say why.
func (c *cli) governance(ctx context.Context, op string, args []string) error {
	fs := c.flags("records " + op)
	version, rationale := fs.Int("version", 0, ""), fs.String("rationale", "", "")
	pos, err := parse(fs, args, 1, "ID --rationale R [--version N]")
	if err != nil {
		return err
	}
	if *rationale == "" {
		return usageErrorf("usage: engram records %s ID --rationale R [--version N]: say why", op)
	}
	return c.send(ctx, "POST", recordPath(pos[0], ":"+op), api.ReviseRequest{Version: *version, Rationale: *rationale})
}

func (c *cli) recordsPin(ctx context.Context, args []string) error {
	return c.keep(ctx, "pin", args)
}

func (c *cli) recordsUnpin(ctx context.Context, args []string) error {
	return c.keep(ctx, "unpin", args)
}

// keep sends a pin or an unpin (write-path RFC §12.7.4: curation).
func (c *cli) keep(ctx context.Context, op string, args []string) error {
	fs := c.flags("records " + op)
	version, rationale := fs.Int("version", 0, ""), fs.String("rationale", "", "")
	policy := fs.String("deletion-policy", "", "")
	pos, err := parse(fs, args, 1, "ID [--deletion-policy P] [--version N] [--rationale R]")
	if err != nil {
		return err
	}
	return c.send(ctx, "POST", recordPath(pos[0], ":"+op), api.ReviseRequest{
		Version: *version, Rationale: *rationale, DeletionPolicy: memory.DeletionPolicy(*policy)})
}

func (c *cli) recordsReclassify(ctx context.Context, args []string) error {
	fs := c.flags("records reclassify")
	version, rationale := fs.Int("version", 0, ""), fs.String("rationale", "", "")
	sensitivity := fs.String("sensitivity", "", "")
	pos, err := parse(fs, args, 1, "ID --sensitivity S [--version N] [--rationale R]")
	if err != nil {
		return err
	}
	if *sensitivity == "" {
		return usageErrorf("usage: engram records reclassify ID --sensitivity S [--version N] [--rationale R]: the new class")
	}
	return c.send(ctx, "POST", recordPath(pos[0], ":reclassify"), api.ReviseRequest{
		Version: *version, Rationale: *rationale, Sensitivity: memory.Sensitivity(*sensitivity)})
}

func (c *cli) recordsAnnotate(ctx context.Context, args []string) error {
	fs := c.flags("records annotate")
	note := fs.String("note", "", "")
	pos, err := parse(fs, args, 1, "ID --note TEXT")
	if err != nil {
		return err
	}
	if *note == "" {
		return usageErrorf("usage: engram records annotate ID --note TEXT: the curation note")
	}
	return c.send(ctx, "POST", recordPath(pos[0], ":annotate"), api.ReviseRequest{Note: *note})
}

func (c *cli) recordsAppend(ctx context.Context, args []string) error {
	fs := c.flags("records append")
	file, rationale := fs.String("f", "", ""), fs.String("rationale", "", "")
	pos, err := parse(fs, args, 1, "ID -f FILE [--rationale R]")
	if err != nil {
		return err
	}
	doc, err := c.readJSON(*file)
	if err != nil {
		return err
	}
	// FILE is the request body itself: what to append.
	var body map[string]json.RawMessage
	if err := json.Unmarshal(doc, &body); err != nil || body == nil {
		return usageErrorf(`records append: FILE must hold a JSON object such as {"timeline": [...], "outcome": "success"}`)
	}
	if *rationale != "" {
		body["rationale"], _ = json.Marshal(*rationale)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	return c.call(ctx, "POST", recordPath(pos[0], ":append"), nil, b, c.printJSON)
}

func (c *cli) recordsMerge(ctx context.Context, args []string) error {
	fs := c.flags("records merge")
	file, rationale := fs.String("f", "", ""), fs.String("rationale", "", "")
	pos, err := parse(fs, args, -2, "ID ID... [-f FILE] [--rationale R]")
	if err != nil {
		return err
	}
	ids, err := recordIDs("records merge", pos)
	if err != nil {
		return err
	}
	r := api.ReviseRequest{Rationale: *rationale, RecordIDs: ids}
	if *file != "" {
		if r.Record, err = c.readJSON(*file); err != nil {
			return err
		}
	}
	return c.send(ctx, "POST", "/v1/records:merge", r)
}

func (c *cli) recordsDelete(ctx context.Context, args []string) error {
	fs := c.flags("records delete")
	rationale := fs.String("rationale", "", "")
	pos, err := parse(fs, args, 1, "ID [--rationale R]")
	if err != nil {
		return err
	}
	q := url.Values{}
	if *rationale != "" {
		q.Set("rationale", *rationale)
	}
	return c.call(ctx, "DELETE", recordPath(pos[0], ""), q, nil, c.printJSON)
}

func (c *cli) recordsPurge(ctx context.Context, args []string) error {
	fs := c.flags("records purge")
	rationale := fs.String("rationale", "", "")
	pos, err := parse(fs, args, 1, "ID [--rationale R]")
	if err != nil {
		return err
	}
	b, err := json.Marshal(api.ReviseRequest{Rationale: *rationale})
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	return c.call(ctx, "POST", recordPath(pos[0], ":purge"), nil, b, func([]byte) error {
		if !c.json {
			fmt.Fprintf(c.stdout, "purged %s\n", pos[0])
		}
		return nil
	})
}

// send sends a revision (an [api.ReviseRequest] or [api.UpdateRequest]) and
// prints the answer.
func (c *cli) send(ctx context.Context, method, path string, r any) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	return c.call(ctx, method, path, nil, b, c.printJSON)
}

// recordIDs parses the record ids of a command's arguments.
func recordIDs(command string, args []string) ([]uuid.UUID, error) {
	ids := make([]uuid.UUID, len(args))
	for i, a := range args {
		id, err := uuid.Parse(a)
		if err != nil {
			return nil, usageErrorf("%s: %q is not a record id", command, a)
		}
		ids[i] = id
	}
	return ids, nil
}

// call sends a request and hands a successful answer's body to print.
func (c *cli) call(ctx context.Context, method, path string, q url.Values, body []byte, print func([]byte) error) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	b, err := fetch(ctx, cl, method, path, q, body)
	if err != nil {
		return err
	}
	return print(b)
}

// fetch sends a request through cl and returns the body of a successful
// answer as it came, which --json prints unchanged.
func fetch(ctx context.Context, cl *client.Client, method, path string, q url.Values, body []byte) ([]byte, error) {
	var b []byte
	err := cl.Do(ctx, method, path, q, json.RawMessage(body), &b)
	return b, err
}

// readJSON reads the JSON document of -f: a file, or standard input for
// "-".
func (c *cli) readJSON(path string) (json.RawMessage, error) {
	var (
		b   []byte
		err error
	)
	switch path {
	case "":
		return nil, usageErrorf("-f FILE is required")
	case "-":
		b, err = io.ReadAll(c.stdin)
	default:
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var doc json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("read %s: not JSON: %w", path, err)
	}
	return doc, nil
}
