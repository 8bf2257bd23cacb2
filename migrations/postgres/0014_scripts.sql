-- ql3 control-plane schema, version 14: the per-project scripts folder
-- (issue 22, ADR 0052).
--
-- A project's scripts are content-addressed: each distinct content is one
-- row of script_blobs (keyed by its SHA-256, stored once per project, never
-- on a replica's disk), and the folder is script_entries (path → blob).
-- Publishing a script task snapshots the folder the script runs from into
-- an immutable script tree (script_trees + script_tree_files, keyed by
-- core/scriptpath.TreeDigest) pinned by its execution revision, so an edit
-- publishes a new tree and a Run in flight keeps the one it started from.
-- Blobs that no entry and no tree names, and trees no execution revision
-- pins, are deleted by the retention sweep.

CREATE TABLE ql3.script_blobs (
    project_id    uuid   NOT NULL REFERENCES ql3.projects (project_id),
    sha256        bytea  NOT NULL CHECK (octet_length(sha256) = 32),
    size          bigint NOT NULL CHECK (size BETWEEN 0 AND 67108864),
    content       bytea  NOT NULL CHECK (octet_length(content) = size),
    created_at_ms bigint NOT NULL CHECK (created_at_ms >= 0),
    PRIMARY KEY (project_id, sha256)
);
-- Uncompressed out-of-line storage: a worker's ranged read
-- (substring(content ...)) fetches only the chunks it needs.
ALTER TABLE ql3.script_blobs ALTER COLUMN content SET STORAGE EXTERNAL;

CREATE TABLE ql3.script_entries (
    project_id uuid    NOT NULL REFERENCES ql3.projects (project_id),
    path       text    NOT NULL CHECK (octet_length(path) BETWEEN 1 AND 1024),
    parent     text    NOT NULL CHECK (octet_length(parent) <= 1024),
    kind       text    NOT NULL CHECK (kind IN ('file', 'dir')),
    sha256     bytea   CHECK (octet_length(sha256) = 32),
    size       bigint  NOT NULL DEFAULT 0 CHECK (size BETWEEN 0 AND 67108864),
    executable boolean NOT NULL DEFAULT false,
    mtime_ms   bigint  NOT NULL CHECK (mtime_ms >= 0),
    PRIMARY KEY (project_id, path),
    FOREIGN KEY (project_id, sha256) REFERENCES ql3.script_blobs (project_id, sha256),
    CHECK ((kind = 'file') = (sha256 IS NOT NULL))
);
CREATE INDEX script_entries_parent_idx ON ql3.script_entries (project_id, parent, path);
CREATE INDEX script_entries_blob_idx ON ql3.script_entries (project_id, sha256) WHERE sha256 IS NOT NULL;

CREATE TABLE ql3.script_trees (
    project_id    uuid   NOT NULL REFERENCES ql3.projects (project_id),
    digest        bytea  NOT NULL CHECK (octet_length(digest) = 32),
    files         int    NOT NULL CHECK (files BETWEEN 0 AND 8192),
    bytes         bigint NOT NULL CHECK (bytes BETWEEN 0 AND 536870912),
    created_at_ms bigint NOT NULL CHECK (created_at_ms >= 0),
    PRIMARY KEY (project_id, digest)
);

CREATE TABLE ql3.script_tree_files (
    project_id  uuid    NOT NULL,
    tree_digest bytea   NOT NULL,
    path        text    NOT NULL CHECK (octet_length(path) BETWEEN 1 AND 1024),
    sha256      bytea   NOT NULL,
    size        bigint  NOT NULL CHECK (size BETWEEN 0 AND 67108864),
    executable  boolean NOT NULL,
    PRIMARY KEY (project_id, tree_digest, path),
    FOREIGN KEY (project_id, tree_digest) REFERENCES ql3.script_trees (project_id, digest) ON DELETE CASCADE,
    FOREIGN KEY (project_id, sha256) REFERENCES ql3.script_blobs (project_id, sha256)
);
CREATE INDEX script_tree_files_blob_idx ON ql3.script_tree_files (project_id, sha256);

-- The tree a script task's execution revision runs from: the script's
-- folder (relative to the project's scripts folder, '' for the top) and
-- its tree digest. NULL for argv and shell tasks.
ALTER TABLE ql3.execution_revisions
    ADD COLUMN script_dir  text  CHECK (octet_length(script_dir) <= 1024),
    ADD COLUMN script_tree bytea CHECK (octet_length(script_tree) = 32),
    ADD CONSTRAINT execution_revisions_script_check CHECK ((script_dir IS NULL) = (script_tree IS NULL)),
    ADD CONSTRAINT execution_revisions_script_tree_fkey
        FOREIGN KEY (project_id, script_tree) REFERENCES ql3.script_trees (project_id, digest);
CREATE INDEX execution_revisions_script_tree_idx ON ql3.execution_revisions (project_id, script_tree)
    WHERE script_tree IS NOT NULL;

-- QingLong's RandomDelay on the cluster: admission delays a scheduled
-- occurrence of a task with randomDelayMs by
-- core/scriptpath.RandomDelayMs(idempotency key, max) (computed in SQL,
-- the same function of the key), records it on the Run and adds it to the
-- Run's not-before time.
ALTER TABLE ql3.runs
    ADD COLUMN random_delay_ms bigint NOT NULL DEFAULT 0 CHECK (random_delay_ms BETWEEN 0 AND 3600000);
