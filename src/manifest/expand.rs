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

fn is_var_name(s: &str) -> bool {
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

/// `"500ms"`, `"30s"`, `"2m"`, `"1h"`; a bare number is not accepted, so the unit is always visible.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (value, unit) = number_and_unit(s).ok_or_else(|| {
        format!("`{s}` is not a duration; write e.g. \"500ms\", \"30s\" or \"2m\"")
    })?;
    let secs = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        "" => {
            return Err(format!(
                "`{s}` has no unit; write e.g. \"{s}s\" or \"{s}ms\""
            ));
        }
        other => {
            return Err(format!(
                "unknown duration unit `{other}` in `{s}`; use ms, s, m or h"
            ));
        }
    };
    if !secs.is_finite() || secs <= 0.0 || secs > 365.0 * 86400.0 {
        return Err(format!("duration `{s}` is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
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
        assert!(parse_duration("30").unwrap_err().contains("no unit"));
        assert!(parse_duration("5 parsecs").is_err());
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
