package console_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/buildtest"
	"github.com/engram-dev/engram/internal/pgtest"
)

const stateKey = "console-state-0123456789"

// LargeTenant is how many records the large state's tenant holds.
const LargeTenant = 100_000

// Every page of the console, screenshot in three states an operator meets
// — an empty install, the memory `make demo` leaves, and a tenant of
// 100,000 records — into docs/console/{empty,demo,large}/. Only when
// ENGRAM_SCREENSHOTS is set (make screenshots): the demo takes a minute.
func TestConsoleScreenshots(t *testing.T) {
	if os.Getenv("ENGRAM_SCREENSHOTS") == "" {
		t.Skip("the three states are screenshots only: set ENGRAM_SCREENSHOTS (make screenshots)")
	}
	chromium(t)

	t.Run("empty", func(t *testing.T) {
		d := startEngramdOn(t, pgtest.NewSchema(t), "curator@fresh:"+stateKey+",*:"+opsKey)
		p := tour(t, d, "empty", "fresh")
		require.Equal(t, "0", p.text(`[data-live-type=episodic] .n`))
	})

	t.Run("demo", func(t *testing.T) {
		db := pgtest.NewSchema(t)
		// make demo, into this test's schema.
		out, err := exec.Command(buildtest.Command(t, "engram-eval"), "demo", "--engramd", buildtest.Command(t, "engramd"),
			"--database-url", pgtest.URL(), "--schema", db.Name, "--stay=false").CombinedOutput()
		require.NoError(t, err, string(out))
		var tenant string
		require.NoError(t, db.Pool.QueryRow(context.Background(), `SELECT id FROM tenants WHERE id LIKE 'demo-%'`).Scan(&tenant))
		d := startEngramdOn(t, db, "curator@"+tenant+":"+stateKey+",*:"+opsKey)
		p := tour(t, d, "demo", tenant)
		p.signIn(stateKey)
		p.open("learning")
		require.Positive(t, p.count(`tr[data-type=competence]`), "the demo learned procedures")
	})

	t.Run("large", func(t *testing.T) {
		db := pgtest.NewSchema(t)
		d := startEngramdOn(t, db, "curator@large:"+stateKey+",*:"+opsKey)
		seedLarge(t, db, LargeTenant)
		p := tour(t, d, "large", "large")
		var live int
		require.NoError(t, db.Pool.QueryRow(context.Background(),
			`SELECT count(*) FROM records WHERE tenant_id = 'large' AND status IN ('active', 'contested')`).Scan(&live))
		shown := 0
		for _, typ := range []string{"episodic", "working", "semantic", "competence", "plan_graph"} {
			n, err := strconv.Atoi(eval[string](p, `document.querySelector('[data-live-type=`+typ+`]').dataset.count`))
			require.NoError(t, err)
			shown += n
		}
		require.Equal(t, live, shown, "the live tiles count every live record of the tenant")
	})
}

// tour signs in with the state's tenant key and screenshots each of its
// pages, then with the operator's key Health and Jobs, into dir; it
// returns the page, on the operator's Health.
func tour(t *testing.T, d *daemon, dir, tenant string) *page {
	t.Helper()
	p := &page{t: t, ctx: browser(t), url: d.url}
	p.signIn(stateKey)
	p.open("health")
	p.waitLoaded(tenant)
	p.screenshot(dir + "/health")
	for _, name := range []string{"records", "learning", "reviews", "decay"} {
		p.open(name)
		p.screenshot(dir + "/" + name)
	}
	p.signIn(opsKey)
	p.open("jobs")
	p.screenshot(dir + "/jobs")
	p.open("health")
	if tenant != "fresh" { // an empty install holds no tenant yet
		p.waitLoaded(tenant)
	}
	p.screenshot(dir + "/health-operator")
	return p
}

// seedLarge writes a tenant "large" of n records straight into the tables
// (triggers off, as scripts/health_seed.sql does): a few dozen procedures
// and plans with their first version, the rest episodes, facts and
// working memory, created over 180 days, each with its create audited;
// and retrievals and feedback on some facts.
func seedLarge(t *testing.T, db *pgtest.Schema, n int) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	for _, sql := range []string{
		`SET LOCAL session_replication_role = replica`,
		`INSERT INTO tenants (id) VALUES ('large') ON CONFLICT DO NOTHING`,
		`INSERT INTO records (tenant_id, id, type, status, version, sensitivity, confidence, salience, decay_curve, decay_half_life_seconds,
		   last_reinforced_at, provenance, payload, created_at, updated_at, tsv)
		 SELECT 'large', gen_random_uuid(), t, s, 1, 'low', 0.8, random(), 'exponential', 2592000, c, '{"sources":[]}',
		   CASE t
		     WHEN 'semantic' THEN jsonb_build_object('kind', t, 'subject', 'svc-' || g, 'predicate', 'runs_on', 'object', 'node-' || g % 40,
		       'validity', '{"mode":"global"}'::jsonb)
		     WHEN 'competence' THEN jsonb_build_object('kind', t, 'skill_name', 'fix E' || g || ' in <path>',
		       'triggers', jsonb_build_array(jsonb_build_object('signal', 'E' || g || ': build cache mismatch in /tmp/a/obj.o')),
		       'recipe', jsonb_build_array(jsonb_build_object('step', 'clear the cache', 'tool', 'shell'), jsonb_build_object('step', 'rebuild', 'tool', 'make')),
		       'performance', jsonb_build_object('successes', 2 + g % 9, 'failures', g % 4))
		     WHEN 'plan_graph' THEN jsonb_build_object('kind', t, 'plan_id', 'deploy-' || g, 'version', '1', 'intent', 'deploy service ' || g,
		       'nodes', '[]'::jsonb, 'edges', '[]'::jsonb)
		     WHEN 'working' THEN jsonb_build_object('kind', t, 'thread_id', 'thread-' || g, 'state', 'planning')
		     ELSE jsonb_build_object('kind', t, 'outcome', 'success', 'summary', 'task ' || g, 'timeline', '[]'::jsonb)
		   END, c, c, ''::tsvector
		 FROM (SELECT g,
		         CASE WHEN g <= 40 THEN 'competence' WHEN g <= 60 THEN 'plan_graph'
		              ELSE (ARRAY['episodic','episodic','episodic','episodic','episodic','semantic','semantic','semantic','working','working'])[1 + g % 10] END AS t,
		         CASE WHEN g <= 60 THEN 'active'
		              ELSE (ARRAY['active','active','active','active','active','active','superseded','retracted','contested'])[1 + (g / 10) % 9] END AS s,
		         now() - (random() * interval '180 days') AS c
		       FROM generate_series(1, $1::int) g) x`,
		`INSERT INTO record_versions (tenant_id, record_id, version, recorded_at, snapshot)
		 SELECT tenant_id, id, 1, created_at, to_jsonb(r) FROM records r WHERE tenant_id = 'large' AND type IN ('competence', 'plan_graph')`,
		`INSERT INTO audit_log (tenant_id, record_id, action, actor, version, at)
		 SELECT tenant_id, id, 'create', 'seed', 1, created_at FROM records WHERE tenant_id = 'large'`,
		`INSERT INTO retrievals (tenant_id, id, at, record_ids)
		 SELECT 'large', gen_random_uuid(), now() - random() * interval '180 days', '{}' FROM generate_series(1, $1::int / 20)`,
		`INSERT INTO feedback (tenant_id, scope, record_id, outcome, at)
		 SELECT 'large', 'task-' || (row_number() OVER ()) / 3, id, (ARRAY['used_success','used_success','used_failure','unused'])[1 + (random()*3)::int],
		   created_at + interval '1 hour'
		 FROM (SELECT id, created_at FROM records WHERE tenant_id = 'large' AND type = 'semantic' LIMIT $1::int / 10) r`,
	} {
		var args []any
		if containsParam(sql) {
			args = []any{n}
		}
		_, err := tx.Exec(ctx, sql, args...)
		require.NoError(t, err, sql)
	}
	require.NoError(t, tx.Commit(ctx))
	_, err = db.Pool.Exec(ctx, `ANALYZE records`)
	require.NoError(t, err)
}

func containsParam(sql string) bool { return strings.Contains(sql, "$1") }
