package server

import (
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
)

// Artifacts pass the redaction every write does (SR-1, write-path RFC
// §12.10): the policy is
//
//   - text (text/*, JSON, NDJSON, XML, YAML and their +json, +xml, +yaml
//     kin) is redacted as any string is and stored redacted, its digest
//     the redacted content's; under on_secret: reject it is refused
//     instead. Text must be UTF-8 (or ASCII): in another charset its
//     secrets could not be found.
//   - anything else (binary: images, archives, application/octet-stream,
//     the type of an artifact sent without one) cannot be redacted
//     without corrupting it: it is scanned as text, and refused with a
//     secret-leakage problem when the scan finds a secret or personal
//     datum; otherwise stored as it is.
//
// The write path then seals every artifact at rest when it has a master
// key (see [revise.Writer.PutArtifact]).

// textTypes are the media types outside text/* whose content is text.
var textTypes = []string{
	"application/json", "application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines",
	"application/xml", "application/yaml", "application/x-yaml", "application/toml", "application/javascript",
	"application/x-sh", "application/sql", "application/csv", "application/graphql", "application/x-www-form-urlencoded",
}

// artifactMediaType reads an artifact's Content-Type: the media type to
// store (normalised; application/octet-stream when there is none) and
// whether its content is text.
func artifactMediaType(header string) (string, bool, error) {
	if strings.TrimSpace(header) == "" {
		return "application/octet-stream", false, nil
	}
	base, params, err := mime.ParseMediaType(header)
	if err != nil {
		return "", false, headerProblem(http.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported media type",
			"Content-Type", "is not a media type, such as text/plain; charset=utf-8 or image/png")
	}
	text := strings.HasPrefix(base, "text/") || slices.Contains(textTypes, base) ||
		strings.HasSuffix(base, "+json") || strings.HasSuffix(base, "+xml") || strings.HasSuffix(base, "+yaml")
	if cs, ok := params["charset"]; ok && text {
		switch strings.ToLower(cs) {
		case "utf-8", "utf8", "us-ascii", "ascii":
		default:
			return "", false, headerProblem(http.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported media type",
				"Content-Type", "send text as UTF-8 (charset=utf-8): in another charset its secrets could not be redacted")
		}
	}
	return mime.FormatMediaType(base, params), text, nil
}

// headerProblem is a problem with one request header.
func headerProblem(status int, kind, title, header, message string) *Problem {
	p := problem(status, kind, title, header+": "+message)
	p.Errors = []FieldError{{Header: header, Message: message}}
	return p
}

// redactArtifact returns an artifact's content as it may be stored: text
// redacted, binary scanned (see the policy above).
func (s *Server) redactArtifact(content []byte, mediaType string, text bool) ([]byte, error) {
	rd := s.redaction()
	if text {
		out := rd.string(string(content))
		if err := rd.check(); err != nil {
			return nil, err
		}
		return []byte(out), nil
	}
	_, found := rd.pol.Redactor().String(string(content))
	if len(found) == 0 {
		return content, nil
	}
	labels := make([]string, 0, len(found))
	for _, f := range found {
		labels = append(labels, f.Label)
	}
	slices.Sort(labels)
	base, _, _ := strings.Cut(mediaType, ";")
	return nil, problem(http.StatusUnprocessableEntity, "secret-leakage", "Secrets refused",
		fmt.Sprintf("the %s artifact holds what looks like secrets or personal data (%s), and binary content cannot be redacted: "+
			"send it with those removed, or as text (text/plain) to have them redacted", base, strings.Join(slices.Compact(labels), ", ")))
}
