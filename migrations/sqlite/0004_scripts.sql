-- ql3-edge schema, version 4 (SQLite): script tasks (ADR 0044).
--
-- A scheduled occurrence of a task with randomDelayMs starts after a
-- delay that is a function of the occurrence (core/scriptpath): admission
-- writes it here and adds it to not_before_ms, so the Run shows it and a
-- restart keeps it. Manual runs start at once (0).
ALTER TABLE runs ADD COLUMN random_delay_ms INTEGER NOT NULL DEFAULT 0 CHECK (random_delay_ms BETWEEN 0 AND 3600000);

-- The content address (core/scriptpath.TreeDigest) of the script's folder
-- an attempt of a script task started from; '' for other tasks.
ALTER TABLE attempts ADD COLUMN script_tree TEXT NOT NULL DEFAULT '' CHECK (script_tree = '' OR script_tree LIKE 'sha256:%');
