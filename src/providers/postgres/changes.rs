//! Change notifications of a postgres source (`watch = true`): the subscribed URIs are polled
//! every `poll_interval` (default 2s), each through a cheap stamp read in one read-only
//! transaction, and a URI whose stamp moved is announced.
//!
//! Stamps: a table's is its write counters in `pg_stat_all_tables` (`n_tup_ins + n_tup_upd +
//! n_tup_del`, summed over its partitions) and its file node (a `TRUNCATE`, which the counters do
//! not count, gives the table a new one); a view's and a query's are the same over every user
//! table of the database (what they read is not known); the schema's is the OIDs and row
//! versions (`xmin`) of the listed schemas' `pg_class` rows, which every `CREATE`, `DROP` and
//! `ALTER` of a table, view or index touches.
//!
//! Why statistics and not `LISTEN`: they need nothing in the database (no trigger, no channel,
//! no rights beyond reading), cost one small query per subscribed URI per poll, and see writes
//! from every client. Their price is latency: a backend reports its counters when it goes idle,
//! at most once a second, so a write is seen within about a second in the common case and, for
//! a second write soon after a first, when that backend next reports (up to ~10s on PostgreSQL
//! 15). A writer that calls `pg_stat_force_next_flush()` is seen at the next poll.

use std::time::{Duration, Instant};

use super::{GRACE, PostgresSource};

/// How long the stamp of a URI nobody subscribes to is kept: a baseline taken while its
/// subscription is being answered must outlive a poll that does not list it yet.
const KEEP_UNSUBSCRIBED: Duration = Duration::from_secs(60);

/// The writes to one table (and its partitions) and its file node; NULL for a relation without
/// statistics (a view).
const TABLE_STAMP: &str = "\
    SELECT sum(s.n_tup_ins + s.n_tup_upd + s.n_tup_del)::text || '/' || \
           sum(pg_catalog.pg_relation_filenode(s.relid)::text::int8)::text \
    FROM (SELECT to_regclass(format('%I.%I', $1, $2)) AS r) AS target \
    CROSS JOIN LATERAL (SELECT relid FROM pg_catalog.pg_partition_tree(target.r) \
                        UNION SELECT target.r) AS t \
    JOIN pg_catalog.pg_stat_all_tables s ON s.relid = t.relid";

/// The writes to every user table of the database and their file nodes.
const DATABASE_STAMP: &str = "\
    SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::text || '/' || \
           coalesce(sum(pg_catalog.pg_relation_filenode(relid)::text::int8), 0)::text \
    FROM pg_catalog.pg_stat_user_tables";

/// The relations of the listed schemas (`$1`) and the versions of their catalog rows.
const SCHEMA_STAMP: &str = "\
    SELECT md5(coalesce(string_agg(c.oid::text || ':' || c.xmin::text, ',' ORDER BY c.oid), '')) \
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
    WHERE n.nspname = ANY($1)";

impl PostgresSource {
    /// Takes the stamp a newly subscribed URI's changes are measured from (once per URI).
    pub(super) async fn baseline(&self, uri: &str) {
        let known = self
            .stamps
            .lock()
            .is_ok_and(|stamps| stamps.contains_key(uri));
        if !self.watch || known {
            return;
        }
        if let Some(stamps) = self.stamps_of(&[uri.to_owned()]).await
            && let Ok(mut known) = self.stamps.lock()
        {
            let now = Instant::now();
            known.extend(stamps.into_iter().map(|(u, s)| (u, (s, now))));
        }
    }

    /// Which of `uris` changed since the last poll. Stamps of URIs no longer subscribed are
    /// forgotten; while the database cannot be reached nothing is announced (and changes made
    /// meanwhile are, once it can).
    pub(super) async fn changed(&self, uris: Vec<String>) -> Vec<String> {
        if !self.watch {
            return Vec::new();
        }
        let Some(now) = self.stamps_of(&uris).await else {
            return Vec::new();
        };
        let Ok(mut known) = self.stamps.lock() else {
            return Vec::new();
        };
        known.retain(|uri, (_, seen)| uris.contains(uri) || seen.elapsed() < KEEP_UNSUBSCRIBED);
        let mut out = Vec::new();
        let at = Instant::now();
        for (uri, stamp) in now {
            match known.insert(uri.clone(), (stamp.clone(), at)) {
                Some((before, _)) if before != stamp => out.push(uri),
                _ => {}
            }
        }
        out
    }

    /// The current stamp of each URI, in one transaction; `None` when it fails.
    async fn stamps_of(&self, uris: &[String]) -> Option<Vec<(String, String)>> {
        let mut lease = self.begin().await.ok()?;
        let work = async {
            let conn = lease.conn();
            let mut out = Vec::with_capacity(uris.len());
            for uri in uris {
                let rest = uri.strip_prefix(&self.prefix).unwrap_or_default();
                let stamp = if rest == "schema" {
                    sqlx::query_scalar::<_, String>(SCHEMA_STAMP)
                        .bind(&self.schemas)
                        .fetch_one(&mut *conn)
                        .await?
                } else {
                    let table = match rest.strip_prefix("tables/") {
                        Some(encoded) => match crate::uri::percent_decode(encoded) {
                            Some(name) => self.find_table(conn, &name).await?,
                            None => None,
                        },
                        None => None,
                    };
                    let of_table = match &table {
                        Some((schema, name)) => {
                            sqlx::query_scalar::<_, Option<String>>(TABLE_STAMP)
                                .bind(schema)
                                .bind(name)
                                .fetch_one(&mut *conn)
                                .await?
                        }
                        None => None,
                    };
                    match of_table {
                        Some(s) => s,
                        None => {
                            sqlx::query_scalar::<_, String>(DATABASE_STAMP)
                                .fetch_one(&mut *conn)
                                .await?
                        }
                    }
                };
                out.push((uri.clone(), stamp));
            }
            Ok::<_, sqlx::Error>(out)
        };
        let result = tokio::time::timeout(self.timeout + GRACE, work).await;
        self.settle(lease, result).ok()
    }
}
