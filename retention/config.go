package retention

import (
	"cmp"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/memory"
)

// Action is what becomes of a record past its retention.
type Action string

// Post-expiry actions (write-path RFC §12.10.4).
const (
	// HardDelete deletes the record at once, with its versions, relations,
	// entries and vectors; an audit entry naming its id remains.
	HardDelete Action = "hard_delete"
	// SoftDelete expires the record (out of every read of the active set,
	// restorable); decay's purge deletes it after its grace period.
	SoftDelete Action = "soft_delete"
)

// Defaults, after the table of §12.10.4.
const (
	DefaultPIIMaxAge               = 90 * 24 * time.Hour
	DefaultBusinessSensitiveMaxAge = 365 * 24 * time.Hour
	DefaultGeneralMaxAge           = 5 * 365 * 24 * time.Hour
	DefaultBatchSize               = 500
	DefaultOverdueAfter            = 24 * time.Hour
	// DefaultSchedule runs the retention job hourly, DefaultComplianceSchedule
	// the compliance job hourly, after it.
	DefaultSchedule           = "23 * * * *"
	DefaultComplianceSchedule = "53 * * * *"
)

// Class is the retention of one class: its maximum age, counted from a
// record's creation, and the action past it. A zero MaxAge is no limit.
type Class struct {
	MaxAge decay.Duration `yaml:"max_age" json:"max_age"`
	Action Action         `yaml:"action" json:"action"`
}

// Config is retention (yaml retention.*): a class per data classification
// (see [memory.ClassOf]), the batch size of the job, and when the
// compliance report calls a record not yet acted on a violation.
type Config struct {
	PII               Class `yaml:"pii"`
	BusinessSensitive Class `yaml:"business_sensitive"`
	General           Class `yaml:"general"`
	Public            Class `yaml:"public"`
	// BatchSize is how many records one transaction expires or deletes.
	BatchSize int `yaml:"batch_size"`
	// OverdueAfter is how long past its cutoff a record may wait for the
	// retention job before the compliance report flags it.
	OverdueAfter decay.Duration `yaml:"overdue_after"`
}

// DefaultConfig is the retention of §12.10.4's table: PII-bearing records
// 90 days, then hard delete; business-sensitive one year and general five,
// then soft delete; public without limit.
func DefaultConfig() Config {
	return Config{
		PII:               Class{MaxAge: decay.Duration(DefaultPIIMaxAge), Action: HardDelete},
		BusinessSensitive: Class{MaxAge: decay.Duration(DefaultBusinessSensitiveMaxAge), Action: SoftDelete},
		General:           Class{MaxAge: decay.Duration(DefaultGeneralMaxAge), Action: SoftDelete},
		Public:            Class{Action: SoftDelete},
		BatchSize:         DefaultBatchSize,
		OverdueAfter:      decay.Duration(DefaultOverdueAfter),
	}
}

// Class returns the retention of class c.
func (c Config) Class(rc memory.RetentionClass) Class {
	switch rc {
	case memory.ClassPII:
		return c.PII
	case memory.ClassBusinessSensitive:
		return c.BusinessSensitive
	case memory.ClassGeneral:
		return c.General
	}
	return c.Public
}

// Cutoff is the creation time before which a record of class rc is past
// its retention at now; false when the class has no limit.
func (c Config) Cutoff(rc memory.RetentionClass, now time.Time) (time.Time, bool) {
	max := time.Duration(c.Class(rc).MaxAge)
	if max <= 0 {
		return time.Time{}, false
	}
	return now.Add(-max), true
}

// Past reports whether rec is past its retention at now (§12.10.4:
// t_now − t_created > T_max_retention), whatever its salience or pins.
func (c Config) Past(rec memory.Record, now time.Time) bool {
	cutoff, ok := c.Cutoff(memory.ClassOf(rec.Sensitivity, rec.Tags), now)
	return ok && rec.CreatedAt.Before(cutoff)
}

// Validate names the first bad field.
func (c Config) Validate() error {
	for _, rc := range memory.RetentionClasses {
		cl := c.Class(rc)
		switch {
		case cl.MaxAge < 0:
			return fmt.Errorf("retention.%s.max_age: must not be negative (0 is no limit)", rc)
		case cl.MaxAge > 0 && time.Duration(cl.MaxAge) < time.Hour:
			return fmt.Errorf("retention.%s.max_age: %s is under an hour; retention is counted in hours at least (0 is no limit)", rc, cl.MaxAge)
		case cl.Action != HardDelete && cl.Action != SoftDelete:
			return fmt.Errorf("retention.%s.action: %q is not hard_delete or soft_delete", rc, cl.Action)
		}
	}
	switch {
	case c.BatchSize < 1 || c.BatchSize > 10000:
		return fmt.Errorf("retention.batch_size: %d is outside 1..10000", c.BatchSize)
	case c.OverdueAfter < 0:
		return fmt.Errorf("retention.overdue_after: must not be negative")
	}
	return nil
}

// Settings holds the retention configuration in force; a reload replaces
// it. Safe for concurrent use.
type Settings struct {
	cfg atomic.Pointer[Config]
}

// NewSettings returns settings holding cfg, if it is valid.
func NewSettings(cfg Config) (*Settings, error) {
	s := &Settings{}
	return s, s.Set(cfg)
}

// Set puts cfg in force, if it is valid; otherwise the old one stays.
func (s *Settings) Set(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg.BatchSize = cmp.Or(cfg.BatchSize, DefaultBatchSize)
	s.cfg.Store(&cfg)
	return nil
}

// Config returns the configuration in force.
func (s *Settings) Config() Config { return *s.cfg.Load() }
