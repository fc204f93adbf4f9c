package decay

import (
	"sync/atomic"

	"github.com/engram-dev/engram/memory"
)

// Settings holds the decay configuration in force. engramd replaces it on
// SIGHUP; everything that reads it (new records' defaults, sweeps,
// feedback, previews) sees one configuration at a time.
type Settings struct {
	cfg atomic.Pointer[Config]
}

// NewSettings returns settings holding cfg, which must be valid.
func NewSettings(cfg Config) (*Settings, error) {
	s := &Settings{}
	if err := s.Set(cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// Config returns the configuration in force. The caller must not modify
// its maps.
func (s *Settings) Config() Config { return *s.cfg.Load() }

// Set puts cfg in force if it is valid; otherwise the configuration in
// force stays and the error names the bad field.
func (s *Settings) Set(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.clone()
	s.cfg.Store(&cfg)
	return nil
}

// Gain is the reinforcement gain of a type's records that name none of
// their own, in the configuration in force: the write path reinforces
// with it what it sees confirmed (revise.Config.Gain).
func (s *Settings) Gain(t memory.Type) float64 {
	p, ok := s.Config().Profiles[t]
	if !ok {
		p = DefaultProfile(t)
	}
	return p.ReinforcementGain
}

// Defaults is the lifecycle a new record of type t gets when it names none
// (for [revise.Config] Defaults).
func (s *Settings) Defaults(t memory.Type) (memory.Decay, memory.DeletionPolicy) {
	p, ok := s.Config().Profiles[t]
	if !ok {
		p = DefaultProfile(t)
	}
	return p.Decay(), p.DeletionPolicy
}
