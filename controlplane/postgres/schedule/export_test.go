package schedule

import "github.com/ql3/ql3/controlplane/postgres"

// Statements exported to the external tests that check their plans.
var (
	ClaimSchedulesSQLForTest = claimSchedulesSQL
	AdmitSQLForTest          = admitSQL
	PlanSettingsSQLForTest   = postgres.PlanSettingsSQL
	NextDueSQLForTest        = nextDueSQL
)
