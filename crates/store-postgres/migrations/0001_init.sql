-- abridge-store-postgres schema, version 1.
-- Applied once per schema by the migrator, inside its transaction.

-- One row per session: its header, and the seq the next event must have.
-- `next_seq` is the optimistic-concurrency check: an append moves it from
-- the batch's first seq to one past its last, or writes nothing.
CREATE TABLE sessions (
    id          text        PRIMARY KEY,
    header      json        NOT NULL,
    next_seq    bigint      NOT NULL DEFAULT 0 CHECK (next_seq >= 0),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The log. `event` is the event's JSONL line kept verbatim (type `json`,
-- not `jsonb`, so unknown events keep their bytes); `parent` and `type` are
-- copied out of it for queries.
CREATE TABLE events (
    session_id  text   NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq         bigint NOT NULL CHECK (seq >= 0),
    parent      bigint,
    type        text   NOT NULL,
    event       json   NOT NULL,
    PRIMARY KEY (session_id, seq)
);

-- Large images, content-addressed by the SHA-256 of their base64 text and
-- shared between sessions. Never deleted by the store.
CREATE TABLE blobs (
    sha256      text        PRIMARY KEY,
    data        text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- The compaction lock: at most one row per session. A row whose lease has
-- expired is free for the next compaction to take.
CREATE TABLE compaction_locks (
    session_id     text        PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    compaction_id  text        NOT NULL,
    holder         text        NOT NULL,
    expires_at     timestamptz NOT NULL
);
