// Package tenancy holds engram to being shardable by tenant, by
// construction (issue 30, item 5): its tests read the catalog and every
// SQL statement the daemon sends, and fail on a table key, constraint,
// foreign key or statement that does not carry the tenant, so that a
// tenant-keyed distribution (Citus, with every tenant table distributed
// by tenant_id and co-located) needs no schema change. The rules and the
// global tables that are exceptions are in docs/operations/scaling.md.
//
// The package has no code of its own: it is its tests.
package tenancy
