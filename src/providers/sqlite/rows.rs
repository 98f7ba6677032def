//! Rows of one statement → the JSON every table and query read answers with:
//! `{"columns": [...], "rows": [{column: value}], "truncated": bool}`, each value by its own
//! storage class, keys in column order, at most `limit` rows stepped through SQLite.

use base64::Engine as _;
use rusqlite::types::ValueRef;
use serde::ser::{SerializeMap, SerializeSeq, SerializeStruct};

use crate::params::Typed;

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
) -> rusqlite::Result<Rows> {
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
    let mut out = Within::new(columns, limit, max_size);
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

/// A value's weight in the JSON answer: the bytes it takes there, at least.
pub(crate) trait Weigh {
    fn weight(&self) -> usize;
}

/// Not even the first row fits in the answer.
pub(crate) struct TooBig;

/// Rows being collected: at most `limit` of them, and no more than fit in `max_size` bytes of
/// JSON; past either, the rest is left out (`truncated`).
pub(crate) struct Within<C> {
    rows: Rows<C>,
    limit: usize,
    max_size: usize,
    /// Every row's keys (the column names, quoted, with their colons).
    names: usize,
    /// The answer's weight so far.
    weight: usize,
}

impl<C: Weigh> Within<C> {
    pub(crate) fn new(columns: Vec<String>, limit: usize, max_size: usize) -> Within<C> {
        let names: usize = columns.iter().map(|c| json_text_weight(c) + 2).sum();
        Within {
            rows: Rows {
                columns,
                ..Rows::default()
            },
            limit,
            max_size,
            names,
            // `{"columns":[…],"rows":[],"truncated":false}`
            weight: 40 + 2 * names,
        }
    }

    /// Whether `limit` rows are in: then the rows are `truncated` (another one came).
    pub(crate) fn full(&mut self) -> bool {
        let full = self.rows.rows.len() >= self.limit;
        self.rows.truncated |= full;
        full
    }

    /// Takes `row` if the answer stays within `max_size`: `Ok(false)` (and `truncated`) when it
    /// would not, `Err(TooBig)` when it is the first row.
    pub(crate) fn push(&mut self, row: Vec<C>) -> Result<bool, TooBig> {
        let weight = self.names + row.iter().map(Weigh::weight).sum::<usize>() + 2 * row.len() + 2;
        if self.weight + weight > self.max_size {
            if self.rows.rows.is_empty() {
                return Err(TooBig);
            }
            self.rows.truncated = true;
            return Ok(false);
        }
        self.weight += weight;
        self.rows.rows.push(row);
        Ok(true)
    }

    pub(crate) fn into_rows(self) -> Rows<C> {
        self.rows
    }
}

/// SQLite's own error for a value or row over the length limit.
fn too_big() -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_TOOBIG),
        Some("string or blob too big".to_owned()),
    )
}

/// Bytes a string takes as a JSON string (quotes and escapes included).
pub(crate) fn json_text_weight(s: &str) -> usize {
    let escaped = s
        .bytes()
        .filter(|b| *b < 0x20 || *b == b'"' || *b == b'\\')
        .count();
    s.len() + 2 + 5 * escaped
}

/// Column names as JSON keys: a repeated name gets `:2`, `:3`, … so no value is lost.
pub(crate) fn unique_names<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
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

/// A result: column names, rows in column order, and whether rows were left out. The cells are
/// SQLite's by default; the postgres source has its own.
#[derive(Debug)]
pub(crate) struct Rows<C = Cell> {
    pub(crate) columns: Vec<String>,
    pub(crate) rows: Vec<Vec<C>>,
    pub(crate) truncated: bool,
}

impl<C> Default for Rows<C> {
    fn default() -> Self {
        Rows {
            columns: Vec::new(),
            rows: Vec::new(),
            truncated: false,
        }
    }
}

impl<C: serde::Serialize> Rows<C> {
    /// `{"columns": [...], "rows": [{column: value}], "truncated": bool}`, keys in column order.
    pub(crate) fn to_json(&self) -> String {
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

struct RowJson<'a, C>(&'a [String], &'a [C]);

impl<C: serde::Serialize> serde::Serialize for RowJson<'_, C> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, cell) in self.0.iter().zip(self.1) {
            map.serialize_entry(name, cell)?;
        }
        map.end()
    }
}

struct RowsJson<'a, C>(&'a Rows<C>);

impl<C: serde::Serialize> serde::Serialize for RowsJson<'_, C> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.rows.len()))?;
        for row in &self.0.rows {
            seq.serialize_element(&RowJson(&self.0.columns, row))?;
        }
        seq.end()
    }
}

impl<C: serde::Serialize> serde::Serialize for Rows<C> {
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
