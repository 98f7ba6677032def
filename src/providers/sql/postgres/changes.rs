//! Change notifications of a postgres source (`watch = true`): the front polls the subscribed
//! URIs every `poll_interval` (default 2s) for a cheap stamp each, read here in one read-only
//! transaction, and announces a URI whose stamp moved.
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

use sqlx::postgres::PgConnection;

use super::Postgres;
use crate::providers::sql::Target;

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

impl Postgres {
    /// The current stamp of each target, in one transaction; `None` when it fails.
    pub(super) async fn stamps_of(&self, targets: &[Target]) -> Option<Vec<String>> {
        let work = async |conn: &mut PgConnection| {
            let mut out = Vec::with_capacity(targets.len());
            for target in targets {
                let stamp = match target {
                    Target::Schema => {
                        sqlx::query_scalar::<_, String>(SCHEMA_STAMP)
                            .bind(&self.schemas)
                            .fetch_one(&mut *conn)
                            .await?
                    }
                    Target::Table(name) => {
                        let table = self.find_table(conn, name).await?;
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
                            None => database_stamp(conn).await?,
                        }
                    }
                    Target::Query => database_stamp(conn).await?,
                };
                out.push(stamp);
            }
            Ok::<_, sqlx::Error>(out)
        };
        self.server.read(work).await.ok()
    }
}

async fn database_stamp(conn: &mut PgConnection) -> Result<String, sqlx::Error> {
    sqlx::query_scalar::<_, String>(DATABASE_STAMP)
        .fetch_one(conn)
        .await
}
