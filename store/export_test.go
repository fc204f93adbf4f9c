package store

// ReferenceSearch is [Search] as it was before a retrieval's layers were
// one statement (search_reference_test.go), for the test that compares
// the two.
var ReferenceSearch = refSearch

// ParallelSearchPassages is the size of tenant whose layers are searched
// at once.
const ParallelSearchPassages = parallelSearchPassages
