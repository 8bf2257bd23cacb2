package publication

import (
	"testing"

	"github.com/google/uuid"
	"github.com/ql3/ql3/controlplane"
)

// FuzzDecodeRunCursor: decoding never panics, and a cursor the server
// accepts names a position that survives a re-encode (an equivalent
// spelling, such as an upper-case UUID, is the same position).
func FuzzDecodeRunCursor(f *testing.F) {
	id := uuid.MustParse("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")
	f.Add(encodeRunCursor(controlplane.Run{CreatedAtMs: 1795946680000, ID: id.String()}))
	f.Add("")
	f.Add("MTc5NTk0NjY4MDAwMC8wMTkwYTFiMi1jM2Q0LTdlNWYtOGE5Yi0wYzFkMmUzZjRhNWC") // non-zero trailing bits
	f.Fuzz(func(t *testing.T, s string) {
		ms, got, err := decodeRunCursor(s)
		if err != nil {
			return
		}
		again := encodeRunCursor(controlplane.Run{CreatedAtMs: ms, ID: got.String()})
		ms2, got2, err := decodeRunCursor(again)
		if err != nil || ms2 != ms || got2 != got {
			t.Fatalf("accepted %q (%d, %s); its re-encoding %q decodes to (%d, %s, %v)", s, ms, got, again, ms2, got2, err)
		}
	})
}
