-- ql3 control-plane schema, version 19: subscriptions per project
-- (issue 24, ADR 0054 for the edge, ADR 0061 for the cluster).
--
-- A subscription pulls a git repository (or one raw file) into the
-- project's scripts folder under <slug>/ and turns the cron comments of its
-- scripts into tasks of the project. Every pull is a Run of the
-- subscription's system task (task_id, NULL until the control plane has
-- published it): logs, history and cancel come from the Run. The fields
-- are the edge's (core/subdef checks them on both binaries).
--
-- credential names an env store entry of the project (its value: an HTTPS
-- token or an SSH private key); the value is never copied here.
CREATE TABLE ql3.subscriptions (
    subscription_id uuid    PRIMARY KEY,
    project_id      uuid    NOT NULL REFERENCES ql3.projects (project_id),
    name            text    NOT NULL CHECK (char_length(name) BETWEEN 1 AND 128),
    slug            text    NOT NULL CHECK (char_length(slug) BETWEEN 1 AND 64),
    kind            text    NOT NULL CHECK (kind IN ('git', 'file')),
    url             text    NOT NULL CHECK (octet_length(url) BETWEEN 1 AND 2048),
    branch          text    NOT NULL DEFAULT '' CHECK (octet_length(branch) <= 255),
    credential      text    NOT NULL DEFAULT '' CHECK (octet_length(credential) <= 128),
    credential_kind text    NOT NULL DEFAULT '' CHECK (credential_kind IN ('', 'token', 'ssh_key')),
    filter          jsonb   NOT NULL DEFAULT '{}', -- include, exclude, extensions (subplan.Filter)
    schedule        text    NOT NULL DEFAULT '' CHECK (octet_length(schedule) <= 128),
    auto_add        boolean NOT NULL,
    auto_remove     boolean NOT NULL,
    remove_mode     text    NOT NULL CHECK (remove_mode IN ('disable', 'delete')),
    default_cron    text    NOT NULL DEFAULT '' CHECK (octet_length(default_cron) <= 128),
    proxy           text    NOT NULL DEFAULT '' CHECK (octet_length(proxy) <= 2048),
    time_zone       text    NOT NULL DEFAULT '' CHECK (octet_length(time_zone) <= 64),
    enabled         boolean NOT NULL,
    task_id         uuid    REFERENCES ql3.tasks (task_id),
    last_commit     text    NOT NULL DEFAULT '' CHECK (octet_length(last_commit) <= 128),
    last_pull_at_ms bigint  NOT NULL DEFAULT 0 CHECK (last_pull_at_ms >= 0),
    version         bigint  NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at_ms   bigint  NOT NULL CHECK (created_at_ms >= 0),
    updated_at_ms   bigint  NOT NULL CHECK (updated_at_ms >= 0),
    UNIQUE (project_id, name),
    UNIQUE (project_id, slug)
);
CREATE UNIQUE INDEX subscriptions_task_idx ON ql3.subscriptions (task_id) WHERE task_id IS NOT NULL;

-- The tasks a subscription made: what it last wrote (applied_*), so a
-- person's later edit is seen (the task's name differs from given_name,
-- its spec digest from applied_digest, its one trigger from applied_cron)
-- and is never overwritten (the plan marks it diverged). The digest, not
-- the revision: publishing a pulled tree re-pins the script tasks of the
-- folder (a new revision, the same spec), which is no edit. applied_name is the
-- script's declared name, given_name the task name it got (a suffix when
-- the name was taken); path is relative to the subscription's folder.
CREATE TABLE ql3.subscription_tasks (
    subscription_id  uuid   NOT NULL REFERENCES ql3.subscriptions (subscription_id) ON DELETE CASCADE,
    task_id          uuid   NOT NULL REFERENCES ql3.tasks (task_id),
    project_id       uuid   NOT NULL REFERENCES ql3.projects (project_id),
    path             text   NOT NULL CHECK (octet_length(path) BETWEEN 1 AND 1024),
    applied_name     text   NOT NULL CHECK (char_length(applied_name) <= 256),
    given_name       text   NOT NULL CHECK (char_length(given_name) <= 256),
    applied_cron     text   NOT NULL CHECK (octet_length(applied_cron) <= 128),
    applied_revision bigint NOT NULL CHECK (applied_revision >= 1),
    applied_digest   bytea  NOT NULL CHECK (octet_length(applied_digest) = 32),
    PRIMARY KEY (subscription_id, task_id)
);
CREATE UNIQUE INDEX subscription_tasks_task_idx ON ql3.subscription_tasks (task_id);
