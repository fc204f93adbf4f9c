package main

import "cmp"

// whyMeasured says when and on what the reasons below were profiled.
const whyMeasured = "profiled on 2026-11-26 on the 2-core machine of the table"

// whyMissed is, for each row that can miss its target (by row key), the
// reason its profile showed: what takes the time, and what would have to
// change. They are the findings of profiling, written down; a run prints
// the one of each figure it measured as missed. Keep them true: when a
// change moves a figure, profile it again and rewrite its reason.
var whyMissed = map[string]string{}

// reason is the row's reason, or says there is none yet.
func reason(key string) string { return cmp.Or(whyMissed[key], "not profiled yet.") }
