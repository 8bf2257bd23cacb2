package executor

import (
	"testing"

	"go.uber.org/goleak"
)

// Every attempt's supervisor, drain and wait goroutines must be gone when
// the tests end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
