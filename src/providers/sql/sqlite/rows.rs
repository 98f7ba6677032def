//! SQLite rows → cells for the answer (`sql::rows`): each value by its own storage class, at most
//! `limit` rows stepped through SQLite.

use crate::params::Typed;
use crate::providers::sql::rows::{Rows, TooBig, Weigh, Within, json_text_weight, unique_names};
use base64::Engine as _;
use rusqlite::types::ValueRef;

/// One statement's rows, converted cell by cell (blocking: on the connection's job thread):
/// at most `limit` rows, and no more rows than fit in `max_size` bytes of JSON (the rest left
/// out, `truncated`; a first row that does not fit is SQLite's own "too big" error, as for a
/// value larger than the connection's length limit). The statement is prepared once per
/// connection (kept in its cache).
pub(super) fn collect(
    conn: &rusqlite::Connection,
    sql: &str,
    args: &[Typed],
    limit: usize,
    max_size: usize,
) -> rusqlite::Result<Rows<Cell>> {
    let mut statement = conn.prepare_cached(sql)?;
    for (i, a) in args.iter().enumerate() {
        let at = i + 1;
        match a {
            Typed::Null => statement.raw_bind_parameter(at, rusqlite::types::Null)?,
            Typed::Integer(n) => statement.raw_bind_parameter(at, *n)?,
            // SQLite has no boolean type: true and false are 1 and 0.
            Typed::Boolean(b) => statement.raw_bind_parameter(at, i64::from(*b))?,
            Typed::Number(f) => statement.raw_bind_parameter(at, *f)?,
            Typed::Text(s) => statement.raw_bind_parameter(at, s.as_str())?,
            // Queries declare no array parameters (refused when the manifest is checked).
            Typed::List(items) => statement.raw_bind_parameter(at, items.join("\n"))?,
        }
    }
    let columns = unique_names(statement.column_names().into_iter());
    let width = columns.len();
    let mut out = Within::<Cell>::new(columns, limit, max_size);
    let mut rows = statement.raw_query();
    while let Some(row) = rows.next()? {
        if out.full() {
            break;
        }
        let cells: Vec<Cell> = (0..width)
            .map(|i| row.get_ref(i).map(cell))
            .collect::<rusqlite::Result<_>>()?;
        if !out.push(cells).map_err(|TooBig| too_big())? {
            break;
        }
    }
    Ok(out.into_rows())
}

/// SQLite's own error for a value or row over the length limit.
fn too_big() -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_TOOBIG),
        Some("string or blob too big".to_owned()),
    )
}

/// A value by its own storage class (not the column's declared type).
fn cell(value: ValueRef<'_>) -> Cell {
    match value {
        ValueRef::Null => Cell::Null,
        ValueRef::Integer(i) => Cell::Integer(i),
        ValueRef::Real(f) => Cell::Real(f),
        // TEXT that is not UTF-8 (SQLite does not check) is shown with U+FFFD.
        ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Cell::Blob(b.to_vec()),
    }
}

impl Weigh for Cell {
    fn weight(&self) -> usize {
        match self {
            Cell::Null => 4,
            Cell::Integer(_) | Cell::Real(_) => 24,
            Cell::Text(t) => json_text_weight(t),
            Cell::Blob(b) => b.len().div_ceil(3) * 4 + 2,
        }
    }
}

/// One value of a result, by storage class.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
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

#[cfg(test)]
mod tests {
    use super::*;

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
