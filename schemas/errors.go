package schemas

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Violation is one failed constraint: where (a JSON pointer into the
// validated document, "" for the root) and why.
type Violation struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// ValidationError lists every violation of one document.
type ValidationError struct {
	Violations []Violation
}

// newValidationError sorts vs by pointer and drops duplicates, so that one
// problem is reported once whichever schema paths led to it.
func newValidationError(vs []Violation) *ValidationError {
	slices.SortFunc(vs, func(a, b Violation) int {
		return cmp.Or(strings.Compare(a.Pointer, b.Pointer), strings.Compare(a.Message, b.Message))
	})
	return &ValidationError{Violations: slices.Compact(vs)}
}

// Error lists the violations on one line, each as "pointer: message".
func (e *ValidationError) Error() string {
	var b strings.Builder
	switch n := len(e.Violations); n {
	case 0:
		return "invalid document"
	case 1:
	default:
		fmt.Fprintf(&b, "%d violations: ", n)
	}
	for i, v := range e.Violations {
		if i > 0 {
			b.WriteString("; ")
		}
		p := v.Pointer
		if p == "" {
			p = "(root)"
		}
		b.WriteString(p + ": " + v.Message)
	}
	return b.String()
}
