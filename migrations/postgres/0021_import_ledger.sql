-- ql3 control-plane schema, version 21: the cluster's import ledger (ADR
-- 0056 for the import, ADR 0063 for the cluster).
--
-- One row per plan applied to a project, keyed by (project, plan digest):
-- the digest binds every row, value and script digest the QingLong source
-- had when it was inspected, and the legacy zone. The row is written in the
-- one transaction that also writes the tasks, triggers, env entries,
-- script files and audit lines, so it exists exactly when they do; a
-- replay finds it and writes nothing.
CREATE TABLE ql3.import_ledger (
    project_id    uuid   NOT NULL REFERENCES ql3.projects (project_id),
    plan_digest   text   NOT NULL CHECK (char_length(plan_digest) BETWEEN 1 AND 80),
    zone          text   NOT NULL CHECK (char_length(zone) BETWEEN 1 AND 64),
    source        text   NOT NULL CHECK (char_length(source) <= 4096),
    applied_at_ms bigint NOT NULL,
    actor         text   NOT NULL DEFAULT '' CHECK (char_length(actor) <= 128),
    summary       jsonb  NOT NULL DEFAULT '{}',
    PRIMARY KEY (project_id, plan_digest)
);

-- What each QingLong row became (kind: task, env, subscription,
-- dependency, script; source_id: the row's id in its QingLong table, minus
-- the line of a config.sh draft, or the file's index in the plan).
CREATE TABLE ql3.import_rows (
    project_id  uuid   NOT NULL,
    plan_digest text   NOT NULL,
    kind        text   NOT NULL CHECK (kind IN ('task', 'env', 'subscription', 'dependency', 'script')),
    source_id   bigint NOT NULL,
    target_id   text   NOT NULL CHECK (char_length(target_id) BETWEEN 1 AND 4096),
    PRIMARY KEY (project_id, plan_digest, kind, source_id),
    FOREIGN KEY (project_id, plan_digest) REFERENCES ql3.import_ledger (project_id, plan_digest)
);
