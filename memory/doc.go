// Package memory is engram's shared vocabulary: the [Record] every plane
// reads and writes, its [Type], [Sensitivity], [Status], [Lifecycle] and
// [Provenance], the relations between records and the five typed payloads of
// the substrate RFC §15A. It does no I/O; every other package depends on it,
// never the reverse.
//
// The wire shape of a record is the RFC's JSON-Schema variant (§15A.2–15A.10)
// extended with the struct variant's extra fields (§15A.1–15A.8 of the second
// appendix) as optional properties, so both map onto it losslessly. The
// schemas package holds the JSON Schemas that every stored record passes.
package memory
