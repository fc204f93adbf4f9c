package logtest_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/engram-dev/engram/internal/logtest"
)

// Writers and a reader at once, under -race, lose no line.
func TestBufferConcurrent(t *testing.T) {
	var b logtest.Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				fmt.Fprintf(&b, "w%d-%d\n", i, j)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	require.Equal(t, 800, strings.Count(b.String(), "\n"))
}
