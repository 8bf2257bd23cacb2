package depstore_test

import (
	"testing"

	"github.com/ql3/ql3/controlplane/pgtest"
)

// TestMain runs the package's tests against the shared PostgreSQL cluster.
func TestMain(m *testing.M) { pgtest.Main(m) }
