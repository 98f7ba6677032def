//! MySQL and MariaDB values → JSON. Statements run prepared, so rows arrive in the binary
//! protocol; each column's type picks a `Decoder`, from the column's metadata as the server sent
//! it.
//!
//! Mapping: integers → numbers (`BIGINT UNSIGNED` whole, beyond 2^63 too; `TINYINT(1)`, which
//! MySQL calls `BOOLEAN`, stays the number it holds); `FLOAT` / `DOUBLE` → numbers (`FLOAT` by its
//! shortest text, as the `mysql` client shows it); `DECIMAL` → its exact digits as a string;
//! `YEAR` → a number; `DATE` → `YYYY-MM-DD`; `DATETIME` → ISO 8601 without offset; `TIMESTAMP` →
//! ISO 8601 in UTC (`Z`: the connection's time zone is UTC); `TIME` → `[-]HH:MM:SS[.ffffff]`
//! (hours past 24 as they are); zero dates as MySQL writes them (`0000-00-00`); `BIT(n)` → a
//! string of `n` binary digits; `JSON` → JSON as stored (MariaDB's `JSON` columns, which are
//! `LONGTEXT` checked by `json_valid`, too, when a value comes straight from one); text, `ENUM`
//! and `SET` → strings; `BINARY`, `VARBINARY`, `BLOB` and `GEOMETRY` (binary collation) →
//! base64; NULL → null.

use std::collections::HashSet;

use base64::Engine as _;
use sqlx::mysql::{MySqlRow, MySqlTypeInfo};
use sqlx::{Column as _, Row as _, TypeInfo as _, ValueRef as _};

use crate::providers::sql::rows::{Cell, fixed, json, utf8};

/// How one column's values become JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Decoder {
    /// A signed integer of this many bytes.
    Int(usize),
    /// An unsigned integer of this many bytes.
    UInt(usize),
    Float,
    Double,
    Decimal,
    Date,
    Datetime,
    Timestamp,
    Time,
    /// `BIT(n)`.
    Bit(u32),
    Json,
    Text,
    Bytes,
}

/// What sqlx keeps to itself of a column's metadata, read from its `Debug` (the fields are not
/// public): whether it is unsigned, its collation (63 is `binary`) and its display width.
/// `tests/it/mysql.rs` reads every type from a real server, so a change in that text shows.
fn facts(ti: &MySqlTypeInfo) -> (bool, Option<u32>, Option<u32>) {
    let debug = format!("{ti:?}");
    let number_after = |key: &str| -> Option<u32> {
        let rest = &debug[debug.find(key)? + key.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    (
        debug.contains("UNSIGNED"),
        number_after("Collation("),
        number_after("max_size: Some("),
    )
}

impl Decoder {
    /// The decoder of a column; `json` says whether it is one of MariaDB's JSON columns.
    pub(super) fn for_column(ti: &MySqlTypeInfo, json: bool) -> Decoder {
        let (unsigned, collation, width) = facts(ti);
        let int = |n| {
            if unsigned {
                Decoder::UInt(n)
            } else {
                Decoder::Int(n)
            }
        };
        let binary = collation == Some(63);
        match ti.name() {
            "BOOLEAN" | "TINYINT" | "TINYINT UNSIGNED" => int(1),
            "SMALLINT" | "SMALLINT UNSIGNED" => int(2),
            "YEAR" => Decoder::UInt(2),
            "MEDIUMINT" | "MEDIUMINT UNSIGNED" | "INT" | "INT UNSIGNED" => int(4),
            "BIGINT" | "BIGINT UNSIGNED" => int(8),
            "FLOAT" => Decoder::Float,
            "DOUBLE" => Decoder::Double,
            "DECIMAL" => Decoder::Decimal,
            "DATE" => Decoder::Date,
            "DATETIME" => Decoder::Datetime,
            "TIMESTAMP" => Decoder::Timestamp,
            "TIME" => Decoder::Time,
            "BIT" => Decoder::Bit(width.unwrap_or(0)),
            "JSON" => Decoder::Json,
            "ENUM" | "SET" => Decoder::Text,
            "GEOMETRY" => Decoder::Bytes,
            _ if binary => Decoder::Bytes,
            _ if json => Decoder::Json,
            _ => Decoder::Text,
        }
    }

    /// Decodes one non-NULL value in the binary protocol (date and time values with their length
    /// byte first, strings without theirs).
    fn decode(self, b: &[u8]) -> Result<Cell, String> {
        Ok(match self {
            Decoder::Int(n) => Cell::Int(signed(b, n)?),
            Decoder::UInt(n) => {
                let v = unsigned(b, n)?;
                match i64::try_from(v) {
                    Ok(i) => Cell::Int(i),
                    Err(_) => Cell::UInt(v),
                }
            }
            Decoder::Float => {
                let f = f32::from_le_bytes(fixed(b)?);
                // The shortest text of the single-precision value, as a double.
                Cell::Float(f.to_string().parse().unwrap_or(f64::from(f)))
            }
            Decoder::Double => Cell::Float(f64::from_le_bytes(fixed(b)?)),
            Decoder::Decimal => Cell::Text(utf8(b)?),
            Decoder::Date => Cell::Text(date_text(b, DateKind::Date)?),
            Decoder::Datetime => Cell::Text(date_text(b, DateKind::Datetime)?),
            Decoder::Timestamp => Cell::Text(date_text(b, DateKind::Timestamp)?),
            Decoder::Time => Cell::Text(time_text(b)?),
            Decoder::Bit(width) => Cell::Text(bits(b, width)),
            Decoder::Json => json(utf8(b)?)?,
            Decoder::Text => Cell::Text(String::from_utf8_lossy(b).into_owned()),
            Decoder::Bytes => Cell::Text(base64::engine::general_purpose::STANDARD.encode(b)),
        })
    }
}

/// The most bytes a column read straight from a table can hold (its declared length: 160 for a
/// `VARCHAR(40)` in utf8mb4, 65 535 for a `TEXT`), `None` for a computed one, whose length the
/// server only estimates.
pub(super) fn stored_bytes(c: &sqlx::mysql::MySqlColumn) -> Option<u64> {
    c.origin().table_column()?;
    facts(c.type_info()).2.map(u64::from)
}

/// Whether a column comes straight from one of MariaDB's JSON columns (`json` holds them as
/// `(schema.table, column)`).
pub(super) fn is_json(c: &sqlx::mysql::MySqlColumn, json: &HashSet<(String, String)>) -> bool {
    c.origin()
        .table_column()
        .is_some_and(|t| json.contains(&(t.table.to_string(), t.name.to_string())))
}

/// The decoders of a statement's columns; `json[i]` says column `i` is one of MariaDB's JSON
/// columns.
pub(super) fn decoders<'a>(
    columns: impl Iterator<Item = &'a sqlx::mysql::MySqlColumn>,
    json: &[bool],
) -> Vec<Decoder> {
    columns
        .enumerate()
        .map(|(i, c)| Decoder::for_column(c.type_info(), json.get(i).copied().unwrap_or(false)))
        .collect()
}

/// Every column's cells of one row.
pub(super) fn cells(row: &MySqlRow, decoders: &[Decoder]) -> Result<Vec<Cell>, String> {
    let mut out = Vec::with_capacity(decoders.len());
    for (i, decoder) in decoders.iter().enumerate() {
        let raw = row.try_get_raw(i).map_err(|e| e.to_string())?;
        if raw.is_null() {
            out.push(Cell::Null);
            continue;
        }
        // The value's bytes whatever its type (`try_get_unchecked` skips sqlx's type check).
        let bytes: &[u8] = row.try_get_unchecked(i).map_err(|e| e.to_string())?;
        out.push(decoder.decode(bytes).map_err(|e| {
            let column = row.columns().get(i).map_or("?", |c| c.name());
            format!("column `{column}`: {e}")
        })?);
    }
    Ok(out)
}

fn signed(b: &[u8], n: usize) -> Result<i64, String> {
    Ok(match n {
        1 => i8::from_le_bytes(fixed(b)?).into(),
        2 => i16::from_le_bytes(fixed(b)?).into(),
        4 => i32::from_le_bytes(fixed(b)?).into(),
        _ => i64::from_le_bytes(fixed(b)?),
    })
}

fn unsigned(b: &[u8], n: usize) -> Result<u64, String> {
    Ok(match n {
        1 => u8::from_le_bytes(fixed(b)?).into(),
        2 => u16::from_le_bytes(fixed(b)?).into(),
        4 => u32::from_le_bytes(fixed(b)?).into(),
        _ => u64::from_le_bytes(fixed(b)?),
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum DateKind {
    Date,
    Datetime,
    Timestamp,
}

/// A binary DATE, DATETIME or TIMESTAMP: a length byte (0, 4, 7 or 11), then year (2 bytes),
/// month, day, hour, minute, second and microseconds (4 bytes), as far as the length goes.
fn date_text(b: &[u8], kind: DateKind) -> Result<String, String> {
    let (&len, rest) = b.split_first().ok_or("an empty date")?;
    let rest = rest
        .get(..usize::from(len))
        .ok_or("a date shorter than its length byte says")?;
    let byte = |i: usize| rest.get(i).copied().unwrap_or(0);
    let year = u16::from_le_bytes([byte(0), byte(1)]);
    let micros = u32::from_le_bytes([byte(7), byte(8), byte(9), byte(10)]);
    let date = format!("{year:04}-{:02}-{:02}", byte(2), byte(3));
    if kind == DateKind::Date {
        return Ok(date);
    }
    let zone = if kind == DateKind::Timestamp && len > 0 {
        "Z"
    } else {
        ""
    };
    Ok(format!(
        "{date}T{:02}:{:02}:{:02}{}{zone}",
        byte(4),
        byte(5),
        byte(6),
        fraction(micros)
    ))
}

/// A binary TIME: a length byte (0, 8 or 12), then a sign, days (4 bytes), hour, minute, second
/// and microseconds (4 bytes).
fn time_text(b: &[u8]) -> Result<String, String> {
    let (&len, rest) = b.split_first().ok_or("an empty time")?;
    let rest = rest
        .get(..usize::from(len))
        .ok_or("a time shorter than its length byte says")?;
    let byte = |i: usize| rest.get(i).copied().unwrap_or(0);
    let negative = byte(0) == 1;
    let days = u32::from_le_bytes([byte(1), byte(2), byte(3), byte(4)]);
    let hours = u64::from(days) * 24 + u64::from(byte(5));
    let micros = u32::from_le_bytes([byte(8), byte(9), byte(10), byte(11)]);
    Ok(format!(
        "{}{hours:02}:{:02}:{:02}{}",
        if negative { "-" } else { "" },
        byte(6),
        byte(7),
        fraction(micros)
    ))
}

/// `.678` for 678 000 µs; nothing for 0.
fn fraction(micros: u32) -> String {
    if micros == 0 {
        return String::new();
    }
    let digits = format!(".{micros:06}");
    digits.trim_end_matches('0').to_owned()
}

/// The `width` lowest bits of a big-endian value as binary digits (all its bits when the width
/// is not known).
fn bits(b: &[u8], width: u32) -> String {
    let all: String = b.iter().map(|byte| format!("{byte:08b}")).collect();
    let width = usize::try_from(width).unwrap_or(usize::MAX);
    if width == 0 || width >= all.len() {
        return all;
    }
    all[all.len() - width..].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_dates_and_times_read_as_iso_text() {
        let dt = [11, 0xE8, 0x07, 1, 2, 3, 4, 5, 0xB6, 0x5B, 0x0A, 0x00];
        assert_eq!(
            date_text(&dt, DateKind::Datetime).unwrap(),
            "2024-01-02T03:04:05.678838"
        );
        assert_eq!(
            date_text(&[4, 0xE8, 0x07, 2, 29], DateKind::Date).unwrap(),
            "2024-02-29"
        );
        assert_eq!(
            date_text(&[7, 0xE8, 0x07, 1, 2, 3, 4, 5], DateKind::Timestamp).unwrap(),
            "2024-01-02T03:04:05Z"
        );
        assert_eq!(
            date_text(&[0], DateKind::Datetime).unwrap(),
            "0000-00-00T00:00:00"
        );
        let t = [12, 1, 1, 0, 0, 0, 12, 34, 56, 0xC0, 0x98, 0x0B, 0x00];
        assert_eq!(time_text(&t).unwrap(), "-36:34:56.76");
        assert_eq!(time_text(&[0]).unwrap(), "00:00:00");
        assert_eq!(bits(&[0b1010], 4), "1010");
        assert_eq!(bits(&[1, 0], 9), "100000000");
        assert!(date_text(&[7, 1], DateKind::Date).is_err());
    }

    #[test]
    fn unsigned_64_bit_values_stay_whole() {
        assert_eq!(
            Decoder::UInt(8).decode(&u64::MAX.to_le_bytes()).unwrap(),
            Cell::UInt(u64::MAX)
        );
        assert_eq!(
            Decoder::UInt(8).decode(&5u64.to_le_bytes()).unwrap(),
            Cell::Int(5)
        );
        assert_eq!(Decoder::Int(1).decode(&[0xFF]).unwrap(), Cell::Int(-1));
        assert_eq!(
            Decoder::Float.decode(&0.1f32.to_le_bytes()).unwrap(),
            Cell::Float(0.1)
        );
    }
}
