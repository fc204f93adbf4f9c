package tenancy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/internal/pgtest"
)

// acrossTenants are the statements that read or change rows of every
// tenant at once, and why. Under Citus each runs on every shard (a
// multi-shard query) and still joins co-located rows only: the test holds
// every join in them to tenant_id = tenant_id all the same. Every other
// statement restricts each tenant table it touches to one tenant (a
// router query).
var acrossTenants = map[string]string{
	// The policy plane: staged events are claimed by partition of threads,
	// whatever their tenant, so that one worker sees a thread in order.
	"store.claimSQL":   "the policy worker claims a partition's staged events of every tenant",
	"store.backlogSQL": "the ingestion backlog of every tenant, for back-pressure and metrics",
	// The periodic jobs run on the leader across every tenant, walking
	// keys that begin with tenant_id, so each batch is a multi-shard query.
	"store.NewestClosedEpisode":      "consolidation's horizon: the newest closed episode of any tenant",
	"store.scanLiveSQL":              "the decay sweep walks every tenant's live records by (tenant_id, id)",
	"store.anyMaterialisedSQL":       "whether any decay sweep has run, in any tenant",
	"store.purgeExpiredSQL":          "the purge job takes expired records past their grace, of every tenant",
	"store.purgeIdempotencySQL":      "the purge job deletes every tenant's idempotency keys past their 24 hours",
	"store.deleteOrphanArtifactsSQL": "the purge job finds, for the artifacts it may free, the episodes of their tenants that still reference them",
	"store.changedRecordsSQL":        "duplicate resolution walks every tenant's revised records by (updated_at, tenant_id, id)",
	"store.embeddedRecordsSQL":       "duplicate resolution walks every tenant's new vectors by (embedded_at, tenant_id, record_id)",
	"store.scanProvenanceSQL":        "the provenance audit walks every tenant's stamps by (tenant_id, record_id)",
	"store.scanToEmbedSQL":           "the embedding backfill walks every tenant's records by (tenant_id, id)",
	"store.retentionExpireSQL":       "the retention job expires every tenant's records past their class's maximum age",
	"store.retentionPurgeSQL":        "the retention job deletes every tenant's records past their class's maximum age",
	"store.pastRetentionSQL":         "the compliance report counts every tenant's records past retention",
	"store.unmarkedPIISQL":           "the compliance report counts every tenant's personal data not marked as such",
	"store.futureCreatedSQL":         "the compliance report counts every tenant's records dated in the future",
	"store.overdueSyncReviewsSQL":    "the escalation job finds every tenant's overdue synchronous reviews",
	"store.escalateReviewsSQL":       "the escalation job escalates every tenant's overdue reviews",
	"store.unfinishedErasuresSQL":    "the compliance report lists every tenant's unfinished erasures",
	"store.reviewQueueSQL":           "the review queue's length across tenants, a metric",
	"store.countRecordsSQL":          "records by type and status across tenants, a metric (substrate RFC §15.10)",
	"store.salienceBucketsSQL":       "the salience distribution across tenants, a metric (substrate RFC §15.10)",
	"store.allDataKeysSQL":           "key rotation re-wraps every tenant's data keys under the new master key",
	"store.masterKeyUseSQL":          "a starting daemon checks it holds every master key some tenant's data key is wrapped by",
	// The advisory vector index is per model, not per tenant (substrate
	// RFC §15.3): building or dropping it touches every tenant's vectors.
	"store.denseVectorPartsSQL":  "the dense index build lists the partitions holding a model's vectors, of every tenant",
	"store.dropOtherModelsSQL":   "a change of embedding model drops every tenant's vectors of the old one",
	"store.dropOtherModelsDFSQL": "a change of embedding model drops every tenant's feature counts of the old one",
	"store.dropModelSQL":         "a reindex drops every tenant's vectors of the model",
	"store.dropModelDFSQL":       "a reindex drops every tenant's feature counts of the model",
	"store.OtherModels":          "which models other than the configured one have vectors, in any tenant",
}

// fragments are constant SQL texts that are not statements but parts of
// the statements named with them, which are checked whole.
var fragments = map[string]string{
	"store.passagesSQL":   "the head of insertLexemeStatsSQL and upsertCorpusStatsSQL",
	"store.versionsAsOf":  "the head of listAsOfSQL and listAsOfNewestSQL",
	"store.searchTaskSQL": "the head of searchSparseSQL, searchDenseSQL, searchNearSQL and searchLexicalSQL",
	"store.searchLayers":  "the lateral subquery per layer that searchSparseSQL, searchDenseSQL, searchNearSQL and searchLexicalSQL open",
	"store.searchLexical": "the head of each layer's subquery in searchSparseSQL, searchDenseSQL, searchNearSQL and searchLexicalSQL",
	"store.denseNearSQL":  "a template whose cast, model and type denseNearStatement writes in; its tenant predicate is checked by TestDenseNearCarriesTheTenant",
	"store.ColumnCells":   "the head of the statement ColumnCells builds (dynamicSQL)",
}

// byGeneratedKey are the statements that name the tenant of some scan
// through a generated column that begins with it (records.search_key,
// tenant_id || '/' || type: the leading column of the records_search GIN
// index) rather than tenant_id itself, and why. Naming tenant_id as well
// made PostgreSQL 15's generic plan of the lexical search leave the GIN
// index for a scan of the tenant's whole records_live (seen in the plan of
// a fresh schema), so the search names the tenant this way; a
// distribution keyed by tenant needs tenant_id = $1 added to those scans
// (docs/operations/scaling.md).
var byGeneratedKey = map[string]string{
	"store.searchSparseSQL":  "lexical candidates by records.search_key",
	"store.searchDenseSQL":   "lexical candidates by records.search_key",
	"store.searchNearSQL":    "lexical candidates by records.search_key",
	"store.searchLexicalSQL": "lexical candidates by records.search_key",
}

// dynamicSQL are the calls whose SQL is not one constant, and why each is
// held all the same.
var dynamicSQL = map[string]string{
	"store.queryDataKeys":     "runs dataKeysSQL, allDataKeysSQL or masterKeyUseSQL, checked here",
	"store.ToReseal":          "runs one of toResealSQL's constants, checked here",
	"store.Reseal":            "runs SET LOCAL, or one of resealSQL's constants, checked here",
	"store.purge":             "runs SET LOCAL, or the purge statement its caller passes, a constant checked here",
	"store.rowTraces":         "runs the constant its caller passes, checked here",
	"store.EraseRecords":      "runs allowEraseSQL and a SET LOCAL",
	"store.ColumnCells":       "reads one column of a table that erasure lists, always WHERE tenant_id = $1 (erasure.go)",
	"store.explainGeneric":    "EXPLAINs a statement of this package for the operator (explain.go)",
	"store.SalienceHistogram": "runs salienceHistogramSQL or salienceSampleSQL, checked here",
	"store.LockLeaseResource": "takes a transaction advisory lock, lockLeaseResourceSQL or its shared twin",
	"store.List":              "runs one of listSQL, listNewestSQL, listAsOfSQL, listAsOfNewestSQL, checked here",
	"store.tenantCounts":      "runs the constant its caller passes, checked here",
	"store.runNear":           "runs denseNearSQL filled in (TestDenseNearCarriesTheTenant) between a savepoint and its release",
	"store.runSearches":       "runs the search constants, checked here, after BEGIN READ ONLY and a SET LOCAL",
	"store.DropVectors":       "runs dropModelSQL/dropModelDFSQL or dropOtherModelsSQL/dropOtherModelsDFSQL, checked here",
	"embedding.execDDL":       "CREATE and DROP INDEX CONCURRENTLY, which store.DenseIndexParts writes: no rows",
	"store.AnalyzeTable":      "ANALYZE of one table of engram's schema, its name a quoted identifier: statistics for the planner, no rows",
}

// TestStatementsCarryTheTenant prepares every SQL statement engram sends
// (sourceStatements), asks PostgreSQL for its generic plan, and holds every
// scan of a tenant table in it to an equality on that table's tenant_id
// (with a parameter, a constant, or the tenant_id of a row it is joined
// with), unless the statement is one of acrossTenants. INSERTs carry the
// tenant because every tenant table's tenant_id is NOT NULL
// (TestCatalogCarriesTheTenant).
func TestStatementsCarryTheTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgtest.NewSchema(t)
	stmts, dynamic := sourceStatements(t)
	require.Greater(t, len(stmts), 100, "found too few statements: is the source walk broken?")

	var bad []string
	for _, d := range dynamic {
		if dynamicSQL[d.Name] == "" {
			bad = append(bad, fmt.Sprintf("%s (%s): SQL that is not a constant: make it one, or list it in dynamicSQL with why it is safe", d.Name, d.Pos))
		}
	}
	tenantTables, _ := tables(t, ctx, s.Pool, s.Name)
	conn, err := s.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	routed, across := 0, 0
	var setup []string
	for _, st := range stmts {
		if tempTable.MatchString(st.SQL) {
			setup = append(setup, st.SQL)
		}
	}
	for _, st := range stmts {
		if fragments[st.Name] != "" || tempTable.MatchString(st.SQL) {
			continue
		}
		problems, err := checkStatement(ctx, conn.Conn(), tenantTables, st, setup...)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s (%s): %v", st.Name, st.Pos, err))
			continue
		}
		reason := acrossTenants[st.Name]
		switch {
		case len(problems.unscoped) == 0 && reason != "":
			bad = append(bad, fmt.Sprintf("%s (%s): listed in acrossTenants, but every scan names its tenant: take it off the list", st.Name, st.Pos))
		case len(problems.unscoped) > 0 && reason == "":
			bad = append(bad, fmt.Sprintf("%s (%s): scans %s without an equality on tenant_id", st.Name, st.Pos, strings.Join(problems.unscoped, ", ")))
		case len(problems.keyed) > 0 && byGeneratedKey[st.Name] == "":
			bad = append(bad, fmt.Sprintf("%s (%s): scans %s by a generated key, not tenant_id: name tenant_id, or list it in byGeneratedKey", st.Name, st.Pos, strings.Join(problems.keyed, ", ")))
		case len(problems.keyed) == 0 && byGeneratedKey[st.Name] != "":
			bad = append(bad, fmt.Sprintf("%s (%s): listed in byGeneratedKey, but names tenant_id in every scan: take it off the list", st.Name, st.Pos))
		case reason != "":
			across++
		default:
			routed++
		}
		for _, j := range problems.joins {
			if reason == "" && len(problems.unscoped) > 0 {
				break // already said
			}
			bad = append(bad, fmt.Sprintf("%s (%s): joins %s across tenants", st.Name, st.Pos, j))
		}
	}
	t.Logf("%d statements: %d to one tenant, %d across tenants (listed); %d dynamic calls (listed)", len(stmts), routed, across, len(dynamic))
	for _, b := range bad {
		t.Log(b)
	}
	require.Empty(t, bad, "every statement must carry the tenant (docs/operations/scaling.md)")
}

// planProblems is what breaks the rules in one statement's plan.
type planProblems struct {
	unscoped []string // alias (table) of scans with no tenant equality
	keyed    []string // alias (table) of scans whose tenant is in search_key only
	joins    []string // scans joined with no tenant equality, in an across-tenant statement
}

// checkStatement prepares st (after setup, the temporary tables it reads),
// explains its generic plan and checks it.
func checkStatement(ctx context.Context, conn *pgx.Conn, tenantTables map[string][]string, st statement, setup ...string) (planProblems, error) {
	var out planProblems
	err := pg.WithTx(ctx, conn, func(ctx context.Context, tx pgx.Tx) error {
		for _, sql := range setup {
			if _, err := tx.Exec(ctx, sql); err != nil {
				return fmt.Errorf("set up: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "PREPARE tenancy_check AS "+st.SQL); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		defer func() { _, _ = tx.Exec(context.WithoutCancel(ctx), "DEALLOCATE tenancy_check") }()
		var n int
		if err := tx.QueryRow(ctx, "SELECT cardinality(parameter_types) FROM pg_prepared_statements WHERE name = 'tenancy_check'").Scan(&n); err != nil {
			return err
		}
		args := ""
		if n > 0 {
			args = "(" + strings.TrimSuffix(strings.Repeat("NULL,", n), ",") + ")"
		}
		var raw []byte
		if err := tx.QueryRow(ctx, "EXPLAIN (VERBOSE, FORMAT JSON) EXECUTE tenancy_check"+args).Scan(&raw); err != nil {
			return fmt.Errorf("explain: %w", err)
		}
		var plans []struct {
			Plan planNode `json:"Plan"`
		}
		if err := json.Unmarshal(raw, &plans); err != nil {
			return err
		}
		if st.Name == os.Getenv("TENANCY_DEBUG") {
			fmt.Println(string(raw))
		}
		out = checkPlan(plans[0].Plan, tenantTables)
		// Roll back, so that nothing the statement set stays.
		return errRollback
	})
	if err == errRollback {
		err = nil
	}
	return out, err
}

var errRollback = fmt.Errorf("roll back")

// planNode is one node of EXPLAIN (FORMAT JSON).
type planNode map[string]any

func (n planNode) str(k string) string { s, _ := n[k].(string); return s }

func (n planNode) children() []planNode {
	raw, _ := n["Plans"].([]any)
	out := make([]planNode, 0, len(raw))
	for _, r := range raw {
		if m, ok := r.(map[string]any); ok {
			out = append(out, planNode(m))
		}
	}
	return out
}

// conditionKeys are the fields of a plan node that hold conditions.
var conditionKeys = []string{"Index Cond", "Recheck Cond", "Filter", "Join Filter", "Hash Cond", "Merge Cond", "TID Cond", "One-Time Filter"}

func (n planNode) conditions() string {
	var b strings.Builder
	for _, k := range conditionKeys {
		b.WriteString(n.str(k))
		b.WriteByte('\n')
	}
	return b.String()
}

// checkPlan walks plan: each scan of a tenant table must find an equality
// on its alias's tenant_id in its own conditions or its ancestors'. The
// right-hand side of that equality tells a scan routed to one tenant (a
// parameter or a constant) from one joined with another row's tenant.
func checkPlan(plan planNode, tenantTables map[string][]string) planProblems {
	partitionOf := map[string]string{}
	for table, parts := range tenantTables {
		partitionOf[table] = table
		for _, p := range parts {
			partitionOf[p] = table
		}
	}
	var out planProblems
	// A block is a query of its own: the plan's root, an InitPlan or
	// SubPlan (a CTE is one), or a member of an Append (a UNION's
	// branch, or a partition). Two scans of one block without a tenant
	// equality are joined across tenants.
	var walk func(n planNode, above string, block *[]string)
	walk = func(n planNode, above string, block *[]string) {
		conds := above + n.conditions()
		rel := n.str("Relation Name")
		if table, ok := partitionOf[rel]; ok && n.str("Node Type") != "ModifyTable" {
			alias := cmpOr(n.str("Alias"), rel)
			switch {
			case tenantEquality(conds, alias):
			case keyEquality(conds, alias):
				out.keyed = append(out.keyed, alias+" ("+table+")")
			default:
				out.unscoped = append(out.unscoped, alias+" ("+table+")")
				*block = append(*block, alias+" ("+table+")")
				if len(*block) == 2 {
					out.joins = append(out.joins, strings.Join(*block, " and "))
				}
			}
		}
		for _, c := range n.children() {
			// The conditions of the node an InitPlan or SubPlan hangs
			// on do not restrict it.
			switch r := c.str("Parent Relationship"); {
			case r == "InitPlan" || r == "SubPlan":
				walk(c, "", new([]string))
			case r == "Member":
				walk(c, conds, new([]string))
			default:
				walk(c, conds, block)
			}
		}
	}
	walk(plan, "", new([]string))
	sort.Strings(out.unscoped)
	return out
}

// tenantEquality reports whether conds compare alias.tenant_id with =
// (or = ANY) to something.
func tenantEquality(conds, alias string) bool {
	a := regexp.QuoteMeta(alias)
	re := regexp.MustCompile(`(?:^|[^\w.])` + a + `\.tenant_id\s*=|=\s*(?:ANY\s*\(\s*)?` + a + `\.tenant_id\b`)
	return re.MatchString(conds)
}

// keyEquality reports whether conds compare alias.search_key with = to a
// text that begins with a parameter and '/': the tenant.
func keyEquality(conds, alias string) bool {
	re := regexp.MustCompile(`(?:^|[^\w.])` + regexp.QuoteMeta(alias) + `\.search_key = \(+\$\d+ \|\| '/'`)
	return re.MatchString(conds)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestDenseNearCarriesTheTenant fills denseNearSQL's template in, as
// store's denseNearStatement does, and checks the statement.
func TestDenseNearCarriesTheTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgtest.NewSchema(t)
	stmts, _ := sourceStatements(t)
	var near statement
	for _, st := range stmts {
		if st.Name == "store.denseNearSQL" {
			near = st
		}
	}
	require.NotEmpty(t, near.SQL, "store.denseNearSQL not found")
	near.SQL = strings.NewReplacer("{{cast}}", "vector(3)", "{{model}}", "'m'", "{{type}}", "'semantic'").Replace(near.SQL)
	tenantTables, _ := tables(t, ctx, s.Pool, s.Name)
	conn, err := s.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	got, err := checkStatement(ctx, conn.Conn(), tenantTables, near)
	require.NoError(t, err)
	require.Empty(t, got.unscoped)
	require.Empty(t, got.keyed)
}

// TestPlanRulesCatchViolations holds the plan check to finding a scan
// without the tenant, a scan by the generated key, and a join across
// tenants, and to passing what names it.
func TestPlanRulesCatchViolations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgtest.NewSchema(t)
	tenantTables, _ := tables(t, ctx, s.Pool, s.Name)
	conn, err := s.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	check := func(sql string) planProblems {
		got, err := checkStatement(ctx, conn.Conn(), tenantTables, statement{Name: "t", SQL: sql})
		require.NoError(t, err, sql)
		return got
	}
	require.Equal(t, []string{"records (records)"}, check(`SELECT id FROM records WHERE id = $1`).unscoped)
	require.Equal(t, []string{"r (records)"}, check(`SELECT id FROM records r WHERE r.search_key = $1 || '/' || 'semantic'`).keyed)
	cross := check(`SELECT r.id FROM records r JOIN relations x ON x.source_id = r.id WHERE r.status = $1`)
	require.Len(t, cross.unscoped, 2)
	require.Len(t, cross.joins, 1)
	require.Empty(t, check(`UPDATE records r SET status = 'active' FROM relations x WHERE x.tenant_id = r.tenant_id AND x.source_id = r.id AND r.tenant_id = $1`).unscoped)
	require.Empty(t, check(`SELECT r.id FROM records r JOIN relations x ON x.tenant_id = r.tenant_id AND x.source_id = r.id`).joins)
	require.Equal(t, []string{"records (records)"}, check(`SELECT 1 FROM tenants t WHERE EXISTS (SELECT 1 FROM records WHERE id = $1)`).unscoped)
}
