package pullpace_test

import "github.com/ql3/ql3/controlplane/postgres/internal/pgfixture"

// The shared scheduler fixture (postgres/internal/pgfixture).
var newSchedFixture = pgfixture.NewSched
