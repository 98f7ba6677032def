//! SQL text checks for named queries and `sql` templates, pure (no database): a tokenizer that
//! follows SQLite's own rules for strings, quoted identifiers, comments and parameters, used to
//! find the `:name` parameters, to refuse multi-statement SQL and statements that do not read, and
//! to rewrite `:name` as `?N` so sqlx (which binds only positional parameters) binds by name.
//!
//! The rewrite changes nothing but parameter tokens; the registry prepares the result with SQLite
//! and checks that SQLite counts exactly the parameters found here, so a disagreement between this
//! tokenizer and SQLite's is a build-time diagnostic, never a wrong binding.

use std::ops::Range;

/// The first keywords of statements that only read. Anything else (INSERT, ATTACH, VACUUM INTO,
/// CREATE, …) is refused when the manifest is checked; a write hidden behind one of these (a
/// `WITH … DELETE`, a `PRAGMA x = y`) still fails when it runs, since the database is opened
/// read-only with `query_only` on.
pub const READ_KEYWORDS: [&str; 5] = ["SELECT", "WITH", "VALUES", "PRAGMA", "EXPLAIN"];

/// Something wrong with the SQL text of one statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Only whitespace and comments.
    Empty,
    /// More than one statement (text after the first `;`).
    MultipleStatements,
    /// The statement does not start with one of `READ_KEYWORDS`; holds the first word.
    NotARead(String),
    /// A `?` or `?NNN` parameter: nothing could bind it by name.
    Positional(String),
    /// An `@name` or `$name` parameter; holds the token and the name.
    OtherPrefix(String, String),
    /// A `:name` the caller does not declare.
    Undeclared(String),
    /// A declared name the SQL never uses.
    Unused(String),
}

/// A statement whose `:name` parameters are rewritten as `?N`: `?1` binds `names[0]`, and so on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedSql {
    pub sql: String,
    pub names: Vec<String>,
}

/// Checks one statement against the parameter names the caller declares (in binding order) and
/// rewrites it for positional binding. Every problem is reported, in text order.
pub fn bind_by_name(sql: &str, declared: &[&str]) -> Result<NamedSql, Vec<Problem>> {
    let tokens = tokenize(sql);
    let mut problems = Vec::new();
    let significant: Vec<&Token> = tokens.iter().filter(|t| t.kind != Kind::Space).collect();
    let end = significant
        .iter()
        .position(|t| t.kind == Kind::Semicolon)
        .unwrap_or(significant.len());
    let (statement, rest) = significant.split_at(end);
    if statement.is_empty() {
        problems.push(Problem::Empty);
    }
    if rest.iter().any(|t| t.kind != Kind::Semicolon) {
        problems.push(Problem::MultipleStatements);
    }
    if let Some(first) = statement.first() {
        let word = &sql[first.range.clone()];
        let is_read =
            first.kind == Kind::Word && READ_KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(word));
        if !is_read {
            problems.push(Problem::NotARead(word.to_owned()));
        }
    }

    // The statement ends with its last token before the first `;` (trailing comments go too).
    let start = statement.first().map_or(0, |t| t.range.start);
    let stop = statement.last().map_or(0, |t| t.range.end);
    let mut used = vec![false; declared.len()];
    let mut out = String::with_capacity(sql.len());
    let mut copied = start;
    for t in tokens.iter().filter(|t| t.range.end <= stop) {
        let Kind::Param(prefix) = t.kind else {
            continue;
        };
        let text = &sql[t.range.clone()];
        let name = &text[1..];
        match prefix {
            b'?' => problems.push(Problem::Positional(text.to_owned())),
            b':' => match declared.iter().position(|d| *d == name) {
                Some(i) => {
                    used[i] = true;
                    out.push_str(&sql[copied..t.range.start]);
                    out.push_str(&format!("?{}", i + 1));
                    copied = t.range.end;
                }
                None => problems.push(Problem::Undeclared(name.to_owned())),
            },
            _ => problems.push(Problem::OtherPrefix(text.to_owned(), name.to_owned())),
        }
    }
    out.push_str(&sql[copied..stop.max(copied)]);
    for (name, used) in declared.iter().zip(&used) {
        if !used {
            problems.push(Problem::Unused((*name).to_owned()));
        }
    }
    if problems.is_empty() {
        Ok(NamedSql {
            sql: out,
            names: declared.iter().map(|d| (*d).to_owned()).collect(),
        })
    } else {
        problems.dedup();
        Err(problems)
    }
}

/// Quotes an identifier for SQLite (`"` doubled inside), so any table name is one identifier.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Whitespace and comments.
    Space,
    /// A keyword or bare identifier (also numbers: nothing here needs to tell them apart).
    Word,
    /// A string literal or a quoted identifier.
    Quoted,
    /// A parameter; holds its first character (`?`, `:`, `@`, `$`).
    Param(u8),
    Semicolon,
    Other,
}

#[derive(Debug)]
struct Token {
    kind: Kind,
    range: Range<usize>,
}

/// SQLite's `IdChar`: letters, digits, `_`, `$` and every byte of a non-ASCII character.
fn id_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// Splits SQL into tokens the way SQLite's tokenizer (`tokenize.c`) does, as far as parameters,
/// quoting, comments and `;` are concerned. Unterminated quotes and comments run to the end (SQLite
/// then refuses the statement when it is prepared).
fn tokenize(sql: &str) -> Vec<Token> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let kind = match b[i] {
            b' ' | b'\t' | b'\n' | b'\x0c' | b'\r' => {
                while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\x0c' | b'\r') {
                    i += 1;
                }
                Kind::Space
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                Kind::Space
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i = (i + 2).min(b.len());
                Kind::Space
            }
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                loop {
                    match b.get(i) {
                        None => break,
                        Some(&c) if c == q => {
                            if b.get(i + 1) == Some(&q) {
                                i += 2;
                            } else {
                                i += 1;
                                break;
                            }
                        }
                        Some(_) => i += 1,
                    }
                }
                Kind::Quoted
            }
            b'[' => {
                while i < b.len() && b[i] != b']' {
                    i += 1;
                }
                i = (i + 1).min(b.len());
                Kind::Quoted
            }
            b'?' => {
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                Kind::Param(b'?')
            }
            p @ (b':' | b'@' | b'$') if b.get(i + 1).is_some_and(|c| id_char(*c)) => {
                i += 1;
                while i < b.len() && id_char(b[i]) {
                    i += 1;
                }
                Kind::Param(p)
            }
            b';' => {
                i += 1;
                Kind::Semicolon
            }
            c if id_char(c) => {
                while i < b.len() && id_char(b[i]) {
                    i += 1;
                }
                Kind::Word
            }
            _ => {
                // One character (a whole UTF-8 character never starts here: those are id chars).
                i += 1;
                Kind::Other
            }
        };
        out.push(Token {
            kind,
            range: start..i,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(sql: &str, declared: &[&str]) -> String {
        match bind_by_name(sql, declared) {
            Ok(n) => n.sql,
            Err(p) => panic!("{sql}: {p:?}"),
        }
    }

    fn problems(sql: &str, declared: &[&str]) -> Vec<Problem> {
        match bind_by_name(sql, declared) {
            Ok(n) => panic!("{sql} should fail, got {}", n.sql),
            Err(p) => p,
        }
    }

    #[test]
    fn rewrites_named_parameters_in_declared_order() {
        assert_eq!(
            ok(
                "SELECT * FROM t WHERE a = :b AND c = :a OR d = :b",
                &["a", "b"]
            ),
            "SELECT * FROM t WHERE a = ?2 AND c = ?1 OR d = ?2"
        );
        assert_eq!(ok("select :x;", &["x"]), "select ?1");
        assert_eq!(ok("  VALUES (:x) ;  ; -- done\n", &["x"]), "VALUES (?1)");
        assert_eq!(
            ok("with x as (select 1) select * from x", &[]),
            "with x as (select 1) select * from x"
        );
        assert_eq!(ok("PRAGMA table_info('t')", &[]), "PRAGMA table_info('t')");
    }

    #[test]
    fn parameters_inside_strings_identifiers_and_comments_are_text() {
        let sql = "SELECT ':a', \":a\", `:a`, [:a], x':a' -- :a\n /* :a */ FROM t WHERE v = :a";
        assert_eq!(
            ok(sql, &["a"]),
            "SELECT ':a', \":a\", `:a`, [:a], x':a' -- :a\n /* :a */ FROM t WHERE v = ?1"
        );
        // Doubled quotes stay inside the literal.
        assert_eq!(
            ok("SELECT 'it''s :a' || :a", &["a"]),
            "SELECT 'it''s :a' || ?1"
        );
        assert_eq!(
            ok("SELECT \"a\"\":a\" FROM t", &[]),
            "SELECT \"a\"\":a\" FROM t"
        );
        // A `;` inside a string is not a statement end.
        assert_eq!(ok("SELECT ';DROP TABLE t'", &[]), "SELECT ';DROP TABLE t'");
    }

    #[test]
    fn names_run_over_sqlite_identifier_characters() {
        assert_eq!(ok("SELECT :a_1+:b", &["a_1", "b"]), "SELECT ?1+?2");
        assert_eq!(
            problems("SELECT :aé", &["a"]),
            [
                Problem::Undeclared("aé".into()),
                Problem::Unused("a".into())
            ]
        );
        // `::` and a lone `:` are not parameters.
        assert_eq!(ok("SELECT 1 :: 2", &[]), "SELECT 1 :: 2");
    }

    #[test]
    fn reports_every_problem_in_order() {
        assert_eq!(
            problems("SELECT :x, ?, ?3, @y, $z FROM t WHERE :w", &["w", "v"]),
            [
                Problem::Undeclared("x".into()),
                Problem::Positional("?".into()),
                Problem::Positional("?3".into()),
                Problem::OtherPrefix("@y".into(), "y".into()),
                Problem::OtherPrefix("$z".into(), "z".into()),
                Problem::Unused("v".into()),
            ]
        );
    }

    #[test]
    fn one_reading_statement_only() {
        assert_eq!(problems("", &[]), [Problem::Empty]);
        assert_eq!(problems(" -- nothing\n/* here */ ;", &[]), [Problem::Empty]);
        assert_eq!(
            problems("SELECT 1; DROP TABLE t", &[]),
            [Problem::MultipleStatements]
        );
        assert_eq!(
            problems("SELECT 1;; SELECT 2", &[]),
            [Problem::MultipleStatements]
        );
        assert_eq!(
            problems("DELETE FROM t", &[]),
            [Problem::NotARead("DELETE".into())]
        );
        assert_eq!(
            problems("ATTACH 'x.db' AS x", &[]),
            [Problem::NotARead("ATTACH".into())]
        );
        assert_eq!(problems("(SELECT 1)", &[]), [Problem::NotARead("(".into())]);
        assert_eq!(ok("select 1; -- trailing comment", &[]), "select 1");
    }

    #[test]
    fn quoting_identifiers_doubles_quotes() {
        assert_eq!(quote_ident("a b"), "\"a b\"");
        assert_eq!(quote_ident("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(quote_ident("é"), "\"é\"");
    }
}
