package memory

import "time"

// DefaultDecay is the decay profile a record of type t gets when it names
// none: episodic memory fades fast (§5), working memory lives for its task,
// facts slowly, procedures and plans in between. Half-lives for semantic and
// competence records follow the RFC's examples (§15A.12).
func DefaultDecay(t Type) Decay {
	day := int64((24 * time.Hour).Seconds())
	switch t {
	case Episodic:
		return Decay{Curve: Exponential, HalfLifeSeconds: 7 * day}
	case Working:
		return Decay{Curve: Exponential, HalfLifeSeconds: 2 * day}
	case Semantic:
		return Decay{Curve: Exponential, HalfLifeSeconds: 90 * day}
	case Competence:
		return Decay{Curve: Exponential, HalfLifeSeconds: 30 * day}
	default:
		return Decay{Curve: Exponential, HalfLifeSeconds: 60 * day}
	}
}

// Defaults for the scalar fields a new record may leave out.
const (
	DefaultSensitivity = Low
	DefaultConfidence  = 0.5
	DefaultSalience    = 1.0
)
