-- ql3 control-plane schema, version 22: the claim reads a queue of claimable
-- Runs, not the Runs (issue 28, ADR 0064).
--
-- Until now the claim walked runs_dispatchable_idx, which holds every
-- queued and every dispatching Run: with batched pulls a Run stays
-- dispatching from its claim to its completion, so each claim passed over
-- every in-flight Run (sum of the session capacities) and the dead entries
-- of the Runs completed since the last vacuum, each with an Attempt and a
-- lease probe (18.5 ms per claim statement at 32 × 8 slots).
--
-- ql3.run_queue holds one row per queued Run, ordered exactly as the claim
-- reads (priority DESC, FIFO, stable id). The claim deletes the row of the
-- Run it claims in the same statement, so in-flight Runs are never read;
-- a row deleted by a claim is a dead entry of a small index that index
-- scans mark killed and the frequent autovacuum below removes.
--
-- The rows follow the Runs' status, whoever writes it (admission, manual
-- runs, reruns, promotion of held Runs, retries, requeue by the lease
-- sweep, cancel, the sweeps' ends): a Run that becomes queued gets its row
-- (inserted Runs: one statement-level trigger per INSERT statement, so an
-- admission page costs one trigger call; updated Runs: a row trigger whose
-- WHEN, evaluated without calling the function, is false for every Run
-- update of the dispatch path), and a Run that leaves queued for anything
-- but dispatching loses it. queued → dispatching is the claim's, which
-- deletes the row itself. priority and created_at_ms never change after a
-- Run's insert, so the row's key is the Run's.
--
-- A dispatching Run whose unstarted lease expired is not in the queue: the
-- lease sweep releases the lease and queues the Run again (its requeue),
-- which gives it its row; the claim reads nothing but the queue.
--
-- The row also carries what the claim's window filters and matches on
-- before it touches the Run: the execution revision and its digest (the
-- placement the pull made) and not_before_ms. All three are fixed while a
-- Run is queued (not_before_ms changes only on the way to retry_wait, which
-- leaves the queue), so the window is one scan of this table and only the
-- row the claim picks is read from runs and attempts.
CREATE TABLE ql3.run_queue (
    priority              integer NOT NULL,
    created_at_ms         bigint  NOT NULL,
    run_id                uuid    NOT NULL,
    execution_revision_id uuid    NOT NULL,
    execution_digest      bytea   NOT NULL,
    not_before_ms         bigint  NOT NULL
) WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000,
        autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 2000);

CREATE UNIQUE INDEX run_queue_claim_idx ON ql3.run_queue (priority DESC, created_at_ms, run_id);

INSERT INTO ql3.run_queue (priority, created_at_ms, run_id, execution_revision_id, execution_digest, not_before_ms)
SELECT priority, created_at_ms, run_id, execution_revision_id, execution_digest, not_before_ms
FROM ql3.runs WHERE status = 'queued';

CREATE FUNCTION ql3.run_queue_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ql3.run_queue (priority, created_at_ms, run_id, execution_revision_id, execution_digest, not_before_ms)
    SELECT n.priority, n.created_at_ms, n.run_id, n.execution_revision_id, n.execution_digest, n.not_before_ms
    FROM inserted n WHERE n.status = 'queued';
    RETURN NULL;
END
$$;

CREATE FUNCTION ql3.run_queue_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'queued' THEN
        INSERT INTO ql3.run_queue (priority, created_at_ms, run_id, execution_revision_id, execution_digest, not_before_ms)
        VALUES (NEW.priority, NEW.created_at_ms, NEW.run_id, NEW.execution_revision_id, NEW.execution_digest,
            NEW.not_before_ms) ON CONFLICT DO NOTHING;
    ELSE
        DELETE FROM ql3.run_queue
        WHERE priority = OLD.priority AND created_at_ms = OLD.created_at_ms AND run_id = OLD.run_id;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER runs_queue_inserted AFTER INSERT ON ql3.runs
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION ql3.run_queue_inserted();

CREATE TRIGGER runs_queue_moved AFTER UPDATE OF status ON ql3.runs FOR EACH ROW
    WHEN ((NEW.status = 'queued') <> (OLD.status = 'queued') AND NEW.status <> 'dispatching')
    EXECUTE FUNCTION ql3.run_queue_moved();

-- Nothing reads the dispatchable index any more; every queued and
-- dispatching Run version cost an entry in it.
DROP INDEX ql3.runs_dispatchable_idx;

-- Retention (finished_at_ms, run_id) and the overview's window (finished
-- time, status, project) read the same rows in the same order: one index
-- for both, one entry less per finished Run.
DROP INDEX ql3.runs_finished_status_idx;
DROP INDEX ql3.runs_finished_idx;
CREATE INDEX runs_finished_idx ON ql3.runs (finished_at_ms, run_id) INCLUDE (status, project_id)
    WHERE finished_at_ms IS NOT NULL;
