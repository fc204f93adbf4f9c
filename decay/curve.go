package decay

import (
	"math"
	"time"

	"github.com/engram-dev/engram/memory"
)

// Current is rec's salience at now: the one definition of decay that every
// read, sweep, preview and reinforcement uses (see the package
// documentation for the formula). A record's stored salience is its
// salience at its last reinforcement.
func Current(rec memory.Record, now time.Time) float64 {
	return At(rec.Lifecycle.Decay, rec.Salience, now.Sub(rec.Lifecycle.LastReinforcedAt))
}

// At is the salience a record whose profile is d and whose salience was
// base at its last reinforcement has age later. It never rises with age,
// never falls below the floor, and leaves a salience already at or below
// the floor as it is.
func At(d memory.Decay, base float64, age time.Duration) float64 {
	if age <= 0 || base <= d.MinSalience {
		return base
	}
	return d.MinSalience + (base-d.MinSalience)*Retention(d, age)
}

// Retention is the share of the salience above the floor that a curve keeps
// at age: 1 at age zero, never rising (substrate RFC §15A.7: profiles are
// monotonic).
//
//   - exponential: 2^(−age/half_life)
//   - linear: 1 − age/(2·half_life), down to 0 at twice the half-life, so
//     that half is left after one half-life as with the exponential curve
//   - custom: straight lines between the profile's points (age, share),
//     from (0, 1) when the first point is later, flat after the last point
func Retention(d memory.Decay, age time.Duration) float64 {
	a := age.Seconds()
	if a <= 0 {
		return 1
	}
	h := float64(d.HalfLifeSeconds)
	switch d.Curve {
	case memory.Exponential:
		if h > 0 {
			return math.Exp2(-a / h)
		}
	case memory.Linear:
		if h > 0 {
			return max(0, 1-a/(2*h))
		}
	case memory.Custom:
		return piecewise(d.Points, a)
	}
	return 1
}

// piecewise interpolates the points (age in seconds, share) at age a.
func piecewise(points []memory.DecayPoint, a float64) float64 {
	prevAge, prevShare := 0.0, 1.0
	for _, p := range points {
		age := float64(p.AgeSeconds)
		if a <= age {
			if age == prevAge {
				return p.Salience
			}
			return prevShare + (p.Salience-prevShare)*(a-prevAge)/(age-prevAge)
		}
		prevAge, prevShare = age, p.Salience
	}
	return prevShare
}
