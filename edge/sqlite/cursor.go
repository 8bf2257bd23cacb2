package sqlite

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/ql3/ql3/core/errs"
)

// cursor is a keyset position: the (created_at_ms, id) of the last row of
// the previous page. On the wire it is opaque: base64url("v1:<ms>:<id>").
type cursor struct {
	AtMs int64
	ID   string
}

const cursorPrefix = "v1:"

// maxCursorLen bounds what decodeCursor reads: "v1:" + 19 digits + ":" + 36.
const maxCursorLen = 128

func encodeCursor(c cursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.FormatInt(c.AtMs, 10) + ":" + c.ID))
}

// decodeCursor parses a cursor produced by encodeCursor; anything else is
// errs.Invalid on field "cursor".
func decodeCursor(s string) (cursor, error) {
	if len(s) > maxCursorLen {
		return cursor{}, errs.Invalidf("cursor", "is %d bytes, limit is %d", len(s), maxCursorLen)
	}
	// Strict rejects non-zero trailing bits; the re-encode check also
	// rejects \r and \n, which Go's decoder skips: one text per cursor.
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || base64.RawURLEncoding.EncodeToString(raw) != s {
		return cursor{}, errs.Invalidf("cursor", "is not a cursor returned by this server")
	}
	body, ok := strings.CutPrefix(string(raw), cursorPrefix)
	if !ok {
		return cursor{}, errs.Invalidf("cursor", "unknown cursor version")
	}
	ms, id, ok := strings.Cut(body, ":")
	if !ok {
		return cursor{}, errs.Invalidf("cursor", "is not a cursor returned by this server")
	}
	at, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || at < 0 || ms != strconv.FormatInt(at, 10) {
		return cursor{}, errs.Invalidf("cursor", "has a bad position")
	}
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		return cursor{}, errs.Invalidf("cursor", "has a bad id")
	}
	return cursor{AtMs: at, ID: id}, nil
}
