package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/access"
	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/revise"
	"github.com/engram-dev/engram/store"
)

func (s *Server) createRecord(w http.ResponseWriter, r *http.Request) error {
	rfc, err := formParam(r)
	if err != nil {
		return err
	}
	rd := s.redaction()
	var raw json.RawMessage
	if err := rd.decode(r, &raw); err != nil {
		return err
	}
	if rfc {
		if raw, err = importRFC(raw); err != nil {
			return err
		}
	}
	rec, err := decodeRecord(raw, "")
	if err != nil {
		return err
	}
	ch, err := rd.fencedChange(r, r.URL.Query().Get("rationale"))
	if err != nil {
		return err
	}
	if err := rd.check(); err != nil {
		return err
	}
	rd.raise(&rec)
	ownRecord(r, &rec)
	a, err := s.writer.Admit(r.Context(), principalOf(r).tenant, rec, ch)
	if err != nil {
		return err
	}
	out := a.Record
	w.Header().Set("Location", "/v1/records/"+out.ID.String())
	w.Header().Set("Engram-Write-Outcome", string(a.Outcome))
	switch a.Outcome {
	case revise.Absorbed, revise.Merged:
		// The write path answered with the live record the write
		// duplicates (write-path RFC §12.3).
		writeJSON(w, http.StatusOK, out)
	case revise.Queued:
		// A draft, waiting for a reviewer (§12.6.4): its review is at
		// /v1/reviews/{id}.
		if a.Review != nil {
			w.Header().Set("Engram-Review", a.Review.ID.String())
			w.Header().Set("Link", "</v1/reviews/"+a.Review.ID.String()+">; rel=\"review\"")
		}
		writeJSON(w, http.StatusAccepted, out)
	default:
		writeJSON(w, http.StatusCreated, out)
	}
	return nil
}

func (s *Server) getRecord(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r.PathValue("id"))
	if err != nil {
		return err
	}
	rfc, err := formParam(r)
	if err != nil {
		return err
	}
	asOf, err := timeParam(r, "as_of")
	if err != nil {
		return err
	}
	var rec memory.Record
	if asOf != nil {
		rec, err = s.replicaReader(r).RecordAsOf(r.Context(), viewerOf(r), id, *asOf)
	} else {
		rec, err = s.replicaReader(r).Record(r.Context(), viewerOf(r), id)
	}
	if err != nil {
		return err
	}
	if asOf == nil {
		// The version is the entity tag PATCH's If-Match takes.
		w.Header().Set("ETag", `"`+strconv.Itoa(rec.Version)+`"`)
	}
	if rfc {
		doc, err := rec.RFC()
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, json.RawMessage(doc))
		return nil
	}
	writeJSON(w, http.StatusOK, rec)
	return nil
}

// formParam reads the form parameter: a record in engram's form (the
// default) or in the substrate RFC's canonical form (rfc, §4, §15A), with
// engram's extensions under [memory.RFCExtensions].
func formParam(r *http.Request) (rfc bool, err error) {
	switch r.URL.Query().Get("form") {
	case "", "engram":
		return false, nil
	case "rfc":
		return true, nil
	}
	return false, badParam("form", "must be rfc (the substrate RFC's canonical form) or engram (the default)")
}

// importRFC turns a record in the RFC's form into engram's ([memory.FromRFC])
// less what the store sets on every new record — its status, version and
// flags — so that a record exported (GET ?form=rfc) is written again as it
// was.
func importRFC(raw json.RawMessage) (json.RawMessage, error) {
	doc, err := memory.FromRFC(raw)
	var re *memory.RFCError
	if errors.As(err, &re) {
		return nil, fieldProblem(re.Pointer, re.Message)
	}
	if err != nil {
		return nil, decodeProblem(err, "")
	}
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(doc, &rec); err != nil {
		return nil, fmt.Errorf("decode imported record: %w", err)
	}
	for _, name := range []string{"status", "version", "flags"} {
		delete(rec, name)
	}
	return json.Marshal(rec)
}

// listRecords serves GET /v1/records. Repeatable parameters (type, status,
// tag, sensitivity) also take comma-separated values.
func (s *Server) listRecords(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	var f store.Filter
	for _, v := range multi(q["type"]) {
		t := memory.Type(v)
		if !t.Valid() {
			return badParam("type", "%q is not one of episodic, working, semantic, competence, plan_graph", v)
		}
		f.Types = append(f.Types, t)
	}
	for _, v := range multi(q["status"]) {
		if v == "all" {
			f.Statuses = memory.Statuses
			continue
		}
		st := memory.Status(v)
		if !st.Valid() {
			return badParam("status", "%q is not a record status (or all)", v)
		}
		f.Statuses = append(f.Statuses, st)
	}
	for _, v := range multi(q["sensitivity"]) {
		sv := memory.Sensitivity(v)
		if !sv.Valid() {
			return badParam("sensitivity", "%q is not one of public, low, medium, high, hyper", v)
		}
		f.Sensitivities = append(f.Sensitivities, sv)
	}
	f.Tags = multi(q["tag"])
	if q.Has("scope") {
		scope := q.Get("scope")
		f.Scope = &scope
	}
	f.Subject, f.Predicate, f.Cursor = q.Get("subject"), q.Get("predicate"), q.Get("cursor")
	f.AgentID, f.ThreadID = q.Get("agent_id"), q.Get("thread_id")
	f.ScopePrefix, f.AnyTags = q.Get("scope_prefix"), multi(q["tag_any"])
	var err error
	if f.UpdatedAfter, err = timeParam(r, "updated_after"); err != nil {
		return err
	}
	if f.UpdatedBefore, err = timeParam(r, "updated_before"); err != nil {
		return err
	}
	switch q.Get("order") {
	case "", "oldest":
	case "newest":
		f.Newest = true
	default:
		return badParam("order", "must be oldest (the default) or newest")
	}
	if v := q.Get("flag"); v != "" {
		f.Flag = memory.FlagKind(v)
		if !f.Flag.Valid() {
			return badParam("flag", "%q is not a flag; the one flag is derived_from_quarantined", v)
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxLimit {
			return badParam("limit", "must be a whole number from 1 to %d", store.MaxLimit)
		}
		f.Limit = n
	}
	asOf, err := timeParam(r, "as_of")
	if err != nil {
		return err
	}
	if asOf != nil && f.Flag != "" {
		return badParam("flag", "cannot be combined with as_of: flags are current state, with no history")
	}
	f.AsOf = asOf
	page, err := s.replicaReader(r).Records(r.Context(), viewerOf(r), f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wirePage(page))
	return nil
}

// updateRequest is the body of PATCH /v1/records/{id}: working memory only.
type updateRequest = api.UpdateRequest

func (s *Server) updateRecord(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r.PathValue("id"))
	if err != nil {
		return err
	}
	rd := s.redaction()
	var req updateRequest
	if err := rd.decode(r, &req); err != nil {
		return err
	}
	ch, err := rd.fencedChange(r, req.Rationale)
	if err != nil {
		return err
	}
	if err := rd.check(); err != nil {
		return err
	}
	if req.Version == 0 {
		if req.Version, err = ifMatch(r); err != nil {
			return err
		}
	}
	if len(req.Payload) == 0 {
		return fieldProblem("/payload", "is required")
	}
	if err := s.mayRevise(r, id, access.OpWrite); err != nil {
		return err
	}
	out, err := s.writer.Update(r.Context(), principalOf(r).tenant, id, req.Version, req.Payload, req.Tags, ch)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ifMatch reads a version from an If-Match header: "3" or a bare 3.
func ifMatch(r *http.Request) (int, error) {
	v := strings.Trim(strings.TrimPrefix(r.Header.Get("If-Match"), "W/"), `"`)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		p := problem(http.StatusBadRequest, "invalid-header", "Invalid header", "If-Match must be a record version")
		p.Errors = []FieldError{{Header: "If-Match", Message: "must be a record version, such as \"3\""}}
		return 0, p
	}
	return n, nil
}

func (s *Server) deleteRecord(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.mayRevise(r, id, access.OpDelete); err != nil {
		return err
	}
	rd := s.redaction()
	ch, err := rd.fencedChange(r, r.URL.Query().Get("rationale"))
	if err != nil {
		return err
	}
	if err := rd.check(); err != nil {
		return err
	}
	out, err := s.writer.Delete(r.Context(), principalOf(r).tenant, id, ch)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// reviseRequest is the body of every revision custom method
// ([api.ReviseRequest]); each uses the fields that apply to it.
type reviseRequest api.ReviseRequest

// decodeRevision reads a revision's body, redacted, and its audit
// identity.
func (s *Server) decodeRevision(r *http.Request, req *reviseRequest) (*redaction, revise.Change, error) {
	rd := s.redaction()
	if r.ContentLength != 0 {
		if err := rd.decode(r, req); err != nil {
			return nil, revise.Change{}, err
		}
	}
	ch, err := rd.fencedChange(r, req.Rationale)
	if err != nil {
		return nil, ch, err
	}
	ch.Evidence = req.Evidence
	return rd, ch, rd.check()
}

// decodeRecord decodes a record of a revision's body, its sensitivity
// raised to what redaction found.
func (rd *redaction) decodeRecord(raw json.RawMessage, pointer string) (memory.Record, error) {
	rec, err := decodeRecord(raw, pointer)
	if err != nil {
		return rec, err
	}
	rd.raise(&rec)
	return rec, nil
}

// reviseRecord serves POST /v1/records/{id}:{op}.
func (s *Server) reviseRecord(w http.ResponseWriter, r *http.Request) error {
	idText, op, ok := strings.Cut(r.PathValue("idop"), ":")
	if !ok {
		return problem(http.StatusNotFound, "not-found", "Not found",
			"POST a revision as /v1/records/{id}:{supersede|fork|contest|retract|rollback|quarantine|release|append|restore|purge|pin|unpin|reclassify|annotate}")
	}
	id, err := pathID(idText)
	if err != nil {
		return err
	}
	if aop, ok := revisionAccess[op]; ok {
		if err := s.mayRevise(r, id, aop); err != nil {
			return err
		}
	}
	var req reviseRequest
	rd, ch, err := s.decodeRevision(r, &req)
	if err != nil {
		return err
	}
	tenant, ctx := principalOf(r).tenant, r.Context()
	var out any
	switch op {
	case "supersede":
		rec, err := rd.decodeRecord(req.Record, "/record")
		if err != nil {
			return err
		}
		old, next, err := s.writer.Supersede(ctx, tenant, id, req.Version, rec, ch)
		if err != nil {
			return err
		}
		out = map[string]any{"superseded": old, "record": next}
	case "fork":
		variants := make([]memory.Record, len(req.Variants))
		for i, raw := range req.Variants {
			if variants[i], err = rd.decodeRecord(raw, fmt.Sprintf("/variants/%d", i)); err != nil {
				return err
			}
		}
		old, variants, err := s.writer.Fork(ctx, tenant, id, req.Version, variants, ch)
		if err != nil {
			return err
		}
		out = map[string]any{"forked": old, "records": variants}
	case "contest":
		var next *memory.Record
		if len(req.Record) > 0 {
			rec, err := rd.decodeRecord(req.Record, "/record")
			if err != nil {
				return err
			}
			next = &rec
		}
		recs, err := s.writer.Contest(ctx, tenant, append([]uuid.UUID{id}, req.Against...), next, ch)
		if err != nil {
			return err
		}
		out = map[string]any{"records": recs}
	case "retract":
		rec, err := s.writer.Retract(ctx, tenant, id, req.Version, ch)
		if err != nil {
			return err
		}
		out = rec
	case "append":
		rec, err := s.writer.AppendEpisode(ctx, tenant, id, revise.EpisodeAppend{
			Timeline: req.Timeline, ToolGraph: req.ToolGraph, Artifacts: req.Artifacts, Outcome: req.Outcome,
		}, ch)
		if err != nil {
			return err
		}
		out = rec
	case "rollback":
		res, err := s.writer.Rollback(ctx, tenant, id, req.Version, ch)
		if err != nil {
			return err
		}
		out = map[string]any{"rolled_back": res.RolledBack, "retracted": nonNilRecords(res.Retracted), "reactivated": nonNilRecords(res.Reactivated)}
	case "quarantine":
		res, err := s.writer.Quarantine(ctx, tenant, id, req.Version, ch)
		if err != nil {
			return err
		}
		out = map[string]any{"record": res.Record, "flagged": nonNilIDs(res.Flagged), "truncated": res.Truncated}
	case "release":
		res, err := s.writer.Release(ctx, tenant, id, req.Version, ch)
		if err != nil {
			return err
		}
		out = map[string]any{"record": res.Record, "unflagged": nonNilIDs(res.Unflagged)}
	case "restore":
		return s.restoreRecord(w, r, id, ch)
	case "purge":
		if err := s.writer.Purge(ctx, tenant, id, ch); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	case "pin":
		if out, err = s.writer.Pin(ctx, tenant, id, req.Version, revise.Keeping{DeletionPolicy: req.DeletionPolicy}, ch); err != nil {
			return err
		}
	case "unpin":
		if out, err = s.writer.Unpin(ctx, tenant, id, req.Version, revise.Keeping{DeletionPolicy: req.DeletionPolicy}, ch); err != nil {
			return err
		}
	case "reclassify":
		if out, err = s.writer.Reclassify(ctx, tenant, id, req.Version, req.Sensitivity, ch); err != nil {
			return err
		}
	case "annotate":
		if out, err = s.writer.Annotate(ctx, tenant, id, req.Note, ch); err != nil {
			return err
		}
	default:
		return problem(http.StatusNotFound, "not-found", "Not found",
			fmt.Sprintf("%q is not a revision; use supersede, fork, contest, retract, rollback, quarantine, release, append, restore, purge, pin, unpin, reclassify or annotate", op))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) mergeRecords(w http.ResponseWriter, r *http.Request) error {
	var req reviseRequest
	rd, ch, err := s.decodeRevision(r, &req)
	if err != nil {
		return err
	}
	var template *memory.Record
	if len(req.Record) > 0 {
		rec, err := rd.decodeRecord(req.Record, "/record")
		if err != nil {
			return err
		}
		template = &rec
	}
	rec, err := s.writer.Merge(r.Context(), principalOf(r).tenant, req.RecordIDs, template, ch)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/records/"+rec.ID.String())
	writeJSON(w, http.StatusCreated, rec)
	return nil
}

func (s *Server) recordHistory(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r.PathValue("id"))
	if err != nil {
		return err
	}
	versions, err := s.replicaReader(r).History(r.Context(), viewerOf(r), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.RecordHistory{Versions: wireVersions(versions)})
	return nil
}

func (s *Server) recordAudit(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r.PathValue("id"))
	if err != nil {
		return err
	}
	entries, err := s.replicaReader(r).Audit(r.Context(), viewerOf(r), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.AuditTrail{Entries: wireAudit(entries)})
	return nil
}

func (s *Server) recordRelations(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r.PathValue("id"))
	if err != nil {
		return err
	}
	edges, err := s.replicaReader(r).Relations(r.Context(), viewerOf(r), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.RecordRelations{Relations: wireEdges(edges)})
	return nil
}

func (s *Server) putArtifact(w http.ResponseWriter, r *http.Request) error {
	// An artifact belongs to an episode: storing one is a write to the
	// key's own session (write-path RFC §12.8.2).
	p := principalOf(r)
	t := access.Target{Layer: memory.Episodic, Agent: p.agent}
	if err := access.Decide(p.access(), access.OpWrite, t, p.rules).Err(); err != nil {
		return err
	}
	mediaType, text, err := artifactMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return err
	}
	body, err := readAll(r)
	if err != nil {
		return err
	}
	body, err = s.redactArtifact(body, mediaType, text)
	if err != nil {
		return err
	}
	a, err := s.writer.PutArtifact(r.Context(), p.tenant, mediaType, body)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/artifacts/"+a.SHA256)
	writeJSON(w, http.StatusCreated, a)
	return nil
}

func (s *Server) getArtifact(w http.ResponseWriter, r *http.Request) error {
	a, content, err := s.reader.Artifact(r.Context(), viewerOf(r), r.PathValue("sha256"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", a.MediaType)
	w.Header().Set("ETag", `"`+a.SHA256+`"`)
	w.Header().Set("Cache-Control", "private, max-age=31536000, immutable")
	_, _ = w.Write(content)
	return nil
}

func pathID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, problem(http.StatusNotFound, "not-found", "Not found", fmt.Sprintf("%q is not a record id", s))
	}
	return id, nil
}

func timeParam(r *http.Request, name string) (*time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil, badParam(name, "must be an RFC 3339 time, such as 2026-01-28T00:00:00Z")
	}
	return &t, nil
}

func multi(vs []string) []string {
	var out []string
	for _, v := range vs {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

func fieldProblem(pointer, message string) *Problem {
	p := problem(http.StatusUnprocessableEntity, "validation-failed", "Validation failed", strings.TrimPrefix(pointer, "/")+" "+message)
	p.Errors = []FieldError{{Pointer: pointer, Message: message}}
	return p
}

func readAll(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, decodeProblem(err, "")
	}
	return b, nil
}

// nonNilRecords makes an empty list of records encode as [], not null.
func nonNilRecords(recs []memory.Record) []memory.Record {
	if recs == nil {
		return []memory.Record{}
	}
	return recs
}

// nonNilIDs makes an empty list of ids encode as [], not null.
func nonNilIDs(ids []uuid.UUID) []uuid.UUID {
	if ids == nil {
		return []uuid.UUID{}
	}
	return ids
}
