//! Schema migrations: SQL files shipped in the crate, applied on connect.
//!
//! Every connect runs [`migrate`] in one transaction that first takes a
//! transaction-scoped advisory lock keyed by the schema, so workers
//! starting together apply each migration once and the others wait, then
//! find nothing to do. A database whose version is newer than the newest
//! file here is refused with [`PgError::SchemaTooNew`] before anything is
//! touched: an old worker must not write a schema it does not understand.

use deadpool_postgres::Client;

use crate::error::PgError;

/// The migrations, in order: (version, SQL). Versions start at 1 and grow
/// by one; a shipped file is never edited, a change is a new file.
const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("../migrations/0001_init.sql")),
    (
        2,
        include_str!("../migrations/0002_session_blobs_and_bytes.sql"),
    ),
];

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: i32 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// Brings `schema` up to [`SCHEMA_VERSION`]. Returns the versions applied
/// by this call (empty when the schema was already current).
pub(crate) async fn migrate(
    client: &mut Client,
    schema: &str,
    target: &str,
) -> Result<Vec<i32>, PgError> {
    let q = |op: &'static str| {
        move |source| PgError::Query {
            target: target.to_string(),
            op,
            source,
        }
    };
    let tx = client.transaction().await.map_err(q("begin a migration"))?;
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext($1))",
        &[&format!("abridge-migrate:{schema}")],
    )
    .await
    .map_err(q("take the migration lock"))?;
    // `schema` is a checked identifier (see `check_schema`), safe to quote.
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS \"{schema}\";
         SET LOCAL search_path TO \"{schema}\";
         CREATE TABLE IF NOT EXISTS abridge_schema_version (
             version    integer     PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now()
         );"
    ))
    .await
    .map_err(q("prepare the schema"))?;
    let found: Option<i32> = tx
        .query_one("SELECT max(version) FROM abridge_schema_version", &[])
        .await
        .map_err(q("read the schema version"))?
        .get(0);
    let found = found.unwrap_or(0);
    if found > SCHEMA_VERSION {
        return Err(PgError::SchemaTooNew {
            target: target.to_string(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    let mut applied = Vec::new();
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > found) {
        tx.batch_execute(sql)
            .await
            .map_err(q("apply a migration"))?;
        tx.execute(
            "INSERT INTO abridge_schema_version (version) VALUES ($1)",
            &[version],
        )
        .await
        .map_err(q("record a migration"))?;
        applied.push(*version);
    }
    tx.commit().await.map_err(q("commit a migration"))?;
    Ok(applied)
}

/// Accepts a schema name only when it is a plain lower-case identifier,
/// well inside PostgreSQL's 63-byte limit (so it is never truncated
/// into another deployment's name).
pub(crate) fn check_schema(name: &str) -> Result<(), PgError> {
    let bad = |reason| {
        Err(PgError::SchemaName {
            name: name.to_string(),
            reason,
        })
    };
    let mut chars = name.chars();
    match chars.next() {
        None => return bad("it is empty"),
        Some(c) if !(c.is_ascii_lowercase() || c == '_') => {
            return bad("it must start with a lower-case letter or `_`");
        }
        Some(_) => {}
    }
    if !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
        return bad("only lower-case letters, digits and `_` are allowed");
    }
    if name.len() > 40 {
        return bad("it is longer than 40 characters");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_start_at_one_and_grow_by_one() {
        for (index, (version, _)) in MIGRATIONS.iter().enumerate() {
            assert_eq!(*version, index as i32 + 1);
        }
    }

    #[test]
    fn schema_names_are_plain_identifiers() {
        assert!(check_schema("abridge").is_ok());
        assert!(check_schema("t_42").is_ok());
        for bad in ["", "Abridge", "1st", "a-b", "a\"b", &"x".repeat(41)] {
            assert!(check_schema(bad).is_err(), "{bad:?} must be refused");
        }
    }
}
