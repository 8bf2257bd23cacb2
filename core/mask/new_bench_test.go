package mask

import (
	"strconv"
	"strings"
	"testing"
)

// BenchmarkNew: building the matcher of 1,000 cookie-sized secrets.
func BenchmarkNew(b *testing.B) {
	secrets := make([][]byte, 0, 1000)
	for i := range 1000 {
		secrets = append(secrets, []byte("pt_key="+strings.Repeat("k", 48)+strconv.Itoa(i)))
	}
	for b.Loop() {
		if New(secrets).Len() != 1000 {
			b.Fatal("secrets lost")
		}
	}
}
