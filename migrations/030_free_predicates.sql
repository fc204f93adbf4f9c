-- Relation predicates are free strings (substrate RFC §15A.5: "predicate":
-- {"type": "string"}, "e.g., supports, contradicts, derived_from,
-- supersedes"), as long as an index entry allows (issue 28, finding 6).
-- engram's own predicates keep their meaning; the write path still keeps
-- supersedes, forked_from and merged_into to their revisions.

-- +goose Up
ALTER TABLE relations DROP CONSTRAINT relations_predicate_check;
ALTER TABLE relations ADD CONSTRAINT relations_predicate_check CHECK (length(predicate) BETWEEN 1 AND 256);

-- +goose Down
ALTER TABLE relations DROP CONSTRAINT relations_predicate_check;
ALTER TABLE relations ADD CONSTRAINT relations_predicate_check
    CHECK (predicate IN ('supports', 'contradicts', 'derived_from', 'supersedes', 'forked_from', 'merged_into')) NOT VALID;
