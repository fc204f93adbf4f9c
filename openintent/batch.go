package openintent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/google/uuid"
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
// Every item is validated and planned before anything is written; then
// the batch is one transaction of the write path, so a failure leaves
// nothing written, and is answered naming its item.
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
	// One transaction for the whole batch (RFC-0015, Batch Operations:
	// "atomically"; substrate RFC §15.7): every entry, its typed record
	// and the evictions that make room are written together or not at
	// all.
	var p plan
	var planned []item
	r := &room{}
	for i, it := range items {
		p.item = i
		var err error
		if it.id == uuid.Nil {
			err = h.planCreate(cl, &p, &planned, it.req, r)
		} else {
			err = h.planUpdate(cl, &p, &planned, it.id, it.version, it.body)
		}
		if err != nil {
			return itemFailed(i, err)
		}
	}
	res, err := h.run(cl, &p)
	if err != nil {
		failed := -1
		if k := failedOp(err); k >= 0 && k < len(p.owner) {
			failed = p.owner[k]
		}
		return itemFailed(failed, h.failure(cl, &p, planned, err))
	}
	out := make([]Entry, 0, len(planned))
	for _, it := range planned {
		e, err := it.entry(res)
		if err != nil {
			return err
		}
		out = append(out, e)
	}
	writeJSON(cl.w, http.StatusOK, map[string]any{"entries": out})
	return nil
}

// itemFailed is the answer to a batch whose item i failed (-1: which is
// not known): nothing of the batch was written.
func itemFailed(i int, err error) error {
	oe := asError(err)
	if i >= 0 {
		oe.Message = fmt.Sprintf("entries/%d: %s; nothing was written", i, oe.Message)
	} else {
		oe.Message += "; nothing was written"
	}
	return oe
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
	var p plan
	deleted := []string{}
	for _, f := range found {
		if err := cl.ownerOnly(f.stored); err != nil {
			return err
		}
		p.remove(f, "OpenIntent memory.deleted (batch)")
		deleted = append(deleted, f.entry.ID)
	}
	// In one transaction, as every batch (substrate RFC §15.7).
	if _, err := h.run(cl, &p); err != nil {
		return err
	}
	writeJSON(cl.w, http.StatusOK, map[string]any{"deleted": len(deleted), "ids": deleted})
	return nil
}
