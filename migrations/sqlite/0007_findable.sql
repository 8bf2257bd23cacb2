-- ql3-edge schema, version 7 (SQLite): tasks findable at scale (ADR 0050).
--
-- search_text is what a task search looks in: the name, the command and
-- the labels, lower-cased the way SQLite's lower() does (ASCII letters
-- only, so Go writes exactly what this backfill writes). A search is a
-- substring test over it (instr), which finds a Chinese substring as well
-- as a Latin one; 10,000 tasks are one short scan.
ALTER TABLE tasks ADD COLUMN search_text TEXT NOT NULL DEFAULT '';

-- labels: the task's labels as a JSON array in the user's order (read
-- with the task); task_labels: the same labels, one row each, for the
-- label filter's index.
ALTER TABLE tasks ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';

CREATE TABLE task_labels (
    task_id TEXT NOT NULL REFERENCES tasks (id),
    label   TEXT NOT NULL CHECK (length(label) BETWEEN 1 AND 32),
    PRIMARY KEY (label, task_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX task_labels_task ON task_labels (task_id);

UPDATE tasks SET search_text = lower(name || char(10) || IFNULL((
    SELECT COALESCE(json_extract(r.spec_json, '$.shell.command'),
                    json_extract(r.spec_json, '$.argv.file')
                    || IFNULL((SELECT ' ' || group_concat(a.value, ' ') FROM json_each(r.spec_json, '$.argv.args') a), ''))
    FROM task_revisions r WHERE r.task_id = tasks.id AND r.revision = tasks.current_revision), ''));

-- Saved task filters ("views", as QingLong has): a name and the filter.
CREATE TABLE task_views (
    id            TEXT    NOT NULL PRIMARY KEY,
    name          TEXT    NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 128),
    search        TEXT    NOT NULL DEFAULT '' CHECK (length(search) <= 512),
    label         TEXT    NOT NULL DEFAULT '' CHECK (length(label) <= 128),
    enabled       TEXT    NOT NULL DEFAULT '' CHECK (enabled IN ('', 'true', 'false')),
    created_at_ms INTEGER NOT NULL
) STRICT;

-- The task list's page: the tasks of a project in creation order, read
-- in index order and stopped after a page (without it SQLite sorted every
-- task of the project for each page). It carries deleted_at_ms, enabled
-- and search_text, so a search or a count reads the index alone, never the
-- table (a partial index would not: SQLite reads the table to check the
-- index's own condition).
CREATE INDEX tasks_find ON tasks (project_id, created_at_ms, id, deleted_at_ms, enabled, search_text);

-- The overview counts the runs that finished in the last 24 hours by
-- status, and finds the newest failures, from this index alone: a range
-- of the window per status, already grouped.
-- Not partial: the window's lower bound is a parameter, and SQLite uses a
-- partial index only where it can prove the index's condition.
CREATE INDEX runs_status_finished ON runs (status, finished_at_ms);
