package httpapi

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a handler (a log follow) leaves a
// goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
