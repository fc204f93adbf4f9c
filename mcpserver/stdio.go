package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// NewStdioTransport is the transport of `engram mcp`: newline-delimited
// JSON-RPC read from r and written to w, as [mcp.IOTransport] does, except
// that the end of r's input reaches the server only once every request
// read before it has been answered. The SDK's server stops at the end of
// its input and abandons the requests it is serving, so a script that
// pipes requests in and closes them would get no answer to any request
// that calls the API.
//
// Neither r nor w is closed.
func NewStdioTransport(r io.Reader, w io.Writer) mcp.Transport {
	p := &pending{ids: map[string]bool{}}
	p.idle = sync.NewCond(&p.mu)
	return &mcp.IOTransport{
		Reader: &drainingReader{p: p, r: bufio.NewReaderSize(r, 64<<10)},
		Writer: &answeringWriter{p: p, w: w},
	}
}

// pending are the ids of the requests read and not yet answered.
type pending struct {
	mu   sync.Mutex
	idle *sync.Cond // signalled when ids empties
	ids  map[string]bool
}

// message is what a JSON-RPC message says about the requests in flight:
// a request has a method and an id, an answer an id and no method, and a
// cancellation names the request it gives up.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// messages decodes a line of JSON-RPC: a message, or a batch of them. A
// line that is neither has no messages (the SDK answers it as it does).
func messages(line []byte) []message {
	line = bytes.TrimSpace(line)
	if bytes.HasPrefix(line, []byte("[")) {
		var batch []message
		_ = json.Unmarshal(line, &batch)
		return batch
	}
	var m message
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	return []message{m}
}

// idKey is a request id as a key: 1, 1.0 and "1" are told apart as
// JSON-RPC tells them, 1 and 1.0 not.
func idKey(raw json.RawMessage) (string, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil || v == nil {
		return "", false
	}
	return fmt.Sprintf("%T:%v", v, v), true
}

// read notes the requests of a line read.
func (p *pending) read(line []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range messages(line) {
		switch {
		case m.Method == "notifications/cancelled":
			p.done(m.Params.RequestID)
		case m.Method != "":
			if k, ok := idKey(m.ID); ok {
				p.ids[k] = true
			}
		}
	}
}

// written notes the answers of a line written.
func (p *pending) written(line []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range messages(line) {
		if m.Method == "" {
			p.done(m.ID)
		}
	}
}

// done forgets a request; p.mu is held.
func (p *pending) done(id json.RawMessage) {
	if k, ok := idKey(id); ok {
		delete(p.ids, k)
	}
	if len(p.ids) == 0 {
		p.idle.Broadcast()
	}
}

// wait returns once every request read has been answered.
func (p *pending) wait() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.ids) > 0 {
		p.idle.Wait()
	}
}

// maxLine is the longest line whose requests are noted: the SDK refuses
// a longer one (mcp.DefaultMaxLineLength), and answers nothing to it.
const maxLine = mcp.DefaultMaxLineLength

// drainingReader passes its input through, noting each line's requests
// before the line's end reaches the server, and holds the end of its input
// back until they are answered.
type drainingReader struct {
	p    *pending
	r    *bufio.Reader
	line []byte // the line so far, up to maxLine+1 bytes
	buf  []byte // read and not yet passed on
	err  error  // the input's end, once reached
}

func (d *drainingReader) Read(b []byte) (int, error) {
	for len(d.buf) == 0 {
		if d.err != nil {
			d.p.wait()
			return 0, d.err
		}
		chunk, err := d.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			err = nil
		}
		if len(d.line) <= maxLine {
			d.line = append(d.line, chunk[:min(len(chunk), maxLine+1-len(d.line))]...)
		}
		if err != nil || bytes.HasSuffix(chunk, []byte("\n")) {
			if len(d.line) <= maxLine {
				d.p.read(d.line)
			}
			d.line = d.line[:0]
		}
		d.buf = append(d.buf[:0], chunk...)
		d.err = err
	}
	n := copy(b, d.buf)
	d.buf = d.buf[n:]
	return n, nil
}

// Close leaves the input open: it is the process's.
func (d *drainingReader) Close() error { return nil }

// answeringWriter passes the server's output through and notes the
// answers written.
type answeringWriter struct {
	p *pending
	w io.Writer
}

// Write writes a line of the server's (the SDK writes a message, or a
// batch, and its newline at once), then notes its answers.
func (a *answeringWriter) Write(b []byte) (int, error) {
	n, err := a.w.Write(b)
	a.p.written(b[:n])
	return n, err
}

// Close leaves the output open: it is the process's.
func (a *answeringWriter) Close() error { return nil }
