package postgres

// Statements exported to the external tests that check their plans.
var (
	ClaimSchedulesSQLForTest = claimSchedulesSQL
	AdmitSQLForTest          = admitSQL
	NextDueSQLForTest        = nextDueSQL
)
