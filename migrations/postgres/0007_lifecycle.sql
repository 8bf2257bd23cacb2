-- ql3 control-plane schema, version 7: the cluster run lifecycle (issue 10,
-- ADRs 0013–0016): the sweeper's scans (lost Runs, Runs held by the
-- concurrency policy, cancel intents to converge, finished Runs and audit
-- rows past their retention), the concurrency check at admission and the
-- run-now request digest.
--
-- No new tables. Every new column is nullable, so rows written by versions
-- 1–6 stay valid as they are.

-- Run-now (POST /api/v1/tasks/{task}/runs with Idempotency-Key): the
-- SHA-256 of the canonical request, so a repeated key with the same body
-- returns the same Run and a different body is refused (409). NULL for
-- scheduled Runs, whose key is derived from the occurrence.
ALTER TABLE ql3.runs
    ADD COLUMN request_digest bytea CHECK (octet_length(request_digest) = 32),
    ADD CONSTRAINT runs_request_digest_manual_check
        CHECK (request_digest IS NULL OR origin IN ('manual', 'rerun'));

-- Active Runs of a task: the concurrency policy at admission (forbid: is
-- another Run of the task active; replace: which ones to ask to stop) and
-- the promotion of a held Run (status created) once none is left.
CREATE INDEX runs_task_active_idx ON ql3.runs (task_id, created_at_ms, run_id)
    WHERE status IN ('created', 'queued', 'dispatching', 'running', 'retry_wait', 'lost');

-- Sweeper: Runs held back by concurrency "replace" (status created), oldest
-- first.
CREATE INDEX runs_held_idx ON ql3.runs (created_at_ms, run_id) WHERE status = 'created';

-- Sweeper: lost Runs to resolve (retry_wait, failed or cancelled).
CREATE INDEX runs_lost_idx ON ql3.runs (updated_at_ms, run_id) WHERE status = 'lost';

-- Sweeper: cancel intents on Runs that are not executing (converge to
-- cancelled), plus dispatching Runs whose Attempt has not started (the
-- lease is released and the Run cancelled at once).
CREATE INDEX runs_cancel_pending_idx ON ql3.runs (cancel_requested_at_ms, run_id)
    WHERE cancel_requested_at_ms IS NOT NULL
      AND status IN ('created', 'queued', 'dispatching', 'retry_wait', 'lost');

-- Retention: finished Runs, oldest first.
CREATE INDEX runs_finished_idx ON ql3.runs (finished_at_ms, run_id) WHERE finished_at_ms IS NOT NULL;

-- Run list by task (admin API), newest first.
CREATE INDEX runs_task_created_idx ON ql3.runs (task_id, created_at_ms DESC, run_id);

-- Retention deletes a Run's rows through these keys; without them each
-- delete would scan the child tables.
CREATE INDEX run_leases_run_idx ON ql3.run_leases (run_id);
-- Retention keeps a Run that a kept rerun points at.
CREATE INDEX runs_rerun_of_idx ON ql3.runs (rerun_of_run_id) WHERE rerun_of_run_id IS NOT NULL;
