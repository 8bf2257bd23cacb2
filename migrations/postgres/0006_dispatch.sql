-- ql3 control-plane schema, version 6: what worker dispatch and the remote
-- run lifecycle need (issue 9, ADRs 0009–0012): candidate discovery over
-- queued and re-offerable dispatching Runs, the attempt's durable deadline
-- and exact completion facts, per-stream log state, the Run's cancel reason
-- and the credential supersede marker for observe-then-revoke rotation.
--
-- One new table (run_log_streams); its grant-matrix row is in
-- controlplane/postgres/grants.go. Every new column is nullable or has a
-- default, so rows written by versions 1–5 stay valid as they are.

-- Runs -----------------------------------------------------------------------

-- Why a cancel was asked for: user (admin API), timeout (the attempt's
-- durable deadline passed), replace (concurrency policy "replace"),
-- shutdown (the control plane retired the Run, e.g. its project was
-- archived). Set together with cancel_requested_at_ms, never without it, so
-- "is there a cancel intent" stays one column test. A timeout intent maps to
-- timed_out, every other one to cancelled (ADR 0011).
ALTER TABLE ql3.runs
    ADD COLUMN cancel_reason text CHECK (cancel_reason IN ('user', 'timeout', 'replace', 'shutdown')),
    -- Database time of the running ACK of the Attempt that ran last.
    ADD COLUMN started_at_ms bigint CHECK (started_at_ms IS NULL OR started_at_ms >= 0),
    ADD CONSTRAINT runs_cancel_intent_check
        CHECK ((cancel_reason IS NULL) = (cancel_requested_at_ms IS NULL));

-- Candidate discovery (ADR-0108 §3, ADR 0009): queued Runs and dispatching
-- Runs whose lease was released or expired before the start barrier, by
-- priority DESC, FIFO, stable id, without a cancel intent. Replaces the
-- queued-only index of version 1, which nothing reads. Dispatching Runs
-- with a live lease or a started Attempt stay in the index but are filtered
-- by the candidate query (their lease or Attempt says so); there are at
-- most "sum of session capacities" of them.
DROP INDEX ql3.runs_runnable_idx;
CREATE INDEX runs_dispatchable_idx ON ql3.runs (priority DESC, created_at_ms, run_id)
    WHERE status IN ('queued', 'dispatching') AND cancel_requested_at_ms IS NULL;

-- Attempts -------------------------------------------------------------------

ALTER TABLE ql3.attempts
    -- Durable deadline, fixed at the starting ACK: database now + the
    -- pinned timeout (runs.timeout_ms). Past it the Run gets a timeout
    -- cancel intent; the worker's own timer is best effort only.
    ADD COLUMN deadline_at_ms bigint CHECK (deadline_at_ms IS NULL OR deadline_at_ms > 0),
    -- The signal that ended the process, as the completion reported it.
    ADD COLUMN signal text CHECK (signal ~ '^SIG[A-Z0-9]{1,12}$'),
    -- Stream lengths the completion reported (ADR 0012 compares them with
    -- run_log_streams).
    ADD COLUMN stdout_bytes bigint CHECK (stdout_bytes BETWEEN 0 AND 1073741824),
    ADD COLUMN stderr_bytes bigint CHECK (stderr_bytes BETWEEN 0 AND 1073741824),
    -- SHA-256 of the recorded completion's outcome facts (status, class,
    -- exit code, signal, worker times, byte counts, truncation; never the
    -- lease reference or token), so an exact replay answers duplicate and
    -- anything else with the same lease answers conflict.
    ADD COLUMN completion_digest bytea CHECK (octet_length(completion_digest) = 32),
    ADD CONSTRAINT attempts_deadline_started_check
        CHECK (deadline_at_ms IS NULL OR status <> 'claimed'),
    ADD CONSTRAINT attempts_completion_final_check
        CHECK (completion_digest IS NULL OR finished_at_ms IS NOT NULL);

-- Timeout sweep (lifecycle): started attempts by deadline.
CREATE INDEX attempts_deadline_idx ON ql3.attempts (deadline_at_ms, attempt_id)
    WHERE status IN ('starting', 'running');

-- Log streams ------------------------------------------------------------------

-- One row per attempt and stream: what the authority has received, so the
-- next offset, gaps, overlaps, the cap and eof are checked by one row
-- instead of scanning chunks. length_bytes is the stream length the worker
-- has delivered (its next offset); stored_bytes ≤ length_bytes is what was
-- kept under the per-attempt cap (the rest was dropped and truncated set).
-- closed: an eof was recorded at length_bytes; nothing may follow it.
CREATE TABLE ql3.run_log_streams (
    run_id        uuid    NOT NULL,
    attempt       integer NOT NULL,
    stream        text    NOT NULL CHECK (stream IN ('stdout', 'stderr')),
    project_id    uuid    NOT NULL,
    length_bytes  bigint  NOT NULL DEFAULT 0 CHECK (length_bytes BETWEEN 0 AND 1073741824),
    stored_bytes  bigint  NOT NULL DEFAULT 0 CHECK (stored_bytes BETWEEN 0 AND 1073741824),
    truncated     boolean NOT NULL DEFAULT false,
    closed        boolean NOT NULL DEFAULT false,
    created_at_ms bigint  NOT NULL CHECK (created_at_ms >= 0),
    updated_at_ms bigint  NOT NULL CHECK (updated_at_ms >= created_at_ms),
    PRIMARY KEY (run_id, attempt, stream),
    CHECK (stored_bytes <= length_bytes),
    CHECK (truncated OR stored_bytes = length_bytes),
    FOREIGN KEY (run_id, attempt) REFERENCES ql3.attempts (run_id, attempt)
);

-- Workers: credential rotation (observe-then-revoke, ADR-0235) --------------------

-- Rotation issues credential B and marks the old active ones superseded by
-- B, with revoke_after_ms = database now + graceMs as an upper bound. A
-- reconciler on the admin pool revokes a superseded credential once a
-- session of the worker has presented B (worker_sessions.credential_id = B
-- with credential_observed_at_ms ≥ superseded_at_ms), or at
-- revoke_after_ms, whichever is first. revoke_reason says which.
ALTER TABLE ql3.worker_credentials
    ADD COLUMN superseded_by uuid REFERENCES ql3.worker_credentials (credential_id),
    ADD COLUMN superseded_at_ms bigint,
    ADD COLUMN revoke_after_ms bigint,
    ADD COLUMN revoke_reason text CHECK (revoke_reason IN ('admin', 'superseded', 'grace_elapsed', 'worker_disabled')),
    ADD CONSTRAINT worker_credentials_supersede_check
        CHECK ((superseded_by IS NULL) = (superseded_at_ms IS NULL)
           AND (superseded_by IS NULL OR revoke_after_ms IS NOT NULL)
           AND superseded_by IS DISTINCT FROM credential_id),
    ADD CONSTRAINT worker_credentials_revoked_reason_check
        CHECK (revoke_reason IS NULL OR status = 'revoked');

-- The reconciler's scan: superseded credentials still active.
CREATE INDEX worker_credentials_superseded_idx ON ql3.worker_credentials (revoke_after_ms, credential_id)
    WHERE status = 'active' AND superseded_by IS NOT NULL;

-- Database time at which this session last presented credential_id in a
-- heartbeat (or at open); written by the ingress role with credential_id.
ALTER TABLE ql3.worker_sessions
    ADD COLUMN credential_observed_at_ms bigint,
    ADD CONSTRAINT worker_sessions_credential_observed_check
        CHECK (credential_observed_at_ms IS NULL OR credential_id IS NOT NULL);

-- Sessions presenting a credential (the reconciler's join).
CREATE INDEX worker_sessions_credential_idx ON ql3.worker_sessions (credential_id)
    WHERE credential_id IS NOT NULL;
