package server

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/api"
	"github.com/engram-dev/engram/store"
)

// The row types mapped field by field (not by conversion, which the
// compiler checks) have the fields of their wire types, so that a field
// added to one is added to the other and to its mapping.
func TestWireTypesMatch(t *testing.T) {
	t.Parallel()
	for _, pair := range [][2]any{
		{store.Review{}, api.Review{}},
		{store.ReviewProposal{}, api.ReviewProposal{}},
		{store.Erasure{}, api.Erasure{}},
		{store.Verification{}, api.Verification{}},
	} {
		require.Equal(t, fieldNames(pair[1]), fieldNames(pair[0]), "%T and %T", pair[0], pair[1])
	}
}

func fieldNames(v any) []string {
	typ := reflect.TypeOf(v)
	names := make([]string, typ.NumField())
	for i := range names {
		names[i] = typ.Field(i).Name
	}
	return names
}
