// Package schedule is the scheduler's side of the PostgreSQL adapter: the
// claim of due schedules, batched admission (pipelined transactions) and the
// next-due read. Scheduler implements controlplane.Scheduling on a runtime
// pool; its Sweep is package sweep's.
package schedule
