-- Two statuses the governed write path needs (write-path RFC §12.6, §12.11.5):
-- a draft waits for a reviewer's approval and a quarantined record is held
-- for investigation. Neither is in the active set, so retrieval, decay and
-- the vector index leave both alone without a change of their own.

-- +goose Up
ALTER TABLE records DROP CONSTRAINT records_status_check;
ALTER TABLE records ADD CONSTRAINT records_status_check CHECK (status IN (
    'active', 'contested', 'superseded', 'retracted', 'merged', 'deleted', 'expired', 'draft', 'quarantined'));

-- +goose Down
ALTER TABLE records DROP CONSTRAINT records_status_check;
ALTER TABLE records ADD CONSTRAINT records_status_check CHECK (status IN (
    'active', 'contested', 'superseded', 'retracted', 'merged', 'deleted', 'expired'));
