-- ql3 control-plane schema, version 3: what the cluster scheduler
-- (controlplane/coordinator, ADR 0006) needs beyond versions 1 and 2.
--
-- No new tables, so the grant matrix is unchanged. The trigger function below
-- gets no EXECUTE grant: PostgreSQL does not check EXECUTE when a trigger
-- fires, only when the trigger is created (by the owner, here).

-- Wake-up on publish. Publication (ql3_admin) resets a schedule row to
-- "uninitialised, unclaimed" (next_fire_at_ms NULL, no claim) whenever a
-- trigger revision is created; every coordinator LISTENs on ql3_schedules and
-- runs a round at once instead of waiting for its cadence, so a new trigger's
-- first fire is not delayed by up to a cadence. The payload is empty on
-- purpose: PostgreSQL folds identical notifications of one transaction into
-- one, so publishing a task with a thousand triggers sends one wake-up, and
-- nothing about the trigger leaves the database. A claim of an
-- uninitialised row sets claim_token and so never notifies.
CREATE FUNCTION ql3.notify_schedule_reset() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_catalog.pg_notify('ql3_schedules', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER trigger_schedules_notify_reset
    AFTER INSERT OR UPDATE ON ql3.trigger_schedules
    FOR EACH ROW
    WHEN (NEW.next_fire_at_ms IS NULL AND NEW.claim_token IS NULL)
    EXECUTE FUNCTION ql3.notify_schedule_reset();

-- A claim changes only unindexed columns, so with free space on the page it
-- is a HOT update: no index entries, fewer index pages for concurrent
-- SERIALIZABLE admissions to conflict on.
ALTER TABLE ql3.trigger_schedules SET (fillfactor = 70);

-- Startup recovery pages through Runs that are not terminal, by run_id.
CREATE INDEX runs_in_flight_idx ON ql3.runs (run_id)
    WHERE status IN ('created', 'queued', 'dispatching', 'running', 'retry_wait', 'lost');

-- The claim's scan order. Due and uninitialised schedules form a prefix of
-- the order "next_fire_at_ms NULLS FIRST, project_id, trigger_id"; written
-- with coalesce(next_fire_at_ms, <bigint minimum>) (the same order: NULL sorts
-- before every cursor) the prefix becomes an index range, so a claim reads
-- only the due rows (plus rows under a live claim) and stops at its budget,
-- instead of sorting the whole table every round.
CREATE INDEX trigger_schedules_due_idx
    ON ql3.trigger_schedules ((coalesce(next_fire_at_ms, -9223372036854775808)), project_id, trigger_id);
