-- abridge-store-postgres schema, version 2: blobs per session, bytes per session.
-- Applied once per schema by the migrator, inside its transaction.

-- Blobs belong to the session whose append wrote them, and a session
-- reads only its own. In version 1 they were shared by every session of
-- the schema, keyed by hash alone: a log that named another session's
-- hash read that session's image back.
CREATE TABLE session_blobs (
    session_id  text        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    sha256      text        NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    data        text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, sha256)
);

-- Each session keeps the blobs its log already refers to, as version 1
-- resolved them: a version-1 log cannot show whether its writer sent an
-- image or named one by its hash, so what opened before opens after.
INSERT INTO session_blobs (session_id, sha256, data, created_at)
SELECT DISTINCT ON (r.session_id, b.sha256) r.session_id, b.sha256, b.data, b.created_at
FROM (
    SELECT e.session_id, ref #>> '{}' AS sha256
    FROM events e,
         LATERAL jsonb_path_query(e.event::jsonb, 'lax $.** ? (@.kind == "blob").sha256') AS ref
    WHERE e.type = 'message' AND e.event::text LIKE '%"blob"%'
) AS r
JOIN blobs b ON b.sha256 = r.sha256;

DROP TABLE blobs;

-- What each session holds in bytes (its events' JSON lines and its
-- blobs), kept by every append in the same transaction, so a service can
-- enforce a quota per session or per tenant without reading the logs.
ALTER TABLE sessions ADD COLUMN bytes bigint NOT NULL DEFAULT 0 CHECK (bytes >= 0);
UPDATE sessions s SET bytes =
    coalesce((SELECT sum(octet_length(e.event::text)) FROM events e WHERE e.session_id = s.id), 0)
  + coalesce((SELECT sum(octet_length(b.data)) FROM session_blobs b WHERE b.session_id = s.id), 0);
