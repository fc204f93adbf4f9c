package openintent

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/engram-dev/engram/client"
	"github.com/engram-dev/engram/memory"
)

// Query limits (RFC-0015 §4.1).
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// selector is what a query selects (RFC-0015 §4.1). The /v1 listing
// selects by agent, namespace (its scope), tags and update time; the rest
// is read from each entry.
type selector struct {
	agent, namespace, key, tier string
	// prefix: namespace ended in "*", a prefix match.
	prefix          bool
	tags, tagsAny   []string
	task, intent    string
	pinned          *bool
	after, before   time.Time
	limit, offset   int
	expiredIncluded bool
}

// selectorOf reads a query's parameters; a bad one is a 400 naming it.
func selectorOf(r *http.Request) (selector, error) {
	q := r.URL.Query()
	sel := selector{agent: q.Get("agent_id"), key: q.Get("key"), tier: q.Get("memory_type"),
		task: q.Get("scope.task_id"), intent: q.Get("scope.intent_id"), limit: DefaultLimit}
	sel.namespace, sel.prefix = strings.CutSuffix(q.Get("namespace"), "*")
	var errs []fieldError
	if sel.tier != "" && !slices.Contains(tiers, sel.tier) {
		errs = append(errs, fieldError{"memory_type", "must be one of working, episodic, semantic"})
	}
	// Comma-separated, as the SDK sends them; a repeated parameter adds to
	// them.
	sel.tags, sel.tagsAny = split(q["tags"]), split(q["tags_any"])
	if v := q.Get("pinned"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fieldError{"pinned", "must be true or false"})
		}
		sel.pinned = &b
	}
	for name, t := range map[string]*time.Time{"updated_after": &sel.after, "updated_before": &sel.before} {
		if v := q.Get(name); v != "" {
			p, err := parseTime(v)
			if err != nil {
				errs = append(errs, fieldError{name, "must be an ISO 8601 timestamp, such as 2026-02-08T10:00:00+00:00"})
			}
			*t = p
		}
	}
	num := func(name string, into *int, lo, hi int) {
		if v := q.Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < lo || n > hi {
				errs = append(errs, fieldError{name, "must be a whole number from " + strconv.Itoa(lo) + " to " + strconv.Itoa(hi)})
				return
			}
			*into = n
		}
	}
	num("limit", &sel.limit, 1, MaxLimit)
	num("offset", &sel.offset, 0, 1<<30)
	if len(errs) > 0 {
		slices.SortFunc(errs, func(a, b fieldError) int { return strings.Compare(a.Field, b.Field) })
		return sel, badRequest("invalid query", errs...)
	}
	return sel, nil
}

func split(vs []string) []string {
	var out []string
	for _, v := range vs {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// found is one entry a listing found, with its record and payload.
type found struct {
	rec    memory.Record
	entry  Entry
	stored stored
}

// entries lists every entry sel selects the caller's key may read, oldest
// first, page by page of the /v1 listing.
func (h *Handler) entries(cl *call, sel selector) ([]found, error) {
	f := client.RecordFilter{Types: []memory.Type{memory.Working}, AgentID: sel.agent, Tags: sel.tags,
		AnyTags: sel.tagsAny, UpdatedAfter: sel.after, UpdatedBefore: sel.before, Limit: MaxLimit}
	if sel.task != "" {
		f.ThreadID = taskThread(sel.task)
	}
	switch {
	case sel.prefix:
		f.ScopePrefix = sel.namespace
	case sel.namespace != "":
		ns := sel.namespace
		f.Scope = &ns
	}
	var out []found
	for {
		page, err := cl.c.ListRecords(cl.ctx, f)
		if err != nil {
			return nil, err
		}
		for _, rec := range page.Records {
			e, s, ok := entryOf(rec)
			if !ok || (!sel.expiredIncluded && h.expired(rec)) || !sel.matches(e, s) {
				continue
			}
			out = append(out, found{rec: rec, entry: e, stored: s})
		}
		if page.NextCursor == "" {
			return out, nil
		}
		f.Cursor = page.NextCursor
	}
}

// matches applies what the /v1 listing does not select by.
func (sel selector) matches(e Entry, s stored) bool {
	switch {
	case sel.tier != "" && e.MemoryType != sel.tier,
		sel.key != "" && e.Key != sel.key,
		sel.task != "" && s.taskID() != sel.task,
		sel.intent != "" && scopeString(s.Scope, "intent_id") != sel.intent,
		sel.pinned != nil && e.Pinned != *sel.pinned:
		return false
	}
	return true
}
