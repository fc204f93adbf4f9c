// Package embedding turns texts into vectors for engram's vector index.
//
// Vectors are an advisory index only (substrate RFC §15.3): PostgreSQL rows
// are the truth, a record is retrievable lexically before its vector exists,
// and losing every vector loses nothing but a ranking signal. An [Embedder]
// is therefore free to be replaced: vectors are stored under its
// [Embedder.Model] name, and a new name means a reindex, never a migration
// of the records themselves.
//
// # Two embedders
//
// [Lexical] is built in and needs no network and no model. It is LEXICAL,
// never semantic: it hashes lower-cased word unigrams, word bigrams and
// boundary-padded character trigrams into a sparse vector of [LexicalDims]
// dimensions (pgvector's sparsevec), keeping the [MaxNonZero] heaviest
// features. Two texts are close when they share words and spellings: two
// wordings of the same error message, a misspelt identifier, a path. It does
// not know that "car" and "automobile" mean the same thing, and nothing
// should rely on it to. Weights are log-scaled counts times a per-kind
// weight; callers that keep document frequencies can pass an inverse
// document frequency ([IDF]) to [Lexical.Vector].
//
// [OpenAI] is a client for any server speaking the OpenAI embeddings API
// (POST {base}/embeddings): OpenAI itself, Ollama, vLLM and others. Its
// vectors are dense and L2-normalised, and may be semantic, as good as the
// model behind the endpoint. It is an optional upgrade, never a requirement.
//
// # The dense index
//
// Dense vectors are searched exactly for small tenants and on an HNSW
// index for large ones (package retrieve chooses, by the tenant's records
// of each type). [EnsureIndex] builds that index for an embedder's model:
// one graph per searched record type on each partition of record_vectors,
// over dense::vector(N), or dense::halfvec(N) above 2,000 dimensions;
// above 4,000 pgvector indexes neither and every search is exact
// ([DenseIndexOf]). engramd calls it from `engramd migrate` and in the
// background at start; nothing calls it implicitly.
//
// # Failure cases
//
// [Lexical] never fails except on a cancelled context. [OpenAI] fails when the
// endpoint is unreachable or answers with an error status (a *[StatusError],
// whose message never carries the API key) and when its answer is malformed:
// a missing or repeated index, or a vector of the wrong dimension
// ([ErrBadResponse]). A failed batch fails the whole call; there is no
// partial result, and no retry here: the caller (the backfill) retries later.
//
// [Funcs] is the test double: a struct of XxxFunc fields.
package embedding
