package importstore_test

import (
	"os"
	"testing"

	"github.com/ql3/ql3/controlplane/pgtest"
)

func TestMain(m *testing.M) {
	if point := os.Getenv(envCrashAt); point != "" {
		os.Exit(crashHelper(point))
	}
	pgtest.Main(m)
}
