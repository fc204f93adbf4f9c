package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/client"
	"github.com/engram-dev/engram/internal/version"
)

// DefaultURL is engramd's default listen address.
const DefaultURL = "http://127.0.0.1:8080"

const usage = `engram is the command-line client of engramd, the engram memory daemon.

Usage:
  engram COMMAND [ARGUMENTS] [FLAGS]
  engram help
  engram --version

Read:
  records get ID [--as-of TIME] [--form rfc]
                                          a record (as it was at TIME, RFC 3339); --form rfc in the
                                          substrate RFC's canonical form, engram's extensions under x-engram
  records list [FILTERS] [--all]          a table of records, by default the active set
      --type T         of type T: episodic, working, semantic, competence, plan_graph (repeatable)
      --status S       with status S, or all (repeatable; default active and contested)
      --scope S        of scope S
      --tag T          having tag T (repeatable: every tag)
      --sensitivity S  of sensitivity S: public, low, medium, high, hyper (repeatable)
      --subject S      facts about subject S
      --predicate P    facts with predicate P
      --flag F         flagged F now: derived_from_quarantined
      --limit N        N records a page, 1 to 1000 (default 50)
      --cursor C       the page after the one that printed C
      --as-of TIME     as they were at TIME
      --all            every page, following the cursor
  records history ID                      every version of a record
  records audit ID                        every audited action on a record
  records relations ID                    every relation of a record, both ways

Write (each takes --rationale R, kept in the audit trail; FILE - is standard input):
  records create -f FILE [--form rfc]     create the record in FILE (JSON); --form rfc: FILE is in the
                                          RFC's form, as records get --form rfc prints it
  records update ID -f FILE --version N   replace a working record's payload with FILE's
  records supersede ID -f FILE [--version N]
                                          replace a record with the record in FILE
  records fork ID -f FILE [--version N]   fork a fact into FILE's JSON array of variants
  records contest ID [--against ID]... [-f FILE]
                                          mark records as contradicting each other;
                                          FILE holds a new contradicting record
  records retract ID [--version N]        withdraw a record from the active set
  records rollback ID [--version N]       undo the revision that made a record: retract it and
                                          reactivate what it replaced (and a fork's other variants)
  records restore ID [--rationale R]      bring back a retracted record (a procedure given up)
                                          or an expired one, before it is purged
  records quarantine ID --rationale R [--version N]
                                          hold a suspect record out of retrieval and flag
                                          the records derived from it
  records release ID --rationale R [--version N]
                                          end a quarantine and clear its flags
  records append ID -f FILE               add FILE's {"timeline": [...], "outcome": ...} to an episode
  records merge ID ID... [-f FILE]        merge duplicates; FILE holds a template record
  records pin ID [--deletion-policy P] [--version N]
                                          keep a record from being forgotten (a curator's key);
                                          P: auto_prune, manual_only or never
  records unpin ID [--deletion-policy P] [--version N]
                                          let decay forget it again as its deletion policy says
  records reclassify ID --sensitivity S [--version N]
                                          give a record another sensitivity class (a curator's key)
  records annotate ID --note TEXT         keep a curation note in a record's audit trail
  records delete ID                       delete a record (it stays in history and audit)
  records purge ID                        erase a deleted record for good

Retrieval:
  recall TEXT [FLAGS]                     what memory helps with a task, layer by layer: the thread's
                                          working memory, facts, procedures, plans and episodes
      --intent X         the task's intent, such as fix_build
      --signal S         a signal, such as an error message (repeatable)
      --tool T           a tool in play (repeatable)
      --cond KEY=VALUE   a condition of the task's context (repeatable): true and false are
                         booleans, numbers numbers, anything else (or "quoted") a string
      --thread ID        the task's thread; its working memory comes first
      --agent ID         the agent asking
      --scope S          records of scope S, and of none
      --clearance LEVEL  public, low, medium, high or hyper (default: the server's)
      --unauthenticated  the person at the agent is not authenticated: lowers the clearance
      --env ENV          where the answer is shown, such as shared_screen or ci: may lower it
      --items N          items in all, 1 to 200
      --tokens N         approximate tokens in all, 1 to 200000
      --layer LAYER=N    items in LAYER (working, semantic, competence, plan, episodic), 1 to 100
                         (repeatable)
  feedback RETRIEVAL_ID --outcome O [--record ID]... [--rationale R]
                                          how the records a recall returned served the task:
                                          used_success reinforces them, used_failure and unused
                                          penalise them; --record names only some of them
  procedures [--status S]...              the procedures engram learned: trigger, conditions,
                                          smoothed success rate (successes/uses), evidence
                                          count and state (probation, active; --status
                                          retracted or all for the ones given up)
  skills export DIR [--min-success-rate R]
                                          every active procedure as DIR/NAME/SKILL.md in the Agent
                                          Skills format (Claude Code, Codex, Cursor, Copilot, Letta);
                                          R leaves out those whose smoothed success rate is below it

Agents (the Model Context Protocol):
  mcp                                     serve engram to an MCP client (Claude Desktop, Claude Code, Cursor, …)
                                          on standard input and output, with the --url, --api-key and --actor
                                          below: tools recall, remember, feedback, get_record, record_history,
                                          record_audit, list_procedures and propose_fact; resources
                                          engram://records/{id} and engram://skills/{id} (SKILL.md).
                                          engramd serves the same over HTTP at /mcp

Review (the approval gate's queue of drafts; a tenant's key):
  reviews list [--status S]... [--all]    the queue, oldest first: pending reviews, or those with
                                          status S (pending, approved, rejected, expired or all)
      --limit N        N reviews a page, 1 to 1000 (default 50)
      --cursor C       the page after the one that printed C
      --all            every page, following the cursor
  reviews get ID                          a review with its draft record
  reviews approve ID --justification J    make the draft active (and carry out its proposal); prints the
                                          decision and the record it left (--json: the whole review)
  reviews reject ID --reason R --justification J
                                          retract the draft; R is factual_error, policy_violation,
                                          duplicate, insufficient_evidence, contradiction or other

Leases (write locks with fencing tokens, write-path RFC §12.8.3; a tenant's key):
  leases acquire --record ID | --scope S [--agent A] [--ttl 60s]
                                          lease a record, or every record of a scope, to agent A
                                          (default: --actor); prints the lease and its fencing token.
                                          Acquiring again as A renews it, with the same token
  leases renew ID [--agent A] [--ttl 60s] extend A's lease from now, keeping its token
  leases release ID [--agent A]           release A's lease at once
  leases get ID                           a lease and its status
  Writes under a lease carry its token: --fencing-token N on records commands
  (ENGRAM_FENCING_TOKEN). A stale token, or another agent's active lease, refuses the write.

Events and policy:
  events send -f FILE [--wait]            stage FILE's events (one JSON event or an array of them, as
                                          POST /v1/events takes; - is standard input), as an agent
                                          runtime reports what it does; --wait waits (--timeout, 30s)
                                          until the policy plane has classified them: each thread
                                          has its episode, and a thread they end is closed
  policy explain FILE|-                   what the policy in force would do with the event in FILE:
                                          the decision, the rules that made it, what was redacted
  bench ingest [--events N] [--streams N] [--threads N] [--agents N]
                                          stream synthetic agent traces to engramd; report events/s,
                                          acknowledgement latency p50/p99 and the daemon's memory

Decay and jobs:
  decay preview --config FILE [--at +30d|TIME]
                                          what the decay section of an engramd configuration FILE
                                          would do, beside the one in force: salience by type now
                                          and at the horizon, and how many records would be pruned
  decay stats                             salience of the active set by type, now
  jobs list                               the periodic jobs, their schedules and last runs
  jobs run NAME [--wait]                  run a job now (decay_sweep, retention, …); --wait follows it
                                          (jobs work across every tenant: they take an operator key)

Write-path metrics (an operator key):
  stats writes                            this daemon's writes since it started: by layer and outcome
                                          with the acceptance, WAR and dedup hit rates; rejections by
                                          gate and reason; each gate's latency p50/p95/p99; the review
                                          queue of its tenants

Retention and compliance (an operator key):
  compliance                              the latest compliance report: records past their class's
                                          retention by class and tenant, violations, erasures not
                                          yet complete (jobs run compliance --wait makes a new one)
Erasure (write-path RFC §12.10.2; a curator's key):
  erase [--email E] [--name N] [--user-id U] [--phone P] [--wait]
                                          forget a data subject: every record, staged event, timeline
                                          entry, version, vector, artifact, audit and retrieval-log entry
                                          naming them, and what derives from them (rebuilt without them
                                          where it has other sources); each flag repeatable, one at least.
                                          --wait shows the progress and prints the certificate: counts
                                          per layer, rebuilt records and the verification scan's result
  erase status ID                         an erasure's status, or its certificate once completed

API keys (an operator key; write-path RFC §12.8.2):
  keys create NAME --role ROLE [--tenant T] [--agent A] [--domains D,…] [--clearance C]
                                          make a key kept in the database and print its secret, once;
                                          ROLE is executor (needs --agent), verifier, orchestrator,
                                          curator, or operator (no --tenant)
  keys list [--tenant T]                  the keys kept in the database, never a secret
  keys revoke NAME                        revoke a key: every daemon refuses it from the next request
Encryption at rest (an operator key; the daemon holds the master keys, none travels):
  keys encryption                         whether payloads are sealed, from which sensitivity, and
                                          the id of the master key that wraps
  keys rotate-master                      re-wrap every tenant's data keys under the first configured
                                          master key, without re-encrypting any payload
  keys rotate-data --tenant T [--batch-size N] [--max-batches N]
                                          re-seal a tenant's payloads under a new data key, N at a
                                          time, showing progress; interrupted, run it again to go on
  keys new-master                         print a new random master key (local; nothing is sent)

Flags, anywhere on the line:
  --url URL       engramd's address (ENGRAM_URL, default ` + DefaultURL + `)
  --api-key KEY   the API key (ENGRAM_API_KEY): a tenant's, or for jobs, stats writes and compliance an operator's
  --actor NAME    the agent you act for, kept in the audit trail (ENGRAM_ACTOR)
  --fencing-token N
                  the fencing token of your lease, sent with every write (ENGRAM_FENCING_TOKEN)
  --json          print the API's JSON as it comes; list --all prints one page of every record

Exit status: 0 on success, 1 when a request fails, 2 on a usage error.
`

// usageError is a command line that cannot be run as given.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// errHelp asks for the usage text.
var errHelp = errors.New("help requested")

// exitCode is the process exit status for an error run returned.
func exitCode(err error) int {
	var u *usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

// run runs the command line args (without the program name). Settings come
// from flags over the environment (getenv) over defaults. It reports an
// error on stderr before returning it; an API problem is reported with its
// title, detail and field errors.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	c := &cli{
		stdin:  stdin,
		stdout: stdout,
		stderr: stderr,
		url:    getenv("ENGRAM_URL"),
		key:    getenv("ENGRAM_API_KEY"),
		actor:  getenv("ENGRAM_ACTOR"),
		fence:  getenv("ENGRAM_FENCING_TOKEN"),
	}
	if c.url == "" {
		c.url = DefaultURL
	}
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version" || args[0] == "version") {
		fmt.Fprintln(stdout, "engram", version.String())
		return nil
	}
	err := c.run(ctx, args)
	if errors.Is(err, errHelp) {
		fmt.Fprint(stdout, usage)
		return nil
	}
	if err != nil {
		err = c.unreachable(err, getenv("ENGRAM_URL"))
		report(stderr, err)
	}
	return err
}

// cli is one invocation: its streams and the settings every command shares.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	url, key, actor string
	json            bool
	// fence is the fencing token of a lease, sent with every request as
	// X-Engram-Fencing-Token.
	fence string
}

func (c *cli) run(ctx context.Context, args []string) error {
	fs := c.flags("engram")
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	args = fs.Args()
	if len(args) == 0 {
		return usageErrorf("no command")
	}
	switch cmd, args := args[0], args[1:]; cmd {
	case "help":
		return errHelp
	case "records":
		if len(args) == 0 {
			return usageErrorf("records needs a command: get, list, history, audit, relations, create, update, supersede, fork, contest, retract, rollback, restore, quarantine, release, append, merge, delete or purge")
		}
		sub, ok := recordCommands[args[0]]
		if !ok {
			if args[0] == "help" {
				return errHelp
			}
			return usageErrorf("unknown command records %s", args[0])
		}
		return sub(c, ctx, args[1:])
	case "policy":
		if len(args) == 0 || args[0] != "explain" {
			return usageErrorf("usage: engram policy explain FILE|-")
		}
		return explainPolicy(c, ctx, args[1:])
	case "bench":
		if len(args) == 0 || args[0] != "ingest" {
			return usageErrorf("usage: engram bench ingest [--events N] [--streams N] [--threads N] [--agents N]")
		}
		return benchIngest(c, ctx, args[1:])
	case "events":
		return eventsCommand(c, ctx, args)
	case "recall":
		return recall(c, ctx, args)
	case "feedback":
		return feedback(c, ctx, args)
	case "decay":
		return decayCommand(c, ctx, args)
	case "jobs":
		return jobsCommand(c, ctx, args)
	case "reviews":
		return reviewsCommand(c, ctx, args)
	case "stats":
		return statsCommand(c, ctx, args)
	case "procedures":
		return procedures(c, ctx, args)
	case "skills":
		return skillsCommand(c, ctx, args)
	case "mcp":
		return mcpCommand(c, ctx, args)
	case "leases":
		return leasesCommand(c, ctx, args)
	case "compliance":
		return complianceCommand(c, ctx, args)
	case "erase":
		return erase(c, ctx, args)
	case "keys":
		// Encryption at rest's commands first (keys_rotate.go), then the
		// keys kept in the database (keys.go).
		if handled, err := keysRotate(c, ctx, args); handled {
			return err
		}
		return keysCommand(c, ctx, args)
	default:
		return usageErrorf("unknown command %s", cmd)
	}
}

// flags returns a flag set for a command with the flags every command
// takes; they keep the values already set (the environment, or flags given
// before the command).
func (c *cli) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.url, "url", c.url, "")
	fs.StringVar(&c.key, "api-key", c.key, "")
	fs.StringVar(&c.actor, "actor", c.actor, "")
	fs.BoolVar(&c.json, "json", c.json, "")
	fs.StringVar(&c.fence, "fencing-token", c.fence, "")
	return fs
}

// parse parses args with fs, flags before, between or after the positional
// arguments, and returns the positional ones: exactly n of them, or at least
// -n when n is negative. what is the usage shown when they are not.
func parse(fs *flag.FlagSet, args []string, n int, what string) ([]string, error) {
	pos, err := parseAll(fs, args)
	if err != nil {
		return nil, err
	}
	switch {
	case n >= 0 && len(pos) != n, n < 0 && len(pos) < -n:
		return nil, usageErrorf("usage: engram %s %s", fs.Name(), what)
	}
	return pos, nil
}

// parseAll parses args with fs, flags before, between or after the
// positional arguments, and returns the positional ones, however many.
func parseAll(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, flagError(err)
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

func flagError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return errHelp
	}
	return usageErrorf("%v", err)
}

// client returns a client of engramd's API (package client) for the
// configured server, key, actor and fencing token.
func (c *cli) client() (*client.Client, error) {
	if c.key == "" {
		return nil, usageErrorf("no API key: set ENGRAM_API_KEY or pass --api-key")
	}
	u, err := url.Parse(c.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageErrorf("%q is not an engramd URL such as %s", c.url, DefaultURL)
	}
	var fence int64
	if c.fence != "" {
		if fence, err = strconv.ParseInt(c.fence, 10, 64); err != nil {
			return nil, usageErrorf("fencing token %q is not a number: use the fencing token of engram leases acquire", c.fence)
		}
	}
	return client.New(client.Config{
		URL: c.url, Key: c.key, Actor: c.actor, FencingToken: fence,
		HTTPClient: &http.Client{Timeout: time.Minute}, UserAgent: "engram-cli",
	})
}

// unreachable explains an error connecting to engramd: which URL was
// tried and where it came from (ENGRAM_URL, --url or the default), since
// a shell that never exported ENGRAM_URL tries the default. Other errors
// are returned as they are.
func (c *cli) unreachable(err error, fromEnv string) error {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		return err
	}
	from := "--url"
	switch {
	case fromEnv == "" && c.url == DefaultURL:
		from = "the default; set ENGRAM_URL or pass --url for another"
	case c.url == fromEnv:
		from = "ENGRAM_URL"
	}
	return fmt.Errorf("no engramd answers at %s (%s): is it running? (%w)", c.url, from, op.Err)
}

// report writes err for a person: an API problem with its details, a usage
// error with a pointer to the usage text.
func report(w io.Writer, err error) {
	var (
		p *api.Problem
		u *usageError
	)
	switch {
	case errors.As(err, &p):
		fmt.Fprintf(w, "engram: %s (HTTP %d)", p.Title, p.Status)
		if p.Detail != "" {
			fmt.Fprintf(w, ": %s", p.Detail)
		}
		fmt.Fprintln(w)
		for _, fe := range p.Errors {
			fmt.Fprintf(w, "  %s: %s\n", location(fe), fe.Message)
		}
		if len(p.RecordIDs) > 0 {
			ids := make([]string, len(p.RecordIDs))
			for i, id := range p.RecordIDs {
				ids[i] = id.String()
			}
			fmt.Fprintf(w, "  records: %s\n", strings.Join(ids, ", "))
		}
		if p.Type == client.ProblemForbidden {
			fmt.Fprintln(w, "  ENGRAM_API_KEY (or --api-key) picks the key: engram jobs takes an operator key, as does engram stats writes; the other commands a tenant's key, but engram compliance an operator's")
		}
	case errors.As(err, &u):
		fmt.Fprintf(w, "engram: %s\nRun 'engram help' for usage.\n", u.msg)
	default:
		fmt.Fprintf(w, "engram: %v\n", err)
	}
}
