package store

import (
	"context"
	"fmt"

	"github.com/engram-dev/engram/internal/pg"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"
)

// ToEmbed is a live record as the embedding backfill sees it: its
// searchable text and whether its vector for the model is missing or
// older than the record.
type ToEmbed struct {
	Key
	Type             string
	SensitivityRank  int
	Version          int
	Text             string
	Stale, HadVector bool
}

// scanToEmbedSQL reads a batch of live records in (tenant, id) order after
// a key, with the text the embedders see (the same as lexical search's: an
// episode's with its appended entries), and the state of their vector for
// the model, looked up by key for each record of the batch (the vector
// table grows fastest while the backfill runs, ahead of its statistics).
const scanToEmbedSQL = `
WITH batch AS (
	SELECT r.tenant_id, r.id, r.type, r.sensitivity_rank, r.version, r.payload, r.tags
	FROM records r
	WHERE r.status IN ('active', 'contested') AND (r.tenant_id, r.id) > ($1, $2)
	ORDER BY r.tenant_id, r.id
	LIMIT $4
)
SELECT r.tenant_id, r.id, r.type, r.sensitivity_rank, r.version,
	left(concat_ws(' ', engram_search_text(r.type, r.payload, r.tags),
		CASE WHEN r.type = 'episodic' THEN (
			SELECT string_agg(concat_ws(' ', e.entry ->> 'summary', e.entry ->> 'tool'), ' ' ORDER BY e.seq)
			FROM episode_entries e WHERE e.tenant_id = r.tenant_id AND e.record_id = r.id) END), 65536),
	v.record_version IS NULL OR v.record_version < r.version, v.record_version IS NOT NULL
FROM batch r
LEFT JOIN LATERAL (
	SELECT v.record_version FROM record_vectors v WHERE v.tenant_id = r.tenant_id AND v.record_id = r.id AND v.model = $3
) v ON true
ORDER BY r.tenant_id, r.id`

// ScanToEmbed returns up to limit live records after key, in key order,
// each saying whether its vector for model needs (re)writing.
func ScanToEmbed(ctx context.Context, db pg.DBTX, model string, after Key, limit int) ([]ToEmbed, error) {
	rows, err := db.Query(ctx, scanToEmbedSQL, after.Tenant, after.ID, model, limit)
	if err != nil {
		return nil, fmt.Errorf("scan records to embed: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ToEmbed, error) {
		var t ToEmbed
		err := row.Scan(&t.Tenant, &t.ID, &t.Type, &t.SensitivityRank, &t.Version, &t.Text, &t.Stale, &t.HadVector)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("scan records to embed: %w", err)
	}
	return out, nil
}

// VectorRow is one record's vector for a model: Sparse or Dense.
type VectorRow struct {
	Key
	Type            string
	SensitivityRank int
	Version         int
	Sparse          *pgvector.SparseVector
	Dense           *pgvector.Vector
}

// putVectorSQL writes a record's vector, if the record is still live at
// the version it was read at or later (a record that left the active set
// meanwhile gets none).
const putVectorSQL = `
INSERT INTO record_vectors (tenant_id, record_id, model, type, sensitivity_rank, record_version, sparse, dense)
SELECT r.tenant_id, r.id, $3, r.type, r.sensitivity_rank, $4, $5, $6
FROM records r WHERE r.tenant_id = $1 AND r.id = $2 AND r.status IN ('active', 'contested')
ON CONFLICT (tenant_id, record_id, model) DO UPDATE
SET sensitivity_rank = excluded.sensitivity_rank, record_version = excluded.record_version,
	sparse = excluded.sparse, dense = excluded.dense, embedded_at = now()`

// PutVectors writes vectors for model in one round trip and one
// transaction.
func PutVectors(ctx context.Context, db pg.DBTX, model string, vs []VectorRow) error {
	if len(vs) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, v := range vs {
		b.Queue(putVectorSQL, v.Tenant, v.ID, model, v.Version, v.Sparse, v.Dense)
	}
	// A batch runs in one implicit transaction (or in the caller's).
	if err := db.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write vectors: %w", err)
	}
	return nil
}

const (
	addFeatureDFSQL = `
INSERT INTO embedding_df (tenant_id, model, feature, df)
SELECT $1, $2, f, count(*) FROM unnest($3::int4[]) AS f GROUP BY f
ON CONFLICT (tenant_id, model, feature) DO UPDATE SET df = embedding_df.df + excluded.df`
	featureDFSQL = `
SELECT d.feature, d.df FROM unnest($3::int4[]) AS f(feature)
JOIN embedding_df d ON d.tenant_id = $1 AND d.model = $2 AND d.feature = f.feature`
	embeddedDocsSQL = `SELECT count(*) FROM record_vectors WHERE tenant_id = $1 AND model = $2`
)

// AddFeatureDF counts newly embedded documents in a tenant's feature
// document frequencies: features holds each document's distinct features,
// concatenated.
func AddFeatureDF(ctx context.Context, db pg.DBTX, tenant, model string, features []int32) error {
	if _, err := db.Exec(ctx, addFeatureDFSQL, tenant, model, features); err != nil {
		return fmt.Errorf("count feature frequencies: %w", err)
	}
	return nil
}

// FeatureDF returns a tenant's document frequencies of features (absent
// ones are zero) and how many documents it has embedded.
func FeatureDF(ctx context.Context, db pg.DBTX, tenant, model string, features []int32) (map[int32]int64, int64, error) {
	rows, err := db.Query(ctx, featureDFSQL, tenant, model, features)
	if err != nil {
		return nil, 0, fmt.Errorf("read feature frequencies: %w", err)
	}
	out := map[int32]int64{}
	var f int32
	var df int64
	_, err = pgx.ForEachRow(rows, []any{&f, &df}, func() error { out[f] = df; return nil })
	if err != nil {
		return nil, 0, fmt.Errorf("read feature frequencies: %w", err)
	}
	var docs int64
	if err := db.QueryRow(ctx, embeddedDocsSQL, tenant, model).Scan(&docs); err != nil {
		return nil, 0, fmt.Errorf("count embedded records: %w", err)
	}
	return out, docs, nil
}

const (
	dropOtherModelsSQL   = `DELETE FROM record_vectors WHERE model <> $1`
	dropOtherModelsDFSQL = `DELETE FROM embedding_df WHERE model <> $1`
	dropModelSQL         = `DELETE FROM record_vectors WHERE model = $1`
	dropModelDFSQL       = `DELETE FROM embedding_df WHERE model = $1`
)

// DropVectors deletes vectors and feature frequencies: every model's but
// keep's when others is true (a model change), else keep's own (a
// rebuild). It returns the vectors deleted.
func DropVectors(ctx context.Context, db pg.DBTX, keep string, others bool) (int64, error) {
	vecs, dfs := dropModelSQL, dropModelDFSQL
	if others {
		vecs, dfs = dropOtherModelsSQL, dropOtherModelsDFSQL
	}
	tag, err := db.Exec(ctx, vecs, keep)
	if err != nil {
		return 0, fmt.Errorf("drop vectors: %w", err)
	}
	if _, err := db.Exec(ctx, dfs, keep); err != nil {
		return 0, fmt.Errorf("drop feature frequencies: %w", err)
	}
	return tag.RowsAffected(), nil
}

// OtherModels reports whether vectors of a model other than model exist.
func OtherModels(ctx context.Context, db pg.DBTX, model string) (bool, error) {
	var yes bool
	err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM record_vectors WHERE model <> $1)`, model).Scan(&yes)
	if err != nil {
		return false, fmt.Errorf("look for other models' vectors: %w", err)
	}
	return yes, nil
}
