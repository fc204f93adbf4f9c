package openintent

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// tierSummary is one tier of an agent's memory summary.
type tierSummary struct {
	EntryCount      int       `json:"entry_count"`
	Capacity        *int      `json:"capacity,omitempty"`
	PinnedCount     *int      `json:"pinned_count,omitempty"`
	TotalSizeKB     int       `json:"total_size_kb"`
	TasksWithMemory *[]string `json:"tasks_with_memory,omitempty"`
	OldestEntry     *Time     `json:"oldest_entry,omitempty"`
	NewestEntry     *Time     `json:"newest_entry,omitempty"`
}

// summary serves GET /api/v1/agents/{agent_id}/memory/summary (RFC-0015,
// Agent Memory Summary).
func (h *Handler) summary(cl *call) error {
	agent := cl.r.PathValue("agent_id")
	mine, err := h.entries(cl, selector{agent: agent})
	if err != nil {
		return err
	}
	capacity, pinned, tasks := h.cfg.EpisodicCapacity, 0, []string{}
	working, episodic := tierSummary{TasksWithMemory: &tasks}, tierSummary{Capacity: &capacity, PinnedCount: &pinned}
	size := map[*tierSummary]int{}
	for _, f := range mine {
		var t *tierSummary
		switch f.entry.MemoryType {
		case TierWorking:
			t = &working
			if task := f.stored.taskID(); task != "" && !slices.Contains(tasks, task) {
				tasks = append(tasks, task)
			}
		case TierEpisodic:
			t = &episodic
			if f.entry.Pinned {
				pinned++
			}
			at := f.entry.CreatedAt
			if episodic.OldestEntry == nil || at.Before(episodic.OldestEntry.Time) {
				episodic.OldestEntry = &at
			}
			if episodic.NewestEntry == nil || at.After(episodic.NewestEntry.Time) {
				episodic.NewestEntry = &at
			}
		default:
			continue
		}
		t.EntryCount++
		size[t] += len(f.entry.Value)
	}
	working.TotalSizeKB, episodic.TotalSizeKB = (size[&working]+1023)/1024, (size[&episodic]+1023)/1024
	namespaces, err := h.semanticNamespaces(cl)
	if err != nil {
		return err
	}
	names := []string{}
	for _, ns := range namespaces {
		names = append(names, ns.Namespace)
	}
	writeJSON(cl.w, http.StatusOK, map[string]any{
		"agent_id": agent, "working": working, "episodic": episodic, "semantic_namespaces_accessible": names,
	})
	return nil
}

// namespaceInfo is a semantic namespace and its permissions (RFC-0015
// §2.3). engram keeps no permissions of its own for a namespace: who reads
// and writes it is decided by the caller's key — its role, and the
// operator's access rules over scopes, which namespaces are — so the
// permissions shown are those the caller's key has.
type namespaceInfo struct {
	Namespace   string          `json:"namespace"`
	EntryCount  int             `json:"entry_count"`
	Permissions json.RawMessage `json:"permissions"`
}

// semanticNamespaces lists the namespaces of the semantic entries the
// caller's key may read.
func (h *Handler) semanticNamespaces(cl *call) ([]namespaceInfo, error) {
	all, err := h.entries(cl, selector{tier: TierSemantic})
	if err != nil {
		return nil, err
	}
	count := map[string]int{}
	for _, f := range all {
		count[f.entry.Namespace]++
	}
	out := []namespaceInfo{}
	for ns, n := range count {
		out = append(out, namespaceInfo{Namespace: ns, EntryCount: n, Permissions: json.RawMessage(`{"default":"read","allow":[]}`)})
	}
	slices.SortFunc(out, func(a, b namespaceInfo) int { return strings.Compare(a.Namespace, b.Namespace) })
	return out, nil
}

// namespaces serves GET /api/v1/memory/namespaces.
func (h *Handler) namespaces(cl *call) error {
	out, err := h.semanticNamespaces(cl)
	if err != nil {
		return err
	}
	writeJSON(cl.w, http.StatusOK, map[string]any{"namespaces": out})
	return nil
}

// namespace serves GET /api/v1/memory/namespaces/{namespace}.
func (h *Handler) namespace(cl *call) error {
	all, err := h.semanticNamespaces(cl)
	if err != nil {
		return err
	}
	name := cl.r.PathValue("namespace")
	for _, ns := range all {
		if ns.Namespace == name {
			writeJSON(cl.w, http.StatusOK, ns)
			return nil
		}
	}
	return &Error{Status: http.StatusNotFound, Code: "NAMESPACE_NOT_FOUND", Message: "no semantic entries in this namespace that this key may read"}
}

// setNamespace serves PATCH /api/v1/memory/namespaces/{namespace}: engram
// holds no per-namespace permissions to change (the package keeps no
// state); namespaces are scopes, governed by the operator's access rules.
func (h *Handler) setNamespace(cl *call) error {
	return &Error{Status: http.StatusNotImplemented, Code: "NOT_IMPLEMENTED",
		Message: "namespace permissions are engram's access rules over scopes, set in the operator's policy (access rules), not through this API"}
}

// archivedEntry is one entry of a memory.archived snapshot (RFC-0015
// §2.1).
type archivedEntry struct {
	Namespace string          `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	Tags      []string        `json:"tags"`
}

// event is a lifecycle event (RFC-0015 §5.2).
type event struct {
	Type      string         `json:"type"`
	AgentID   string         `json:"agent_id,omitempty"`
	IntentID  string         `json:"intent_id,omitempty"`
	TaskID    string         `json:"task_id,omitempty"`
	Data      map[string]any `json:"data"`
	Timestamp Time           `json:"timestamp"`
}

// archive serves POST /api/v1/tasks/{task_id}/memory/archive: the task
// completed, failed or was cancelled, and its working memory is archived
// and cleared (RFC-0015 §2.1). The answer is the memory.archived event,
// with the snapshot of every entry; the entries are deleted, and their
// every version stays in engram's version log for audit.
func (h *Handler) archive(cl *call) error {
	task := cl.r.PathValue("task_id")
	found, err := h.entries(cl, selector{task: task, tier: TierWorking, expiredIncluded: true})
	if err != nil {
		return err
	}
	snapshot := []archivedEntry{}
	var agent, intent string
	for _, f := range found {
		snapshot = append(snapshot, archivedEntry{Namespace: f.entry.Namespace, Key: f.entry.Key, Value: f.entry.Value, Tags: f.entry.Tags})
		agent, intent = f.entry.AgentID, cmpOr(intent, scopeString(f.stored.Scope, "intent_id"))
	}
	var p plan
	for _, f := range found {
		p.remove(f, "OpenIntent memory.archived: task "+task+" completed")
	}
	// Archived entries are deleted in one transaction, not purged: their
	// versions are the archive's audit.
	p.purge = nil
	if _, err := h.run(cl, &p); err != nil {
		return err
	}
	writeJSON(cl.w, http.StatusOK, event{Type: "memory.archived", AgentID: agent, IntentID: intent, TaskID: task,
		Data: map[string]any{"entries_archived": len(snapshot), "snapshot": snapshot}, Timestamp: Time{h.cfg.Now()}})
	return nil
}

// events serves GET /api/v1/memory/events/{id}: the entry's lifecycle
// events (RFC-0015 §5), read from its audit trail, without values (§5.2).
// They are answered while the record's trail is kept, after its deletion
// too.
func (h *Handler) events(cl *call) error {
	id, err := entryID(cl.r.PathValue("id"))
	if err != nil {
		return err
	}
	trail, err := cl.c.Audit(cl.ctx, id)
	if err != nil {
		return err
	}
	var s stored
	if rec, err := cl.c.GetRecord(cl.ctx, id); err == nil {
		_, s, _ = entryOf(*rec)
	}
	out := []event{}
	previous := 0
	for _, a := range trail.Entries {
		kind := eventKind(a.Action, a.Rationale)
		if kind == "" {
			continue
		}
		data := map[string]any{"entry_id": id.String(), "namespace": s.Namespace, "key": s.Key, "memory_type": s.MemoryType}
		if a.Version != nil {
			data["version"] = *a.Version
			if previous > 0 {
				data["previous_version"] = previous
			}
			previous = *a.Version
		}
		out = append(out, event{Type: kind, AgentID: s.AgentID, TaskID: s.taskID(), IntentID: scopeString(s.Scope, "intent_id"),
			Data: data, Timestamp: Time{a.At}})
	}
	writeJSON(cl.w, http.StatusOK, map[string]any{"entry_id": id.String(), "events": out})
	return nil
}

// eventKind is the lifecycle event of an audited action, or "" for one
// that is none.
func eventKind(action, rationale string) string {
	switch action {
	case "create":
		return "memory.created"
	case "update":
		return "memory.updated"
	case "delete":
		switch {
		case strings.Contains(rationale, "memory.evicted"):
			return "memory.evicted"
		case strings.Contains(rationale, "memory.archived"):
			return "memory.archived"
		case strings.Contains(rationale, "memory.expired"):
			return "memory.expired"
		}
		return "memory.deleted"
	case "expire":
		return "memory.expired"
	}
	return ""
}
