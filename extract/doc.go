// Package extract is engram's optional language-model help: it asks an
// OpenAI-compatible endpoint for the facts a free text states and for a
// summary of it (issue 11, item 7). Consolidation depends on the small
// [Extractor] interface; [OpenAI] implements it with chat completions
// (sashabaranov/go-openai), and [Funcs] is the test double.
//
// Nothing here writes memory. What a model says is a claim, not an
// observation: the caller writes it through the write path like any other
// fact (package revise), after redaction, with evidence whose authority is
// low, so that a model never outranks what was observed (write-path RFC
// §12.2.3, §12.4.3).
//
// # Failure cases
//
// [OpenAI] asks for JSON (response_format json_schema, or json_object for
// servers without structured outputs) and reads the answer strictly: an
// answer that is not exactly one JSON value of the expected shape, that was
// cut off (finish_reason length), refused, or over its bounds (more facts
// than [Config.MaxFacts], a field or the whole content too long) is an
// [ErrBadResponse], never a partial result. An error status is a
// *[StatusError] and a body over [MaxResponseBytes] an
// [openaicompat.ErrResponseTooLarge]; no error text ever carries the API key.
// Each request is bounded by [Config.Timeout], and a text longer than
// [Config.MaxInputBytes] is cut at a character boundary before it is sent.
// There is no retry here: the caller decides.
package extract
