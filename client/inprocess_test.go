package client_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/engram-dev/engram/client"
)

// A client over InProcess reaches the handler with its key, headers, path
// and body, and reads back its status, headers and problem answers, as over
// a network.
func TestInProcess(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/echo/{name}", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k1" || r.Header.Get(client.ActorHeader) != "bot" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"type":"https://engram.dev/problems/unauthorized","title":"Unauthorized","status":401}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"` + r.PathValue("name") + `","q":"` + r.URL.Query().Get("q") + `"}`))
	})
	c, err := client.New(client.Config{URL: "http://engramd", Key: "k1", Actor: "bot", HTTPClient: client.InProcess(mux)})
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Name, Q string }
	if err := c.Do(context.Background(), http.MethodGet, "/v1/echo/ada", map[string][]string{"q": {"x y"}}, nil, &out); err != nil {
		t.Fatal(err)
	}
	if out.Name != "ada" || out.Q != "x y" {
		t.Fatalf("got %+v, want ada and %q", out, "x y")
	}

	bad, _ := client.New(client.Config{URL: "http://engramd", Key: "other", HTTPClient: client.InProcess(mux)})
	err = bad.Do(context.Background(), http.MethodGet, "/v1/echo/ada", nil, nil, nil)
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode() != http.StatusUnauthorized {
		t.Fatalf("err = %v, want a 401 *client.Error", err)
	}
}
