//! The log's SQL: create, load and append one session, each in one
//! transaction. The store's trait methods ship these to the runtime thread.

use std::collections::HashMap;
use std::sync::Arc;

use abridge_session::Event;
use abridge_session::EventBody;
use abridge_session::Header;
use abridge_session::LoadReport;
use abridge_session::LoadedLog;
use abridge_session::MessageEvent;
use abridge_session::StoreError;
use abridge_session::blob_sha256;
use abridge_session::decode_event;
use abridge_session::encode_event;
use abridge_session::externalize_event;
use abridge_session::resolve_with;
use deadpool_postgres::Client;
use tokio_postgres::IsolationLevel;

use crate::error::PgError;

/// Who and where, for the errors of one call.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    pub(crate) session: String,
    pub(crate) location: String,
    pub(crate) target: String,
}

impl Place {
    fn query(&self, op: &'static str) -> impl FnOnce(tokio_postgres::Error) -> StoreError + '_ {
        move |source| {
            PgError::Query {
                target: self.target.clone(),
                op,
                source,
            }
            .into_store(&self.location, op)
        }
    }

    fn corrupt(&self, seq: i64, reason: String) -> StoreError {
        PgError::Corrupt {
            target: self.target.clone(),
            session: self.session.clone(),
            seq,
            reason,
        }
        .into_store(&self.location, "load")
    }
}

/// Inserts the session row; `AlreadyExists` when it is there.
pub(crate) async fn create(client: Client, place: Place, header: Header) -> Result<(), StoreError> {
    let text = serde_json::to_string(&header).map_err(|e| StoreError::BadHeader {
        path: place.location.clone().into(),
        reason: e.to_string(),
    })?;
    let inserted = client
        .execute(
            "INSERT INTO sessions (id, header) VALUES ($1, $2::text::json)
             ON CONFLICT (id) DO NOTHING",
            &[&place.session, &text],
        )
        .await
        .map_err(place.query("create"))?;
    if inserted == 0 {
        return Err(StoreError::AlreadyExists {
            location: place.location,
        });
    }
    Ok(())
}

/// Reads the header and every event from one snapshot, resolving blobs.
pub(crate) async fn load(
    mut client: Client,
    place: Place,
) -> Result<Option<LoadedLog>, StoreError> {
    let tx = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(place.query("begin a load"))?;
    let Some(row) = tx
        .query_opt(
            "SELECT header::text FROM sessions WHERE id = $1",
            &[&place.session],
        )
        .await
        .map_err(place.query("load the header"))?
    else {
        return Ok(None);
    };
    let header_text: String = row.get(0);
    let header: Header = serde_json::from_str(&header_text).map_err(|e| StoreError::BadHeader {
        path: place.location.clone().into(),
        reason: e.to_string(),
    })?;
    let (events, blobs_resolved) = read_events(&tx, &place, 0).await?;
    let report = LoadReport {
        blobs_resolved,
        ..LoadReport::default()
    };
    tx.commit().await.map_err(place.query("end a load"))?;
    Ok(Some(LoadedLog {
        header,
        events,
        report,
    }))
}

/// The events from seq `from` on, from one snapshot, blobs resolved: what
/// a session behind other writers reads to catch up.
pub(crate) async fn load_from(
    mut client: Client,
    place: Place,
    from: i64,
) -> Result<Vec<Event>, StoreError> {
    let tx = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(place.query("begin a tail load"))?;
    let exists = tx
        .query_opt("SELECT 1 FROM sessions WHERE id = $1", &[&place.session])
        .await
        .map_err(place.query("load the header"))?;
    if exists.is_none() {
        return Err(StoreError::NotCreated {
            location: place.location,
        });
    }
    let (events, _) = read_events(&tx, &place, from).await?;
    tx.commit().await.map_err(place.query("end a tail load"))?;
    Ok(events)
}

/// The session's `next_seq`: the cheap check of whether anyone appended.
pub(crate) async fn head(client: Client, place: Place) -> Result<u64, StoreError> {
    let row = client
        .query_opt(
            "SELECT next_seq FROM sessions WHERE id = $1",
            &[&place.session],
        )
        .await
        .map_err(place.query("read next_seq"))?;
    match row {
        Some(row) => Ok(row.get::<_, i64>(0) as u64),
        None => Err(StoreError::NotCreated {
            location: place.location,
        }),
    }
}

/// Reads, checks (contiguous from `from`) and resolves the events from seq
/// `from` on within `tx`. Returns them and how many blobs were resolved.
async fn read_events(
    tx: &tokio_postgres::Transaction<'_>,
    place: &Place,
    from: i64,
) -> Result<(Vec<Event>, usize), StoreError> {
    let rows = tx
        .query(
            "SELECT seq, event::text FROM events WHERE session_id = $1 AND seq >= $2 ORDER BY seq",
            &[&place.session, &from],
        )
        .await
        .map_err(place.query("load events"))?;
    let mut events = Vec::with_capacity(rows.len());
    for (index, row) in rows.iter().enumerate() {
        let seq: i64 = row.get(0);
        let line: &str = row.get(1);
        let event = decode_event(line).map_err(|e| place.corrupt(seq, e.to_string()))?;
        let expected = from + index as i64;
        if event.seq != seq as u64 || seq != expected {
            return Err(place.corrupt(
                seq,
                format!(
                    "row {index} holds seq {} where {expected} belongs (the log must be contiguous from 0)",
                    event.seq
                ),
            ));
        }
        events.push(event);
    }
    let blobs = fetch_blobs(tx, place, &events).await?;
    let mut resolved = 0;
    for event in &mut events {
        if let EventBody::Message(MessageEvent { message, .. }) = &mut event.body {
            resolved += resolve_with(message, &mut |sha256| {
                blobs.get(sha256).cloned().ok_or_else(|| StoreError::Blob {
                    path: place.location.clone().into(),
                    sha256: sha256.to_string(),
                    reason: "missing from the session's blobs".into(),
                })
            })?;
        }
    }
    Ok((events, resolved))
}

/// The blobs `events` refer to, checked against their hashes: only the
/// session's own (the rows its appends wrote), so a log that names
/// another session's hash finds nothing there. Keys that are not blob
/// keys never reach the query (`resolve_with` leaves them out).
async fn fetch_blobs(
    tx: &tokio_postgres::Transaction<'_>,
    place: &Place,
    events: &[Event],
) -> Result<HashMap<String, String>, StoreError> {
    let mut wanted: Vec<String> = Vec::new();
    for event in events {
        if let EventBody::Message(MessageEvent { message, .. }) = &event.body {
            // A dry run of the resolver lists the references; it copies
            // only messages that hold one.
            let mut probe = Arc::clone(message);
            resolve_with(&mut probe, &mut |sha256| {
                wanted.push(sha256.to_string());
                Ok(String::new())
            })?;
        }
    }
    if wanted.is_empty() {
        return Ok(HashMap::new());
    }
    let rows = tx
        .query(
            "SELECT sha256, data FROM session_blobs WHERE session_id = $1 AND sha256 = ANY($2)",
            &[&place.session, &wanted],
        )
        .await
        .map_err(place.query("load blobs"))?;
    let mut blobs = HashMap::with_capacity(rows.len());
    for row in rows {
        let sha256: String = row.get(0);
        let data: String = row.get(1);
        if blob_sha256(data.as_bytes()) != sha256 {
            return Err(StoreError::Blob {
                path: place.location.clone().into(),
                sha256,
                reason: "content does not match its hash".into(),
            });
        }
        blobs.insert(sha256, data);
    }
    Ok(blobs)
}

/// One batch, encoded for the tables.
#[derive(Debug, Default)]
pub(crate) struct Rows {
    first: i64,
    seqs: Vec<i64>,
    parents: Vec<Option<i64>>,
    types: Vec<String>,
    lines: Vec<String>,
    blob_shas: Vec<String>,
    blob_data: Vec<String>,
}

/// Encodes `events` (large images moved out to blob rows). The batch must
/// be contiguous: event `i` has seq `first + i`.
pub(crate) fn encode(events: &[Event], location: &str) -> Result<Rows, StoreError> {
    let bad = |reason: String| StoreError::Io {
        path: location.into(),
        op: "encode a batch",
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, reason),
    };
    let mut rows = Rows::default();
    let Some(first) = events.first() else {
        return Ok(rows);
    };
    rows.first = to_i64(first.seq).map_err(&bad)?;
    for (index, event) in events.iter().enumerate() {
        if event.seq != first.seq + index as u64 {
            return Err(bad(format!(
                "event {index} of the batch has seq {}, expected {}",
                event.seq,
                first.seq + index as u64
            )));
        }
        let mut put = |sha256: &str, data: &str| {
            rows.blob_shas.push(sha256.to_string());
            rows.blob_data.push(data.to_string());
            Ok(())
        };
        let moved = externalize_event(event, &mut put)?;
        let line = encode_event(moved.as_ref().unwrap_or(event)).map_err(|e| bad(e.to_string()))?;
        rows.seqs.push(to_i64(event.seq).map_err(&bad)?);
        rows.parents
            .push(event.parent.map(to_i64).transpose().map_err(&bad)?);
        rows.types.push(event.body.kind().to_string());
        rows.lines.push(line);
    }
    Ok(rows)
}

/// Appends `rows` in one transaction: the session's `next_seq` must be the
/// batch's first seq, or nothing is written and the caller gets
/// [`StoreError::Conflict`]. Followers are notified on commit.
pub(crate) async fn append(mut client: Client, place: Place, rows: Rows) -> Result<(), StoreError> {
    if rows.seqs.is_empty() {
        let exists = client
            .query_opt("SELECT 1 FROM sessions WHERE id = $1", &[&place.session])
            .await
            .map_err(place.query("append"))?;
        return match exists {
            Some(_) => Ok(()),
            None => Err(StoreError::NotCreated {
                location: place.location,
            }),
        };
    }
    let next = rows.first + rows.seqs.len() as i64;
    let line_bytes: i64 = rows.lines.iter().map(|line| line.len() as i64).sum();
    let tx = client
        .transaction()
        .await
        .map_err(place.query("begin an append"))?;
    // The row lock taken here serialises writers of one session: a second
    // writer waits, then sees the moved `next_seq` and updates nothing.
    let claimed = tx
        .execute(
            "UPDATE sessions SET next_seq = $2, bytes = bytes + $4, updated_at = now()
             WHERE id = $1 AND next_seq = $3",
            &[&place.session, &next, &rows.first, &line_bytes],
        )
        .await
        .map_err(place.query("claim seqs"))?;
    if claimed == 0 {
        let found = tx
            .query_opt(
                "SELECT next_seq FROM sessions WHERE id = $1",
                &[&place.session],
            )
            .await
            .map_err(place.query("read next_seq"))?;
        // Dropping `tx` rolls back; nothing was written anyway.
        return Err(match found {
            None => StoreError::NotCreated {
                location: place.location,
            },
            Some(row) => StoreError::Conflict {
                location: place.location,
                expected: rows.first as u64,
                found: row.get::<_, i64>(0) as u64,
            },
        });
    }
    if !rows.blob_shas.is_empty() {
        // Only the blobs this session did not hold yet add to its bytes.
        tx.execute(
            "WITH added AS (
                 INSERT INTO session_blobs (session_id, sha256, data)
                 SELECT $1, u.sha256, u.data FROM unnest($2::text[], $3::text[]) AS u(sha256, data)
                 ON CONFLICT (session_id, sha256) DO NOTHING
                 RETURNING octet_length(data) AS n
             )
             UPDATE sessions SET bytes = bytes + (SELECT coalesce(sum(n), 0) FROM added)
             WHERE id = $1",
            &[&place.session, &rows.blob_shas, &rows.blob_data],
        )
        .await
        .map_err(place.query("write blobs"))?;
    }
    tx.execute(
        "INSERT INTO events (session_id, seq, parent, type, event)
         SELECT $1, u.seq, u.parent, u.type, u.line::json
         FROM unnest($2::int8[], $3::int8[], $4::text[], $5::text[]) AS u(seq, parent, type, line)",
        &[
            &place.session,
            &rows.seqs,
            &rows.parents,
            &rows.types,
            &rows.lines,
        ],
    )
    .await
    .map_err(place.query("write events"))?;
    tx.commit().await.map_err(place.query("commit an append"))?;
    Ok(())
}

fn to_i64(seq: u64) -> Result<i64, String> {
    i64::try_from(seq).map_err(|_| format!("seq {seq} does not fit a bigint"))
}
