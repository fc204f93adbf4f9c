-- A large tenant for measuring GET /v1/stats/health (the console's first
-- page): 1,000,000 records over 180 days, 1,500,000 audit entries, 200,000
-- retrievals and 300,000 feedback rows, tenant "big". Rows are written
-- straight into the tables (triggers off), so it is for a throwaway
-- database that engramd has migrated:
--
--   createdb -h 127.0.0.1 -U postgres engram_perf
--   DATABASE_URL=postgres://postgres@127.0.0.1:5432/engram_perf?sslmode=disable go run ./cmd/engramd migrate
--   psql -h 127.0.0.1 -U postgres -d engram_perf -f scripts/health_seed.sql
--   for t in records audit_log feedback retrievals; do psql -h 127.0.0.1 -U postgres -d engram_perf -c "VACUUM ANALYZE $t"; done
--
-- then start engramd on it with ENGRAM_API_KEYS=big:<key> and time
-- curl -H "Authorization: Bearer <key>" "$E/v1/stats/health?bucket=day&from=<7 days ago>".
SET session_replication_role = replica;
INSERT INTO tenants (id) VALUES ('big') ON CONFLICT DO NOTHING;
INSERT INTO records (tenant_id, id, type, status, version, sensitivity, confidence, salience, decay_curve, decay_half_life_seconds,
  last_reinforced_at, provenance, payload, created_at, updated_at, tsv)
SELECT 'big', gen_random_uuid(), t, s, 1, 'low', 0.8, random(), 'exponential', 2592000, c, '{"sources":[]}',
  CASE t WHEN 'semantic' THEN jsonb_build_object('kind', t, 'subject', 'svc-' || g, 'predicate', 'runs_on', 'object', 'x', 'validity', '{"mode":"global"}'::jsonb)
         ELSE jsonb_build_object('kind', t) END, c, c, ''::tsvector
FROM (SELECT g, (ARRAY['episodic','episodic','episodic','semantic','semantic','working','competence','plan_graph'])[1 + g % 8] AS t,
             (ARRAY['active','active','active','active','active','active','superseded','retracted','contested'])[1 + (g / 8) % 9] AS s,
             now() - (random() * interval '180 days') AS c
      FROM generate_series(1, 1000000) g) x;
INSERT INTO audit_log (tenant_id, record_id, action, actor, at)
SELECT 'big', NULL, (ARRAY['create','create','create','absorb','update','supersede','contest','retract','feedback','reject'])[1 + g % 10], 'perf', now() - random() * interval '180 days'
FROM generate_series(1, 1500000) g;
INSERT INTO retrievals (tenant_id, id, at, record_ids)
SELECT 'big', gen_random_uuid(), now() - random() * interval '180 days', '{}' FROM generate_series(1, 200000);
INSERT INTO feedback (tenant_id, scope, record_id, outcome, at)
SELECT 'big', 'task-' || (row_number() OVER ()) / 3, id, (ARRAY['used_success','used_failure','unused'])[1 + (random()*2)::int], created_at + interval '1 hour'
FROM (SELECT id, created_at FROM records WHERE tenant_id = 'big' AND type IN ('competence','plan_graph','semantic') LIMIT 300000) r;
