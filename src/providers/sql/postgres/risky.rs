//! What a read-only transaction does not stop, asked of the catalog for the connected role: being
//! a superuser or a member of `pg_write_server_files` / `pg_execute_server_program`, and being
//! able to execute functions that open connections of their own (`dblink*`, whose writes commit
//! on the other connection whatever happens to ours), write server files (`lo_export`,
//! adminpack's `pg_file_write`, …), or run any code (functions in an untrusted language such as
//! `plpython3u`), or to use a `postgres_fdw` / `dblink_fdw` foreign server.
//!
//! `check` warns about each; the SQL tool refuses to run while the role has any of them, unless
//! the section says `accept_writes_outside_transaction = true`.
//!
//! A wrapper in SQL that runs with its caller's rights (adminpack's two-argument
//! `pg_file_rename`, executable by everyone, calls the three-argument one, which is not) can do
//! only what the role can call itself: it is not counted, or adminpack alone would refuse the SQL
//! tool to every role.

use super::Postgres;

/// One row per way out of the transaction: `(what, name)`.
const RISKS: &str = "\
    SELECT 'role', 'is a superuser' WHERE current_setting('is_superuser') = 'on' \
    UNION ALL \
    SELECT 'role', 'is a member of ' || r FROM unnest(ARRAY['pg_write_server_files', \
        'pg_execute_server_program']) AS r WHERE pg_catalog.pg_has_role(r, 'MEMBER') \
    UNION ALL \
    (SELECT 'function', p.oid::regprocedure::text FROM pg_catalog.pg_proc p \
     WHERE p.proname IN ('dblink', 'dblink_exec', 'dblink_connect', 'dblink_connect_u', \
         'dblink_send_query', 'dblink_open', 'lo_export', 'pg_file_write', 'pg_file_rename', \
         'pg_file_unlink', 'pg_file_sync') \
       AND pg_catalog.has_function_privilege(p.oid, 'EXECUTE') \
       AND (p.prosecdef OR p.prolang <> (SELECT oid FROM pg_catalog.pg_language \
            WHERE lanname = 'sql')) ORDER BY 2 LIMIT 20) \
    UNION ALL \
    (SELECT 'function', p.oid::regprocedure::text || ' (' || l.lanname || ')' \
     FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l ON l.oid = p.prolang \
     WHERE NOT l.lanpltrusted AND l.lanname NOT IN ('internal', 'c') \
       AND pg_catalog.has_function_privilege(p.oid, 'EXECUTE') ORDER BY 2 LIMIT 20) \
    UNION ALL \
    (SELECT 'foreign server', s.srvname || ' (' || w.fdwname || ')' \
     FROM pg_catalog.pg_foreign_server s \
     JOIN pg_catalog.pg_foreign_data_wrapper w ON w.oid = s.srvfdw \
     WHERE w.fdwname IN ('postgres_fdw', 'dblink_fdw') \
       AND pg_catalog.has_server_privilege(s.oid, 'USAGE') ORDER BY 2 LIMIT 20)";

impl Postgres {
    pub(super) async fn risks_refusal(&self) -> Option<String> {
        let found = self
            .server
            .risks(async |conn| Ok(describe(&risk_rows(conn).await?)))
            .await?;
        Some(format!(
            "{} refused: the SQL tool runs only when nothing it can call writes outside its read-only transaction, and {}; connect as a role without these, or set `accept_writes_outside_transaction = true` in {} to run it anyway",
            self.server.entry, found, self.server.entry
        ))
    }
}

pub(super) async fn risk_rows(
    conn: &mut sqlx::postgres::PgConnection,
) -> Result<Vec<(String, String)>, sqlx::Error> {
    sqlx::query_as::<_, (String, String)>(RISKS)
        .fetch_all(conn)
        .await
}

/// "the role `app` is a superuser; can execute dblink_exec(text,text), …; can use the foreign
/// server other (postgres_fdw)"
pub(super) fn describe(rows: &[(String, String)]) -> Option<String> {
    if rows.is_empty() {
        return None;
    }
    let of = |what: &str| -> Vec<&str> {
        rows.iter()
            .filter(|(w, _)| w == what)
            .map(|(_, n)| n.as_str())
            .collect()
    };
    let mut parts = Vec::new();
    let role = of("role");
    if !role.is_empty() {
        parts.push(format!("the role {}", role.join(" and ")));
    }
    let functions = of("function");
    if !functions.is_empty() {
        parts.push(format!(
            "the role can execute {} (they open their own connections, write server files or run any code)",
            functions.join(", ")
        ));
    }
    let servers = of("foreign server");
    if !servers.is_empty() {
        parts.push(format!(
            "the role can use the foreign server{} {} (its connections are not ours)",
            if servers.len() > 1 { "s" } else { "" },
            servers.join(", ")
        ));
    }
    Some(parts.join("; "))
}
