package jobs

// Fire is a cron tick of the job, run synchronously: what the cron entry
// does at each tick of its schedule.
func (s *Scheduler) Fire(name string) { s.fire(name) }
