//! A statement's plan, worked out once with PostgreSQL's own description of it: how each
//! parameter binds and how each column reads, so that values from URIs behave as they would
//! typed into `psql`, and every column type reaches the JSON answer.
//!
//! Parameters: the statement is prepared with its parameter types left to PostgreSQL, which
//! infers them from their context (`id = $1` with a uuid `id` → uuid). A parameter inferred as
//! its own type (int8 for an integer, …) binds as that; any other binds as text with a cast to the
//! inferred type (`($1::uuid)`), so PostgreSQL's input function reads the value: a bad value is
//! PostgreSQL's clear "invalid input syntax for type uuid" error. A parameter PostgreSQL cannot
//! type from its context (`SELECT $1`: an error, or text) gets its declared type.
//!
//! Columns: a statement that reads rows (`SELECT`, `WITH`, `VALUES`, `TABLE`) runs wrapped as
//! `SELECT q.c1, q.c2::text … FROM (statement) AS q(c1, c2 …) LIMIT row_limit + 1`: at most one row
//! more than the answer holds leaves the server, and a column whose type has no JSON mapping here
//! (ranges, geometric types, composites, money…) is cast to its text.
//!
//! Sizes: a row's values that can be large (text, bytea, json, arrays, what is cast to text) are
//! measured on the server first (`octet_length`, which reads a stored value's header, not the
//! value), and a row whose values together exceed `max_size` comes back with them left out and
//! its size in a last column (`mcp_size`): a value no answer could hold never leaves the server
//! (four reads of a 150 MB row held 1 018 MiB before).

use std::sync::atomic::{AtomicU64, Ordering};

use sqlx::postgres::types::Oid;
use sqlx::postgres::{PgConnection, PgTypeInfo, Postgres};
use sqlx::{AssertSqlSafe, Column as _, Executor as _, Row as _, SqlSafeStr as _, Statement as _};

use super::rows::Decoder;
use crate::providers::sql::rows::unique_names;
use crate::providers::sql::text::{self as sql, Dialect};

/// How a parameter's value is meant to be typed (its declared `type`; template variables are
/// strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    Text,
    Integer,
    Number,
    Boolean,
}

impl Kind {
    fn type_info(self) -> PgTypeInfo {
        match self {
            Kind::Text => <String as sqlx::Type<Postgres>>::type_info(),
            Kind::Integer => <i64 as sqlx::Type<Postgres>>::type_info(),
            Kind::Number => <f64 as sqlx::Type<Postgres>>::type_info(),
            Kind::Boolean => <bool as sqlx::Type<Postgres>>::type_info(),
        }
    }

    fn oid(self) -> u32 {
        match self {
            Kind::Text => 25,
            Kind::Integer => 20,
            Kind::Number => 701,
            Kind::Boolean => 16,
        }
    }
}

/// How one parameter binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BindAs {
    /// As its declared type (text, int8, float8, bool).
    Declared,
    /// As text, cast in the SQL to the type PostgreSQL inferred.
    Text,
}

/// What to run and how to read it.
#[derive(Debug)]
pub(super) struct Plan {
    /// The statement to run (casts and the wrapping applied).
    pub(super) sql: String,
    /// The answer's column names (unique), as the statement names them.
    pub(super) names: Vec<String>,
    pub(super) binds: Vec<BindAs>,
    pub(super) kinds: Vec<Kind>,
    /// The last column is the row's measured size (`mcp_size`), not one of `names`.
    pub(super) sized: bool,
}

/// Statements that read rows and can be wrapped as a subquery.
const WRAPPABLE: [&str; 4] = ["SELECT", "WITH", "VALUES", "TABLE"];

/// Each description prepares a statement of its own (its text made unique), so a description
/// never meets the statement sqlx cached for running, whose parameter types differ.
static DESCRIBED: AtomicU64 = AtomicU64::new(0);

/// Works out the plan of `sql` (parameters written `$N`, one per entry of `kinds`), inside the
/// caller's transaction. A database error is the statement's own problem (it does not prepare).
pub(super) async fn make(
    conn: &mut PgConnection,
    sql: &str,
    kinds: &[Kind],
    row_limit: u64,
    max_size: usize,
) -> Result<Plan, sqlx::Error> {
    let mut declared = vec![false; kinds.len()];
    let (statement, inferred) = loop {
        let statement = describe(conn, sql, kinds, &mut declared).await?;
        let inferred: Vec<PgTypeInfo> = match statement.parameters() {
            Some(sqlx::Either::Left(types)) => types.to_vec(),
            _ => Vec::new(),
        };
        // PostgreSQL falls back to text for a parameter whose context says nothing
        // (`SELECT $1`): a parameter declared as something else keeps its declared type.
        let mut again = false;
        for (i, kind) in kinds.iter().enumerate() {
            let oid = inferred.get(i).and_then(PgTypeInfo::oid).map(|o| o.0);
            if *kind != Kind::Text && !declared[i] && matches!(oid, Some(25 | 705)) {
                declared[i] = true;
                again = true;
            }
        }
        if !again {
            break (statement, inferred);
        }
    };
    let mut binds = Vec::with_capacity(kinds.len());
    let mut casts: Vec<Option<u32>> = Vec::with_capacity(kinds.len());
    for (i, kind) in kinds.iter().enumerate() {
        let oid = inferred.get(i).and_then(PgTypeInfo::oid).map(|o| o.0);
        match (declared[i], oid) {
            (true, _) | (false, None) => {
                binds.push(BindAs::Declared);
                casts.push(None);
            }
            (false, Some(oid)) if oid == kind.oid() => {
                binds.push(BindAs::Declared);
                casts.push(None);
            }
            // text, varchar and unknown take the text as it is.
            (false, Some(25 | 1043 | 705)) => {
                binds.push(BindAs::Text);
                casts.push(None);
            }
            (false, Some(oid)) => {
                binds.push(BindAs::Text);
                casts.push(Some(oid));
            }
        }
    }
    let names_of_types = type_names(conn, &casts).await?;
    let with_casts = sql::map_pg_params(sql, |n| {
        match names_of_types
            .get(n.wrapping_sub(1))
            .and_then(Option::as_ref)
        {
            Some(ty) => format!("(${n}::{ty})"),
            None => format!("${n}"),
        }
    });

    let columns = statement.columns();
    let names = unique_names(columns.iter().map(|c| c.name()));
    let wrappable =
        sql::first_keyword(sql, Dialect::Postgres).is_some_and(|k| WRAPPABLE.contains(&k.as_str()));
    let mut sized = false;
    let sql = if wrappable {
        let limit = row_limit.saturating_add(1);
        if columns.is_empty() {
            format!("SELECT FROM (\n{with_casts}\n) AS q LIMIT {limit}")
        } else {
            let decoded: Vec<Option<Decoder>> = columns
                .iter()
                .map(|c| Decoder::for_type(c.type_info()))
                .collect();
            let measures: Vec<String> = decoded
                .iter()
                .enumerate()
                .filter_map(|(i, d)| measure(i + 1, d.as_ref()))
                .collect();
            sized = !measures.is_empty();
            let max = max_size;
            let list: Vec<String> = decoded
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    let n = i + 1;
                    let value = match d {
                        Some(_) => format!("q.c{n}"),
                        None => format!("q.c{n}::text"),
                    };
                    if sized && measure(n, d.as_ref()).is_some() {
                        format!("CASE WHEN s.mcp_size > {max} THEN NULL ELSE {value} END")
                    } else {
                        value
                    }
                })
                .collect();
            let aliases: Vec<String> = (1..=columns.len()).map(|i| format!("c{i}")).collect();
            if sized {
                format!(
                    "SELECT {}, s.mcp_size FROM (\n{with_casts}\n) AS q({}) \
                     CROSS JOIN LATERAL (SELECT {} AS mcp_size) AS s LIMIT {limit}",
                    list.join(", "),
                    aliases.join(", "),
                    measures.join(" + ")
                )
            } else {
                format!(
                    "SELECT {} FROM (\n{with_casts}\n) AS q({}) LIMIT {limit}",
                    list.join(", "),
                    aliases.join(", ")
                )
            }
        }
    } else {
        with_casts
    };
    Ok(Plan {
        sql,
        names,
        binds,
        kinds: kinds.to_vec(),
        sized,
    })
}

/// The size on the server of column `n`'s value, for a column whose values can be large (`None`
/// for fixed-size types): a bytea's length, else its text's (a no-op cast for text, varchar and
/// json; a conversion for jsonb and arrays), as `int8`.
fn measure(n: usize, decoder: Option<&Decoder>) -> Option<String> {
    match decoder {
        Some(Decoder::Bytea) => Some(format!("coalesce(octet_length(q.c{n}), 0)::int8")),
        Some(Decoder::Text | Decoder::Json | Decoder::Jsonb | Decoder::Array(_)) | None => {
            Some(format!("coalesce(octet_length(q.c{n}::text), 0)::int8"))
        }
        Some(_) => None,
    }
}

/// Prepares `sql` with its parameter types left to PostgreSQL; a parameter it cannot type
/// (`could not determine data type of parameter $N`) gets its declared type and the statement is
/// prepared again. `declared` says (and is updated with) which parameters get their declared
/// type.
async fn describe(
    conn: &mut PgConnection,
    sql: &str,
    kinds: &[Kind],
    declared: &mut [bool],
) -> Result<sqlx::postgres::PgStatement, sqlx::Error> {
    if !kinds.is_empty() {
        // A failed prepare aborts the transaction; the savepoint keeps it usable for the retry.
        conn.execute("SAVEPOINT mcp_describe").await?;
    }
    loop {
        let types: Vec<PgTypeInfo> = kinds
            .iter()
            .zip(declared.iter())
            .map(|(k, d)| {
                if *d {
                    k.type_info()
                } else {
                    PgTypeInfo::with_oid(Oid(0))
                }
            })
            .collect();
        let n = DESCRIBED.fetch_add(1, Ordering::Relaxed);
        let text = format!("{sql}\n/* mcp-manifest: describe {n} */");
        match conn
            .prepare_with(AssertSqlSafe(text).into_sql_str(), &types)
            .await
        {
            Ok(statement) => return Ok(statement),
            Err(sqlx::Error::Database(d))
                if d.code().as_deref() == Some("42P18")
                    && let Some(i) = untyped_parameter(d.message())
                    && declared.get(i).is_some_and(|d| !d) =>
            {
                declared[i] = true;
                conn.execute("ROLLBACK TO SAVEPOINT mcp_describe").await?;
            }
            Err(e) => return Err(e),
        }
    }
}

/// `could not determine data type of parameter $3` → index 2.
fn untyped_parameter(message: &str) -> Option<usize> {
    let n: usize = message.rsplit_once('$')?.1.trim().parse().ok()?;
    n.checked_sub(1)
}

/// The SQL names (`format_type`) of the types parameters are cast to, in parameter order. One
/// round trip, only when some parameter needs a cast; the OIDs are numbers the server sent.
async fn type_names(
    conn: &mut PgConnection,
    casts: &[Option<u32>],
) -> Result<Vec<Option<String>>, sqlx::Error> {
    let wanted: Vec<u32> = casts.iter().flatten().copied().collect();
    if wanted.is_empty() {
        return Ok(vec![None; casts.len()]);
    }
    let list: Vec<String> = wanted
        .iter()
        .map(|oid| format!("pg_catalog.format_type({oid}, NULL)"))
        .collect();
    let row = sqlx::query(AssertSqlSafe(format!("SELECT {}", list.join(", "))))
        .fetch_one(&mut *conn)
        .await?;
    let mut names = Vec::with_capacity(wanted.len());
    for i in 0..wanted.len() {
        names.push(row.try_get::<String, _>(i)?);
    }
    let mut names = names.into_iter();
    Ok(casts.iter().map(|c| c.and_then(|_| names.next())).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_parameter_postgres_could_not_type() {
        assert_eq!(
            untyped_parameter("could not determine data type of parameter $3"),
            Some(2)
        );
        assert_eq!(untyped_parameter("something else"), None);
        assert_eq!(untyped_parameter("parameter $0"), None);
    }
}
