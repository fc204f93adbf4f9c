package consolidate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/engram-dev/engram/memory"
)

// What consolidation writes beside a record sealed at rest (substrate RFC
// §15.9) — its audit entry's rationale, its tags, a log line — says
// nothing its sealed payload says: not the error signature, the
// conditions, the intent or the skill's name.

// rationale is the audit rationale of a learned record of sensitivity:
// the full one, or, for a sealed record, its counts only.
func (c *Consolidator) rationale(sens memory.Sensitivity, full string, successes, failures int) string {
	if !c.cfg.Writer.Sealer().Applies(sens) {
		return full
	}
	return fmt.Sprintf("%d successful episodes, %d failed (what they share is sealed with the record)", successes, failures)
}

// planIDTag is the tag a plan's records of one intent share: the plan id,
// or, for a sealed plan, a digest of it (the plan id is the intent's text).
func (c *Consolidator) planIDTag(p Plan) string {
	if !c.cfg.Writer.Sealer().Applies(p.Sensitivity) {
		return planIDTag + p.Payload.PlanID
	}
	sum := sha256.Sum256([]byte(p.Scope + "\x00" + p.Payload.PlanID))
	return planIDTag + "sealed-" + hex.EncodeToString(sum[:8])
}
