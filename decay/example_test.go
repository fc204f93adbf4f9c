package decay_test

import (
	"fmt"
	"time"

	"github.com/engram-dev/engram/decay"
	"github.com/engram-dev/engram/memory"
)

// A fact with a 90-day half-life, given salience 1 when last reinforced,
// as the API shows it over the following year.
func ExampleCurrent() {
	reinforced := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fact := memory.Record{Type: memory.Semantic, Salience: 1, Lifecycle: memory.Lifecycle{
		Decay:            memory.Decay{Curve: memory.Exponential, HalfLifeSeconds: 90 * 86400},
		LastReinforcedAt: reinforced,
	}}
	for _, days := range []int{0, 90, 180, 365} {
		fmt.Printf("after %3d days: %.3f\n", days, decay.Current(fact, reinforced.AddDate(0, 0, days)))
	}
	// Output:
	// after   0 days: 1.000
	// after  90 days: 0.500
	// after 180 days: 0.250
	// after 365 days: 0.060
}

// A decay section as engramd's configuration file has it: fields left out
// keep their defaults.
func ExampleParseConfig() {
	cfg, err := decay.ParseConfig([]byte(`
profiles:
  episodic: {half_life: 3d, max_age: 30d}
  semantic:
    curve: custom
    points: [{age: 30d, salience: 0.9}, {age: 365d, salience: 0.3}]
purge_grace: 14d
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Profiles[memory.Episodic].HalfLife, cfg.Profiles[memory.Episodic].MaxAge, cfg.Profiles[memory.Episodic].Curve)
	fmt.Println(cfg.Profiles[memory.Semantic].Curve, len(cfg.Profiles[memory.Semantic].Points), cfg.PurgeGrace, cfg.PruneThreshold)

	_, err = decay.ParseConfig([]byte(`profiles: {semantic: {half_life: 0s}}`))
	fmt.Println(err)
	// Output:
	// 3d 30d exponential
	// custom 2 14d 0.05
	// decay.profiles.semantic.half_life: must be positive
}
