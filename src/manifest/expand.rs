//! `${VAR}`, `${VAR:-default}` and `$${` in manifest strings, and the units (durations, sizes).

use std::time::Duration;

/// Replaces `${VAR}` and `${VAR:-default}` from `lookup`; `$${` is a literal `${`.
/// Any other `$` is kept as written. Errors name the variable.
pub fn expand_env(input: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    if !input.contains('$') {
        return Ok(input.to_owned());
    }
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix("${") {
            out.push_str("${");
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{') {
            let end = body.find('}').ok_or_else(|| {
                "`${` is not closed by `}` (write `$${` for a literal `${`)".to_owned()
            })?;
            let inner = &body[..end];
            let (name, default) = match inner.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (inner, None),
            };
            if !is_var_name(name) {
                return Err(format!(
                    "`${{{inner}}}` is not a variable reference; names are letters, digits and `_` (write `$${{` for a literal `${{`)"
                ));
            }
            match (lookup(name), default) {
                (Some(v), _) => out.push_str(&v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => {
                    return Err(format!(
                        "environment variable `{name}` is not set (give a default with `${{{name}:-value}}`)"
                    ));
                }
            }
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

pub(super) fn is_var_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Splits `"1.5 MiB"` into its number and its unit (trimmed).
fn number_and_unit(s: &str) -> Option<(f64, &str)> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    Some((num.parse().ok()?, unit.trim()))
}

/// The units of a duration, largest first, as the grammar accepts them.
const DURATION_UNITS: [(&str, f64); 4] = [("h", 3600.0), ("m", 60.0), ("s", 1.0), ("ms", 0.001)];

/// What every duration message lists.
pub const DURATION_FORMS: &str = "a number and a unit, `h`, `m`, `s` or `ms`, in that order and without spaces, e.g. \"500ms\", \"90s\", \"2m\", \"1h30m\"";

/// The one duration grammar: one or more `NUMBER UNIT` parts, largest unit first, each unit at
/// most once, no spaces: `"500ms"`, `"30s"`, `"1.5s"`, `"2m"`, `"1h30m"`, `"1m30s"`. Long forms
/// (`"30 sec"`, `"2 minutes"`, `"1 hour"`) and a bare number are refused with the form to
/// write instead, so every duration in every manifest reads the same way.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    // A spelling with an obvious accepted form gets just that form; anything else the reason
    // and the grammar.
    let refuse = |why: String| match suggest_duration(s) {
        Some(better) if better != s => {
            format!("`{s}` is not how durations are written here; write \"{better}\"")
        }
        _ => format!("{why}; a duration is {DURATION_FORMS}"),
    };
    if s.trim().is_empty() {
        return Err(format!(
            "an empty string is not a duration; a duration is {DURATION_FORMS}"
        ));
    }
    if s.contains(char::is_whitespace) {
        return Err(refuse(format!("`{s}` is not a duration")));
    }
    let mut rest = s;
    let mut secs = 0.0;
    let mut last_unit: Option<usize> = None;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (num, tail) = rest.split_at(digits);
        if num.is_empty() {
            return Err(refuse(format!("`{s}` is not a duration")));
        }
        let value: f64 = num
            .parse()
            .map_err(|_| refuse(format!("`{num}` in `{s}` is not a number")))?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, after) = tail.split_at(unit_len);
        if unit.is_empty() {
            return Err(refuse(format!("`{s}` has no unit")));
        }
        let Some(index) = DURATION_UNITS.iter().position(|(u, _)| *u == unit) else {
            return Err(refuse(format!("`{unit}` in `{s}` is not a duration unit")));
        };
        if last_unit.is_some_and(|l| l >= index) {
            return Err(refuse(format!(
                "the units of `{s}` are not in order (h, m, s, ms, each once)"
            )));
        }
        last_unit = Some(index);
        secs += value * DURATION_UNITS[index].1;
        rest = after;
    }
    if !secs.is_finite() || secs <= 0.0 || secs > 365.0 * 86400.0 {
        return Err(format!(
            "duration `{s}` is out of range (more than 0 and at most a year)"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The accepted spelling of a duration written another way (`"30 sec"` → `"30s"`, `"2 minutes"`
/// → `"2m"`, `30` → `"30s"`), when there is an obvious one.
pub fn suggest_duration(s: &str) -> Option<String> {
    let mut out = String::new();
    let mut words = s.split_whitespace().peekable();
    let mut any = false;
    while let Some(word) = words.next() {
        // "30sec" or "30 sec": split a number from the unit that follows it.
        let digits = word
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(word.len());
        let (num, unit) = word.split_at(digits);
        if num.is_empty() || num.parse::<f64>().is_err() {
            return None;
        }
        let unit = if unit.is_empty() {
            match words.peek() {
                Some(next) if !next.starts_with(|c: char| c.is_ascii_digit()) => {
                    words.next().unwrap_or_default()
                }
                _ => "s",
            }
        } else {
            unit
        };
        let unit = unit.trim_end_matches(',').to_ascii_lowercase();
        let short = match unit.as_str() {
            "h" | "hr" | "hrs" | "hour" | "hours" => "h",
            "m" | "min" | "mins" | "minute" | "minutes" => "m",
            "s" | "sec" | "secs" | "second" | "seconds" => "s",
            "ms" | "msec" | "msecs" | "millisecond" | "milliseconds" => "ms",
            _ => return None,
        };
        out.push_str(num);
        out.push_str(short);
        any = true;
    }
    any.then_some(out)
}

/// `"64KiB"`, `"1MiB"`, `"10MB"`, `"512B"` or a plain number of bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (value, unit) = number_and_unit(s)
        .ok_or_else(|| format!("`{s}` is not a size; write e.g. \"64KiB\" or \"1MiB\""))?;
    let mult: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "kb" => 1000.0,
        "m" | "mib" => 1024.0 * 1024.0,
        "mb" => 1e6,
        "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "gb" => 1e9,
        other => {
            return Err(format!(
                "unknown size unit `{other}` in `{s}`; use B, KiB, MiB or GiB"
            ));
        }
    };
    let bytes = value * mult;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(format!("size `{s}` is out of range"));
    }
    Ok(bytes.round() as u64)
}

/// A duration as a person writes it, for messages: "30s", "500ms", "2m", "1h".
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(3_600_000) && ms >= 3_600_000 {
        format!("{}h", ms / 3_600_000)
    } else if ms.is_multiple_of(60_000) && ms >= 60_000 {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// A size as a person writes it, for messages: "1 MiB", "64 KiB", "1.5 KiB", "12 bytes".
pub fn format_size(n: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if n >= size {
            let v = n as f64 / size as f64;
            return if n.is_multiple_of(size) {
                format!("{} {unit}", n / size)
            } else {
                format!("{v:.1} {unit}")
            };
        }
    }
    format!("{n} bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_variables_defaults_and_escapes() {
        let cases = [
            ("plain", "plain"),
            ("${HOME}/x", "/home/u/x"),
            ("${NOPE:-fallback}", "fallback"),
            ("${HOME:-fallback}", "/home/u"),
            ("$${HOME}", "${HOME}"),
            ("cost $5 and $HOME", "cost $5 and $HOME"),
            ("a${EMPTY}b", "ab"),
            ("${NOPE:-}", ""),
        ];
        for (input, want) in cases {
            assert_eq!(expand_env(input, &env).as_deref(), Ok(want), "{input}");
        }
    }

    #[test]
    fn reports_missing_and_malformed_variables() {
        assert!(
            expand_env("${NOPE}", &env)
                .unwrap_err()
                .contains("`NOPE` is not set")
        );
        assert!(
            expand_env("${HOME", &env)
                .unwrap_err()
                .contains("not closed")
        );
        assert!(
            expand_env("${a b}", &env)
                .unwrap_err()
                .contains("not a variable")
        );
    }

    #[test]
    fn parses_durations_and_sizes() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1s500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(
            parse_duration("30").unwrap_err(),
            "`30` is not how durations are written here; write \"30s\""
        );
        assert_eq!(
            parse_duration("30 sec").unwrap_err(),
            "`30 sec` is not how durations are written here; write \"30s\""
        );
        assert_eq!(
            parse_duration("2 minutes").unwrap_err(),
            "`2 minutes` is not how durations are written here; write \"2m\""
        );
        assert_eq!(
            parse_duration("1 hour 30 minutes").unwrap_err(),
            "`1 hour 30 minutes` is not how durations are written here; write \"1h30m\""
        );
        assert!(
            parse_duration("2min")
                .unwrap_err()
                .ends_with("write \"2m\"")
        );
        assert!(
            parse_duration("30m1h")
                .unwrap_err()
                .contains("not in order")
        );
        assert!(parse_duration("1s1s").unwrap_err().contains("not in order"));
        assert!(
            parse_duration("5 parsecs")
                .unwrap_err()
                .contains("e.g. \"500ms\"")
        );
        assert!(parse_duration("0s").unwrap_err().contains("out of range"));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("1..2s").is_err());
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("10MB"), Ok(10_000_000));
        assert_eq!(parse_size("512"), Ok(512));
        assert!(parse_size("lots").is_err());
        assert_eq!(format_size(1 << 20), "1 MiB");
        assert_eq!(format_size(64 * 1024), "64 KiB");
        assert_eq!(format_size(1000), "1000 bytes");
        assert_eq!(format_duration(Duration::from_secs(30)), "30s");
        assert_eq!(format_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(format_duration(Duration::from_secs(120)), "2m");
        assert_eq!(format_duration(Duration::from_secs(3600)), "1h");
    }
}
