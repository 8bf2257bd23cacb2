package sweep

// SweepTimeoutCandidatesSQL is the sweeper's timeout scan, for its plan
// test in plan_test.go (package sweep_test).
var SweepTimeoutCandidatesSQL = timeoutCandidatesSQL

// SweepLeaseCandidatesSQL is the sweeper's lease scan, for its plan test.
var SweepLeaseCandidatesSQL = leaseCandidatesSQL
