//! How a statement is run so that a value no answer could hold never leaves the server: its
//! values that can be large (strings, binary strings, JSON, geometry) are measured there with
//! `LENGTH` (bytes, which the JSON answer never weighs less than), and a row whose values
//! together exceed `max_size` comes back with them left out (`NULL`) and its size in a last
//! column (`mcp_size`): the request then ends with the same "larger than `max_size`" error, or
//! `truncated`, it would have ended with after reading the whole row (the issue 35 attack: four
//! reads of a 15 MB value held it four times, then its JSON).
//!
//! The statement is wrapped as a common table expression with its columns renamed `c1 … cn`
//! (its own names may repeat; the answer keeps them):
//!
//! ```sql
//! WITH mcp_q(c1, c2) AS (
//! statement
//! )
//! SELECT c1, IF(mcp_size > max_size, NULL, c2), mcp_size
//! FROM (SELECT mcp_q.*, COALESCE(LENGTH(c2), 0) AS mcp_size FROM mcp_q) AS mcp_s LIMIT row_limit + 1
//! ```
//!
//! What keeps the answer the same: MariaDB merges a table expression without `LIMIT` into the
//! query around it (`derived_merge`), which then runs the statement's own plan, row by row in its
//! order, and it *drops* the `ORDER BY` of such an expression. A statement whose outermost query
//! is ordered and has no `LIMIT` (or `FETCH`) therefore gets `LIMIT row_limit + 1` inside, which
//! keeps its order (the expression is then materialized, sorted, and read in that order); one with
//! its own `LIMIT` keeps it. The outer `LIMIT row_limit + 1` only stops the server after the rows
//! the answer can hold. A table read is `SELECT * FROM t …` inside, `LIMIT` outside (merged,
//! streamed). A statement that cannot be wrapped (`SHOW`, `DESCRIBE`, `EXPLAIN`, anything else
//! the server will not prepare wrapped: any error preparing the wrapped text) runs as it is, as before:
//! what bounds memory then is the server's `max_allowed_packet` per row (16 MiB by default) and
//! one row held at a time per pooled connection (a `SELECT` the server refuses wrapped pays that
//! failed prepare on each run). MariaDB's JSON columns are recognised from the unwrapped
//! statement's columns (an `IF` hides where a value came from). Not wrapped either: a statement
//! whose large columns all come straight from tables and whose declared lengths cannot add up
//! past `max_size` (`rows::stored_bytes`): nothing could be left out, and the wrapping costs
//! MariaDB's optimizer ~35 µs a run (`mysql/query-1` p50).

use super::rows::Decoder;
use crate::providers::sql::text::{self, Dialect};

/// Statements that read rows and can stand inside `WITH … AS (…)`.
const WRAPPABLE: [&str; 4] = ["SELECT", "WITH", "VALUES", "TABLE"];

/// Whether a column's values can be large (and are measured): strings, binary strings, JSON;
/// numbers, dates and `BIT` have a small fixed size.
pub(super) fn can_be_large(d: Decoder) -> bool {
    matches!(d, Decoder::Text | Decoder::Bytes | Decoder::Json)
}

/// Whether `sql` can be wrapped at all (a statement that reads rows).
pub(super) fn wrappable(sql: &str) -> bool {
    text::first_keyword(sql, Dialect::Mysql).is_some_and(|k| WRAPPABLE.contains(&k.as_str()))
}

/// `sql` as the table expression's body: with `LIMIT rows` added when its outermost query is
/// ordered without a limit of its own (MariaDB would drop the order otherwise).
pub(super) fn body(sql: &str, rows: u64) -> String {
    let words = text::top_level_words(sql, Dialect::Mysql);
    let has = |w: &str| words.iter().any(|x| x == w);
    // `FETCH FIRST n ROWS ONLY` (`fetch` alone may name a column).
    let fetch = words
        .windows(2)
        .any(|w| w[0] == "FETCH" && (w[1] == "FIRST" || w[1] == "NEXT"));
    if has("ORDER") && !has("LIMIT") && !fetch {
        format!("{sql}\nLIMIT {rows}")
    } else {
        sql.to_owned()
    }
}

/// The wrapped statement: `body` as `mcp_q`, the columns of `measured` (one flag per column)
/// summed into `mcp_size` and left out past `max_size`, at most `rows` rows.
pub(super) fn wrap(body: &str, measured: &[bool], rows: u64, max_size: usize) -> String {
    let names: Vec<String> = (1..=measured.len()).map(|i| format!("c{i}")).collect();
    let sum: Vec<String> = names
        .iter()
        .zip(measured)
        .filter(|(_, m)| **m)
        .map(|(c, _)| format!("COALESCE(LENGTH({c}), 0)"))
        .collect();
    let list: Vec<String> = names
        .iter()
        .zip(measured)
        .map(|(c, m)| {
            if *m {
                format!("IF(mcp_size > {max_size}, NULL, {c})")
            } else {
                c.clone()
            }
        })
        .collect();
    format!(
        "WITH mcp_q({}) AS (\n{body}\n)\nSELECT {}, mcp_size FROM (SELECT mcp_q.*, {} AS mcp_size FROM mcp_q) AS mcp_s LIMIT {rows}",
        names.join(", "),
        list.join(", "),
        sum.join(" + ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ordered_statement_keeps_its_order_inside() {
        assert_eq!(
            body("SELECT a FROM t ORDER BY a", 11),
            "SELECT a FROM t ORDER BY a\nLIMIT 11"
        );
        assert_eq!(
            body("SELECT a FROM t ORDER BY a LIMIT 3", 11),
            "SELECT a FROM t ORDER BY a LIMIT 3"
        );
        assert_eq!(
            body("SELECT a FROM t ORDER BY a FETCH FIRST 2 ROWS ONLY", 11),
            "SELECT a FROM t ORDER BY a FETCH FIRST 2 ROWS ONLY"
        );
        assert_eq!(
            body("SELECT fetch FROM t ORDER BY fetch", 11),
            "SELECT fetch FROM t ORDER BY fetch\nLIMIT 11"
        );
        assert_eq!(
            body("SELECT a FROM (SELECT a FROM t ORDER BY a) x", 11),
            "SELECT a FROM (SELECT a FROM t ORDER BY a) x"
        );
        assert_eq!(
            wrap("SELECT 1, 'x'", &[false, true], 5, 100),
            "WITH mcp_q(c1, c2) AS (\nSELECT 1, 'x'\n)\nSELECT c1, IF(mcp_size > 100, NULL, c2), mcp_size FROM (SELECT mcp_q.*, COALESCE(LENGTH(c2), 0) AS mcp_size FROM mcp_q) AS mcp_s LIMIT 5"
        );
        assert!(wrappable("(SELECT 1) UNION (SELECT 2)"));
        assert!(!wrappable("SHOW TABLES"));
    }
}
