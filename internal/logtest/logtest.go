// Package logtest holds what tests that read a component's logs share: a
// buffer the logging goroutines may write to while the test reads it.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a log destination safe for concurrent writers and readers.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
