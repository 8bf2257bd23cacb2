-- ql3-edge schema, version 9 (SQLite): the import ledger (ADR 0056).
--
-- One row per applied import plan, keyed by the plan digest (which binds
-- every row, value and script digest the source had when it was inspected,
-- and the legacy zone): a replay of the same plan finds its row and writes
-- nothing. The row is written in the transaction that creates the tasks,
-- env entries and other records, so it exists exactly when they do.
-- files_pending is 1 while the staged script files are still to be moved
-- into the scripts folder (finished after the commit, on the next apply or
-- at the next start).
CREATE TABLE import_ledger (
    plan_digest   TEXT    NOT NULL PRIMARY KEY CHECK (length(plan_digest) BETWEEN 1 AND 80),
    zone          TEXT    NOT NULL CHECK (length(zone) BETWEEN 1 AND 64),
    source        TEXT    NOT NULL CHECK (length(source) <= 4096),
    applied_at_ms INTEGER NOT NULL,
    actor         TEXT    NOT NULL DEFAULT '' CHECK (length(actor) <= 64),
    summary       TEXT    NOT NULL DEFAULT '{}',
    files_pending INTEGER NOT NULL CHECK (files_pending IN (0, 1))
) STRICT;

-- What each QingLong row became (kind: task, env, subscription,
-- dependency; source_id: the row's id in its QingLong table, or minus the
-- line of a config.sh draft).
CREATE TABLE import_rows (
    plan_digest TEXT    NOT NULL REFERENCES import_ledger (plan_digest),
    kind        TEXT    NOT NULL CHECK (kind IN ('task', 'env', 'subscription', 'dependency')),
    source_id   INTEGER NOT NULL,
    target_id   TEXT    NOT NULL,
    PRIMARY KEY (plan_digest, kind, source_id)
) STRICT, WITHOUT ROWID;
