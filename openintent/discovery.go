package openintent

import "net/http"

// DiscoveryRoute is where the OpenIntent discovery document is served:
// what the SDK's discover() reads (GET /.well-known/openintent.json). It
// needs no key: it describes the server, never a tenant's memory.
const DiscoveryRoute = "GET /.well-known/openintent.json"

// ProtocolVersion is the OpenIntent protocol version the discovery
// document names.
const ProtocolVersion = "0.1"

// Discovery is the discovery document: the fields the OpenIntent reference
// server answers (protocol, version, rfcUrls, capabilities, openApiUrl),
// and what RFC-0015 leaves to the capabilities endpoint — the memory
// tiers, their limits, and the retrieval extension of §4.3.
type Discovery struct {
	Protocol       string            `json:"protocol"`
	Version        string            `json:"version"`
	Implementation string            `json:"implementation"`
	RFCURLs        []string          `json:"rfcUrls"`
	RFCCompliance  map[string]string `json:"rfcCompliance"`
	Capabilities   []string          `json:"capabilities"`
	OpenAPIURL     string            `json:"openApiUrl"`
	Endpoints      map[string]string `json:"endpoints"`
	Memory         DiscoveryMemory   `json:"memory"`
	Extensions     map[string]string `json:"extensions"`
}

// DiscoveryMemory describes the memory this server keeps (RFC-0015 §2,
// §9.4).
type DiscoveryMemory struct {
	Tiers            []string `json:"tiers"`
	EpisodicCapacity int      `json:"episodic_capacity"`
	WorkingCapacity  int      `json:"working_capacity"`
	MaxValueBytes    int      `json:"max_value_bytes"`
	MaxBatch         int      `json:"max_batch"`
	Eviction         string   `json:"eviction"`
	// Typed says where each tier's entries are learned from: their
	// engram record types (see the package comment).
	Typed map[string]string `json:"typed"`
}

// discovery answers GET /.well-known/openintent.json.
func (h *Handler) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, Discovery{
		Protocol:       "OpenIntent Coordination Protocol",
		Version:        ProtocolVersion,
		Implementation: "engram",
		RFCURLs:        []string{"https://openintent.ai/rfc/0015"},
		// Namespace permissions are engram's access rules, not set through
		// this API (PATCH …/namespaces/{namespace} is 501).
		RFCCompliance: map[string]string{"RFC-0015": "partial"},
		Capabilities: []string{"memory", "memory.working", "memory.episodic", "memory.semantic", "memory.batch",
			"memory.events", "memory.archive", "optimistic-concurrency"},
		OpenAPIURL: "/v1/openapi.json",
		Endpoints: map[string]string{
			"memory": "/api/v1/memory", "memory_batch": "/api/v1/memory/batch",
			"memory_namespaces": "/api/v1/memory/namespaces", "agent_memory": "/api/v1/agents/{agent_id}/memory",
			"agent_memory_summary": "/api/v1/agents/{agent_id}/memory/summary",
			"task_memory_archive":  "/api/v1/tasks/{task_id}/memory/archive",
		},
		Memory: DiscoveryMemory{
			Tiers:            tiers,
			EpisodicCapacity: h.cfg.EpisodicCapacity, WorkingCapacity: h.cfg.WorkingCapacity,
			MaxValueBytes: MaxValueBytes, MaxBatch: MaxBatch, Eviction: "lru",
			Typed: map[string]string{TierWorking: "working", TierEpisodic: "episodic", TierSemantic: "semantic"},
		},
		// Semantic search over memory (RFC-0015 §4.3) is engram's
		// retrieval, a non-standard extension beside the tag filters.
		Extensions: map[string]string{"retrieve": "/v1/retrieve"},
	})
}
