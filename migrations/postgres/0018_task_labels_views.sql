-- ql3 control-plane schema, version 18: task labels and saved views on the
-- control plane (issue 26, ADR 0050's contract, ADR 0057).
--
-- A task's labels (core/find.CheckLabels: at most 16, 1..32 characters)
-- are read with the task and are not part of its revision; task_labels
-- holds one row per (label, task) so a label filter walks its primary key
-- in the task list's order (task id) and stops after a page. The labels
-- are also in tasks.search_text (one per line after name and command), so
-- ?q= finds them; that text is written by Go (core/find.Text) on every
-- publish and label change, and no task had labels before this version.
ALTER TABLE ql3.tasks ADD COLUMN labels text[] NOT NULL DEFAULT '{}'
    CHECK (cardinality(labels) <= 16);

CREATE TABLE ql3.task_labels (
    label      text NOT NULL CHECK (char_length(label) BETWEEN 1 AND 32),
    task_id    uuid NOT NULL REFERENCES ql3.tasks (task_id) ON DELETE CASCADE,
    project_id uuid NOT NULL REFERENCES ql3.projects (project_id),
    PRIMARY KEY (label, task_id)
);

CREATE INDEX task_labels_task_idx ON ql3.task_labels (task_id);

-- Saved task filters ("views") per project: a name and the task list's
-- filter {q, label, enabled}; at most 100 per project (checked by the
-- writer under the project's row lock).
CREATE TABLE ql3.task_views (
    view_id       uuid   PRIMARY KEY,
    project_id    uuid   NOT NULL REFERENCES ql3.projects (project_id),
    name          text   NOT NULL CHECK (char_length(name) BETWEEN 1 AND 64),
    filter_q      text   NOT NULL DEFAULT '' CHECK (char_length(filter_q) <= 128),
    filter_label  text   NOT NULL DEFAULT '' CHECK (char_length(filter_label) <= 32),
    filter_enabled text  NOT NULL DEFAULT '' CHECK (filter_enabled IN ('', 'true', 'false')),
    created_at_ms bigint NOT NULL CHECK (created_at_ms >= 0),
    UNIQUE (project_id, name)
);
