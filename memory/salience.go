package memory

import (
	"math"
	"time"
)

// Reinforcement defaults (substrate RFC §11, §15.6): what a successful use
// adds to a record's salience, and as high as reinforcement takes it.
const (
	DefaultReinforcementGain = 0.2
	MaxSalience              = 1.0
)

// SalienceAt is r's salience at now: the one definition of decay that every
// read, sweep, preview and reinforcement uses. A record's stored salience
// is its salience at its last reinforcement.
func (r Record) SalienceAt(now time.Time) float64 {
	return r.Lifecycle.Decay.At(r.Salience, now.Sub(r.Lifecycle.LastReinforcedAt))
}

// Reinforced is r's salience after a successful use at now (substrate RFC
// §15.6: salience "MUST be reinforced when a record ... contributes to a
// successful outcome"): its salience at now plus the gain, up to
// [MaxSalience], and never below what it has.
func (r Record) Reinforced(now time.Time, gain float64) float64 {
	cur := r.SalienceAt(now)
	return max(cur, min(MaxSalience, cur+gain))
}

// At is the salience a record whose profile is d and whose salience was
// base at its last reinforcement has age later. It never rises with age,
// never falls below the floor, and leaves a salience already at or below
// the floor as it is.
func (d Decay) At(base float64, age time.Duration) float64 {
	if age <= 0 || base <= d.MinSalience {
		return base
	}
	return d.MinSalience + (base-d.MinSalience)*d.Retention(age)
}

// Retention is the share of the salience above the floor that a curve keeps
// at age: 1 at age zero, never rising (substrate RFC §15A.7: profiles are
// monotonic).
//
//   - exponential: 2^(−age/half_life)
//   - linear: 1 − age/(2·half_life), down to 0 at twice the half-life, so
//     that half is left after one half-life as with the exponential curve
//   - custom: straight lines between the profile's points (age, share),
//     from (0, 1) when the first point is later, flat after the last point;
//     without points (§15A.3 requires none), exponential by its half-life,
//     the one shape the RFC requires of every curve: a custom curve never
//     escapes decay by naming no shape
func (d Decay) Retention(age time.Duration) float64 {
	a := age.Seconds()
	if a <= 0 {
		return 1
	}
	h := float64(d.HalfLifeSeconds)
	switch d.Curve {
	case Exponential:
		if h > 0 {
			return math.Exp2(-a / h)
		}
	case Linear:
		if h > 0 {
			return max(0, 1-a/(2*h))
		}
	case Custom:
		if len(d.Points) > 0 {
			return piecewise(d.Points, a)
		}
		if h > 0 {
			return math.Exp2(-a / h)
		}
	}
	return 1
}

// piecewise interpolates the points (age in seconds, share) at age a.
func piecewise(points []DecayPoint, a float64) float64 {
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
