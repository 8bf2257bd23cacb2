package app

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if Main leaves goroutines behind after Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
