//! PostgreSQL values → JSON. Rows arrive in PostgreSQL's binary format (sqlx asks for it); each
//! column's type picks a `Decoder`, and a type without one is cast to `text` by the statement's
//! plan (`plan.rs`), so every value reaches the answer.
//!
//! Mapping: int2/int4/int8/oid → numbers; float4/float8 → numbers (NaN and ±Infinity as strings);
//! numeric → a number when a double keeps every digit, else its exact digits as a string; bool;
//! text, varchar, char, name, enums, xml → strings; json/jsonb → JSON as stored; uuid → string;
//! bytea → base64; date → `YYYY-MM-DD`; time → `HH:MM:SS[.ffffff]`; timetz → with its offset;
//! timestamp → ISO 8601 without offset; timestamptz → RFC 3339 in UTC (`Z`); interval → ISO 8601
//! duration; inet/cidr/macaddr → their text; arrays → JSON arrays (nested for more dimensions);
//! NULL → null.

use std::fmt::Write as _;

use base64::Engine as _;
use chrono::{Days, NaiveDate, NaiveDateTime, NaiveTime, TimeDelta};

use crate::providers::sql::rows::{Cell, fixed, json, utf8};
use sqlx::postgres::{PgRow, PgTypeInfo, PgTypeKind};
use sqlx::{Column as _, Row as _, TypeInfo as _, ValueRef as _};

/// How one column's binary values become JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Decoder {
    Bool,
    Int2,
    Int4,
    Int8,
    /// oid, xid, cid: unsigned 32-bit.
    Uint4,
    Float4,
    Float8,
    Numeric,
    /// text, varchar, bpchar, name, xml, unknown, enums, citext: the bytes are UTF-8 text.
    Text,
    /// `"char"`: one byte.
    Char,
    Json,
    Jsonb,
    Uuid,
    Bytea,
    Date,
    Time,
    TimeTz,
    Timestamp,
    TimestampTz,
    Interval,
    Inet,
    MacAddr,
    /// `void` (what `SELECT pg_sleep(1)` returns): null.
    Void,
    Array(Box<Decoder>),
}

impl Decoder {
    /// The decoder for a column type, or `None` when the type has no JSON mapping here (the
    /// plan then casts the column to `text`).
    pub(super) fn for_type(ty: &PgTypeInfo) -> Option<Decoder> {
        // sqlx names a type it could not resolve "?"; asking its kind would panic.
        if ty.name() == "?" {
            return None;
        }
        if let Some(oid) = ty.oid()
            && let Some(d) = Self::builtin(oid.0)
        {
            return Some(d);
        }
        match ty.kind() {
            PgTypeKind::Enum(_) => Some(Decoder::Text),
            PgTypeKind::Domain(base) => Self::for_type(base),
            PgTypeKind::Array(elem) => Self::for_type(elem).map(|d| Decoder::Array(Box::new(d))),
            PgTypeKind::Simple if ty.name().eq_ignore_ascii_case("citext") => Some(Decoder::Text),
            _ => None,
        }
    }

    /// Built-in scalar types by OID (stable across servers: `pg_type.dat`).
    fn builtin(oid: u32) -> Option<Decoder> {
        Some(match oid {
            16 => Decoder::Bool,
            17 => Decoder::Bytea,
            18 => Decoder::Char,
            19 | 25 | 142 | 705 | 1042 | 1043 => Decoder::Text,
            20 => Decoder::Int8,
            21 => Decoder::Int2,
            23 => Decoder::Int4,
            26 | 28 | 29 => Decoder::Uint4,
            114 => Decoder::Json,
            700 => Decoder::Float4,
            701 => Decoder::Float8,
            650 | 869 => Decoder::Inet,
            829 | 774 => Decoder::MacAddr,
            1082 => Decoder::Date,
            1083 => Decoder::Time,
            1114 => Decoder::Timestamp,
            1184 => Decoder::TimestampTz,
            1186 => Decoder::Interval,
            1266 => Decoder::TimeTz,
            1700 => Decoder::Numeric,
            2278 => Decoder::Void,
            2950 => Decoder::Uuid,
            3802 => Decoder::Jsonb,
            _ => return None,
        })
    }

    /// Decodes one non-NULL value in binary format.
    fn decode(&self, b: &[u8]) -> Result<Cell, String> {
        Ok(match self {
            Decoder::Bool => Cell::Bool(fixed::<1>(b)?[0] != 0),
            Decoder::Int2 => Cell::Int(i16::from_be_bytes(fixed(b)?).into()),
            Decoder::Int4 => Cell::Int(i32::from_be_bytes(fixed(b)?).into()),
            Decoder::Int8 => Cell::Int(i64::from_be_bytes(fixed(b)?)),
            Decoder::Uint4 => Cell::Int(u32::from_be_bytes(fixed(b)?).into()),
            Decoder::Float4 => Cell::Float(f32::from_be_bytes(fixed(b)?).into()),
            Decoder::Float8 => Cell::Float(f64::from_be_bytes(fixed(b)?)),
            Decoder::Numeric => numeric_cell(numeric_text(b)?),
            Decoder::Text => Cell::Text(utf8(b)?),
            Decoder::Char => Cell::Text(String::from_utf8_lossy(b).into_owned()),
            Decoder::Json => json(utf8(b)?)?,
            Decoder::Jsonb => match b.split_first() {
                Some((1, rest)) => json(utf8(rest)?)?,
                _ => return Err("jsonb in an unknown binary version".into()),
            },
            Decoder::Uuid => Cell::Text(uuid_text(&fixed::<16>(b)?)),
            Decoder::Bytea => Cell::Text(base64::engine::general_purpose::STANDARD.encode(b)),
            Decoder::Date => Cell::Text(date_text(i32::from_be_bytes(fixed(b)?))),
            Decoder::Time => Cell::Text(time_text(i64::from_be_bytes(fixed(b)?))),
            Decoder::TimeTz => {
                let b = fixed::<12>(b)?;
                let micros = i64::from_be_bytes(take(&b[..8])?);
                // Stored as seconds west of UTC.
                let west = i32::from_be_bytes(take(&b[8..])?);
                Cell::Text(format!("{}{}", time_text(micros), offset_text(-west)))
            }
            Decoder::Timestamp => Cell::Text(timestamp_text(i64::from_be_bytes(fixed(b)?), "")),
            Decoder::TimestampTz => Cell::Text(timestamp_text(i64::from_be_bytes(fixed(b)?), "Z")),
            Decoder::Interval => {
                let b = fixed::<16>(b)?;
                Cell::Text(interval_text(
                    i64::from_be_bytes(take(&b[..8])?),
                    i32::from_be_bytes(take(&b[8..12])?),
                    i32::from_be_bytes(take(&b[12..])?),
                ))
            }
            Decoder::Inet => Cell::Text(inet_text(b)?),
            Decoder::MacAddr => Cell::Text(
                b.iter()
                    .map(|x| format!("{x:02x}"))
                    .collect::<Vec<_>>()
                    .join(":"),
            ),
            Decoder::Void => Cell::Null,
            Decoder::Array(elem) => array(elem, b)?,
        })
    }
}

fn take<const N: usize>(b: &[u8]) -> Result<[u8; N], String> {
    fixed(b)
}

/// Every column's cells of one row, by the decoders of its columns (`None`: a type the plan did
/// not expect, shown as a note naming the type rather than lost).
pub(super) fn cells(row: &PgRow, decoders: &[Option<Decoder>]) -> Result<Vec<Cell>, String> {
    let mut out = Vec::with_capacity(row.len());
    for (i, decoder) in decoders.iter().enumerate() {
        let raw = row.try_get_raw(i).map_err(|e| e.to_string())?;
        if raw.is_null() {
            out.push(Cell::Null);
            continue;
        }
        let bytes = raw.as_bytes().map_err(|e| e.to_string())?;
        out.push(match decoder {
            Some(d) => d.decode(bytes).map_err(|e| {
                let column = row.columns().get(i).map_or("?", |c| c.name());
                format!("column `{column}`: {e}")
            })?,
            None => Cell::Text(format!(
                "(a value of type {} without a JSON mapping)",
                raw.type_info().name()
            )),
        });
    }
    Ok(out)
}

/// The decoders for a result's columns, from the row's own metadata.
pub(super) fn decoders(row: &PgRow) -> Vec<Option<Decoder>> {
    row.columns()
        .iter()
        .map(|c| Decoder::for_type(c.type_info()))
        .collect()
}

/// A binary array: dimensions, then every element (-1 length for NULL), row-major.
fn array(elem: &Decoder, b: &[u8]) -> Result<Cell, String> {
    let mut r = Reader(b);
    let ndim = r.i32()?;
    let _has_nulls = r.i32()?;
    let _elem_oid = r.i32()?;
    if ndim == 0 {
        return Ok(Cell::Array(Vec::new()));
    }
    let ndim = usize::try_from(ndim).map_err(|_| "a negative array dimension count")?;
    let mut dims = Vec::with_capacity(ndim);
    for _ in 0..ndim {
        let len = usize::try_from(r.i32()?).map_err(|_| "a negative array length")?;
        let _lower_bound = r.i32()?;
        dims.push(len);
    }
    fn level(elem: &Decoder, dims: &[usize], r: &mut Reader) -> Result<Cell, String> {
        let (n, rest) = dims.split_first().ok_or("an array without dimensions")?;
        let mut items = Vec::with_capacity((*n).min(1024));
        for _ in 0..*n {
            items.push(if rest.is_empty() {
                let len = r.i32()?;
                if len < 0 {
                    Cell::Null
                } else {
                    let len = usize::try_from(len).map_err(|_| "a bad element length")?;
                    elem.decode(r.bytes(len)?)?
                }
            } else {
                level(elem, rest, r)?
            });
        }
        Ok(Cell::Array(items))
    }
    level(elem, &dims, &mut r)
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err("a value shorter than its header says".into());
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }
    fn i32(&mut self) -> Result<i32, String> {
        Ok(i32::from_be_bytes(take(self.bytes(4)?)?))
    }
    fn i16(&mut self) -> Result<i16, String> {
        Ok(i16::from_be_bytes(take(self.bytes(2)?)?))
    }
    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_be_bytes(take(self.bytes(2)?)?))
    }
}

/// A binary numeric as exact decimal text (`-12.340`, `NaN`, `Infinity`): base-10000 digits, the
/// weight of the first, a sign and the display scale.
fn numeric_text(b: &[u8]) -> Result<String, String> {
    let mut r = Reader(b);
    let ndigits = usize::try_from(r.i16()?).map_err(|_| "a negative digit count")?;
    let weight = i32::from(r.i16()?);
    let sign = r.u16()?;
    let dscale = usize::try_from(r.i16()?).map_err(|_| "a negative scale")?;
    let mut digits = Vec::with_capacity(ndigits);
    for _ in 0..ndigits {
        digits.push(r.i16()?);
    }
    match sign {
        0xC000 => return Ok("NaN".into()),
        0xD000 => return Ok("Infinity".into()),
        0xF000 => return Ok("-Infinity".into()),
        0x0000 | 0x4000 => {}
        other => return Err(format!("a numeric with sign {other:#x}")),
    }
    let digit = |i: i32| -> i16 {
        usize::try_from(i)
            .ok()
            .and_then(|i| digits.get(i).copied())
            .unwrap_or(0)
    };
    let mut out = String::new();
    if sign == 0x4000 {
        out.push('-');
    }
    if weight < 0 {
        out.push('0');
    } else {
        for i in 0..=weight {
            if i == 0 {
                let _ = write!(out, "{}", digit(i));
            } else {
                let _ = write!(out, "{:04}", digit(i));
            }
        }
    }
    if dscale > 0 {
        let mut frac = String::with_capacity(dscale + 4);
        let mut i = weight + 1;
        while frac.len() < dscale {
            let _ = write!(frac, "{:04}", digit(i));
            i += 1;
        }
        frac.truncate(dscale);
        out.push('.');
        out.push_str(&frac);
    }
    Ok(out)
}

/// A numeric as a JSON number when a double keeps every digit (the shortest text of the double
/// is the number's own text, trailing fraction zeros aside), else as its exact text. A whole
/// number within ±2^53 is written as an integer (`150.00` → `150`).
fn numeric_cell(text: String) -> Cell {
    let canonical = canonical_decimal(&text);
    if let Ok(i) = canonical.parse::<i64>()
        && i.unsigned_abs() <= 1 << 53
    {
        return Cell::Int(i);
    }
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() && f.to_string() == canonical => Cell::Float(f),
        _ => Cell::Text(text),
    }
}

/// `-0012.3400` → `-12.34`, `0.000` → `0`: the text a double's `to_string` would give for the same
/// value, when one does.
fn canonical_decimal(text: &str) -> String {
    let (neg, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let int = int.trim_start_matches('0');
    let frac = frac.trim_end_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    let mut out = String::new();
    if neg && !(int == "0" && frac.is_empty()) {
        out.push('-');
    }
    out.push_str(int);
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    out
}

fn uuid_text(b: &[u8; 16]) -> String {
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// PostgreSQL's epoch for dates and timestamps.
fn epoch() -> NaiveDate {
    NaiveDate::from_ymd_opt(2000, 1, 1).expect("2000-01-01 is a date")
}

/// Days since 2000-01-01 as `YYYY-MM-DD` (ISO 8601; years past 9999 or before 1 AD with a sign,
/// astronomical numbering), or `infinity` / `-infinity`.
fn date_text(days: i32) -> String {
    match days {
        i32::MAX => "infinity".into(),
        i32::MIN => "-infinity".into(),
        _ => {
            let d = if days >= 0 {
                epoch().checked_add_days(Days::new(days.unsigned_abs().into()))
            } else {
                epoch().checked_sub_days(Days::new(days.unsigned_abs().into()))
            };
            d.map_or_else(
                || format!("(day {days} from 2000-01-01)"),
                |d| d.to_string(),
            )
        }
    }
}

/// Microseconds since midnight as `HH:MM:SS[.ffffff]` (up to `24:00:00`).
fn time_text(micros: i64) -> String {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let mut out = format!(
        "{:02}:{:02}:{:02}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    );
    push_fraction(&mut out, frac);
    out
}

/// `.ffffff` without trailing zeros; nothing for a whole second.
fn push_fraction(out: &mut String, micros: i64) {
    if micros != 0 {
        let f = format!("{micros:06}");
        out.push('.');
        out.push_str(f.trim_end_matches('0'));
    }
}

/// An offset east of UTC in seconds as `+HH:MM` (`+HH:MM:SS` when it has seconds).
fn offset_text(east: i32) -> String {
    let sign = if east < 0 { '-' } else { '+' };
    let a = east.unsigned_abs();
    let mut out = format!("{sign}{:02}:{:02}", a / 3600, (a / 60) % 60);
    if !a.is_multiple_of(60) {
        let _ = write!(out, ":{:02}", a % 60);
    }
    out
}

/// Microseconds since 2000-01-01 00:00 as `YYYY-MM-DDTHH:MM:SS[.ffffff]` followed by `zone`
/// (`Z` for timestamptz, which is always in UTC), or `infinity` / `-infinity`.
fn timestamp_text(micros: i64, zone: &str) -> String {
    match micros {
        i64::MAX => return "infinity".into(),
        i64::MIN => return "-infinity".into(),
        _ => {}
    }
    let base = NaiveDateTime::new(epoch(), NaiveTime::MIN);
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    match TimeDelta::try_seconds(secs).and_then(|d| base.checked_add_signed(d)) {
        Some(t) => {
            let mut out = t.format("%Y-%m-%dT%H:%M:%S").to_string();
            push_fraction(&mut out, frac);
            out.push_str(zone);
            out
        }
        None => format!("({micros} microseconds from 2000-01-01){zone}"),
    }
}

/// An interval as an ISO 8601 duration the way PostgreSQL's `intervalstyle = iso_8601` writes it
/// (each part with its own sign): `P1Y2M3DT4H5M6.5S`, `PT0S`, `P-1D`.
fn interval_text(micros: i64, days: i32, months: i32) -> String {
    let mut out = String::from("P");
    let (years, months) = (months / 12, months % 12);
    for (n, unit) in [(years, 'Y'), (months, 'M'), (days, 'D')] {
        if n != 0 {
            let _ = write!(out, "{n}{unit}");
        }
    }
    if micros != 0 {
        out.push('T');
        let neg = micros < 0;
        let a = micros.unsigned_abs();
        let (hours, minutes) = (a / 3_600_000_000, (a / 60_000_000) % 60);
        let (secs, frac) = ((a / 1_000_000) % 60, a % 1_000_000);
        let sign = if neg { "-" } else { "" };
        if hours != 0 {
            let _ = write!(out, "{sign}{hours}H");
        }
        if minutes != 0 {
            let _ = write!(out, "{sign}{minutes}M");
        }
        if secs != 0 || frac != 0 {
            let _ = write!(out, "{sign}{secs}");
            push_fraction(&mut out, frac as i64);
            out.push('S');
        }
    }
    if out == "P" {
        out.push_str("T0S");
    }
    out
}

/// inet / cidr: family, bits, is-cidr flag, address length, address.
fn inet_text(b: &[u8]) -> Result<String, String> {
    let mut r = Reader(b);
    let head = r.bytes(4)?;
    let (family, bits, is_cidr, len) = (head[0], head[1], head[2] != 0, usize::from(head[3]));
    let addr = r.bytes(len)?;
    let (text, max) = match (family, addr.len()) {
        // PGSQL_AF_INET and PGSQL_AF_INET6.
        (2, 4) => (std::net::Ipv4Addr::from(take::<4>(addr)?).to_string(), 32),
        (3, 16) => (std::net::Ipv6Addr::from(take::<16>(addr)?).to_string(), 128),
        _ => return Err(format!("an address of family {family} and {len} bytes")),
    };
    Ok(if is_cidr || bits != max {
        format!("{text}/{bits}")
    } else {
        text
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric(ndigits: i16, weight: i16, sign: u16, dscale: i16, digits: &[i16]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(ndigits.to_be_bytes());
        b.extend(weight.to_be_bytes());
        b.extend(sign.to_be_bytes());
        b.extend(dscale.to_be_bytes());
        for d in digits {
            b.extend(d.to_be_bytes());
        }
        b
    }

    #[test]
    fn numerics_keep_every_digit() {
        let text = |b: Vec<u8>| numeric_text(&b).unwrap();
        // 12345.678 = [1, 2345, 6780] weight 1, scale 3.
        assert_eq!(text(numeric(3, 1, 0, 3, &[1, 2345, 6780])), "12345.678");
        assert_eq!(text(numeric(1, -1, 0x4000, 5, &[5])), "-0.00050");
        assert_eq!(text(numeric(1, -2, 0, 8, &[12])), "0.00000012");
        assert_eq!(text(numeric(0, 0, 0, 2, &[])), "0.00");
        assert_eq!(text(numeric(1, 2, 0, 0, &[7])), "700000000");
        assert_eq!(text(numeric(0, 0, 0xC000, 0, &[])), "NaN");
        assert_eq!(text(numeric(0, 0, 0xF000, 0, &[])), "-Infinity");
        assert!(numeric_text(&[0, 1]).is_err());
    }

    #[test]
    fn numerics_are_numbers_only_when_a_double_keeps_them() {
        assert_eq!(numeric_cell("1.50".into()), Cell::Float(1.5));
        assert_eq!(numeric_cell("0.1".into()), Cell::Float(0.1));
        assert_eq!(numeric_cell("-0.000".into()), Cell::Int(0));
        assert_eq!(numeric_cell("150.00".into()), Cell::Int(150));
        assert_eq!(numeric_cell("-123456789".into()), Cell::Int(-123456789));
        assert_eq!(
            numeric_cell("9007199254740993".into()),
            Cell::Text("9007199254740993".into())
        );
        assert_eq!(
            numeric_cell("12345678901234567890".into()),
            Cell::Text("12345678901234567890".into())
        );
        assert_eq!(
            numeric_cell("0.12345678901234567890".into()),
            Cell::Text("0.12345678901234567890".into())
        );
        assert_eq!(numeric_cell("NaN".into()), Cell::Text("NaN".into()));
        assert_eq!(
            numeric_cell("Infinity".into()),
            Cell::Text("Infinity".into())
        );
    }

    #[test]
    fn dates_and_times_are_iso_8601() {
        assert_eq!(date_text(0), "2000-01-01");
        assert_eq!(date_text(-1), "1999-12-31");
        assert_eq!(date_text(i32::MAX), "infinity");
        assert_eq!(time_text(0), "00:00:00");
        assert_eq!(time_text(45_296_500_000), "12:34:56.5");
        assert_eq!(time_text(86_400_000_000), "24:00:00");
        assert_eq!(timestamp_text(0, "Z"), "2000-01-01T00:00:00Z");
        assert_eq!(timestamp_text(-1, ""), "1999-12-31T23:59:59.999999");
        assert_eq!(timestamp_text(i64::MIN, "Z"), "-infinity");
        assert_eq!(offset_text(-(5 * 3600 + 30 * 60)), "-05:30");
        assert_eq!(offset_text(0), "+00:00");
        assert_eq!(interval_text(0, 0, 0), "PT0S");
        assert_eq!(
            interval_text(4 * 3_600_000_000 + 5 * 60_000_000 + 6_500_000, 3, 14),
            "P1Y2M3DT4H5M6.5S"
        );
        assert_eq!(interval_text(-90_000_000, -1, 0), "P-1DT-1M-30S");
    }

    #[test]
    fn arrays_nest_by_dimension() {
        let mut b = Vec::new();
        for v in [2i32, 1, 23, 2, 1, 2, 1] {
            b.extend(v.to_be_bytes());
        }
        for v in [Some(1i32), None, Some(3), Some(4)] {
            match v {
                Some(v) => {
                    b.extend(4i32.to_be_bytes());
                    b.extend(v.to_be_bytes());
                }
                None => b.extend((-1i32).to_be_bytes()),
            }
        }
        let cell = array(&Decoder::Int4, &b).unwrap();
        assert_eq!(serde_json::to_string(&cell).unwrap(), "[[1,null],[3,4]]");
        // A truncated value is an error, not a panic.
        assert!(array(&Decoder::Int4, &b[..b.len() - 2]).is_err());
    }

    #[test]
    fn addresses_read_like_postgres() {
        assert_eq!(inet_text(&[2, 32, 0, 4, 10, 0, 0, 1]).unwrap(), "10.0.0.1");
        assert_eq!(
            inet_text(&[2, 24, 1, 4, 10, 0, 0, 0]).unwrap(),
            "10.0.0.0/24"
        );
        let mut v6 = vec![3, 128, 0, 16];
        v6.extend([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(inet_text(&v6).unwrap(), "2001:db8::1");
    }
}
