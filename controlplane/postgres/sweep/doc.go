// Package sweep is the sweeper: expired and lost leases, timed-out and
// lost Runs and retention, each change one pipelined transaction.
package sweep
