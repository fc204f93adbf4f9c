package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/engram-dev/engram/internal/pg"
	"github.com/engram-dev/engram/memory"
)

// FactKey is what a fact is about, short of its conditions: its scope,
// subject and predicate. Every fact a fact can contradict or duplicate
// shares its key (the content hash and the fingerprint both cover it).
type FactKey struct {
	Scope, Subject, Predicate string
}

// LiveFact is a live fact with the provenance row it was stamped with
// (nil hashes and stamp when it has none).
type LiveFact struct {
	Record      memory.Record
	ContentHash []byte
	Fingerprint []byte
	Stamp       json.RawMessage
}

// liveFactsOfSQL are the tenant's live facts of several keys, with their
// provenance: [LiveFacts], [SameContent] and [Stamps] for a batch of facts
// in one statement. Each key is looked up in records_by_fact on its own
// (the lateral subquery, which OFFSET 0 keeps from being flattened and
// from taking the outer conditions): as a prepared statement's generic
// plan, a semi-join of the keys with the tenant's live records reads every
// live record, with its stamp, for each call.
const liveFactsOfSQL = `
SELECT p.content_hash, p.fingerprint, p.stamp, ` + recordColumns + `
FROM (SELECT DISTINCT * FROM unnest($2::text[], $3::text[], $4::text[])) AS k(k_scope, k_subject, k_predicate)
CROSS JOIN LATERAL (
	SELECT * FROM records r
	WHERE r.tenant_id = $1 AND r.type = 'semantic' AND r.subject = k.k_subject AND r.predicate = k.k_predicate
	OFFSET 0
) r
LEFT JOIN provenance p ON p.tenant_id = r.tenant_id AND p.record_id = r.id
WHERE r.scope = k.k_scope AND r.status IN ('active', 'contested')
ORDER BY r.id`

// LiveFactsOf returns the tenant's live facts of the keys given, in id
// order, with their provenance rows.
func LiveFactsOf(ctx context.Context, db pg.DBTX, tenant string, keys []FactKey) ([]LiveFact, error) {
	scopes, subjects, predicates := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		scopes[i], subjects[i], predicates[i] = k.Scope, k.Subject, k.Predicate
	}
	rows, err := db.Query(ctx, liveFactsOfSQL, tenant, scopes, subjects, predicates)
	if err != nil {
		return nil, fmt.Errorf("read facts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (LiveFact, error) {
		var f LiveFact
		var stamp []byte
		var err error
		f.Record, err = scanRecord(row, &f.ContentHash, &f.Fingerprint, &stamp)
		if stamp != nil {
			f.Stamp = stamp
		}
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("read facts: %w", err)
	}
	return out, nil
}

// Reputations returns the counts of the tenant's agents among agents that
// have any, by agent id.
func Reputations(ctx context.Context, db pg.DBTX, tenant string, agents []string) (map[string]Reputation, error) {
	rows, err := db.Query(ctx, `SELECT `+reputationColumns+` FROM agent_reputation WHERE tenant_id = $1 AND agent_id = ANY($2)`, tenant, agents)
	if err != nil {
		return nil, fmt.Errorf("read reputation: %w", err)
	}
	rs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Reputation])
	if err != nil {
		return nil, fmt.Errorf("read reputation: %w", err)
	}
	out := make(map[string]Reputation, len(rs))
	for _, r := range rs {
		out[r.AgentID] = r
	}
	return out, nil
}
