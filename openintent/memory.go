package openintent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/client"
	"github.com/engram-dev/engram/memory"
)

// threadPrefix starts the thread_id of every entry's working payload, so
// that no thread of streamed events is ever taken for an entry's.
const threadPrefix = "openintent:"

// workingHalfLife is the half-life of entries' salience; its floor of 1
// keeps them from fading out: entries leave by delete, eviction, archival
// or expires_at, as RFC-0015 says, never by decay.
const workingHalfLife = 2 * 24 * 60 * 60

// recordOf is the /v1 record document of a new entry (see the package
// comment's table).
func recordOf(req createRequest, now time.Time) map[string]any {
	visibility := memory.VisibilityAgent
	if req.MemoryType == TierSemantic {
		visibility = memory.VisibilityTenant
	}
	lifecycle := map[string]any{
		"decay": map[string]any{"curve": "exponential", "half_life_seconds": workingHalfLife, "min_salience": 1},
	}
	if at := req.expiry(now); at != nil {
		lifecycle["expires_at"] = at.Format(time.RFC3339Nano)
	}
	rec := map[string]any{
		"thread_id":  threadOf(req.stored),
		"type":       memory.Working,
		"scope":      req.Namespace,
		"tags":       nonNil(req.Tags),
		"agent_id":   req.AgentID,
		"visibility": visibility,
		"lifecycle":  lifecycle,
		"payload":    payloadOf(req.stored),
	}
	if req.Sensitivity != nil {
		rec["sensitivity"] = sensitivityFrom(*req.Sensitivity)
	}
	return rec
}

// payloadOf is the working payload of an entry: a task's state (substrate
// RFC §6) whose thread is the entry's task, or its agent's, and the entry
// under [payloadKey].
func payloadOf(s stored) map[string]any {
	p := map[string]any{"kind": memory.Working, "state": "executing", "thread_id": threadOf(s), payloadKey: s}
	if task := s.taskID(); task != "" {
		p["task_id"] = task
	}
	return p
}

// threadOf is the thread of an entry, its record's and its payload's
// thread_id: its task's, or, with none, its agent's. A task's entries are
// listed by it.
func threadOf(s stored) string {
	if task := s.taskID(); task != "" {
		return taskThread(task)
	}
	return threadPrefix + "agent:" + s.AgentID
}

func taskThread(task string) string { return threadPrefix + "task:" + task }

func nonNil(tags []string) []string {
	if tags == nil {
		return []string{}
	}
	return tags
}

// create serves POST /api/v1/memory (the SDK's create_memory).
func (h *Handler) create(cl *call) error {
	body, err := cl.decodeBody()
	if err != nil {
		return err
	}
	req, errs := decodeCreate(body, cl.agent)
	if len(errs) > 0 {
		return badRequest("invalid memory entry", errs...)
	}
	e, err := h.createEntry(cl, req)
	if err != nil {
		return err
	}
	cl.w.Header().Set("Location", "/api/v1/memory/"+e.ID)
	writeJSON(cl.w, http.StatusCreated, e)
	return nil
}

// createEntry makes room for an entry (a working limit, episodic
// eviction) and creates it with its typed record, in one transaction; an
// entry with its agent, namespace and key is a 409 KEY_EXISTS with that
// entry.
func (h *Handler) createEntry(cl *call, req createRequest) (Entry, error) {
	var p plan
	items := []item{}
	if err := h.planCreate(cl, &p, &items, req, &room{}); err != nil {
		return Entry{}, err
	}
	res, err := h.run(cl, &p)
	if err != nil {
		return Entry{}, h.failure(cl, &p, items, err)
	}
	return items[0].entry(res)
}

// item is one entry a plan writes: its create or its update, and the
// index of the operation that writes it.
type item struct {
	create bool
	s      stored
	id     uuid.UUID
	op     int
}

// entry is the entry as the batch wrote it.
func (it item) entry(res *api.BatchResult) (Entry, error) {
	if it.op >= len(res.Results) {
		return Entry{}, &Error{Status: http.StatusBadGateway, Code: "INTERNAL", Message: "engram answered the batch without its results"}
	}
	e, _, ok := entryOf(res.Results[it.op].Record)
	if !ok {
		// The write path answered with another record the entry
		// duplicates; entries never duplicate, their keys differ.
		return Entry{}, &Error{Status: http.StatusConflict, Code: "CONFLICT", Message: "the entry was not stored"}
	}
	return e, nil
}

// planCreate adds a new entry to p: the removal of an entry of its key
// past its expires_at, the evictions that make room, and the entry with
// its typed record.
func (h *Handler) planCreate(cl *call, p *plan, items *[]item, req createRequest, r *room) error {
	if err := cl.ownerOnly(req.stored); err != nil {
		return err
	}
	cur, ok, err := h.findKey(cl, req.stored)
	switch {
	case err != nil:
		return err
	case ok && !h.expired(cur.rec) && !r.evicted[cur.rec.ID]:
		return keyExists(req.stored, &cur.entry)
	case ok && !r.evicted[cur.rec.ID]:
		// An entry past its expires_at that decay has not expired yet:
		// it is removed now (RFC-0015 §9.3), and the key is free.
		r.evict(cur.rec.ID)
		p.remove(cur, "OpenIntent memory.expired: its expires_at passed")
	}
	if err := h.makeRoom(cl, p, req.stored, r); err != nil {
		return err
	}
	id, op, err := p.create(req, h.cfg.Now())
	if err != nil {
		return err
	}
	*items = append(*items, item{create: true, s: req.stored, id: id, op: op})
	return nil
}

// keyExists is the 409 of a create whose key an entry holds (RFC-0015
// §1.2): a key collision, not a stale version, with the entry that holds
// the key when it is known.
func keyExists(s stored, current *Entry) *Error {
	msg := "an entry with agent " + strconv.Quote(s.AgentID) + ", namespace " + strconv.Quote(s.Namespace) +
		" and key " + strconv.Quote(s.Key) + " exists; update it by its id instead"
	if s.MemoryType == TierSemantic {
		msg = "a semantic entry with namespace " + strconv.Quote(s.Namespace) + " and key " + strconv.Quote(s.Key) +
			" exists; update it by its id instead"
	}
	e := &Error{Status: http.StatusConflict, Code: "KEY_EXISTS", Message: msg}
	if current != nil {
		v := current.Version
		e.CurrentVersion, e.Current = &v, current
	}
	return e
}

// failure is the answer to a plan whose batch failed: the failed
// operation's entry decides it. A key another create took meanwhile is
// KEY_EXISTS, an entry another update changed meanwhile VERSION_MISMATCH
// with the entry as it is now.
func (h *Handler) failure(cl *call, p *plan, items []item, err error) error {
	k := failedOp(err)
	if k < 0 || k >= len(p.owner) || p.owner[k] >= len(items) {
		return err
	}
	it := items[p.owner[k]]
	ce, _ := apiError(err)
	switch {
	case keyTaken(err) && it.create:
		cur, ok, ferr := h.findKey(cl, it.s)
		if ferr != nil || !ok {
			return keyExists(it.s, nil)
		}
		return keyExists(it.s, &cur.entry)
	case ce.Problem.Status == http.StatusConflict && !it.create:
		if _, now, _, ferr := h.fetch(cl, it.id); ferr == nil {
			return versionConflict("the entry changed since you read it; read it again", now)
		}
	}
	return err
}

// keyTaken reports whether err is the /v1 conflict of an entry whose
// agent, namespace and key another entry has.
func keyTaken(err error) bool {
	ce, ok := apiError(err)
	return ok && ce.Problem.Status == http.StatusConflict && strings.HasSuffix(ce.Problem.Type, ":entry-key-taken")
}

// findKey finds the live entry with s's agent (unless semantic),
// namespace and key, past its expires_at or not. Semantic entries of every
// agent share a namespace's keys (RFC-0015 §1.2).
func (h *Handler) findKey(cl *call, s stored) (found, bool, error) {
	sel := selector{namespace: s.Namespace, key: s.Key, expiredIncluded: true}
	if s.MemoryType != TierSemantic {
		sel.agent = s.AgentID
	}
	all, err := h.entries(cl, sel)
	for _, f := range all {
		if (f.entry.MemoryType == TierSemantic) == (s.MemoryType == TierSemantic) {
			return f, true, err
		}
	}
	return found{}, false, err
}

// room is what a plan has already done to capacity: entries it creates,
// by the group whose capacity they count against, and entries it
// removes.
type room struct {
	added   map[string]int
	evicted map[uuid.UUID]bool
}

func (r *room) evict(id uuid.UUID) {
	if r.evicted == nil {
		r.evicted = map[uuid.UUID]bool{}
	}
	r.evicted[id] = true
}

// group is the capacity an entry counts against: its task's working
// memory, its agent's (working entries with no task), or its agent's
// episodic memory; "" for semantic memory, which has none (RFC-0015
// §9.4).
func group(s stored) string {
	switch {
	case s.MemoryType == TierWorking && s.taskID() != "":
		return "task:" + s.taskID()
	case s.MemoryType == TierWorking:
		return "agent:" + s.AgentID
	case s.MemoryType == TierEpisodic:
		return "episodic:" + s.AgentID
	}
	return ""
}

// makeRoom enforces capacity before s is created (RFC-0015 §9.4): a task's
// working memory is refused with 429 at its limit; an agent's episodic
// memory evicts its least recently updated entry, lower priority first,
// never a pinned one (§2.2), and is refused with 429 when every entry is
// pinned. The evictions are p's, written with the create. Two creates at
// once may both pass the count: the limit is held to within the
// concurrent writers.
func (h *Handler) makeRoom(cl *call, p *plan, s stored, r *room) error {
	g := group(s)
	if g == "" {
		return nil
	}
	if r.added == nil {
		r.added = map[string]int{}
	}
	defer func() { r.added[g]++ }()
	switch s.MemoryType {
	case TierWorking:
		sel := selector{agent: s.AgentID, tier: TierWorking}
		if task := s.taskID(); task != "" {
			sel = selector{task: task, tier: TierWorking}
		}
		all, err := h.entries(cl, sel)
		if err != nil {
			return err
		}
		all = slices.DeleteFunc(all, func(f found) bool {
			// Entries with no task count against their agent's limit.
			return r.evicted[f.rec.ID] || s.taskID() == "" && f.stored.taskID() != ""
		})
		if n := len(all) + r.added[g]; n >= h.cfg.WorkingCapacity {
			return capacityExceeded(fmt.Sprintf("Memory Capacity Exceeded: working memory holds %d entries, its limit", n), n, h.cfg.WorkingCapacity)
		}
	case TierEpisodic:
		all, err := h.entries(cl, selector{agent: s.AgentID, tier: TierEpisodic})
		if err != nil {
			return err
		}
		all = slices.DeleteFunc(all, func(f found) bool { return r.evicted[f.rec.ID] })
		for len(all)+r.added[g] >= h.cfg.EpisodicCapacity {
			victim := lru(all)
			if victim < 0 {
				n := len(all) + r.added[g]
				return capacityExceeded(fmt.Sprintf("Memory Capacity Exceeded: episodic memory holds %d pinned entries, its capacity", n),
					n, h.cfg.EpisodicCapacity)
			}
			r.evict(all[victim].rec.ID)
			p.remove(all[victim], "OpenIntent memory.evicted: least recently used at capacity")
			all = slices.Delete(all, victim, victim+1)
		}
	}
	return nil
}

// lru is the index of the entry eviction takes: not pinned, lowest
// priority, least recently updated; -1 when every entry is pinned.
func lru(found []found) int {
	rank := map[string]int{"low": 0, "normal": 1, "high": 2}
	victim := -1
	for i, f := range found {
		if f.entry.Pinned {
			continue
		}
		if victim < 0 {
			victim = i
			continue
		}
		v := found[victim]
		if r, rv := rank[f.entry.Priority], rank[v.entry.Priority]; r < rv || r == rv && f.rec.UpdatedAt.Before(v.rec.UpdatedAt) {
			victim = i
		}
	}
	return victim
}

// purge hard-deletes a record a plan deleted: eviction and explicit
// deletion are immediate and irreversible (RFC-0015 §9.3). A key that may
// not purge (purge is a curator's) leaves the record deleted — gone from
// every read and listing — for the purge job.
func (h *Handler) purge(cl *call, id uuid.UUID) error {
	_, err := cl.c.Revise(cl.ctx, id, client.Purge, api.ReviseRequest{Rationale: "OpenIntent memory.deleted: purged at once (RFC-0015 §9.3)"})
	if ce, ok := apiError(err); ok && (ce.Problem.Status == http.StatusForbidden || ce.Problem.Status == http.StatusNotFound) {
		return nil
	}
	return err
}

// get serves GET /api/v1/memory/{id} (the SDK's get_memory).
func (h *Handler) get(cl *call) error {
	id, err := entryID(cl.r.PathValue("id"))
	if err != nil {
		return err
	}
	_, e, _, err := h.fetch(cl, id)
	if err != nil {
		return err
	}
	cl.w.Header().Set("ETag", strconv.Itoa(e.Version))
	writeJSON(cl.w, http.StatusOK, e)
	return nil
}

// ifMatch reads the bare integer version of If-Match (RFC-0015 §3.2); a
// quoted entity tag of one is taken too. Missing or not a version is 428:
// an update must say which version it read (§3.1).
func ifMatch(r *http.Request) (int, error) {
	v := strings.Trim(strings.TrimPrefix(strings.TrimSpace(r.Header.Get("If-Match")), "W/"), `"`)
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, &Error{Status: http.StatusPreconditionRequired, Code: "PRECONDITION_REQUIRED",
			Message: "send If-Match with the entry's current version, such as If-Match: 3"}
	}
	return n, nil
}

// update serves PATCH /api/v1/memory/{id} (the SDK's update_memory):
// value, tags, pinned and priority, at the If-Match version.
func (h *Handler) update(cl *call) error {
	id, err := entryID(cl.r.PathValue("id"))
	if err != nil {
		return err
	}
	version, err := ifMatch(cl.r)
	if err != nil {
		return err
	}
	body, err := cl.decodeBody()
	if err != nil {
		return err
	}
	e, err := h.updateEntry(cl, id, version, body)
	if err != nil {
		return err
	}
	cl.w.Header().Set("ETag", strconv.Itoa(e.Version))
	writeJSON(cl.w, http.StatusOK, e)
	return nil
}

// updatable are the members an update may set.
var updatable = []string{"value", "tags", "pinned", "priority", "version", "id"}

// checkUpdate validates an update's body: the members it may set, and
// their values.
func checkUpdate(body map[string]json.RawMessage) []fieldError {
	var errs []fieldError
	for name := range body {
		if !slices.Contains(updatable, name) {
			errs = append(errs, fieldError{name, "is set when the entry is created; an update changes value, tags, pinned and priority"})
		}
	}
	var probe createRequest
	errs = append(errs, probe.decodeMutable(body)...)
	if raw, ok := body["value"]; ok {
		switch {
		case !isObject(raw):
			errs = append(errs, fieldError{"value", "must be a JSON object"})
		case len(raw) > MaxValueBytes:
			errs = append(errs, fieldError{"value", fmt.Sprintf("is over %d bytes", MaxValueBytes)})
		}
	}
	slices.SortFunc(errs, func(a, b fieldError) int { return strings.Compare(a.Field, b.Field) })
	return errs
}

// updateEntry revises entry id at version with body's members, and its
// typed record, in one transaction; a stale version is a 409
// VERSION_MISMATCH with the entry as it is now.
func (h *Handler) updateEntry(cl *call, id uuid.UUID, version int, body map[string]json.RawMessage) (Entry, error) {
	var p plan
	items := []item{}
	if err := h.planUpdate(cl, &p, &items, id, version, body); err != nil {
		return Entry{}, err
	}
	res, err := h.run(cl, &p)
	if err != nil {
		return Entry{}, h.failure(cl, &p, items, err)
	}
	return items[0].entry(res)
}

// planUpdate adds to p the update of entry id at version with body's
// members (value, tags, pinned, priority).
func (h *Handler) planUpdate(cl *call, p *plan, items *[]item, id uuid.UUID, version int, body map[string]json.RawMessage) error {
	rec, cur, s, err := h.fetch(cl, id)
	if err != nil {
		return err
	}
	if errs := checkUpdate(body); len(errs) > 0 {
		return badRequest("invalid update", errs...)
	}
	req := createRequest{stored: s, Tags: rec.Tags}
	req.decodeMutable(body)
	if raw, ok := body["value"]; ok {
		req.Value = compact(raw)
	}
	if err := cl.ownerOnly(s); err != nil {
		return err
	}
	if version != rec.Version {
		return versionConflict(fmt.Sprintf("version %d is not the current version %d", version, rec.Version), cur)
	}
	var typed *memory.Record
	if hasTyped(s.MemoryType) {
		if typed, err = h.typedOf(cl, s); err != nil {
			return err
		}
	}
	op, err := p.update(rec, typed, req.stored, req.Tags, version, h.cfg.Now())
	if err != nil {
		return err
	}
	*items = append(*items, item{s: s, id: id, op: op})
	return nil
}

// delete serves DELETE /api/v1/memory/{id} (the SDK's delete_memory): the
// entry and its typed record are deleted in one transaction, then purged.
func (h *Handler) delete(cl *call) error {
	id, err := entryID(cl.r.PathValue("id"))
	if err != nil {
		return err
	}
	rec, e, s, err := h.fetch(cl, id)
	if err != nil {
		return err
	}
	if err := cl.ownerOnly(s); err != nil {
		return err
	}
	var p plan
	p.remove(found{rec: rec, entry: e, stored: s}, "OpenIntent memory.deleted")
	if _, err := h.run(cl, &p); err != nil {
		return err
	}
	cl.w.WriteHeader(http.StatusNoContent)
	return nil
}

// list serves GET /api/v1/agents/{agent_id}/memory (the SDK's
// list_memory): a bare JSON array, as the SDK reads it.
func (h *Handler) list(cl *call) error {
	sel, err := selectorOf(cl.r)
	if err != nil {
		return err
	}
	sel.agent = cl.r.PathValue("agent_id")
	page, _, err := h.page(cl, sel)
	if err != nil {
		return err
	}
	writeJSON(cl.w, http.StatusOK, page)
	return nil
}

// queryAnswer is the answer of GET /api/v1/memory (RFC-0015 §4.2).
type queryAnswer struct {
	Entries []Entry `json:"entries"`
	Total   int     `json:"total"`
	Limit   int     `json:"limit"`
	Offset  int     `json:"offset"`
}

// query serves GET /api/v1/memory (RFC-0015 §4.1).
func (h *Handler) query(cl *call) error {
	sel, err := selectorOf(cl.r)
	if err != nil {
		return err
	}
	page, total, err := h.page(cl, sel)
	if err != nil {
		return err
	}
	writeJSON(cl.w, http.StatusOK, queryAnswer{Entries: page, Total: total, Limit: sel.limit, Offset: sel.offset})
	return nil
}

// page is the selected entries from the offset, at most limit, and how
// many there are in all.
func (h *Handler) page(cl *call, sel selector) ([]Entry, int, error) {
	found, err := h.entries(cl, sel)
	if err != nil {
		return nil, 0, err
	}
	out := []Entry{}
	for i := sel.offset; i < len(found) && len(out) < sel.limit; i++ {
		out = append(out, found[i].entry)
	}
	return out, len(found), nil
}
