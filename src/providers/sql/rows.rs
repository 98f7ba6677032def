//! Rows of one statement, whatever the engine: the JSON every table and query read answers with,
//! `{"columns": [...], "rows": [{column: value}], "truncated": bool}`, keys in column order, and
//! the weighing that keeps an answer within `row_limit` rows and `max_size` bytes. Each engine has
//! its own cell type (`Weigh` + `Serialize`).

use serde::ser::{SerializeMap, SerializeSeq, SerializeStruct};
use serde_json::value::RawValue;

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

    /// A row that does not fit came: the rows are `truncated`, or, when it is the first,
    /// `Err(TooBig)`.
    pub(crate) fn cut(&mut self) -> Result<(), TooBig> {
        if self.rows.rows.is_empty() {
            return Err(TooBig);
        }
        self.rows.truncated = true;
        Ok(())
    }

    /// A row the server measured at `size` bytes (its values that can be large, summed): `Ok(true)`
    /// when it may fit; past `max_size` (the server then left those values out) the rows end
    /// there, `truncated` (`Ok(false)`), or, when it is the first, `Err(TooBig)`.
    pub(crate) fn admits(&mut self, size: i64) -> Result<bool, TooBig> {
        if usize::try_from(size).unwrap_or(usize::MAX) > self.max_size {
            self.cut()?;
            return Ok(false);
        }
        Ok(true)
    }

    pub(crate) fn into_rows(self) -> Rows<C> {
        self.rows
    }
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

/// A result: column names, rows in column order, and whether rows were left out.
#[derive(Debug)]
pub(crate) struct Rows<C> {
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

/// One value of a database server's result (PostgreSQL, MySQL), as it goes into the JSON answer.
#[derive(Debug, Clone)]
pub(crate) enum Cell {
    Null,
    Bool(bool),
    Int(i64),
    /// An unsigned 64-bit integer (MySQL's `BIGINT UNSIGNED`), kept whole.
    UInt(u64),
    Float(f64),
    Text(String),
    /// JSON text as the database stored it (checked, written as is).
    Json(Box<RawValue>),
    Array(Vec<Cell>),
}

impl Weigh for Cell {
    fn weight(&self) -> usize {
        match self {
            Cell::Null | Cell::Bool(_) => 5,
            Cell::Int(_) | Cell::UInt(_) | Cell::Float(_) => 24,
            Cell::Text(t) => json_text_weight(t),
            Cell::Json(raw) => raw.get().len(),
            Cell::Array(items) => items.iter().map(|c| c.weight() + 1).sum::<usize>() + 2,
        }
    }
}

impl PartialEq for Cell {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Cell::Null, Cell::Null) => true,
            (Cell::Bool(a), Cell::Bool(b)) => a == b,
            (Cell::Int(a), Cell::Int(b)) => a == b,
            (Cell::UInt(a), Cell::UInt(b)) => a == b,
            (Cell::Float(a), Cell::Float(b)) => a == b,
            (Cell::Text(a), Cell::Text(b)) => a == b,
            (Cell::Json(a), Cell::Json(b)) => a.get() == b.get(),
            (Cell::Array(a), Cell::Array(b)) => a == b,
            _ => false,
        }
    }
}

impl serde::Serialize for Cell {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Cell::Null => s.serialize_unit(),
            Cell::Bool(b) => s.serialize_bool(*b),
            Cell::Int(i) => s.serialize_i64(*i),
            Cell::UInt(u) => s.serialize_u64(*u),
            // JSON has no NaN or infinities; the databases' floats do.
            Cell::Float(f) if f.is_nan() => s.serialize_str("NaN"),
            Cell::Float(f) if f.is_infinite() => {
                s.serialize_str(if *f > 0.0 { "Infinity" } else { "-Infinity" })
            }
            Cell::Float(f) => s.serialize_f64(*f),
            Cell::Text(t) => s.serialize_str(t),
            Cell::Json(raw) => raw.serialize(s),
            Cell::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
        }
    }
}

/// `N` bytes of a server's value, as a fixed-width number is read (the engines' `rows.rs`).
pub(crate) fn fixed<const N: usize>(b: &[u8]) -> Result<[u8; N], String> {
    b.try_into()
        .map_err(|_| format!("expected {N} bytes, got {}", b.len()))
}

/// A server's text value, which must be UTF-8.
pub(crate) fn utf8(b: &[u8]) -> Result<String, String> {
    String::from_utf8(b.to_vec()).map_err(|e| format!("text that is not UTF-8: {e}"))
}

/// A server's JSON value, checked and kept as it was sent.
pub(crate) fn json(text: String) -> Result<Cell, String> {
    RawValue::from_string(text)
        .map(Cell::Json)
        .map_err(|e| format!("JSON the server sent does not parse: {e}"))
}

/// The JSON Schema of the rows a SQL statement answers.
pub(crate) fn schema() -> serde_json::Map<String, serde_json::Value> {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "columns": { "type": "array", "items": { "type": "string" } },
            "rows": { "type": "array", "items": { "type": "object" } },
            "truncated": { "type": "boolean" }
        },
        "required": ["columns", "rows", "truncated"]
    });
    match schema {
        serde_json::Value::Object(m) => m,
        _ => serde_json::Map::new(),
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

    struct W(usize);
    impl Weigh for W {
        fn weight(&self) -> usize {
            self.0
        }
    }

    /// Rows stop at the limit or at the size, whichever comes first; a first row too large is
    /// an error.
    #[test]
    fn rows_stop_at_the_limit_or_the_size() {
        let mut w = Within::<W>::new(vec!["a".into()], 2, 200);
        assert!(!w.full());
        assert!(matches!(w.push(vec![W(10)]), Ok(true)));
        assert!(matches!(w.push(vec![W(10)]), Ok(true)));
        assert!(w.full());
        assert!(w.into_rows().truncated);
        let mut w = Within::<W>::new(vec!["a".into()], 10, 100);
        assert!(matches!(w.push(vec![W(101)]), Err(TooBig)));
        assert!(matches!(w.push(vec![W(10)]), Ok(true)));
        assert!(matches!(w.push(vec![W(90)]), Ok(false)));
        let rows = w.into_rows();
        assert!(rows.truncated);
        assert_eq!(rows.rows.len(), 1);
    }
}
