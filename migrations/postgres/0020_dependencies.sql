-- ql3 control-plane schema, version 20: the cluster's dependencies (issue
-- 24, ADR 0062).
--
-- A project's dependency is a package its scripts need (node, python or
-- linux; names and versions checked by core/depcmd) on the workers its
-- placement labels select ({} = every worker). Each action (install,
-- reinstall, remove) is one Run per matching worker, pinned to that worker
-- by the reserved placement label ql3.worker; dependency_installs records,
-- per dependency and worker, the last action's Run and what it left. A
-- Run's end is recorded in the transaction that ends it (the trigger
-- below), whichever path ends it — completion, a cancel, the sweep — so
-- what a worker has installed outlives the Run's retention.

CREATE TABLE ql3.dependencies (
    dependency_id uuid   PRIMARY KEY,
    project_id    uuid   NOT NULL REFERENCES ql3.projects (project_id),
    kind          text   NOT NULL CHECK (kind IN ('node', 'python', 'linux')),
    name          text   NOT NULL CHECK (octet_length(name) BETWEEN 1 AND 300),
    version       text   NOT NULL DEFAULT '' CHECK (octet_length(version) <= 64),
    labels        jsonb  NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(labels) = 'object'
                             AND octet_length(labels::text) <= 8192),
    status        text   NOT NULL DEFAULT 'new' CHECK (status IN ('new', 'installing', 'installed', 'failed',
                             'removing', 'removed', 'cancelled')),
    last_action   text   CHECK (last_action IN ('install', 'reinstall', 'remove')),
    created_at_ms bigint NOT NULL CHECK (created_at_ms >= 0),
    updated_at_ms bigint NOT NULL CHECK (updated_at_ms >= created_at_ms),
    UNIQUE (project_id, kind, name),
    UNIQUE (dependency_id, project_id)
);

-- The registry (mirror) and proxy of one kind's installs in a project.
CREATE TABLE ql3.dependency_settings (
    project_id    uuid   NOT NULL REFERENCES ql3.projects (project_id),
    kind          text   NOT NULL CHECK (kind IN ('node', 'python', 'linux')),
    registry      text   NOT NULL DEFAULT '' CHECK (octet_length(registry) <= 2048),
    proxy         text   NOT NULL DEFAULT '' CHECK (octet_length(proxy) <= 2048),
    updated_at_ms bigint NOT NULL CHECK (updated_at_ms >= 0),
    PRIMARY KEY (project_id, kind)
);

-- What a worker has of a dependency: its last action's Run and, once the
-- Run ended, what it left (installed, removed, failed, cancelled) and
-- when. The record is written before the Run is created, naming the Run by
-- the run-now idempotency key it will carry (run_key, "dep:…"; the Run's
-- idempotency_key is 'ql3:manual:v1:' || run_key, postgres/runops), so a
-- Run that ends at once still finds its record. No foreign key to the
-- Run: retention deletes Runs, the record stays.
CREATE TABLE ql3.dependency_installs (
    dependency_id  uuid   NOT NULL,
    project_id     uuid   NOT NULL,
    worker_id      uuid   NOT NULL REFERENCES ql3.workers (worker_id),
    task_id        uuid   NOT NULL,
    action         text   NOT NULL CHECK (action IN ('install', 'reinstall', 'remove')),
    version        text   NOT NULL DEFAULT '' CHECK (octet_length(version) <= 64),
    run_key        text   NOT NULL CHECK (run_key LIKE 'dep:%' AND octet_length(run_key) <= 128),
    run_id         uuid,
    status         text   NOT NULL CHECK (status IN ('installing', 'installed', 'failed', 'removing', 'removed', 'cancelled')),
    started_at_ms  bigint NOT NULL CHECK (started_at_ms >= 0),
    finished_at_ms bigint,
    PRIMARY KEY (dependency_id, worker_id),
    FOREIGN KEY (dependency_id, project_id) REFERENCES ql3.dependencies (dependency_id, project_id) ON DELETE CASCADE,
    CHECK ((finished_at_ms IS NULL) = (status IN ('installing', 'removing')))
);
-- The trigger's lookup: only the installs whose Run has not ended.
CREATE UNIQUE INDEX dependency_installs_pending_idx ON ql3.dependency_installs (project_id, run_key)
    WHERE finished_at_ms IS NULL;

-- Both functions run as the schema's owner (SECURITY DEFINER, a fixed
-- search_path): the runtime role that ends a Run needs no privilege on
-- these tables, and no one else can call them (EXECUTE is revoked from
-- every role).

-- Recorded when the Run ends, in the transaction that ends it: the status
-- the Run's end gives the install of its action.
CREATE FUNCTION ql3.dependency_run_finished() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE ql3.dependency_installs
       SET status = CASE
               WHEN NEW.status = 'succeeded' AND action = 'remove' THEN 'removed'
               WHEN NEW.status = 'succeeded' THEN 'installed'
               WHEN NEW.status = 'cancelled' THEN 'cancelled'
               ELSE 'failed' END,
           finished_at_ms = NEW.finished_at_ms, run_id = NEW.run_id
     WHERE project_id = NEW.project_id AND run_key = substr(NEW.idempotency_key, 15) AND finished_at_ms IS NULL;
    RETURN NULL;
END
$$;

CREATE TRIGGER runs_dependency_finished AFTER UPDATE OF status ON ql3.runs
    FOR EACH ROW WHEN (NEW.finished_at_ms IS NOT NULL AND OLD.finished_at_ms IS NULL
        AND left(NEW.idempotency_key, 18) = 'ql3:manual:v1:dep:')
    EXECUTE FUNCTION ql3.dependency_run_finished();

-- A dependency's status sums up its installs, after every change of one:
-- an unfinished install makes it installing (removing), else a failed or
-- a cancelled one names it, else the last action's outcome.
CREATE FUNCTION ql3.dependency_installs_changed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE ql3.dependencies d
       SET (status, updated_at_ms) = (SELECT CASE
               WHEN bool_or(i.finished_at_ms IS NULL) THEN CASE d.last_action WHEN 'remove' THEN 'removing' ELSE 'installing' END
               WHEN bool_or(i.status = 'failed') THEN 'failed'
               WHEN bool_or(i.status = 'cancelled') THEN 'cancelled'
               WHEN d.last_action = 'remove' THEN 'removed'
               ELSE 'installed' END,
               greatest(d.updated_at_ms, coalesce(max(i.finished_at_ms), 0))
           FROM ql3.dependency_installs i WHERE i.dependency_id = d.dependency_id)
     WHERE d.dependency_id = NEW.dependency_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER dependency_installs_changed AFTER INSERT OR UPDATE ON ql3.dependency_installs
    FOR EACH ROW EXECUTE FUNCTION ql3.dependency_installs_changed();
