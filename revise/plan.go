package revise

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/schemas"
)

// checkPlan holds a plan graph to what its canonical schema cannot state
// (substrate RFC §9: actions as nodes, dependencies as edges): node ids
// are unique, every edge names two of its nodes, and the dependencies form
// no cycle — a plan whose steps wait on each other can never run. The
// edge that closes a cycle is named, with the cycle. Its constraints'
// conditions ([memory.PlanConditionsKey]) are an object of scalars, as a
// task's conditions are, which they are matched against.
func checkPlan(rec memory.Record, pointer string) []schemas.Violation {
	if rec.Type != memory.PlanGraph {
		return nil
	}
	var p memory.PlanGraphPayload
	if json.Unmarshal(rec.Payload, &p) != nil {
		return nil // the schema says what is wrong with it
	}
	var bad []schemas.Violation
	at := func(format string, args ...any) string { return pointer + "/payload" + fmt.Sprintf(format, args...) }
	nodes := make(map[string]bool, len(p.Nodes))
	for i, n := range p.Nodes {
		if nodes[n.ID] {
			bad = append(bad, schemas.Violation{Pointer: at("/nodes/%d/id", i), Message: fmt.Sprintf("%q is the id of an earlier node: node ids are unique", n.ID)})
		}
		nodes[n.ID] = true
	}
	next := map[string][]string{}
	for i, e := range p.Edges {
		ok := true
		for _, end := range []struct{ name, id string }{{"from", e.From}, {"to", e.To}} {
			if !nodes[end.id] {
				bad = append(bad, schemas.Violation{Pointer: at("/edges/%d/%s", i, end.name), Message: fmt.Sprintf("%q is not the id of a node of the plan", end.id)})
				ok = false
			}
		}
		if !ok {
			continue
		}
		if path := route(next, e.To, e.From); path != nil {
			cycle := append([]string{e.From, e.To}, path...)
			bad = append(bad, schemas.Violation{Pointer: at("/edges/%d", i), Message: "closes a cycle (" +
				strings.Join(cycle, " → ") + "): a plan's dependencies form no cycle"})
			continue
		}
		next[e.From] = append(next[e.From], e.To)
	}
	if c, ok := p.Constraints[memory.PlanConditionsKey]; ok {
		m, isObject := c.(map[string]any)
		if !isObject {
			bad = append(bad, schemas.Violation{Pointer: at("/constraints/%s", memory.PlanConditionsKey), Message: "must be an object of conditions, such as {\"os\": \"linux\"}"})
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			switch m[k].(type) {
			case string, float64, bool:
			default:
				bad = append(bad, schemas.Violation{Pointer: at("/constraints/%s/%s", memory.PlanConditionsKey, pointerEscaper.Replace(k)),
					Message: "must be a string, number or boolean: a task's conditions are compared with it"})
			}
		}
	}
	return bad
}

// route returns a path of edges from one node to another in next — the
// nodes after from, to included; empty, not nil, when they are one — or
// nil when there is none.
func route(next map[string][]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n == to {
			var path []string
			for ; n != from; n = prev[n] {
				path = append(path, n)
			}
			slices.Reverse(path)
			return append([]string{}, path...)
		}
		for _, m := range next[n] {
			if _, seen := prev[m]; !seen {
				prev[m] = n
				queue = append(queue, m)
			}
		}
	}
	return nil
}

// pointerEscaper escapes a key as a JSON pointer segment (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
