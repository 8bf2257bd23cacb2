-- ql3-edge schema, version 3 (SQLite): the run-event feed (ADR 0037).
--
-- run_events stays the record (per run, gapless seq). The feed gives every
-- event one global position in commit order, so an in-process consumer
-- (notifications, webhooks) can follow all runs with one cursor. Writes
-- go through one writer connection (BEGIN IMMEDIATE), so positions are
-- handed out in commit order: a reader that sees position N sees every
-- position below it. AUTOINCREMENT: a position is never reused, even after
-- retention deleted the newest rows. Triggers keep the feed in step with
-- run_events, so no write path has to remember it.
CREATE TABLE run_event_feed (
    position INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    run_id   TEXT    NOT NULL,
    seq      INTEGER NOT NULL,
    UNIQUE (run_id, seq)
) STRICT;

-- Events written before this version join the feed in the order they
-- happened.
INSERT INTO run_event_feed (run_id, seq)
SELECT run_id, seq FROM run_events ORDER BY at_ms, run_id, seq;

CREATE TRIGGER run_event_feed_append AFTER INSERT ON run_events
BEGIN INSERT INTO run_event_feed (run_id, seq) VALUES (NEW.run_id, NEW.seq); END;

CREATE TRIGGER run_event_feed_prune AFTER DELETE ON run_events
BEGIN DELETE FROM run_event_feed WHERE run_id = OLD.run_id AND seq = OLD.seq; END;

-- Where each named consumer of the feed has got to: advanced by
-- compare-and-set, so two consumers under one name cannot both move it
-- without one of them noticing.
CREATE TABLE event_consumers (
    name          TEXT    NOT NULL PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 64),
    position      INTEGER NOT NULL CHECK (position >= 0),
    updated_at_ms INTEGER NOT NULL
) STRICT;
