package openintent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/google/uuid"

	"github.com/engram-dev/engram/api"
)

// MaxBatch is the most entries one batch writes.
const MaxBatch = 100

// batchItem is one entry of a batch, resolved: a create, or an update of
// an existing entry.
type batchItem struct {
	body    map[string]json.RawMessage
	req     createRequest
	id      uuid.UUID // zero for a create
	version int
}

// batchUpsert serves POST /api/v1/memory/batch: create or update several
// entries, all or none (RFC-0015, Batch Operations). The body is
// {"entries": [...]}. An item with an id updates that entry at its
// "version"; one without creates its entry, or, when an entry with its
// agent, namespace and key exists, updates it (at "version" when given).
// Every item is validated before anything is written; when a write fails,
// the writes before it are undone (created entries deleted, updated ones
// written back as they were, as their next version) and the failure is
// answered.
func (h *Handler) batchUpsert(cl *call) error {
	body, err := cl.decodeBody()
	if err != nil {
		return err
	}
	var raws []map[string]json.RawMessage
	if err := json.Unmarshal(body["entries"], &raws); err != nil || len(raws) == 0 {
		return badRequest("the body must be {\"entries\": [...]} with 1 to "+strconv.Itoa(MaxBatch)+" entries",
			fieldError{"entries", "must be a non-empty array of entries"})
	}
	if len(raws) > MaxBatch {
		return badRequest("too many entries", fieldError{"entries", fmt.Sprintf("holds %d entries, over %d", len(raws), MaxBatch)})
	}
	items := make([]batchItem, len(raws))
	var errs []fieldError
	for i, raw := range raws {
		it := batchItem{body: raw}
		at := func(errs []fieldError) []fieldError {
			for j := range errs {
				errs[j].Field = fmt.Sprintf("entries/%d/%s", i, errs[j].Field)
			}
			return errs
		}
		if v, ok := raw["version"]; ok {
			if json.Unmarshal(v, &it.version) != nil || it.version < 1 {
				errs = append(errs, at([]fieldError{{"version", "must be a version, such as 3"}})...)
			}
		}
		if v, ok := raw["id"]; ok {
			var s string
			_ = json.Unmarshal(v, &s)
			id, err := uuid.Parse(s)
			if err != nil || it.version == 0 {
				errs = append(errs, at([]fieldError{{"id", "must be an entry's id, with the version read as \"version\""}})...)
			}
			errs = append(errs, at(checkUpdate(raw))...)
			it.id = id
			items[i] = it
			continue
		}
		req, ferrs := decodeCreate(raw, cl.agent)
		errs = append(errs, at(ferrs)...)
		it.req = req
		if len(ferrs) == 0 {
			cur, ok, err := h.findKey(cl, req.stored)
			if err != nil {
				return err
			}
			if ok && !h.expired(cur.rec) {
				if it.version == 0 {
					it.version = cur.entry.Version
				}
				// An upsert of an existing entry changes what an update
				// may; the rest was set when it was created.
				it.id, it.body = cur.rec.ID, map[string]json.RawMessage{}
				for _, name := range []string{"value", "tags", "pinned", "priority"} {
					if v, ok := raw[name]; ok {
						it.body[name] = v
					}
				}
			}
		}
		items[i] = it
	}
	if len(errs) > 0 {
		return badRequest("invalid batch: nothing was written", errs...)
	}
	var undo []func()
	out := make([]Entry, 0, len(items))
	for i, it := range items {
		var e Entry
		var err error
		if it.id == uuid.Nil {
			e, err = h.createEntry(cl, it.req)
			if err == nil {
				id := uuid.MustParse(e.ID)
				undo = append(undo, func() { _ = h.remove(cl, id, "OpenIntent batch undone") })
			}
		} else {
			var before Entry
			if _, before, _, err = h.fetch(cl, it.id); err == nil {
				e, err = h.updateEntry(cl, it.id, it.version, it.body)
			}
			if err == nil {
				undo = append(undo, func() { h.restore(cl, before, e.Version) })
			}
		}
		if err != nil {
			for j := len(undo) - 1; j >= 0; j-- {
				undo[j]()
			}
			oe := asError(err)
			oe.Message = fmt.Sprintf("entries/%d: %s; nothing was kept", i, oe.Message)
			return oe
		}
		out = append(out, e)
	}
	writeJSON(cl.w, http.StatusOK, map[string]any{"entries": out})
	return nil
}

// restore writes an entry back as it was before a batch updated it, as its
// next version after version.
func (h *Handler) restore(cl *call, before Entry, version int) {
	_, s, err := h.fetchStored(cl, before.ID)
	if err != nil {
		return
	}
	s.Value, s.Pinned, s.Priority = before.Value, before.Pinned, before.Priority
	payload, err := json.Marshal(payloadOf(s))
	if err != nil {
		return
	}
	_, _ = cl.c.UpdateRecord(cl.ctx, uuid.MustParse(before.ID), api.UpdateRequest{Version: version, Payload: payload,
		Tags: before.Tags, Rationale: "OpenIntent batch undone"})
}

func (h *Handler) fetchStored(cl *call, id string) (Entry, stored, error) {
	_, e, s, err := h.fetch(cl, uuid.MustParse(id))
	return e, s, err
}

// batchDelete serves DELETE /api/v1/memory/batch: deletes every entry the
// query parameters select (those of GET /api/v1/memory, without limit and
// offset); at least one of agent_id, namespace, key, tags, tags_any,
// scope.task_id or scope.intent_id is required.
func (h *Handler) batchDelete(cl *call) error {
	sel, err := selectorOf(cl.r)
	if err != nil {
		return err
	}
	if sel.agent == "" && sel.namespace == "" && !sel.prefix && sel.key == "" && len(sel.tags) == 0 &&
		len(sel.tagsAny) == 0 && sel.task == "" && sel.intent == "" {
		return badRequest("name what to delete", fieldError{"agent_id", "one of agent_id, namespace, key, tags, tags_any, scope.task_id or scope.intent_id is required"})
	}
	found, err := h.entries(cl, sel)
	if err != nil {
		return err
	}
	for _, f := range found {
		if err := cl.ownerOnly(f.stored); err != nil {
			return err
		}
	}
	deleted := []string{}
	for _, f := range found {
		if err := h.remove(cl, f.rec.ID, "OpenIntent memory.deleted (batch)"); err != nil {
			return err
		}
		deleted = append(deleted, f.entry.ID)
	}
	writeJSON(cl.w, http.StatusOK, map[string]any{"deleted": len(deleted), "ids": deleted})
	return nil
}
