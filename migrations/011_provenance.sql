-- The provenance stamp of every record the write path admits (write-path
-- RFC §12.4): who wrote it, from which thread, on what evidence and with
-- what authority, its adjusted confidence, the hash of its content at write
-- time and its structural fingerprint, signed with HMAC-SHA256 under an
-- operator key named by key_id (so keys can rotate). The dedup gate looks
-- records up by content hash and fingerprint (§12.3); the audit_provenance
-- job re-verifies signatures and marks what it finds tampered.

-- +goose Up
CREATE TABLE provenance (
    tenant_id    text        NOT NULL,
    record_id    uuid        NOT NULL,
    stamp        jsonb       NOT NULL,
    content_hash bytea       NOT NULL CHECK (octet_length(content_hash) = 32),
    fingerprint  bytea       CHECK (octet_length(fingerprint) = 32),
    key_id       text        NOT NULL DEFAULT '',
    signature    bytea,
    tampered_at  timestamptz,
    PRIMARY KEY (tenant_id, record_id),
    FOREIGN KEY (tenant_id, record_id) REFERENCES records (tenant_id, id) ON DELETE CASCADE,
    CHECK ((key_id = '') = (signature IS NULL))
);
CREATE INDEX provenance_by_content ON provenance (tenant_id, content_hash);
CREATE INDEX provenance_by_fingerprint ON provenance (tenant_id, fingerprint) WHERE fingerprint IS NOT NULL;

-- +goose Down
DROP TABLE provenance;
