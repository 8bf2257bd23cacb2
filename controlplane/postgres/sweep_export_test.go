package postgres

// SweepTimeoutCandidatesSQL is the sweeper's timeout scan, for the plan
// test in schema_test.go (package postgres_test).
var SweepTimeoutCandidatesSQL = timeoutCandidatesSQL
