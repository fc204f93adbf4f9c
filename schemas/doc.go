// Package schemas holds the JSON Schemas (draft 2020-12) that every memory
// record passes, and validates documents against them.
//
// The schemas are the substrate RFC's JSON-Schema variant (§15A.2–15A.10)
// extended with the struct variant's extra fields (the second §15A,
// §15A.1–15A.8) as optional properties, so that both map onto one wire shape
// losslessly. There is one file per schema, named by its $id: MemoryRecord,
// Lifecycle, Provenance, Relation and the five payloads EpisodicPayload,
// WorkingPayload, SemanticPayload, CompetencePayload and PlanGraphPayload.
// [Raw] and [Names] give the files as embedded, for the HTTP server to serve
// or inline into its OpenAPI document.
//
// [ValidateRecord] checks one complete record and [ValidatePayload] one
// payload against the schema of its memory type. Both return nil or a
// [*ValidationError] listing one [Violation] per problem: a JSON pointer into
// the validated document and a human-readable message, sorted by pointer.
// The RFC's payload is a oneOf over the five payloads, which on failure
// explains why the payload is not each of the five; the MemoryRecord schema
// also ties the payload to the record's type, and only the errors of that
// type's payload schema are reported. A payload whose kind names another
// known type gets a single violation at /payload/kind. A record whose type is
// unknown gets a violation at /type naming the allowed types, and its payload
// is not judged.
//
// [ValidateEvent] answers as ValidateValue("Event", v) does, the generic
// validator written out for the one schema every staged event passes; the
// generic validator stays the reference its tests compare it with.
//
// [Decode] is the one strict JSON decoder every parser of a client's JSON
// uses (request bodies, events, the lines of an event stream): exactly one
// value, nothing after it but whitespace. [CheckStorable] finds what
// PostgreSQL's text and jsonb would refuse — NUL, unpaired surrogate
// escapes, numbers beyond a double or numeric's scale — and names each place by its
// JSON pointer, so that it is refused as the client's mistake rather than
// failing the write.
//
// Failure cases:
//   - Malformed JSON is one violation at the root pointer "".
//   - An embedded schema that does not compile is a programming error: the
//     first call into the package panics.
package schemas
