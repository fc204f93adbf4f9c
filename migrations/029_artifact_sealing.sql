-- Artifacts sealed at rest (issue 33; substrate RFC §15.9). An artifact's
-- content is redacted before it is stored, as every write is (SR-1), and,
-- when the daemon has a master key, sealed: content then holds the sealed
-- value ({"sealed": {"key": …, "data": …}}), while sha256 and size stay
-- those of the redacted plaintext, so an artifact keeps its address and
-- storing the same content twice is still a no-op. The database can check
-- the address only of content in the clear.

-- +goose Up
ALTER TABLE artifacts ADD COLUMN sealed boolean NOT NULL DEFAULT false;
ALTER TABLE artifacts DROP CONSTRAINT artifacts_content_addressed;
ALTER TABLE artifacts ADD CONSTRAINT artifacts_content_addressed
    CHECK (sealed OR (sha256 = sha256(content) AND size = octet_length(content)));

-- +goose Down
DELETE FROM artifacts WHERE sealed;
ALTER TABLE artifacts DROP CONSTRAINT artifacts_content_addressed;
ALTER TABLE artifacts ADD CONSTRAINT artifacts_content_addressed
    CHECK (sha256 = sha256(content) AND size = octet_length(content));
ALTER TABLE artifacts DROP COLUMN sealed;
