package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/skill"
)

// recordSkill serves GET /v1/records/{id}/skill.md: a learned procedure as
// an Agent Skills SKILL.md (issue 15, part 4), rendered by package skill.
// It reads the record as GET /v1/records/{id} does — the caller's tenant,
// the key's visibility — and a record that is not a procedure has no
// skill: 404 not-a-procedure, which names its type.
func (s *Server) recordSkill(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r.PathValue("id"))
	if err != nil {
		return err
	}
	rec, err := s.replicaReader(r).Unflagged(r.Context(), viewerOf(r), id)
	if err != nil {
		return err
	}
	name, md, err := skill.Render(rec)
	if errors.Is(err, skill.ErrNotCompetence) {
		return problem(http.StatusNotFound, "not-a-procedure", "Not a procedure",
			fmt.Sprintf("record %s is %s; only %s records (learned procedures) export as skills", rec.ID, rec.Type.ARecord(), memory.Competence))
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	// The folder the file belongs in: the skill's name.
	w.Header().Set("Content-Disposition", `inline; filename="SKILL.md"`)
	w.Header().Set("X-Engram-Skill-Name", name)
	w.Header().Set("ETag", fmt.Sprintf(`"%d"`, rec.Version))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(md)
	return nil
}
