package subrun_test

import (
	"testing"

	"github.com/ql3/ql3/controlplane/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
