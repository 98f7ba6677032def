//! Rows of one statement → the JSON every table and query read answers with:
//! `{"columns": [...], "rows": [{column: value}], "truncated": bool}`, each value by its own
//! storage class, keys in column order, at most `limit` rows streamed from SQLite.

use base64::Engine as _;
use futures_util::TryStreamExt as _;
use serde::ser::{SerializeMap, SerializeSeq, SerializeStruct};
use sqlx::sqlite::SqliteRow;
use sqlx::{
    AssertSqlSafe, Column as _, Decode, Executor as _, Row as _, SqlSafeStr as _, SqliteConnection,
    Statement as _, TypeInfo as _, ValueRef as _,
};

use crate::params::Typed;

/// One statement's rows, converted cell by cell.
pub(super) async fn collect(
    conn: &mut SqliteConnection,
    sql: &str,
    args: &[Typed],
    limit: usize,
) -> Result<Rows, sqlx::Error> {
    let mut query = sqlx::query(AssertSqlSafe(sql.to_owned()));
    for a in args {
        query = match a {
            Typed::Null => query.bind(None::<String>),
            Typed::Integer(i) => query.bind(*i),
            // SQLite has no boolean type: true and false are 1 and 0.
            Typed::Boolean(b) => query.bind(i64::from(*b)),
            Typed::Number(f) => query.bind(*f),
            Typed::Text(s) => query.bind(s.clone()),
            // Queries declare no array parameters (refused when the manifest is checked).
            Typed::List(items) => query.bind(items.join("\n")),
        };
    }
    let mut out = Rows::default();
    {
        let mut stream = query.fetch(&mut *conn);
        while let Some(row) = stream.try_next().await? {
            if out.rows.is_empty() {
                out.columns = unique_names(row.columns().iter().map(|c| c.name()));
            }
            if out.rows.len() == limit {
                out.truncated = true;
                break;
            }
            out.rows.push(cells(&row)?);
        }
    }
    if out.rows.is_empty() {
        // No row to take the column names from: the prepared statement has them.
        let statement = conn
            .prepare(AssertSqlSafe(sql.to_owned()).into_sql_str())
            .await?;
        out.columns = unique_names(statement.columns().iter().map(|c| c.name()));
    }
    Ok(out)
}

/// Column names as JSON keys: a repeated name gets `:2`, `:3`, … so no value is lost.
fn unique_names<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in names {
        let mut candidate = name.to_owned();
        let mut n = 1;
        while out.contains(&candidate) {
            n += 1;
            candidate = format!("{name}:{n}");
        }
        out.push(candidate);
    }
    out
}

/// Each value by its own storage class (not the column's declared type).
fn cells(row: &SqliteRow) -> Result<Vec<Cell>, sqlx::Error> {
    let decode = |e: sqlx::error::BoxDynError| sqlx::Error::Decode(e);
    (0..row.len())
        .map(|i| {
            let raw = row.try_get_raw(i)?;
            if raw.is_null() {
                return Ok(Cell::Null);
            }
            // The storage class of this value (sqlx names it; no allocation per cell).
            let class = match raw.type_info().name() {
                "INTEGER" => Class::Integer,
                "REAL" => Class::Real,
                "BLOB" => Class::Blob,
                _ => Class::Text,
            };
            Ok(match class {
                Class::Integer => {
                    Cell::Integer(<i64 as Decode<sqlx::Sqlite>>::decode(raw).map_err(decode)?)
                }
                Class::Real => {
                    Cell::Real(<f64 as Decode<sqlx::Sqlite>>::decode(raw).map_err(decode)?)
                }
                Class::Blob => {
                    Cell::Blob(<Vec<u8> as Decode<sqlx::Sqlite>>::decode(raw).map_err(decode)?)
                }
                // TEXT that is not UTF-8 (SQLite does not check) is shown with U+FFFD.
                Class::Text => match <String as Decode<sqlx::Sqlite>>::decode(raw) {
                    Ok(s) => Cell::Text(s),
                    Err(_) => {
                        let bytes = <Vec<u8> as Decode<sqlx::Sqlite>>::decode(row.try_get_raw(i)?)
                            .map_err(decode)?;
                        Cell::Text(String::from_utf8_lossy(&bytes).into_owned())
                    }
                },
            })
        })
        .collect()
}

/// SQLite's storage classes of a non-NULL value.
#[derive(Debug, Clone, Copy)]
enum Class {
    Integer,
    Real,
    Text,
    Blob,
}

/// One value of a result, by storage class.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Cell {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

/// A result: column names, rows in column order, and whether rows were left out.
#[derive(Debug, Default)]
pub(super) struct Rows {
    pub(super) columns: Vec<String>,
    pub(super) rows: Vec<Vec<Cell>>,
    pub(super) truncated: bool,
}

impl Rows {
    /// `{"columns": [...], "rows": [{column: value}], "truncated": bool}`, keys in column order.
    pub(super) fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| {
            serde_json::json!({"error": format!("the result cannot be written as JSON: {e}")})
                .to_string()
        })
    }
}

impl serde::Serialize for Cell {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Cell::Null => s.serialize_unit(),
            Cell::Integer(i) => s.serialize_i64(*i),
            // JSON has no infinities; SQLite can store them (NaN it stores as NULL).
            Cell::Real(f) if f.is_infinite() => {
                s.serialize_str(if *f > 0.0 { "Infinity" } else { "-Infinity" })
            }
            Cell::Real(f) => s.serialize_f64(*f),
            Cell::Text(t) => s.serialize_str(t),
            Cell::Blob(b) => s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(b)),
        }
    }
}

struct RowJson<'a>(&'a [String], &'a [Cell]);

impl serde::Serialize for RowJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, cell) in self.0.iter().zip(self.1) {
            map.serialize_entry(name, cell)?;
        }
        map.end()
    }
}

struct RowsJson<'a>(&'a Rows);

impl serde::Serialize for RowsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.rows.len()))?;
        for row in &self.0.rows {
            seq.serialize_element(&RowJson(&self.0.columns, row))?;
        }
        seq.end()
    }
}

impl serde::Serialize for Rows {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Rows", 3)?;
        st.serialize_field("columns", &self.columns)?;
        st.serialize_field("rows", &RowsJson(self))?;
        st.serialize_field("truncated", &self.truncated)?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_column_names_stay_apart() {
        assert_eq!(
            unique_names(["id", "name", "id", "id", "id:2"].into_iter()),
            ["id", "name", "id:2", "id:3", "id:2:2"]
        );
    }

    #[test]
    fn rows_serialize_in_column_order_by_storage_class() {
        let rows = Rows {
            columns: vec!["z".into(), "a".into(), "b".into(), "n".into(), "r".into()],
            rows: vec![vec![
                Cell::Integer(1),
                Cell::Text("x\0y".into()),
                Cell::Blob(vec![1, 2, 3]),
                Cell::Null,
                Cell::Real(f64::NEG_INFINITY),
            ]],
            truncated: true,
        };
        assert_eq!(
            rows.to_json(),
            r#"{"columns":["z","a","b","n","r"],"rows":[{"z":1,"a":"x\u0000y","b":"AQID","n":null,"r":"-Infinity"}],"truncated":true}"#
        );
    }
}
