-- ql3 control-plane schema, version 9: deleting tasks and triggers (issue
-- 10, edge parity; ADR 0014). A delete is soft: the row and its revisions
-- stay for the history of the Runs that pinned them, the trigger gets a
-- disabled head revision (its schedule can never be claimed again), and the
-- name is free for a new task or trigger.

ALTER TABLE ql3.tasks
    ADD COLUMN deleted_at_ms bigint,
    ADD CONSTRAINT tasks_deleted_check CHECK (deleted_at_ms IS NULL OR (NOT enabled AND deleted_at_ms >= created_at_ms));

ALTER TABLE ql3.triggers
    ADD COLUMN deleted_at_ms bigint CHECK (deleted_at_ms IS NULL OR deleted_at_ms >= created_at_ms);

-- Names are unique among the rows that are not deleted.
ALTER TABLE ql3.tasks DROP CONSTRAINT tasks_project_id_name_key;
CREATE UNIQUE INDEX tasks_live_name_idx ON ql3.tasks (project_id, name) WHERE deleted_at_ms IS NULL;
ALTER TABLE ql3.triggers DROP CONSTRAINT triggers_project_id_name_key;
CREATE UNIQUE INDEX triggers_live_name_idx ON ql3.triggers (project_id, name) WHERE deleted_at_ms IS NULL;
