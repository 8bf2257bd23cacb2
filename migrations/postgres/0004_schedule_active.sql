-- ql3 control-plane schema, version 4: inactive schedules leave the claim
-- scan (ADR 0006).
--
-- The claim reads trigger_schedules_due_idx from its start ("due or
-- uninitialised" is a prefix of the claim order), but eligibility (active
-- project, enabled trigger revision, enabled task) lives in other tables. A
-- schedule whose trigger or task was disabled, or whose project was
-- archived, keeps a NULL or past cursor and so stayed in that prefix for
-- ever, skipped row by row by every claim (~5 µs each). The row now carries
-- the answer itself: active is written by publication, in the same
-- SERIALIZABLE transaction that changes what it summarises (trigger
-- publication upserts the schedule; task enable/disable and project archive
-- reset the task's or project's schedules after writing the new state), and
-- the due index covers active rows only.
--
-- active is a scan hint, never the authority: the claim still evaluates the
-- full eligibility and admission re-checks it in its own snapshot, so a row
-- wrongly marked active costs only the old row-by-row skip, and nothing
-- ineligible is ever admitted. The default (true) is the old behaviour for
-- any writer that does not set it. No new table, so the grant matrix is
-- unchanged; the column is not touched by claims or admissions, so their
-- updates stay HOT-eligible as before.
ALTER TABLE ql3.trigger_schedules ADD COLUMN active boolean NOT NULL DEFAULT true;

UPDATE ql3.trigger_schedules s SET active = coalesce((
    SELECT p.status = 'active' AND r.enabled AND k.enabled
    FROM ql3.trigger_revisions r
    JOIN ql3.tasks k ON k.task_id = r.task_id
    JOIN ql3.projects p ON p.project_id = r.project_id
    WHERE r.trigger_id = s.trigger_id AND r.revision = s.trigger_revision), false);

-- Same order as version 3's index (see 0003), active rows only. The claim and
-- the next-due probe say "AND s.active", which lets the planner use it.
DROP INDEX ql3.trigger_schedules_due_idx;
CREATE INDEX trigger_schedules_due_idx
    ON ql3.trigger_schedules ((coalesce(next_fire_at_ms, -9223372036854775808)), project_id, trigger_id)
    WHERE active;
