//! How a `[sqlite.NAME]` source is built from its checked keys.

use super::Sqlite;
use super::pool::{Pool, sqlite_message};
use crate::manifest::Diagnostics;
use crate::manifest::sql::{DatabaseDef, SqliteKeys};
use crate::providers::sql::{Built, SqlSource};

/// The file must exist and be a database: it is opened (read-only, within `timeout`) and closed
/// again; serving opens its own connections on first use.
pub(crate) async fn build(
    keys: &SqliteKeys,
    def: &DatabaseDef,
    diags: &mut Diagnostics,
) -> Option<Built> {
    let entry = def.entry();
    let shown = keys.path.display();
    let given = keys.path.clone();
    let canonical =
        tokio::task::spawn_blocking(move || crate::providers::platform::canonical(&given));
    let path = match canonical
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e)))
    {
        Ok(p) => p,
        Err(e) => {
            let why = match e.kind() {
                std::io::ErrorKind::NotFound => "no such file".to_owned(),
                _ => e.to_string(),
            };
            diags.push(
                        keys.path_loc,
                        format!(
                            "{entry} database `{shown}` cannot be opened: {why} (it is opened read-only and never created)"
                        ),
                    );
            return None;
        }
    };
    if !tokio::fs::metadata(&path).await.is_ok_and(|m| m.is_file()) {
        diags.push(
            keys.path_loc,
            format!("{entry} `{shown}` is not a file: `path` names a SQLite database file"),
        );
        return None;
    }
    let pool = Pool::new(&path, def.timeout, def.max_size);
    let opened = pool
        .run_alone(|conn| {
            conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
                r.get::<_, i64>(0)
            })
        })
        .await;
    let why = match opened {
        Ok(ran) => ran.result.err().map(|e| sqlite_message(&e)),
        Err(e) => Some(e.to_string()),
    };
    if let Some(why) = why {
        diags.push(
            keys.path_loc,
            format!("{entry} `{shown}` cannot be opened as a SQLite database: {why}"),
        );
        return None;
    }
    let engine = Sqlite {
        entry,
        path,
        row_limit: def.row_limit.max(1),
        max_size: usize::try_from(def.max_size).unwrap_or(usize::MAX),
        pool,
    };
    SqlSource::build(def, engine, diags).await
}
