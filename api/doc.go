// Package api holds the JSON shapes of engramd's /v1 HTTP API: the request
// and response bodies the server writes and reads, shared by the server,
// the engram CLI and (later) the Go client, so that each shape is declared
// once.
//
// It imports only the standard library, github.com/google/uuid and
// [memory], never the database: a client can use it without pulling in pgx
// (deps_test.go checks). The packages that compute an answer (retrieve,
// decay, jobs, store, policy, ingest, revise) name these types with aliases, so
// that what they return is what the server writes; the one exception is
// the decay preview, whose configurations the server encodes from the
// decay package's typed Config.
//
// The OpenAPI document (server/openapi.json) describes the same shapes for
// other languages.
package api
