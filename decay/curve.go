package decay

import (
	"time"

	"github.com/engram-dev/engram/memory"
)

// Current is rec's salience at now ([memory.Record.SalienceAt]): the one
// definition of decay that every read, sweep, preview and reinforcement
// uses (see the package documentation for the formula).
func Current(rec memory.Record, now time.Time) float64 { return rec.SalienceAt(now) }

// At is [memory.Decay.At]: the salience a record whose profile is d and
// whose salience was base at its last reinforcement has age later.
func At(d memory.Decay, base float64, age time.Duration) float64 { return d.At(base, age) }

// Retention is [memory.Decay.Retention]: the share of the salience above
// the floor that a curve keeps at age.
func Retention(d memory.Decay, age time.Duration) float64 { return d.Retention(age) }
