-- ql3 control-plane schema, version 12: the run-event feed (issue 20,
-- ADR 0034).
--
-- Consumers that follow what happened to Runs (notifications, webhooks)
-- read run_events in one total order through a cursor, never by hooking
-- into the code that writes them. The order is (feed_xid, feed_id): the
-- writing transaction's id, then an insertion counter. A reader only takes
-- events of transactions below the oldest one still running
-- (pg_snapshot_xmin), so a transaction that commits later can never land
-- before a position already handed out: nothing is skipped. Existing rows
-- get this migration's transaction id (the table is rewritten once).
ALTER TABLE ql3.run_events
    ADD COLUMN feed_xid xid8   NOT NULL DEFAULT pg_current_xact_id(),
    ADD COLUMN feed_id  bigint NOT NULL GENERATED ALWAYS AS IDENTITY;

CREATE INDEX run_events_feed_idx ON ql3.run_events (feed_xid, feed_id);

-- One row per named consumer: its cursor and the claim (a fenced lease in
-- database time) that says which replica may advance it. A replica that
-- holds no live claim reads nothing for that consumer; after the claim
-- expires another replica takes it over from the stored cursor.
CREATE TABLE ql3.run_event_consumers (
    consumer            text   PRIMARY KEY CHECK (consumer ~ '^[a-z0-9][a-z0-9._:-]{0,63}$'),
    cursor_xid          xid8   NOT NULL DEFAULT '0',
    cursor_id           bigint NOT NULL DEFAULT 0 CHECK (cursor_id >= 0),
    claim_owner         text   CHECK (octet_length(claim_owner) BETWEEN 1 AND 128),
    claim_token         uuid,
    claim_version       bigint NOT NULL DEFAULT 0 CHECK (claim_version >= 0),
    claim_expires_at_ms bigint,
    updated_at_ms       bigint NOT NULL CHECK (updated_at_ms >= 0),
    CHECK ((claim_owner IS NULL) = (claim_token IS NULL) AND (claim_token IS NULL) = (claim_expires_at_ms IS NULL))
);
