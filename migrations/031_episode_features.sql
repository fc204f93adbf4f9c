-- What consolidation derives from one closed episode's staged events — its
-- problems, their reduced steps, its trace and plan graph (issue 29) — kept
-- beside the episode, so that a pass (substrate RFC §10, §15.7) regroups
-- its window from these rows instead of reading every event of the window
-- again: a closed episode's events do not change (§5: append-only). A row
-- is a derived cache, not memory: no version log, no audit; a pass learns
-- again any row it lacks.
--
--  * learner names the code and configuration that learned the row (the
--    features version and the read-only probes): a row of another learner
--    is learned again, and replaced.
--  * episode_version is the episode record's version it was learned from:
--    a revision of the episode (compression releases events) invalidates
--    it.
--  * features is JSON, or a sealed value when the episode is sealed at
--    rest (§15.9): it holds what the events said. A data key rotation
--    forgets the rows sealed under an older key rather than re-sealing
--    them.
--  * An episode's erasure, retention purge or hard delete takes its row
--    with it (the foreign key); an erasure also forgets the tenant's other
--    rows (store ForgetEpisodeFeatures).

-- +goose Up
CREATE TABLE episode_features (
    tenant_id       text        NOT NULL,
    episode_id      uuid        NOT NULL,
    learner         text        NOT NULL CHECK (length(learner) BETWEEN 1 AND 200),
    episode_version integer     NOT NULL,
    features        bytea       NOT NULL,
    learned_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, episode_id),
    FOREIGN KEY (tenant_id, episode_id) REFERENCES records (tenant_id, id) ON DELETE CASCADE
);

-- No statement selects by the document: the planner needs no statistics
-- of it, and ANALYZE need not read it.
ALTER TABLE episode_features ALTER COLUMN features SET STATISTICS 0;

-- +goose Down
DROP TABLE episode_features;
