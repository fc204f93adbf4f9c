// Package hatest holds the scenarios of `make test-ha` (issue 30): engramd
// daemons against a primary, a streaming replica, PgBouncer in transaction
// and session mode, and a cluster restored from a base backup and the WAL
// archive, that scripts/ha.sh builds from Debian's packages. Its tests
// carry the build tag ha and read the topology from ENGRAM_HA_*; they print
// their figures and assert no timing.
package hatest
