package postgres

// Statements exported to the external tests that check their plans.
var (
	ClaimSchedulesSQLForTest = claimSchedulesSQL
	AdmitSQLForTest          = admitSQL
	PlanSettingsSQLForTest   = planSettingsSQL
	NextDueSQLForTest        = nextDueSQL
)
