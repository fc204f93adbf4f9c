// Package config is engramd's configuration: defaults, an optional YAML
// file, ENGRAM_* environment variables and flags, in increasing precedence,
// checked by [Config.Validate], which names the bad field.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/console"
	"github.com/engram-dev/engram/consolidate"
	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/embedding"
	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/jobs"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/openwop"
	"github.com/engram-dev/engram/retention"
	"github.com/engram-dev/engram/retrieve"
	"github.com/engram-dev/engram/revise"
)

// Defaults.
const (
	DefaultListen          = "127.0.0.1:8080"
	DefaultDatabaseURL     = "postgres://postgres@127.0.0.1:5432/engram?sslmode=disable"
	DefaultShutdownTimeout = 15 * time.Second
	DefaultLogLevel        = "info"
	DefaultLogFormat       = "text"
	DefaultLogRequests     = "info"
	// DefaultTenant is the tenant of the key generated when none is configured.
	DefaultTenant = "default"

	// The defaults of [Database]: an API request's statements are short,
	// an ingestion batch's take up to a thousand events, a job's scan a
	// tenant's memory; none waits long for a lock or keeps a transaction
	// idle; a daemon gone mid-statement is noticed within seconds.
	DefaultStatementTimeout         = 30 * time.Second
	DefaultIngestStatementTimeout   = 2 * time.Minute
	DefaultJobStatementTimeout      = 15 * time.Minute
	DefaultLockTimeout              = 30 * time.Second
	DefaultIdleInTransactionTimeout = time.Minute
	DefaultClientCheckInterval      = 5 * time.Second
	DefaultKeepAlive                = 30 * time.Second
)

// Config is everything engramd reads at start-up. Each field's yaml name,
// environment variable and flag are in its comment.
type Config struct {
	// Listen is the HTTP address. yaml listen, ENGRAM_LISTEN, --listen.
	Listen string `yaml:"listen"`
	// PprofListen, when set, serves Go's profiler (net/http/pprof) on an
	// address of its own, never on the API's: keep it on loopback. Empty
	// (the default) serves no profiler. yaml pprof_listen,
	// ENGRAM_PPROF_LISTEN, --pprof-listen.
	PprofListen string `yaml:"pprof_listen"`
	// DatabaseURL is the PostgreSQL connection URL. yaml database_url,
	// DATABASE_URL or ENGRAM_DATABASE_URL, --database-url.
	DatabaseURL string `yaml:"database_url"`
	// Database is how engramd reaches PostgreSQL — replicas, a pooler, a
	// direct connection for locks — and what its statements may hold
	// there (see [Database]). yaml database.
	Database Database `yaml:"database"`
	// MaxPayloadBytes caps a record's encoded payload. yaml
	// max_payload_bytes, ENGRAM_MAX_PAYLOAD_BYTES, --max-payload-bytes.
	MaxPayloadBytes int `yaml:"max_payload_bytes"`
	// MaxClockSkew is how far ahead of the server's clock a new record's
	// created_at and last_reinforced_at may be: within it they are read as
	// now, past it the write is refused (see [revise.Config]). yaml
	// max_clock_skew, ENGRAM_MAX_CLOCK_SKEW, --max-clock-skew.
	MaxClockSkew time.Duration `yaml:"max_clock_skew"`
	// Strict refuses to start a daemon that would store provenance stamps
	// unsigned or sensitive payloads in the clear: yaml strict,
	// ENGRAM_STRICT=true, --strict.
	Strict bool `yaml:"strict"`
	// APIKeys are the bearer keys: a tenant's, or an operator's (see
	// [APIKey]). yaml api_keys, ENGRAM_API_KEYS as "[role@]tenant:key[,…]",
	// where "*:key" is an operator key. With none, engramd generates a
	// curator's key for tenant "default" and an operator key at start-up
	// and prints them.
	APIKeys []APIKey `yaml:"api_keys"`
	// ShutdownTimeout bounds a graceful stop. yaml shutdown_timeout,
	// ENGRAM_SHUTDOWN_TIMEOUT, --shutdown-timeout.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// LogLevel is debug, info, warn or error. yaml log_level,
	// ENGRAM_LOG_LEVEL, --log-level.
	LogLevel string `yaml:"log_level"`
	// LogFormat is text or json. yaml log_format, ENGRAM_LOG_FORMAT,
	// --log-format.
	LogFormat string `yaml:"log_format"`
	// LogRequests is the request log: a line a request (method, path,
	// status, duration, tenant; never a key or a body) at info (the
	// default) or debug, or off. yaml log_requests, ENGRAM_LOG_REQUESTS,
	// --log-requests.
	LogRequests string `yaml:"log_requests"`
	// PolicyFile is the operator policy (classification rules, secrets):
	// yaml policy_file, ENGRAM_POLICY_FILE, --policy-file. Reloaded on
	// SIGHUP. Empty means the built-in classifier alone.
	PolicyFile string `yaml:"policy_file"`
	// Ingest tunes the ingestion and policy planes.
	Ingest Ingest `yaml:"ingest"`
	// Decay is how memory fades and is forgotten: a profile per memory
	// type, the prune threshold, the purge grace period (see
	// [decay.Config]). yaml decay. Reloaded on SIGHUP.
	Decay decay.Config `yaml:"decay"`
	// Jobs are the cron schedules of the periodic jobs by name, such as
	// decay_sweep: "*/15 * * * *"; "off" runs a job only when asked. yaml
	// jobs, over [DefaultJobs]. Reloaded on SIGHUP.
	Jobs map[string]string `yaml:"jobs"`
	// WritePath configures the gates of the write path: evidence
	// authority, contradiction policy per scope, dedup, provenance signing
	// keys, approval (see [revise.Gates]). yaml write_path; the signing
	// keys also from ENGRAM_PROVENANCE_KEYS as "id:secret[,…]", the first
	// one signing.
	WritePath revise.Gates `yaml:"write_path"`
	// Consolidate tunes learning from experience: the support a procedure
	// needs, the read-only tools, when a procedure leaves probation and
	// when it is retracted, and the optional language model that finds
	// facts in free text (see [consolidate.Settings]). yaml consolidate;
	// the model's api_key also from ENGRAM_MODEL_API_KEY.
	Consolidate consolidate.Settings `yaml:"consolidate"`
	// Retrieve tunes retrieval: ranking weights, the default budget and
	// trust gating (see [retrieve.Config]). yaml retrieve.
	Retrieve retrieve.Config `yaml:"retrieve"`
	// Embedding chooses the embedder of the advisory vector index. yaml
	// embedding.
	Embedding Embedding `yaml:"embedding"`
	// Leases bounds the TTL of the write locks of POST /v1/leases
	// (write-path RFC §12.8.3): default_ttl (60s), min_ttl (30s), max_ttl
	// (120s) (see [revise.LeaseConfig]). yaml leases.
	Leases revise.LeaseConfig `yaml:"leases"`
	// Retention is the maximum retention of each data classification and
	// what becomes of a record past it, hard or soft delete (see
	// [retention.Config]; write-path RFC §12.10.4). yaml retention; a class
	// not named keeps its default, max_age 0 is no limit. Reloaded on
	// SIGHUP.
	Retention retention.Config `yaml:"retention"`
	// Budgets are the write budgets per role and session (write-path RFC
	// §12.11.2; see [access.Budgets]): yaml budgets.writes.<role>, the
	// writes an agent's session may make in budgets.window.
	Budgets access.Budgets `yaml:"budgets"`
	// Encryption configures encryption at rest (see [Encryption]). yaml
	// encryption; the master keys also from ENGRAM_MASTER_KEY.
	Encryption Encryption `yaml:"encryption"`
	// OpenIntent sizes OpenIntent memory (/api/v1/memory, OpenIntent
	// RFC-0015 §9.4; see [OpenIntent]). yaml openintent.
	OpenIntent OpenIntent `yaml:"openintent"`
	// OpenWOP configures the OpenWOP MemoryAdapter: on_secret, what a put
	// does with a secret, redact or reject (empty follows the policy's
	// secrets.on_secret; see [openwop.Config]). yaml openwop.
	OpenWOP openwop.Config `yaml:"openwop"`
	// Console configures the operator console at /console: eval_report,
	// the path of the curve.json an evaluation wrote, whose learning
	// curves the Learning page draws (empty: none; see
	// [console.Config]). yaml console, ENGRAM_CONSOLE_EVAL_REPORT,
	// --console-eval-report.
	Console console.Config `yaml:"console"`
}

// Database is how engramd reaches PostgreSQL past one server (yaml
// database.*; docs/operations.md), and what its connections may hold
// there. database_url stays the primary's: give it every host of a
// failover pair with target_session_attrs=read-write, and a failover is
// followed by reconnecting. The bounds make a daemon killed, stuck or cut
// off by the network leave no statement running, no lock held and no
// transaction open for long (substrate RFC §15.5); zero turns a bound off.
type Database struct {
	// ReadURL are streaming replicas (one URL, or a list) that serve
	// retrieval, the record listing and the record reads within
	// StalenessBudget; empty: the
	// primary serves every read. ENGRAM_READ_URL, URLs separated by
	// spaces.
	ReadURL URLs `yaml:"read_url"`
	// LockURL is a direct connection to the primary, past any pooler, for
	// the session-level locks: job leadership and runs, migrations, the
	// dense index build. Empty: database_url. ENGRAM_LOCK_URL.
	LockURL string `yaml:"lock_url"`
	// Pooler is what is between engramd and PostgreSQL on database_url:
	// none (the default), session (PgBouncer's session mode: as none), or
	// transaction (PgBouncer's transaction mode: no named prepared
	// statements, pgx's cache_describe mode unless the URL sets
	// default_query_exec_mode, and no startup parameters a pooler
	// refuses). ENGRAM_DATABASE_POOLER.
	Pooler string `yaml:"pooler"`
	// StalenessBudget is how far behind the primary a replica may be and
	// still serve a read (write-path RFC §12.9.6, δ_stale); past it the
	// read goes to the primary. Default 2s. ENGRAM_STALENESS_BUDGET.
	StalenessBudget time.Duration `yaml:"staleness_budget"`
	// StatementTimeout bounds a statement of an API request.
	StatementTimeout time.Duration `yaml:"statement_timeout"`
	// IngestStatementTimeout bounds a statement of the policy plane's
	// ingestion batches.
	IngestStatementTimeout time.Duration `yaml:"ingest_statement_timeout"`
	// JobStatementTimeout bounds a statement of a periodic job
	// (consolidation, decay, retention, embeddings) or an erasure.
	JobStatementTimeout time.Duration `yaml:"job_statement_timeout"`
	// LockTimeout bounds a wait for a lock.
	LockTimeout time.Duration `yaml:"lock_timeout"`
	// IdleInTransactionTimeout ends a session whose open transaction has
	// waited this long for its next statement.
	IdleInTransactionTimeout time.Duration `yaml:"idle_in_transaction_timeout"`
	// ClientCheckInterval is how often PostgreSQL checks that engramd is
	// still connected while a statement runs, and cancels the statement
	// when it is not (client_connection_check_interval).
	ClientCheckInterval time.Duration `yaml:"client_check_interval"`
	// KeepAlive is the idle time before TCP keepalives probe a silent
	// peer, both ways.
	KeepAlive time.Duration `yaml:"keepalive"`
}

// Session is the connections' session settings.
func (d Database) Session() pg.Session {
	return pg.Session{ApplicationName: "engramd", StatementTimeout: d.StatementTimeout, LockTimeout: d.LockTimeout,
		IdleInTransactionTimeout: d.IdleInTransactionTimeout, ClientCheckInterval: d.ClientCheckInterval, KeepAlive: d.KeepAlive}
}

// Validate names the first bad field.
func (d Database) Validate() error {
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"statement_timeout", d.StatementTimeout}, {"ingest_statement_timeout", d.IngestStatementTimeout},
		{"job_statement_timeout", d.JobStatementTimeout}, {"lock_timeout", d.LockTimeout},
		{"idle_in_transaction_timeout", d.IdleInTransactionTimeout}, {"client_check_interval", d.ClientCheckInterval},
		{"keepalive", d.KeepAlive},
	} {
		switch {
		case f.v < 0:
			return fmt.Errorf("database.%s: must not be negative (0 is off)", f.name)
		case f.v > 0 && f.v < time.Millisecond:
			return fmt.Errorf("database.%s: %s is under a millisecond", f.name, f.v)
		}
	}
	if d.KeepAlive > 0 && d.KeepAlive < time.Second {
		return fmt.Errorf("database.keepalive: %s is under a second", d.KeepAlive)
	}
	return nil
}

// Poolers (yaml database.pooler).
const (
	PoolerNone        = "none"
	PoolerSession     = "session"
	PoolerTransaction = "transaction"
)

// DefaultStalenessBudget is database.staleness_budget's default.
const DefaultStalenessBudget = 2 * time.Second

// LockDSN is the URL of the direct connection for session-level locks.
func (d Database) LockDSN(primary string) string {
	if d.LockURL != "" {
		return d.LockURL
	}
	return primary
}

// URLs is one URL or a list of them (yaml: a string or a sequence).
type URLs []string

// UnmarshalYAML takes a string or a sequence of strings.
func (u *URLs) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*u = strings.Fields(n.Value)
		return nil
	}
	var list []string
	if err := n.Decode(&list); err != nil {
		return err
	}
	*u = list
	return nil
}

// OpenIntent sizes OpenIntent memory (yaml openintent.*); zero is the
// default.
type OpenIntent struct {
	// EpisodicCapacity is each agent's episodic entries, past which a
	// create evicts the least recently used one (default 1000).
	EpisodicCapacity int `yaml:"episodic_capacity"`
	// WorkingCapacity is each task's working entries, past which a create
	// is refused with 429 (default 100).
	WorkingCapacity int `yaml:"working_capacity"`
}

// Embedding chooses the embedder (yaml embedding.*): the built-in lexical
// one (the default: no network, no model), an OpenAI-compatible endpoint,
// or none (retrieval is lexical only, and there are no embedding jobs).
type Embedding struct {
	Provider string `yaml:"provider"`
	// OpenAI configures provider openai; its api_key may come from
	// ENGRAM_EMBEDDING_API_KEY instead of the file.
	OpenAI embedding.OpenAIConfig `yaml:"openai"`
	// BatchSize is how many records a backfill batch reads.
	BatchSize int `yaml:"batch_size"`
}

// Embedding providers.
const (
	EmbeddingLexical = "lexical"
	EmbeddingOpenAI  = "openai"
	EmbeddingNone    = "none"
)

// Ingest tunes the ingestion and policy planes (yaml ingest.*).
type Ingest struct {
	// AgentRate is each agent's sustained event rate a second; 0 means
	// unlimited. AgentBurst is how many it may send at once.
	AgentRate  float64 `yaml:"agent_rate"`
	AgentBurst int     `yaml:"agent_burst"`
	// MaxBacklog is how many events may wait for classification before
	// ingestion answers 503.
	MaxBacklog int64 `yaml:"max_backlog"`
	// MaxSkew is how far in the future an event's time may be.
	MaxSkew time.Duration `yaml:"max_skew"`
	// Partitions is how many policy workers split the threads; every
	// engramd on one database must use the same number.
	Partitions  int `yaml:"partitions"`
	BatchSize   int `yaml:"batch_size"`
	MaxAttempts int `yaml:"max_attempts"`
}

// APIKey gives its bearer access to one tenant's memory, as its role
// allows, or to what works across every tenant, the periodic jobs, and no
// tenant's memory (role operator, with no tenant). Name identifies the key
// in audit entries and logs; the key itself is never logged or stored.
type APIKey struct {
	Tenant string `yaml:"tenant"`
	Key    string `yaml:"key"`
	Name   string `yaml:"name"`
	// Role is executor, verifier, orchestrator, curator or operator
	// (write-path RFC §12.8.2). Empty (or tenant, its old spelling) is the
	// least privilege an agent's key works with: an orchestrator with
	// clearance medium unless it names another (see server.DefaultRole);
	// engramd warns of each such key at start-up. Before, it was a
	// curator with clearance hyper: name role curator to keep that.
	Role string `yaml:"role"`
	// AgentID, Domains and Clearance are the key's attributes (see
	// [access.Principal]): an executor's own agent, the domains whose
	// records it may read (none: every domain), its clearance ceiling
	// (empty: hyper, or medium for a key with no role).
	AgentID   string             `yaml:"agent_id"`
	Domains   []string           `yaml:"domains"`
	Clearance memory.Sensitivity `yaml:"clearance"`
}

// Key roles (yaml api_keys[].role).
const (
	RoleTenant   = "tenant"
	RoleOperator = "operator"
)

// operatorTenant stands for the tenant of an operator key in
// ENGRAM_API_KEYS: "*:key". No tenant can be called "*".
const operatorTenant = "*"

// Default returns the configuration with every default set.
func Default() Config {
	return Config{
		Listen:      DefaultListen,
		DatabaseURL: DefaultDatabaseURL,
		Database: Database{
			StatementTimeout: DefaultStatementTimeout, IngestStatementTimeout: DefaultIngestStatementTimeout,
			JobStatementTimeout: DefaultJobStatementTimeout, LockTimeout: DefaultLockTimeout,
			IdleInTransactionTimeout: DefaultIdleInTransactionTimeout, ClientCheckInterval: DefaultClientCheckInterval,
			KeepAlive: DefaultKeepAlive, Pooler: PoolerNone, StalenessBudget: DefaultStalenessBudget,
		},
		MaxPayloadBytes: revise.DefaultMaxPayloadBytes,
		MaxClockSkew:    revise.DefaultMaxClockSkew,
		ShutdownTimeout: DefaultShutdownTimeout,
		LogLevel:        DefaultLogLevel,
		LogFormat:       DefaultLogFormat,
		LogRequests:     DefaultLogRequests,
		Ingest: Ingest{
			AgentRate: 5000, AgentBurst: 10000, MaxBacklog: 1_000_000, MaxSkew: 5 * time.Minute,
			Partitions: 2, BatchSize: 1000, MaxAttempts: 5,
		},
		Decay:     decay.DefaultConfig(),
		Jobs:      DefaultJobs(EmbeddingLexical),
		Retrieve:  retrieve.DefaultConfig(),
		Embedding: Embedding{Provider: EmbeddingLexical, BatchSize: embedding.DefaultBackfillBatch},
		Retention: retention.DefaultConfig(),
	}
}

// DefaultJobs is the schedule of each periodic job engramd has with the
// embedding provider given. With provider none there is no embedder, so no
// embedding_backfill or embedding_reindex job.
func DefaultJobs(provider string) map[string]string {
	j := map[string]string{
		decay.SweepJob: decay.DefaultSweepSchedule, decay.PurgeJob: decay.DefaultPurgeSchedule,
		retrieve.StatsJob: retrieve.DefaultStatsSchedule, revise.AuditProvenanceJob: revise.DefaultAuditProvenanceSchedule,
		revise.EscalationJob: revise.DefaultEscalationSchedule, consolidate.Job: consolidate.DefaultSchedule,
		retention.Job: retention.DefaultSchedule, retention.ComplianceJob: retention.DefaultComplianceSchedule,
	}
	if provider != EmbeddingNone {
		j[embedding.BackfillJob] = embedding.DefaultBackfillSchedule
		j[embedding.ReindexJob] = jobs.Off
	}
	return j
}

// Load builds the configuration from defaults, the YAML file named by
// --config or ENGRAM_CONFIG, the environment and the flags in args, and
// validates it.
func Load(args []string, getenv func(string) string) (Config, error) {
	fs := flag.NewFlagSet("engramd", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	path := fs.String("config", getenv("ENGRAM_CONFIG"), "YAML configuration file")
	listen := fs.String("listen", "", "HTTP listen address (default "+DefaultListen+")")
	pprofListen := fs.String("pprof-listen", "", "serve the Go profiler on this address (off by default)")
	dbURL := fs.String("database-url", "", "PostgreSQL URL")
	maxPayload := fs.Int("max-payload-bytes", 0, "maximum encoded payload size")
	shutdown := fs.Duration("shutdown-timeout", 0, "graceful shutdown deadline")
	level := fs.String("log-level", "", "debug, info, warn or error")
	format := fs.String("log-format", "", "text or json")
	logRequests := fs.String("log-requests", "", "the request log's level: info, debug or off")
	policyFile := fs.String("policy-file", "", "operator policy YAML")
	evalReport := fs.String("console-eval-report", "", "curve.json of an evaluation, drawn on the console's Learning page")
	skew := fs.Duration("max-clock-skew", 0, "how far ahead of the server's clock a record's times may be")
	strict := fs.Bool("strict", false, "refuse to start with unsigned provenance stamps or no encryption at rest")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}

	c := Default()
	// The file's schedules, over the defaults of the embedder it chooses
	// (below).
	c.Jobs = nil
	if *path != "" {
		b, err := os.ReadFile(*path)
		if err != nil {
			return Config{}, fmt.Errorf("read config: %w", err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
			return Config{}, fmt.Errorf("parse config %s: %w", *path, err)
		}
	}
	if err := c.fromEnv(getenv); err != nil {
		return Config{}, err
	}
	schedules := DefaultJobs(c.Embedding.Provider)
	maps.Copy(schedules, c.Jobs)
	c.Jobs = schedules
	setIf(&c.Listen, *listen)
	setIf(&c.PprofListen, *pprofListen)
	setIf(&c.DatabaseURL, *dbURL)
	setIf(&c.LogLevel, *level)
	setIf(&c.LogFormat, *format)
	setIf(&c.LogRequests, *logRequests)
	setIf(&c.PolicyFile, *policyFile)
	setIf(&c.Console.EvalReport, *evalReport)
	if *maxPayload != 0 {
		c.MaxPayloadBytes = *maxPayload
	}
	if *shutdown != 0 {
		c.ShutdownTimeout = *shutdown
	}
	if *skew != 0 {
		c.MaxClockSkew = *skew
	}
	if *strict {
		c.Strict = true
	}
	return c, c.Validate()
}

func (c *Config) fromEnv(getenv func(string) string) error {
	setIf(&c.Listen, getenv("ENGRAM_LISTEN"))
	setIf(&c.PprofListen, getenv("ENGRAM_PPROF_LISTEN"))
	setIf(&c.DatabaseURL, getenv("DATABASE_URL"))
	setIf(&c.DatabaseURL, getenv("ENGRAM_DATABASE_URL"))
	if v := getenv("ENGRAM_READ_URL"); v != "" {
		c.Database.ReadURL = strings.Fields(v)
	}
	setIf(&c.Database.LockURL, getenv("ENGRAM_LOCK_URL"))
	setIf(&c.Database.Pooler, getenv("ENGRAM_DATABASE_POOLER"))
	if v := getenv("ENGRAM_STALENESS_BUDGET"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("ENGRAM_STALENESS_BUDGET: %w", err)
		}
		c.Database.StalenessBudget = d
	}
	setIf(&c.LogLevel, getenv("ENGRAM_LOG_LEVEL"))
	setIf(&c.LogFormat, getenv("ENGRAM_LOG_FORMAT"))
	setIf(&c.LogRequests, getenv("ENGRAM_LOG_REQUESTS"))
	setIf(&c.PolicyFile, getenv("ENGRAM_POLICY_FILE"))
	setIf(&c.Console.EvalReport, getenv("ENGRAM_CONSOLE_EVAL_REPORT"))
	setIf(&c.Embedding.OpenAI.APIKey, getenv("ENGRAM_EMBEDDING_API_KEY"))
	setIf(&c.Consolidate.Model.APIKey, getenv("ENGRAM_MODEL_API_KEY"))
	if v := getenv("ENGRAM_MAX_PAYLOAD_BYTES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("ENGRAM_MAX_PAYLOAD_BYTES: %q is not a whole number", v)
		}
		c.MaxPayloadBytes = n
	}
	if v := getenv("ENGRAM_SHUTDOWN_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("ENGRAM_SHUTDOWN_TIMEOUT: %w", err)
		}
		c.ShutdownTimeout = d
	}
	if v := getenv("ENGRAM_MAX_CLOCK_SKEW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("ENGRAM_MAX_CLOCK_SKEW: %w", err)
		}
		c.MaxClockSkew = d
	}
	if v := getenv("ENGRAM_STRICT"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("ENGRAM_STRICT: %q is not true or false", v)
		}
		c.Strict = b
	}
	if v := getenv("ENGRAM_MASTER_KEY"); v != "" {
		c.Encryption.MasterKeys = splitKeys(v)
	}
	if v := getenv("ENGRAM_PROVENANCE_KEYS"); v != "" {
		c.WritePath.Provenance = revise.ProvenanceConfig{}
		for i, pair := range strings.Split(v, ",") {
			id, secret, ok := strings.Cut(strings.TrimSpace(pair), ":")
			if !ok {
				return fmt.Errorf("ENGRAM_PROVENANCE_KEYS: entry %d is not id:secret", i+1)
			}
			c.WritePath.Provenance.Keys = append(c.WritePath.Provenance.Keys, revise.SigningKey{ID: id, Secret: secret})
		}
		c.WritePath.Provenance.Active = c.WritePath.Provenance.Keys[0].ID
	}
	if v := getenv("ENGRAM_API_KEYS"); v != "" {
		c.APIKeys = nil
		for i, pair := range strings.Split(v, ",") {
			tenant, key, ok := strings.Cut(strings.TrimSpace(pair), ":")
			if !ok {
				return fmt.Errorf("ENGRAM_API_KEYS: entry %d is not [role@]tenant:key or *:key", i+1)
			}
			// role@tenant: no tenant holds an @ (see tenantID), so the
			// role cannot be mistaken for part of one.
			role, tenant, hasRole := strings.Cut(tenant, "@")
			if !hasRole {
				role, tenant = "", role
			}
			k := APIKey{Tenant: tenant, Key: key, Name: fmt.Sprintf("%s-env-%d", tenant, i+1), Role: role}
			if tenant == operatorTenant {
				k = APIKey{Key: key, Name: fmt.Sprintf("operator-env-%d", i+1), Role: RoleOperator}
			}
			c.APIKeys = append(c.APIKeys, k)
		}
	}
	return nil
}

func setIf(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

// Validate checks every field and names the first bad one.
func (c Config) Validate() error {
	switch {
	case c.Listen == "":
		return errors.New("listen: must not be empty")
	case c.DatabaseURL == "":
		return errors.New("database_url: must not be empty")
	case c.MaxPayloadBytes < 1024 || c.MaxPayloadBytes > 16<<20:
		return fmt.Errorf("max_payload_bytes: %d is outside 1024..16777216", c.MaxPayloadBytes)
	case c.ShutdownTimeout <= 0:
		return errors.New("shutdown_timeout: must be positive")
	case c.MaxClockSkew <= 0:
		return errors.New("max_clock_skew: must be positive")
	case c.MaxClockSkew < c.Ingest.MaxSkew:
		// The policy plane writes episodes at their events' times, which
		// ingestion allows up to ingest.max_skew ahead.
		return fmt.Errorf("max_clock_skew: %s is less than ingest.max_skew (%s): events ingestion accepts would make records the write path refuses", c.MaxClockSkew, c.Ingest.MaxSkew)
	}
	switch c.Database.Pooler {
	case PoolerNone, PoolerSession, PoolerTransaction:
	default:
		return fmt.Errorf("database.pooler: %q is not none, session or transaction", c.Database.Pooler)
	}
	if c.Database.Pooler == PoolerTransaction && c.Database.LockURL == "" {
		return errors.New("database.lock_url: a transaction pooler loses session locks between transactions: give the primary's direct URL for job leadership, migrations and index builds")
	}
	if c.Database.StalenessBudget <= 0 {
		return errors.New("database.staleness_budget: must be positive")
	}
	for i, u := range c.Database.ReadURL {
		if u == "" {
			return fmt.Errorf("database.read_url[%d]: must not be empty", i)
		}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log_level: %q is not debug, info, warn or error", c.LogLevel)
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		return fmt.Errorf("log_format: %q is not text or json", c.LogFormat)
	}
	switch c.LogRequests {
	case "info", "debug", "off":
	default:
		return fmt.Errorf("log_requests: %q is not info, debug or off", c.LogRequests)
	}
	switch in := c.Ingest; {
	case in.AgentRate < 0:
		return errors.New("ingest.agent_rate: must not be negative")
	case in.AgentBurst < 1:
		return errors.New("ingest.agent_burst: must be at least 1")
	case in.MaxBacklog < 1:
		return errors.New("ingest.max_backlog: must be at least 1")
	case in.MaxSkew <= 0:
		return errors.New("ingest.max_skew: must be positive")
	case in.Partitions < 1 || in.Partitions > 64:
		return fmt.Errorf("ingest.partitions: %d is outside 1..64", in.Partitions)
	case in.BatchSize < 1 || in.BatchSize > 10000:
		return fmt.Errorf("ingest.batch_size: %d is outside 1..10000", in.BatchSize)
	case in.MaxAttempts < 1:
		return errors.New("ingest.max_attempts: must be at least 1")
	}
	if err := c.Database.Validate(); err != nil {
		return err
	}
	if err := c.Decay.Validate(); err != nil {
		return err
	}
	if err := c.Consolidate.Validate(); err != nil {
		return err
	}
	if err := c.WritePath.Validate(); err != nil {
		return err
	}
	if err := c.Leases.Validate(); err != nil {
		return err
	}
	switch {
	case c.OpenIntent.EpisodicCapacity < 0:
		return errors.New("openintent.episodic_capacity: must not be negative")
	case c.OpenIntent.WorkingCapacity < 0:
		return errors.New("openintent.working_capacity: must not be negative")
	}
	if err := c.OpenWOP.Validate(); err != nil {
		return err
	}
	if err := c.Console.Validate(); err != nil {
		return err
	}
	if err := c.Retrieve.Validate(); err != nil {
		return err
	}
	if err := c.Retention.Validate(); err != nil {
		return err
	}
	switch c.Embedding.Provider {
	case EmbeddingLexical, EmbeddingNone:
	case EmbeddingOpenAI:
		if err := c.Embedding.OpenAI.Validate(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("embedding.provider: %q is not lexical, openai or none", c.Embedding.Provider)
	}
	if c.Embedding.BatchSize < 1 || c.Embedding.BatchSize > 10000 {
		return fmt.Errorf("embedding.batch_size: %d is outside 1..10000", c.Embedding.BatchSize)
	}
	if c.Embedding.Provider == EmbeddingNone {
		for _, name := range []string{embedding.BackfillJob, embedding.ReindexJob} {
			if _, ok := c.Jobs[name]; ok {
				return fmt.Errorf("jobs.%s: there is no such job with embedding.provider none: remove it, or choose an embedder", name)
			}
		}
	}
	for name, spec := range c.Jobs {
		if err := jobs.ParseSchedule(spec); err != nil {
			return fmt.Errorf("jobs.%s: %w", name, err)
		}
	}
	if err := c.Budgets.Validate(); err != nil {
		return fmt.Errorf("budgets.%w", err)
	}
	if err := c.Encryption.Validate(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, k := range c.APIKeys {
		switch {
		case k.Role != "" && k.Role != RoleTenant && !access.Role(k.Role).Valid():
			return fmt.Errorf("api_keys[%d].role: %q is not executor, verifier, orchestrator, curator or operator", i, k.Role)
		case k.Role == string(access.Executor) && k.AgentID == "":
			return fmt.Errorf("api_keys[%d].agent_id: an executor key names its agent", i)
		case k.Clearance != "" && !k.Clearance.Valid():
			return fmt.Errorf("api_keys[%d].clearance: %q is not public, low, medium, high or hyper", i, k.Clearance)
		case k.Role == RoleOperator && k.Tenant != "":
			return fmt.Errorf("api_keys[%d].tenant: an operator key has no tenant: it works across every tenant", i)
		case k.Role != RoleOperator && k.Tenant == "":
			return fmt.Errorf("api_keys[%d].tenant: a tenant key needs a tenant (role: operator makes an operator key)", i)
		case k.Role != RoleOperator && !tenantID(k.Tenant):
			return fmt.Errorf("api_keys[%d].tenant: %q must be 1-63 of a-z, 0-9, '_', '.', '-', starting with a letter or digit", i, k.Tenant)
		case len(k.Key) < 16:
			return fmt.Errorf("api_keys[%d].key: must be at least 16 characters", i)
		case seen[k.Key]:
			return fmt.Errorf("api_keys[%d].key: repeats an earlier key", i)
		}
		seen[k.Key] = true
	}
	return nil
}

// tenantID mirrors the tenants table's CHECK constraint.
func tenantID(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || i > 0 && (r == '_' || r == '.' || r == '-')
		if !ok {
			return false
		}
	}
	return true
}
