package postgres

// SweepTimeoutCandidatesSQL is the sweeper's timeout scan, for the plan
// test in schema_test.go (package postgres_test).
var SweepTimeoutCandidatesSQL = timeoutCandidatesSQL

// SQLTokenReused is the offer pull's token check, for the same test.
var SQLTokenReused = sqlTokenReused

// SweepLeaseCandidatesSQL is the sweeper's lease scan, for its plan test.
var SweepLeaseCandidatesSQL = leaseCandidatesSQL
