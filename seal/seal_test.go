package seal_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/pgtest"
	"github.com/engram-dev/engram/memory"
	"github.com/engram-dev/engram/seal"
	"github.com/engram-dev/engram/store"
)

func masterKey(t *testing.T) (string, seal.MasterKey) {
	t.Helper()
	text := seal.NewMasterKey()
	k, err := seal.ParseMasterKey(text)
	require.NoError(t, err)
	return text, k
}

func TestSealOpenPayload(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	_, mk := masterKey(t)
	s, err := seal.New(seal.Config{DB: db.Pool, Keys: []seal.MasterKey{mk}})
	require.NoError(t, err)
	require.True(t, s.Applies(memory.High))
	require.True(t, s.Applies(memory.Hyper))
	require.False(t, s.Applies(memory.Medium))

	plain := json.RawMessage(`{"kind":"semantic","subject":"svc","predicate":"uses","object":"the-violet-heron-secret","evidence":[]}`)
	sealed, err := s.SealPayload(ctx, "acme", memory.Semantic, plain)
	require.NoError(t, err)
	require.NotContains(t, string(sealed), "violet-heron")
	require.True(t, seal.IsSealed(sealed))
	// The fact's identity stays in the clear for the one-active-fact index.
	var outer map[string]any
	require.NoError(t, json.Unmarshal(sealed, &outer))
	require.Equal(t, "semantic", outer["kind"])
	require.Equal(t, "svc", outer["subject"])

	got, err := s.OpenPayload(ctx, "acme", sealed)
	require.NoError(t, err)
	require.JSONEq(t, string(plain), string(got))

	// A payload that only mentions the word comes back byte for byte.
	mention := json.RawMessage(`{"kind":"semantic", "subject":"box","predicate":"state","object":"sealed"}`)
	same0, err := s.OpenPayload(ctx, "acme", mention)
	require.NoError(t, err)
	require.Equal(t, string(mention), string(same0))

	// Sealed for acme, it does not open as another tenant's.
	_, err = s.OpenPayload(ctx, "globex", sealed)
	require.Error(t, err)

	// A payload with nothing sealed is returned as it is, even with no key.
	var none *seal.Sealer
	same, err := none.OpenPayload(ctx, "acme", plain)
	require.NoError(t, err)
	require.Equal(t, string(plain), string(same))
	_, err = none.OpenPayload(ctx, "acme", sealed)
	require.ErrorIs(t, err, seal.ErrNoMasterKey)
}

func TestOpenEpisodeWithSealedEntries(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	_, mk := masterKey(t)
	s, err := seal.New(seal.Config{DB: db.Pool, Keys: []seal.MasterKey{mk}})
	require.NoError(t, err)

	base := json.RawMessage(`{"kind":"episodic","timeline":[{"ref":"evt://1","summary":"first secret"}],"tool_graph":[]}`)
	sealed, err := s.SealPayload(ctx, "acme", memory.Episodic, base)
	require.NoError(t, err)
	require.NotContains(t, string(sealed), "first secret")
	require.Contains(t, string(sealed), "evt://1", "references stay in the clear")
	entry, err := s.Seal(ctx, "acme", json.RawMessage(`{"ref":"evt://2","summary":"second secret"}`))
	require.NoError(t, err)

	// What the store reads: the sealed payload with the appended entries
	// merged into its arrays, and an outcome added in the clear.
	var outer map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(sealed, &outer))
	outer["timeline"] = json.RawMessage(`[` + string(entry) + `]`)
	outer["outcome"] = json.RawMessage(`"success"`)
	merged, _ := json.Marshal(outer)

	got, err := s.OpenPayload(ctx, "acme", merged)
	require.NoError(t, err)
	require.JSONEq(t, `{"kind":"episodic","outcome":"success","tool_graph":[],
		"timeline":[{"ref":"evt://1","summary":"first secret"},{"ref":"evt://2","summary":"second secret"}]}`, string(got))
}

func TestMasterKeyRotationAndCheck(t *testing.T) {
	t.Parallel()
	db := pgtest.NewSchema(t)
	ctx := context.Background()
	oldText, oldKey := masterKey(t)
	_, newKey := masterKey(t)
	s1, err := seal.New(seal.Config{DB: db.Pool, Keys: []seal.MasterKey{oldKey}})
	require.NoError(t, err)
	v, err := s1.Seal(ctx, "acme", []byte(`{"x":"hidden"}`))
	require.NoError(t, err)

	// Started with only the new key: refused, naming the old key's id only.
	only, err := seal.New(seal.Config{DB: db.Pool, Keys: []seal.MasterKey{newKey}})
	require.NoError(t, err)
	err = only.Check(ctx)
	var missing *seal.MissingMasterKeyError
	require.ErrorAs(t, err, &missing)
	require.Equal(t, oldKey.ID, missing.ID)
	require.NotContains(t, err.Error(), oldText)
	// Started with no key while data keys exist: refused too.
	off, err := seal.New(seal.Config{DB: db.Pool})
	require.NoError(t, err)
	require.ErrorIs(t, off.Check(ctx), seal.ErrNoMasterKey)

	// New first, old kept: re-wrap, then the new key alone opens it all.
	both, err := seal.New(seal.Config{DB: db.Pool, Keys: []seal.MasterKey{newKey, oldKey}})
	require.NoError(t, err)
	require.NoError(t, both.Check(ctx))
	n, found, err := both.RewrapBatch(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, 1, found)
	keys, err := store.DataKeys(ctx, db.Pool, "acme")
	require.NoError(t, err)
	require.Len(t, keys, 1)
	require.Equal(t, newKey.ID, keys[0].MasterKeyID)

	fresh, err := seal.New(seal.Config{DB: db.Pool, Keys: []seal.MasterKey{newKey}})
	require.NoError(t, err)
	require.NoError(t, fresh.Check(ctx))
	got, err := fresh.Open(ctx, "acme", v)
	require.NoError(t, err)
	require.JSONEq(t, `{"x":"hidden"}`, string(got))

	// The database alone holds no key material that opens anything: the
	// wrapped key is not the data key.
	var wrapped []byte
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT wrapped FROM tenant_data_keys`).Scan(&wrapped))
	require.Greater(t, len(wrapped), seal.KeySize)
}

func TestParseMasterKeyNeverEchoes(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"not-a-key-at-all-but-secret-words", "c2hvcnQ=", strings.Repeat("z", 64)} {
		_, err := seal.ParseMasterKey(bad)
		require.Error(t, err)
		require.NotContains(t, err.Error(), bad)
	}
	hex := strings.Repeat("ab", 32)
	k, err := seal.ParseMasterKey(hex)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(k.ID, "mk-"))
	_, err = seal.NewKeyring([]seal.MasterKey{k, k})
	require.Error(t, err)
	require.False(t, errors.Is(err, seal.ErrNoMasterKey))
}
