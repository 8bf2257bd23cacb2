package schedule_test

import "github.com/ql3/ql3/controlplane/postgres/internal/pgfixture"

// The shared fixtures (postgres/internal/pgfixture) under the names the
// tests of this package use.
type (
	schedFixture = pgfixture.Sched
	schedTrigger = pgfixture.SchedTrigger
	lifeFixture  = pgfixture.Life
	lifeRun      = pgfixture.LifeRun
	runState     = pgfixture.RunState
)

var (
	newSchedFixture = pgfixture.NewSched
	newLifeFixture  = pgfixture.NewLife
	decideFor       = pgfixture.DecideFor
	admit           = pgfixture.Admit
	sweepOn         = pgfixture.SweepOn
)

const nowSQL = pgfixture.NowSQL
