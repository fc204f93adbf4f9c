// Package clocktest is a clock for tests that moves only when told, for
// every part that takes a Now func (the write path, decay, retention,
// leases, consolidation) to share one time.
package clocktest

import (
	"sync"
	"time"
)

// Clock is a clock that stands at one time until advanced; safe for
// concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock standing at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
