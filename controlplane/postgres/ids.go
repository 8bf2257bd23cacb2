package postgres

import (
	"github.com/google/uuid"

	"github.com/ql3/ql3/core/errs"
)

// ParseID parses a canonical (36-character) UUID text from a request,
// naming field when it is not one.
func ParseID(field, s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return uuid.UUID{}, errs.Invalidf(field, "must be a canonical UUID")
	}
	return id, nil
}
