//! SQL text checks for named queries, `sql` templates and the SQL tool, pure (no database): a
//! tokenizer that follows the database's own rules for strings, quoted identifiers, comments and
//! parameters (SQLite's; PostgreSQL's with its dollar-quoted and `E''` strings, nested comments,
//! `::` casts and `?`/`@` operators; MySQL's with backslash escapes, `#` and `-- ` comments and
//! backquoted names), used to find the `:name` parameters, to refuse multi-statement SQL and
//! statements that do not read, and to rewrite `:name` as `?N` (SQLite), `$N` (PostgreSQL) or
//! `?` (MySQL, bound in the order they appear) so sqlx and rusqlite bind by name.
//!
//! The rewrite changes nothing but parameter tokens; the providers prepare the result with the
//! database and check that it counts exactly the parameters found here, so a disagreement between
//! this tokenizer and the database's is a diagnostic, never a wrong binding.

use std::ops::Range;

/// The first keywords of statements that only read. Anything else (INSERT, ATTACH, VACUUM INTO,
/// CREATE, …) is refused when the manifest is checked; a write hidden behind one of these (a
/// `WITH … DELETE`, a `PRAGMA x = y`) still fails when it runs, since the database is opened
/// read-only with `query_only` on.
pub const READ_KEYWORDS: [&str; 5] = ["SELECT", "WITH", "VALUES", "PRAGMA", "EXPLAIN"];

/// PostgreSQL's statements that read. A write hidden behind one (`WITH … INSERT`, `SELECT … INTO`,
/// a function that writes) still fails: every statement runs in a `READ ONLY` transaction that
/// is rolled back.
pub const PG_READ_KEYWORDS: [&str; 6] = ["SELECT", "WITH", "VALUES", "TABLE", "EXPLAIN", "SHOW"];

/// MySQL's and MariaDB's statements that read. A write hidden behind one (a function that writes,
/// `SELECT … FOR UPDATE`) still fails: every statement runs in `START TRANSACTION READ ONLY`,
/// rolled back. `INTO` (`SELECT … INTO OUTFILE`, `INTO @var`) is refused wherever it stands.
pub const MYSQL_READ_KEYWORDS: [&str; 8] = [
    "SELECT", "WITH", "VALUES", "TABLE", "SHOW", "DESCRIBE", "DESC", "EXPLAIN",
];

/// Whose rules the tokenizer follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
    Mysql,
}

impl Dialect {
    /// The first keywords of the statements this dialect lets a manifest run.
    pub fn read_keywords(self) -> &'static [&'static str] {
        match self {
            Dialect::Sqlite => &READ_KEYWORDS,
            Dialect::Postgres => &PG_READ_KEYWORDS,
            Dialect::Mysql => &MYSQL_READ_KEYWORDS,
        }
    }

    /// How a statement is kept from writing, for messages.
    fn guard(self) -> &'static str {
        match self {
            Dialect::Sqlite => "the database is opened read-only",
            Dialect::Postgres => "every statement runs in a read-only transaction",
            Dialect::Mysql => "every statement runs in a read-only transaction",
        }
    }
}

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
    /// MySQL's `INTO` (a file, a variable, a table), which no reading statement needs.
    Into,
    /// MySQL's `/*! … */` or `/*M! … */`: a comment the server runs as SQL.
    ExecutableComment,
    /// MySQL's `/*+ … */` optimizer hints: `MAX_EXECUTION_TIME(N)` or `SET_VAR(…)` there would
    /// lift the statement time limit `timeout` sets on the server.
    OptimizerHint,
}

/// A statement whose `:name` parameters are rewritten as `?N`: `?1` binds `names[0]`, and so on.
/// MySQL's placeholders are plain `?`, bound in the order they appear: `binds[i]` is the index in
/// `names` of the value the `i`-th placeholder takes (for the numbered ones, `0..names.len()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedSql {
    pub sql: String,
    pub names: Vec<String>,
    pub binds: Vec<usize>,
}

/// Checks one SQLite statement against the parameter names the caller declares (in binding
/// order) and rewrites it for positional binding (`?N`). Every problem is reported, in text order.
#[cfg(test)]
pub fn bind_by_name(sql: &str, declared: &[&str]) -> Result<NamedSql, Vec<Problem>> {
    bind_by_name_in(Dialect::Sqlite, sql, declared)
}

/// Checks one statement against the parameter names the caller declares (in binding order) and
/// rewrites it for positional binding, with `dialect`'s quoting rules, read keywords and placeholders (`$N` for
/// PostgreSQL).
pub fn bind_by_name_in(
    dialect: Dialect,
    sql: &str,
    declared: &[&str],
) -> Result<NamedSql, Vec<Problem>> {
    let tokens = tokenize(sql, dialect);
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
    // PostgreSQL and MySQL read `(SELECT …) UNION (SELECT …)`: the first word may follow
    // parentheses.
    let first = match dialect {
        Dialect::Sqlite => statement.first(),
        Dialect::Postgres | Dialect::Mysql => statement
            .iter()
            .find(|t| &sql[t.range.clone()] != "(")
            .or(statement.first()),
    };
    if let Some(first) = first {
        let word = &sql[first.range.clone()];
        let is_read = first.kind == Kind::Word
            && dialect
                .read_keywords()
                .iter()
                .any(|k| k.eq_ignore_ascii_case(word));
        if !is_read {
            problems.push(Problem::NotARead(word.to_owned()));
        }
    }
    if dialect == Dialect::Mysql {
        for t in &tokens {
            let text = &sql[t.range.clone()];
            if t.kind == Kind::Word && text.eq_ignore_ascii_case("INTO") {
                problems.push(Problem::Into);
            }
            if t.kind == Kind::Space && (text.starts_with("/*!") || text.starts_with("/*M!")) {
                problems.push(Problem::ExecutableComment);
            }
            if t.kind == Kind::Space && text.starts_with("/*+") {
                problems.push(Problem::OptimizerHint);
            }
        }
    }

    // The statement ends with its last token before the first `;` (trailing comments go too).
    let start = statement.first().map_or(0, |t| t.range.start);
    let stop = statement.last().map_or(0, |t| t.range.end);
    let mut used = vec![false; declared.len()];
    let mut binds = Vec::new();
    let mut out = String::with_capacity(sql.len());
    let mut copied = start;
    for t in tokens.iter().filter(|t| t.range.end <= stop) {
        let Kind::Param(prefix) = t.kind else {
            continue;
        };
        let text = &sql[t.range.clone()];
        let name = &text[1..];
        match prefix {
            b'?' | b'$' if text[1..].bytes().all(|b| b.is_ascii_digit()) => {
                problems.push(Problem::Positional(text.to_owned()))
            }
            b':' => match declared.iter().position(|d| *d == name) {
                Some(i) => {
                    used[i] = true;
                    out.push_str(&sql[copied..t.range.start]);
                    match dialect {
                        Dialect::Sqlite => out.push_str(&format!("?{}", i + 1)),
                        Dialect::Postgres => out.push_str(&format!("${}", i + 1)),
                        Dialect::Mysql => {
                            out.push('?');
                            binds.push(i);
                        }
                    }
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
    if dialect != Dialect::Mysql {
        binds = (0..declared.len()).collect();
    }
    if problems.is_empty() {
        Ok(NamedSql {
            sql: out,
            names: declared.iter().map(|d| (*d).to_owned()).collect(),
            binds,
        })
    } else {
        problems.dedup();
        Err(problems)
    }
}

/// Checks a statement the SQL tool runs: one statement that reads, with no parameters (the values
/// are written in the SQL). Returns the statement without what follows it (a trailing `;` and
/// comments), or every problem in text order.
pub fn check_adhoc(dialect: Dialect, sql: &str) -> Result<String, Vec<Problem>> {
    match bind_by_name_in(dialect, sql, &[]) {
        Ok(n) => Ok(n.sql),
        Err(problems) => Err(problems),
    }
}

/// The message for one problem of a statement the SQL tool was given.
pub fn adhoc_message(dialect: Dialect, p: &Problem) -> String {
    match p {
        Problem::Empty => "`sql` holds no statement".into(),
        Problem::MultipleStatements => {
            "`sql` holds more than one statement; send one at a time".into()
        }
        Problem::NotARead(word) => format!(
            "only statements that read run here: start with {} (found `{word}`); {}",
            dialect.read_keywords().join(", "),
            dialect.guard()
        ),
        Problem::Positional(token) | Problem::OtherPrefix(token, _) => format!(
            "`{token}` is a parameter, and this tool binds none: write the value in the SQL"
        ),
        Problem::Undeclared(name) | Problem::Unused(name) => format!(
            "`:{name}` is a parameter, and this tool binds none: write the value in the SQL"
        ),
        Problem::Into | Problem::ExecutableComment | Problem::OptimizerHint => {
            problem_message(dialect, p, &[], Names::QueryParams)
        }
    }
}

/// PostgreSQL: `sql` with every `$N` parameter token replaced by `f(N)`; strings, quoted
/// identifiers and comments are left alone.
pub fn map_pg_params(sql: &str, f: impl Fn(usize) -> String) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut copied = 0;
    for t in tokenize(sql, Dialect::Postgres) {
        if t.kind != Kind::Param(b'$') {
            continue;
        }
        let Ok(n) = sql[t.range.start + 1..t.range.end].parse::<usize>() else {
            continue;
        };
        out.push_str(&sql[copied..t.range.start]);
        out.push_str(&f(n));
        copied = t.range.end;
    }
    out.push_str(&sql[copied..]);
    out
}

/// The first word of a statement after comments and opening parentheses, upper-cased.
pub fn first_keyword(sql: &str, dialect: Dialect) -> Option<String> {
    tokenize(sql, dialect)
        .into_iter()
        .filter(|t| t.kind != Kind::Space)
        .find(|t| &sql[t.range.clone()] != "(")
        .filter(|t| t.kind == Kind::Word)
        .map(|t| sql[t.range].to_ascii_uppercase())
}

/// The words of a statement outside every parenthesis, upper-cased (`ORDER`, `LIMIT`, … of its
/// outermost query; not those of its subqueries or of a parenthesized first query).
pub fn top_level_words(sql: &str, dialect: Dialect) -> Vec<String> {
    let mut depth = 0usize;
    let mut out = Vec::new();
    for t in tokenize(sql, dialect) {
        let text = &sql[t.range.clone()];
        match (t.kind, text) {
            (Kind::Other, "(") => depth += 1,
            (Kind::Other, ")") => depth = depth.saturating_sub(1),
            (Kind::Word, w) if depth == 0 => out.push(w.to_ascii_uppercase()),
            _ => {}
        }
    }
    out
}

/// Who declares the parameter names a statement may use.
#[derive(Debug, Clone, Copy)]
pub enum Names<'a> {
    /// A named query's `params.NAME`.
    QueryParams,
    /// The variables of a URI template (the text of the template).
    TemplateVars(&'a str),
}

impl Names<'_> {
    fn phrase(&self) -> String {
        match self {
            Names::QueryParams => "declared".into(),
            Names::TemplateVars(uri) => format!("a variable of `{uri}`"),
        }
    }
}

/// The message for one problem of a statement, for a manifest diagnostic.
pub fn problem_message(dialect: Dialect, p: &Problem, declared: &[&str], names: Names) -> String {
    match p {
        Problem::Empty => "`sql` holds no statement".into(),
        Problem::MultipleStatements => {
            "`sql` holds more than one statement; write exactly one".into()
        }
        Problem::NotARead(word) => format!(
            "`sql` must read: start it with {} (found `{word}`); {}",
            dialect.read_keywords().join(", "),
            dialect.guard()
        ),
        Problem::Into => {
            "`sql` holds `INTO` (a file, a variable or a table to write): a reading statement does not need it".into()
        }
        Problem::ExecutableComment => {
            "`sql` holds a `/*! … */` comment, which MySQL runs as SQL: write the SQL plainly".into()
        }
        Problem::OptimizerHint => {
            "`sql` holds a `/*+ … */` optimizer hint, which could lift the time limit `timeout` sets on the server (`MAX_EXECUTION_TIME`, `SET_VAR`): write the SQL without it".into()
        }
        Problem::Positional(token) => format!(
            "positional parameter `{token}` cannot be bound; write a named parameter `:name` and declare it"
        ),
        Problem::OtherPrefix(token, name) => {
            format!("write parameter `{token}` as `:{name}` (parameters are written `:name`)")
        }
        Problem::Undeclared(name) => {
            let guess = crate::manifest::diag::did_you_mean(name, declared.iter().copied());
            match (names, guess) {
                (_, Some(m)) => format!(
                    "SQL parameter `:{name}` is not {}, did you mean `:{m}`?",
                    names.phrase()
                ),
                (Names::QueryParams, None) => format!(
                    "SQL parameter `:{name}` is not declared (declare it as `params.{name}`)"
                ),
                (Names::TemplateVars(_), None) => {
                    format!("SQL parameter `:{name}` is not {}", names.phrase())
                }
            }
        }
        Problem::Unused(name) => match names {
            Names::QueryParams => {
                format!("parameter `{name}` is declared but the SQL never uses `:{name}`")
            }
            Names::TemplateVars(uri) => format!(
                "variable `{name}` of `{uri}` is not used by the SQL (write `:{name}` where its value goes)"
            ),
        },
    }
}

/// Quotes an identifier for SQLite or PostgreSQL (`"` doubled inside), so any table name is one
/// identifier.
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

/// PostgreSQL's `ident_cont`: letters, digits, `_`, `$` and every byte of a non-ASCII character.
fn pg_id_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// Characters of a `:name` parameter in PostgreSQL mode: the identifier characters but `$`.
fn pg_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// The length of the dollar-quote tag opening at `b[i]` (`$$` or `$tag$`), if one does.
fn dollar_tag(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    if b.get(j).is_some_and(|c| c.is_ascii_digit()) {
        return None;
    }
    while j < b.len() && pg_name_char(b[j]) {
        j += 1;
    }
    (b.get(j) == Some(&b'$')).then_some(j + 1 - i)
}

/// Splits SQL into tokens the way the database's tokenizer (SQLite's `tokenize.c`, PostgreSQL's
/// `scan.l`, MySQL's `sql_lex.cc`) does, as far as parameters, quoting, comments and `;` are
/// concerned. Unterminated quotes and comments run to the end (the database then refuses the
/// statement when it is prepared).
fn tokenize(sql: &str, dialect: Dialect) -> Vec<Token> {
    let pg = dialect == Dialect::Postgres;
    let my = dialect == Dialect::Mysql;
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
            // MySQL's `--` starts a comment only when a space or control character follows.
            b'-' if b.get(i + 1) == Some(&b'-')
                && (!my || b.get(i + 2).is_none_or(|c| *c <= b' ')) =>
            {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                Kind::Space
            }
            b'#' if my => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                Kind::Space
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                // PostgreSQL's comments nest; SQLite's and MySQL's end at the first `*/`.
                i += 2;
                let mut depth = 1;
                while i < b.len() {
                    if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        i += 2;
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    } else if pg && b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        i += 2;
                        depth += 1;
                    } else {
                        i += 1;
                    }
                }
                Kind::Space
            }
            // PostgreSQL's escape strings: E'…' where a backslash escapes the next character.
            b'E' | b'e' if pg && b.get(i + 1) == Some(&b'\'') => {
                i = quoted(b, i + 1, b'\'', true);
                Kind::Quoted
            }
            b'$' if pg && dollar_tag(b, i).is_some() => {
                let tag_len = dollar_tag(b, i).unwrap_or(2);
                let tag = &b[i..i + tag_len];
                i += tag_len;
                loop {
                    if i >= b.len() {
                        break;
                    }
                    if b[i..].starts_with(tag) {
                        i += tag_len;
                        break;
                    }
                    i += 1;
                }
                Kind::Quoted
            }
            // MySQL's strings take backslash escapes; its backquoted names do not.
            q @ (b'\'' | b'"') if my => {
                i = quoted(b, i, q, true);
                Kind::Quoted
            }
            q @ (b'\'' | b'"' | b'`') if !(pg && q == b'`') => {
                i = quoted(b, i, q, false);
                Kind::Quoted
            }
            b'[' if !pg && !my => {
                while i < b.len() && b[i] != b']' {
                    i += 1;
                }
                i = (i + 1).min(b.len());
                Kind::Quoted
            }
            b'?' if !pg => {
                i += 1;
                while !my && i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                Kind::Param(b'?')
            }
            // PostgreSQL's `$1`: positional, nothing could bind it by name.
            b'$' if pg && b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                Kind::Param(b'$')
            }
            // `::` is a cast and `:=` a named argument or an assignment, never parameters.
            b':' if (pg || my) && matches!(b.get(i + 1), Some(b':' | b'=')) => {
                i += 2;
                Kind::Other
            }
            b':' if (pg || my)
                && b.get(i + 1)
                    .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_' || *c >= 0x80) =>
            {
                i += 1;
                while i < b.len() && pg_name_char(b[i]) {
                    i += 1;
                }
                Kind::Param(b':')
            }
            // MySQL's `@var` and `@@system_var` are variables, not parameters.
            b'@' if my => {
                i += 1;
                if b.get(i) == Some(&b'@') {
                    i += 1;
                }
                match b.get(i) {
                    Some(&q @ (b'\'' | b'"' | b'`')) => i = quoted(b, i, q, q != b'`'),
                    _ => {
                        while i < b.len() && (id_char(b[i]) || b[i] == b'.') {
                            i += 1;
                        }
                    }
                }
                Kind::Word
            }
            p @ (b':' | b'@' | b'$') if !pg && !my && b.get(i + 1).is_some_and(|c| id_char(*c)) => {
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
            c if (pg && pg_id_char(c) && c != b'$') || (!pg && id_char(c)) => {
                let cont = if pg { pg_id_char } else { id_char };
                while i < b.len() && cont(b[i]) {
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

/// The end of a quoted string or name opening with `q` at `b[i]`: a doubled `q` stands for one,
/// and with `backslash` a backslash escapes the next byte. Runs to the end when unterminated.
fn quoted(b: &[u8], mut i: usize, q: u8, backslash: bool) -> usize {
    i += 1;
    loop {
        match b.get(i) {
            None => return i,
            Some(b'\\') if backslash => i = (i + 2).min(b.len()),
            Some(&c) if c == q => {
                if b.get(i + 1) == Some(&q) {
                    i += 2;
                } else {
                    return i + 1;
                }
            }
            Some(_) => i += 1,
        }
    }
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
    fn top_level_words_leave_out_parentheses_strings_and_comments() {
        let words = |sql| top_level_words(sql, Dialect::Mysql);
        assert_eq!(
            words(
                "SELECT a FROM (SELECT b FROM t ORDER BY b LIMIT 2) x ORDER BY `limit` -- LIMIT\n"
            ),
            ["SELECT", "A", "FROM", "X", "ORDER", "BY"]
        );
        assert_eq!(words("(SELECT 1 LIMIT 1) 'LIMIT'"), Vec::<String>::new());
    }

    /// A MySQL statement cannot carry its own time limit past `timeout`: optimizer hints are
    /// refused (`/*+ MAX_EXECUTION_TIME(600000) */` overrides the session's limit on MySQL 8),
    /// as are executable comments; a plain comment is text.
    #[test]
    fn mysql_refuses_optimizer_hints_and_executable_comments() {
        let mysql = |sql| check_adhoc(Dialect::Mysql, sql);
        assert_eq!(
            mysql("SELECT /*+ MAX_EXECUTION_TIME(600000) */ SLEEP(600)"),
            Err(vec![Problem::OptimizerHint])
        );
        assert_eq!(
            mysql("SELECT /*+ SET_VAR(max_statement_time = 0) */ 1"),
            Err(vec![Problem::OptimizerHint])
        );
        assert_eq!(
            mysql("SELECT /*! SLEEP(600) */ 1"),
            Err(vec![Problem::ExecutableComment])
        );
        assert!(mysql("SELECT /* + not a hint */ 1").is_ok());
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

    fn pg(sql: &str, declared: &[&str]) -> String {
        match bind_by_name_in(Dialect::Postgres, sql, declared) {
            Ok(n) => n.sql,
            Err(p) => panic!("{sql}: {p:?}"),
        }
    }

    fn pg_problems(sql: &str, declared: &[&str]) -> Vec<Problem> {
        match bind_by_name_in(Dialect::Postgres, sql, declared) {
            Ok(n) => panic!("{sql} should fail, got {}", n.sql),
            Err(p) => p,
        }
    }

    #[test]
    fn postgres_parameters_become_dollar_numbers() {
        assert_eq!(
            pg(
                "SELECT * FROM t WHERE a = :b AND c = :a OR d = :b",
                &["a", "b"]
            ),
            "SELECT * FROM t WHERE a = $2 AND c = $1 OR d = $2"
        );
        // Casts are not parameters, also right after one.
        assert_eq!(
            pg("SELECT :id::uuid, x::text, y :: int FROM t", &["id"]),
            "SELECT $1::uuid, x::text, y :: int FROM t"
        );
        // `:=` names a function argument; `[1:2]` is a slice.
        assert_eq!(
            pg("SELECT f(a := :v), arr[1:2] FROM t", &["v"]),
            "SELECT f(a := $1), arr[1:2] FROM t"
        );
        // `?` and `@` are operators in PostgreSQL.
        assert_eq!(
            pg(
                "SELECT j ? 'k', j ?| array['a'], p @> q, @ -5 FROM t WHERE v = :v",
                &["v"]
            ),
            "SELECT j ? 'k', j ?| array['a'], p @> q, @ -5 FROM t WHERE v = $1"
        );
        assert_eq!(pg("TABLE t", &[]), "TABLE t");
        assert_eq!(pg("SHOW work_mem", &[]), "SHOW work_mem");
        assert_eq!(
            pg("(SELECT :a) UNION (SELECT 2)", &["a"]),
            "(SELECT $1) UNION (SELECT 2)"
        );
    }

    #[test]
    fn postgres_quoting_hides_parameters() {
        // Dollar quotes, with and without a tag; a `$1` or `;` inside is text.
        assert_eq!(
            pg(
                "SELECT $$ :a ; $1 $$, $tag$ :a $$ still $tag$ || :a",
                &["a"]
            ),
            "SELECT $$ :a ; $1 $$, $tag$ :a $$ still $tag$ || $1"
        );
        // E'' strings: a backslash escapes the quote.
        assert_eq!(
            pg(r"SELECT E'it\'s :a', e'\\', :a", &["a"]),
            r"SELECT E'it\'s :a', e'\\', $1"
        );
        // Standard strings: a backslash is just a character.
        assert_eq!(pg(r"SELECT '\', :a", &["a"]), r"SELECT '\', $1");
        // Nested comments.
        assert_eq!(
            pg("SELECT /* a /* :a */ :a */ :a", &["a"]),
            "SELECT /* a /* :a */ :a */ $1"
        );
        assert_eq!(pg("SELECT \"x:a\" FROM t", &[]), "SELECT \"x:a\" FROM t");
        // `$` inside an identifier is part of it, not a quote.
        assert_eq!(pg("SELECT a$b, :a FROM t", &["a"]), "SELECT a$b, $1 FROM t");
    }

    #[test]
    fn postgres_problems() {
        assert_eq!(
            pg_problems("SELECT $1, :x", &["x"]),
            [Problem::Positional("$1".into())]
        );
        assert_eq!(
            pg_problems("SELECT 1; SELECT 2", &[]),
            [Problem::MultipleStatements]
        );
        assert_eq!(
            pg_problems("SELECT $$;$$; COPY t TO STDOUT", &[]),
            [Problem::MultipleStatements]
        );
        for write in [
            "COPY t FROM STDIN",
            "CREATE TABLE x AS SELECT 1",
            "SET statement_timeout = 0",
            "INSERT INTO t VALUES (1)",
            "CALL p()",
            "DO $$ BEGIN END $$",
            "PRAGMA x",
            "COMMIT",
        ] {
            let word = write.split_whitespace().next().unwrap_or("");
            assert_eq!(
                pg_problems(write, &[]),
                [Problem::NotARead(word.into())],
                "{write}"
            );
        }
        assert_eq!(
            map_pg_params("SELECT $1, '$2', $$ $1 $$, $2", |n| format!("(${n}::int)")),
            "SELECT ($1::int), '$2', $$ $1 $$, ($2::int)"
        );
        assert_eq!(
            first_keyword("/* x */ ((select 1))", Dialect::Postgres).as_deref(),
            Some("SELECT")
        );
    }

    #[test]
    fn quoting_identifiers_doubles_quotes() {
        assert_eq!(quote_ident("a b"), "\"a b\"");
        assert_eq!(quote_ident("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(quote_ident("é"), "\"é\"");
    }
}
