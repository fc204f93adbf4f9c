// Package client is a typed Go client of engramd's /v1 HTTP API. It
// imports no database code: the wire types are those of package api, and
// records those of package memory.
//
//	c, err := client.New(client.Config{URL: "http://localhost:8080", Key: os.Getenv("ENGRAM_API_KEY")})
//	res, err := c.Retrieve(ctx, api.RetrieveRequest{Task: api.Task{Text: "deploy the api"}})
//
// Every method takes a context first and a trailing list of [CallOption]s
// that set a header for that call only ([WithActor], [WithSession],
// [WithFencingToken]); the same headers can be set for every call in
// [Config]. An error answer of the server is an [*Error] holding the
// decoded RFC 9457 problem: its status, stable type, detail and field
// errors. The API key is sent as a bearer token and appears in no error.
//
// The engram CLI (cmd/engram) makes every call through this package.
package client
