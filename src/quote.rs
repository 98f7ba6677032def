//! Client values quoted in messages: the one rule for how much of a value an error message (a
//! JSON-RPC error, an `isError` tool result, a log line) may repeat. Pure.
//!
//! A client chooses its values' lengths: a 14 MB URI or a 17 MiB argument echoed back whole
//! would make every error answer as large as the request, and a log line as large again. So a
//! message quotes at most `QUOTED_CHARS` characters of a value and says how long it was:
//! `"ééé…" (7000000 characters)`. Short values read exactly as before. For the same reason a
//! message lists at most `MAX_PROBLEMS` problems.

/// The most characters of a client's value that a message quotes: enough to recognize a URI,
/// a name or a revision, and a bound on every message that quotes one.
pub(crate) const QUOTED_CHARS: usize = 100;

/// How the message around a value quotes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quote {
    /// As a JSON string (`"ABC"`, control characters escaped), how parameter rules quote values.
    Json,
    /// Between backquotes (`` `notes://x` ``), how messages name URIs, names and revisions.
    Code,
    /// As it is (`resource not found: notes://x`).
    Plain,
}

/// `value` as a message quotes it (`how`): whole when it has at most `QUOTED_CHARS`
/// characters; else its first `QUOTED_CHARS` characters (cut on a character boundary), `…`, and
/// after the quotes its length: `` `note://ééé…` (7000008 characters) ``.
pub(crate) fn quote(value: &str, how: Quote) -> String {
    // The byte offset of the character after the first `QUOTED_CHARS`, if there is one: only
    // that much of the value is looked at unless it is cut.
    let cut = value.char_indices().nth(QUOTED_CHARS).map(|(at, _)| at);
    let head = &value[..cut.unwrap_or(value.len())];
    let (open, body, close) = match how {
        Quote::Json => {
            let json = serde_json::Value::String(head.to_owned()).to_string();
            let inner = json[1..json.len() - 1].to_owned();
            ("\"", inner, "\"")
        }
        Quote::Code => ("`", head.to_owned(), "`"),
        Quote::Plain => ("", head.to_owned(), ""),
    };
    match cut {
        None => format!("{open}{body}{close}"),
        Some(at) => {
            let chars = QUOTED_CHARS + value[at..].chars().count();
            format!("{open}{body}…{close} ({chars} characters)")
        }
    }
}

/// The most problems one message lists: a client sending a million unknown names would
/// otherwise get a message of a million lines, longer than what it sent.
pub(crate) const MAX_PROBLEMS: usize = 20;

/// `problems` as a message lists them: the first `MAX_PROBLEMS`, then a line counting the
/// others.
pub(crate) fn at_most_reported(mut problems: Vec<String>) -> Vec<String> {
    if problems.len() > MAX_PROBLEMS {
        let more = problems.len() - MAX_PROBLEMS;
        problems.truncate(MAX_PROBLEMS);
        problems.push(format!("and {more} more problems"));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_quoted_whole() {
        assert_eq!(quote("ABC", Quote::Json), "\"ABC\"");
        assert_eq!(quote("a\"b\n", Quote::Json), "\"a\\\"b\\n\"");
        assert_eq!(quote("notes://x", Quote::Code), "`notes://x`");
        assert_eq!(quote("notes://x", Quote::Plain), "notes://x");
        let exactly = "é".repeat(QUOTED_CHARS);
        assert_eq!(quote(&exactly, Quote::Plain), exactly);
    }

    /// However long the value, the message quotes a bounded prefix cut on a character boundary,
    /// and says how long the value was.
    #[test]
    fn long_values_are_cut_with_their_length() {
        let value = "é".repeat(7_000_000);
        let head = "é".repeat(QUOTED_CHARS);
        assert_eq!(
            quote(&value, Quote::Json),
            format!("\"{head}…\" (7000000 characters)")
        );
        assert_eq!(
            quote(&value, Quote::Code),
            format!("`{head}…` (7000000 characters)")
        );
        assert_eq!(
            quote(&value, Quote::Plain),
            format!("{head}… (7000000 characters)")
        );
        let one_more = "x".repeat(QUOTED_CHARS + 1);
        assert_eq!(
            quote(&one_more, Quote::Plain),
            format!("{}… (101 characters)", &one_more[..QUOTED_CHARS])
        );
        // Escapes make a JSON quote longer, never unbounded.
        let controls = "\u{1}".repeat(17 << 20);
        assert!(quote(&controls, Quote::Json).len() < 1024);
    }
}
