//! Change notifications of a mysql source (`watch = true`): the front polls the subscribed URIs
//! every `poll_interval` (default 2s) for a stamp each, read here from `information_schema` in one
//! read-only transaction, and announces a URI whose stamp moved.
//!
//! Stamps: a table's is its `UPDATE_TIME`, row count, data length and next `AUTO_INCREMENT`
//! (InnoDB keeps `UPDATE_TIME` since MySQL 5.7 and MariaDB 10.? in memory; MySQL 8 reads it
//! fresh here, `information_schema_stats_expiry = 0`); a view's and a query's are the same over
//! every table of the database; the schema's is a checksum of the tables' and columns' names and
//! types. Like the statistics PostgreSQL sources poll, they need nothing in the database and no
//! right beyond reading.
//!
//! `UPDATE_TIME` counts seconds: a write in the same second as the one a stamp saw would not move
//! it. So a stamp taken while its `UPDATE_TIME` is that recent is marked, and the next poll (the
//! mark gone) announces the URI: a write is never missed, at the price of at most one extra
//! notification per burst of writes.

use sqlx::Row as _;
use sqlx::mysql::MySqlConnection;

use super::{LISTED_TYPES, Mysql, listed};
use crate::providers::sql::Target;

/// `UPDATE_TIME` no older than the current second and the one before: a stamp that may not have
/// seen every write of its second.
const RECENT: &str = "IF(MAX(UPDATE_TIME) >= NOW() - INTERVAL 1 SECOND, 'recent', '')";

impl Mysql {
    /// The current stamp of each target, in one transaction; `None` when it fails.
    pub(super) async fn stamps_of(&self, targets: &[Target]) -> Option<Vec<String>> {
        let work = async |conn: &mut MySqlConnection| {
            let mut out = Vec::with_capacity(targets.len());
            for target in targets {
                let (sql, name) = match target {
                    Target::Schema => (
                        format!(
                            "SELECT CONCAT_WS('/', \
                           (SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()), \
                           (SELECT BIT_XOR(CRC32(CONCAT_WS(':', TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, ORDINAL_POSITION))) \
                              FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()), \
                           (SELECT BIT_XOR(CRC32(CONCAT_WS(':', TABLE_NAME, TABLE_TYPE, CREATE_TIME))) \
                              FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE IN {LISTED_TYPES}))"
                        ),
                        None,
                    ),
                    Target::Table(name) => {
                        // A view, or a name that is not listed: the whole database.
                        let is_table = listed(&mut *conn, Some(name))
                            .await?
                            .iter()
                            .any(|(_, kind)| kind != "VIEW");
                        if is_table {
                            (
                                format!(
                                    "SELECT CONCAT_WS('/', MAX(UPDATE_TIME), MAX(TABLE_ROWS), MAX(DATA_LENGTH), \
                                   MAX(AUTO_INCREMENT), MAX(CREATE_TIME), {RECENT}) \
                                 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?"
                                ),
                                Some(name.as_str()),
                            )
                        } else {
                            (database_stamp(), None)
                        }
                    }
                    Target::Query => (database_stamp(), None),
                };
                let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
                if let Some(name) = name {
                    query = query.bind(name);
                }
                let row = query.fetch_one(&mut *conn).await?;
                let stamp: Option<&[u8]> = row.try_get_unchecked(0)?;
                out.push(String::from_utf8_lossy(stamp.unwrap_or_default()).into_owned());
            }
            Ok::<_, sqlx::Error>(out)
        };
        self.server.read(work).await.ok()
    }
}

/// The writes to every table of the database, with the recency mark.
fn database_stamp() -> String {
    format!(
        "SELECT CONCAT_WS('/', MAX(UPDATE_TIME), SUM(TABLE_ROWS), SUM(DATA_LENGTH), \
           SUM(AUTO_INCREMENT), COUNT(*), {RECENT}) \
         FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE'"
    )
}
