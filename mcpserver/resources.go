package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-dev/engram/client"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/skill"
)

// Resource URIs.
const (
	// RecordURIPrefix + id is a record, as the API's JSON.
	RecordURIPrefix = "engram://records/"
	// SkillURIPrefix + id is a learned procedure as an Agent Skills
	// SKILL.md.
	SkillURIPrefix = "engram://skills/"
)

// addResources adds the record and skill templates to s, and lists one
// skill resource per active procedure: resources/list asks the API each
// time, so the list is never stale and the server holds nothing.
func (h *handlers) addResources(s *mcp.Server) {
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "record",
		Title:       "Memory record",
		Description: "A memory record by id, as engram's API answers it (JSON): payload, status, version, salience, provenance.",
		MIMEType:    "application/json",
		URITemplate: RecordURIPrefix + "{id}",
	}, h.readRecord)
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "skill",
		Title:       "Learned procedure as an Agent Skill",
		Description: "A learned procedure (competence record) by id, as an Agent Skills SKILL.md: when it applies, its steps, checks, failure modes and success record.",
		MIMEType:    "text/markdown",
		URITemplate: SkillURIPrefix + "{id}",
	}, h.readSkill)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil || method != "resources/list" {
				return res, err
			}
			list, ok := res.(*mcp.ListResourcesResult)
			if !ok || list.NextCursor != "" {
				return res, nil
			}
			skills, err := h.skillResources(ctx)
			if err != nil {
				return nil, err
			}
			list.Resources = append(list.Resources, skills...)
			return list, nil
		}
	})
}

// readRecord serves engram://records/{id}.
func (h *handlers) readRecord(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, err := uuid.Parse(strings.TrimPrefix(uri, RecordURIPrefix))
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	var body json.RawMessage
	if err := h.c.Do(ctx, "GET", "/v1/records/"+id.String(), nil, nil, &body); err != nil {
		return nil, resourceError(uri, err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(body)}}}, nil
}

// readSkill serves engram://skills/{id} from GET /v1/records/{id}/skill.md.
func (h *handlers) readSkill(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, err := uuid.Parse(strings.TrimPrefix(uri, SkillURIPrefix))
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	var md []byte
	if err := h.c.Do(ctx, "GET", "/v1/records/"+id.String()+"/skill.md", nil, nil, &md); err != nil {
		return nil, resourceError(uri, err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: string(md)}}}, nil
}

// resourceError is a read's error: not found for a record the key cannot
// see (or that is no procedure), otherwise the API's problem, as a tool
// error says it.
func resourceError(uri string, err error) error {
	var ce *client.Error
	if errors.As(err, &ce) && ce.StatusCode() == http.StatusNotFound {
		return mcp.ResourceNotFoundError(uri)
	}
	return toolError(err, nil)
}

// skillResources lists a resource per active procedure.
func (h *handlers) skillResources(ctx context.Context) ([]*mcp.Resource, error) {
	out := []*mcp.Resource{}
	err := h.procedures(ctx, func(_ memory.Record, p procedure) bool {
		desc := fmt.Sprintf("Learned procedure %s: success rate %.2f (%d of %d uses)", p.SkillName, p.SuccessRate, p.Successes, p.Successes+p.Failures)
		if len(p.Triggers) > 0 {
			desc += ", for " + fmt.Sprintf("%q", p.Triggers[0])
		}
		out = append(out, &mcp.Resource{
			URI: p.SkillURI, Name: p.Name, Title: p.SkillName, MIMEType: "text/markdown", Description: desc + ".",
		})
		return true
	})
	if err != nil {
		return nil, toolError(err, nil)
	}
	return out, nil
}

// procedure is a procedure in brief, and its unrounded rate.
type procedure struct {
	Procedure
	rate float64
}

// procedurePage is how many procedures a page of GET /v1/records holds.
const procedurePage = 200

// procedures calls yield with each active procedure (competence record),
// newest first, following the pages of GET /v1/records until yield returns
// false.
func (h *handlers) procedures(ctx context.Context, yield func(memory.Record, procedure) bool) error {
	f := client.RecordFilter{Types: []memory.Type{memory.Competence}, Statuses: []memory.Status{memory.Active}, Limit: procedurePage}
	for {
		page, err := h.c.ListRecords(ctx, f)
		if err != nil {
			return err
		}
		for _, rec := range page.Records {
			if !yield(rec, newProcedure(rec)) {
				return nil
			}
		}
		if page.NextCursor == "" {
			return nil
		}
		f.Cursor = page.NextCursor
	}
}

// newProcedure is rec in brief. Its name is the one its SKILL.md carries,
// rendered by package skill as the API's route does.
func newProcedure(rec memory.Record) procedure {
	var p memory.CompetencePayload
	_ = json.Unmarshal(rec.Payload, &p)
	name, _, err := skill.Render(rec)
	if err != nil {
		name = skill.Name(p.SkillName, rec.ID)
	}
	out := procedure{Procedure: Procedure{
		ID: rec.ID.String(), Name: name, SkillName: p.SkillName, SkillURI: SkillURIPrefix + rec.ID.String(),
		Triggers: []string{}, Steps: len(p.Recipe), Evidence: len(rec.Provenance.Sources), State: string(rec.Status),
	}, rate: skill.Rate(p.Performance)}
	for _, t := range p.Triggers {
		out.Triggers = append(out.Triggers, t.Signal)
	}
	if p.Performance != nil {
		out.Successes, out.Failures = p.Performance.Successes, p.Performance.Failures
	}
	out.SuccessRate = round(out.rate)
	if slices.Contains(rec.Tags, memory.ProbationTag) {
		out.State = "probation"
	}
	return out
}
