package mcpserver

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/engram-dev/engram/client"
)

// toolError turns an error of the API into the error of a tool result, for
// an agent to act on: the problem's title, status and detail, each field
// error located in the tool's arguments, the gate, rule or budget that
// refused a write, and a hint. at maps a JSON pointer of the request the
// tool sent to the argument it came from; nil leaves it as it is. The API
// never echoes a key, nor does this.
func toolError(err error, at func(pointer string) string) error {
	var ce *client.Error
	if !errors.As(err, &ce) {
		return fmt.Errorf("engramd could not be reached or answered unreadably: %v", err)
	}
	p := ce.Problem
	var b strings.Builder
	fmt.Fprintf(&b, "%s (HTTP %d)", p.Title, p.Status)
	if p.Detail != "" {
		fmt.Fprintf(&b, ": %s", p.Detail)
	}
	for _, fe := range p.Errors {
		where := fe.Pointer
		switch {
		case fe.Parameter != "":
			where = fe.Parameter
		case fe.Header != "":
			where = "header " + fe.Header
		case at != nil:
			where = at(fe.Pointer)
		}
		if where == "" {
			where = "arguments"
		}
		fmt.Fprintf(&b, "\n- %s: %s", where, fe.Message)
	}
	if p.Gate != "" {
		fmt.Fprintf(&b, "\nRefused by the write path's %s gate", p.Gate)
		if p.Reason != "" {
			fmt.Fprintf(&b, " (reason: %s)", p.Reason)
		}
		b.WriteString(".")
	}
	if p.Rule != "" {
		fmt.Fprintf(&b, "\nRefused by the access rule %s.", p.Rule)
	}
	if p.Budget != "" {
		fmt.Fprintf(&b, "\nThe write budget %s is spent.", p.Budget)
	}
	if len(p.RecordIDs) > 0 {
		ids := make([]string, len(p.RecordIDs))
		for i, id := range p.RecordIDs {
			ids[i] = id.String()
		}
		fmt.Fprintf(&b, "\nRecords concerned: %s.", strings.Join(ids, ", "))
	}
	h := hint(p.Status)
	if p.Gate != "" {
		h = gateHint(p.Gate)
	}
	if h != "" {
		b.WriteString("\n" + h)
	}
	if p.RetryAfter > 0 {
		fmt.Fprintf(&b, "\nRetry after %s.", p.RetryAfter)
	}
	return errors.New(b.String())
}

// hint is what to do about an answer of status.
func hint(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return "Fix the arguments named above and call again."
	case http.StatusUnauthorized:
		return "The API key was refused: the MCP server's configuration (ENGRAM_API_KEY, or the Authorization header) needs a valid key."
	case http.StatusForbidden:
		return "This key's role or access rules do not allow it; do not retry with the same arguments."
	case http.StatusNotFound:
		return "Nothing with this id is visible to this key: check the id (recall and list_procedures give ids)."
	case http.StatusConflict:
		return "The record changed or conflicts with another: read it again (get_record) before retrying."
	case http.StatusTooManyRequests:
		return "Too many writes: wait, then retry."
	case http.StatusServiceUnavailable:
		return "engramd cannot serve this now: retry later."
	}
	return ""
}

// gateHint is what to do about a write the gate refused (write-path RFC
// §12.1): the same write would be refused again.
func gateHint(gate string) string {
	switch gate {
	case "contradiction":
		return "It contradicts the records concerned: read them (get_record). If it is right, propose it with evidence " +
			"(rationale) and a higher confidence, or with the conditions under which it holds; otherwise keep the record as it is."
	case "evidence":
		return "The evidence is not enough for this layer: cite where it comes from (a person, a tool call, an outcome)."
	case "dedup":
		return "It duplicates the records concerned: use them instead."
	case "provenance":
		return "Its provenance is refused (a cycle, or a source it cannot cite): name other evidence."
	case "approval":
		return "A reviewer must decide: it was not stored; do not retry the same write."
	}
	return "The write path refused it; the same write would be refused again."
}

// argError is a tool error about one argument.
func argError(arg, format string, args ...any) error {
	return fmt.Errorf("invalid argument %s: %s", arg, fmt.Sprintf(format, args...))
}
