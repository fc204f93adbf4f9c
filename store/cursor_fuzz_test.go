package store

import (
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// FuzzCursor checks the list cursor: any record id survives a round trip
// (decode(encode(id)) == id), and a cursor is accepted only in the one form
// this store issues, so that no two cursors name the same page.
func FuzzCursor(f *testing.F) {
	f.Add("AZCh8gAAcACAAAAAAAAAAA", []byte("0190a1b2-0000-7000"))
	f.Add("AZCh8gAAcACAAAAAAAAAAB", []byte{})
	f.Add("AZCh8gAAcACAAAAAAAAAAA==", []byte{0xff})
	f.Add("", []byte("0123456789abcdef"))
	f.Add("zzz", []byte("\x00"))
	f.Fuzz(func(t *testing.T, cursor string, raw []byte) {
		var id uuid.UUID
		copy(id[:], raw)
		back, err := decodeCursor(encodeCursor(id))
		require.NoError(t, err)
		require.Equal(t, id, back)

		got, err := decodeCursor(cursor)
		if err != nil {
			require.True(t, errors.Is(err, ErrBadCursor), "%v", err)
			return
		}
		require.Equal(t, cursor, encodeCursor(got), "%q is not a cursor this store issues", cursor)
	})
}
