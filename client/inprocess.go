package client

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
)

// InProcess returns an HTTP client whose requests are served by h in this
// process, with no network between them. Set it as [Config.HTTPClient] to
// call an engramd handler from inside engramd: the protocol adapters (MCP,
// OpenIntent, OpenWOP) do so, with their caller's key, so every call they
// make passes the same authentication, roles, redaction and write path as
// any client's. The answer is buffered: a stream is answered only once it
// ends.
func InProcess(h http.Handler) *http.Client {
	return &http.Client{Transport: handlerTransport{h}}
}

// handlerTransport is an [http.RoundTripper] that serves each request with
// a handler.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// A RoundTripper must not modify its request.
	in := req.Clone(req.Context())
	if in.Body == nil {
		in.Body = http.NoBody
	}
	in.RequestURI = in.URL.RequestURI()
	if in.RemoteAddr == "" {
		in.RemoteAddr = "in-process"
	}
	w := &bufferedResponse{header: http.Header{}}
	t.h.ServeHTTP(w, in)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.header.Set("Content-Length", strconv.Itoa(w.body.Len()))
	return &http.Response{
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.header,
		Body:          io.NopCloser(&w.body),
		ContentLength: int64(w.body.Len()),
		Request:       req,
	}, nil
}

// bufferedResponse is an [http.ResponseWriter] that keeps what a handler
// writes.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferedResponse) Header() http.Header { return w.header }

func (w *bufferedResponse) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *bufferedResponse) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// Flush lets a streaming handler flush; the answer is still sent whole.
func (w *bufferedResponse) Flush() {}
