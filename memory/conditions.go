package memory

import "reflect"

// Conditions are the context keys under which a fact or procedure applies,
// such as {"os": "linux", "project_kind": "backend_service"}. Values are
// scalars.
type Conditions map[string]any

// Disjoint reports whether no context can satisfy both c and o: they share a
// key with different values. Empty conditions apply everywhere and so
// overlap with everything (substrate RFC §7: conditional forks must have
// disjoint applicability).
func (c Conditions) Disjoint(o Conditions) bool {
	for k, v := range c {
		if w, ok := o[k]; ok && !reflect.DeepEqual(v, w) {
			return true
		}
	}
	return false
}
