//! RFC 6570 URI templates (levels 1–4): parsing with positioned errors, expansion, and matching URIs back to variables.
//!
//! Expansion is our own ([`expand_spec`], RFC 6570 §3.2): it gives what `uritemplate-next` gives (a test
//! compares them), without that crate's cost (it compiles a regex for every `{+x}`, `{#x}` and literal it
//! expands: ~0.4 ms a template tool call) and with prefixes `{x:n}` counted in characters, as the RFC says
//! (that crate counts bytes and panics inside a multi-byte character).
//!
//! Matching is our own: [`UriTemplate::parse`] compiles the template once into an anchored regex plus a plan
//! saying which capture group holds which variable. Positional operators (`{x}`, `{+x}`, `{#x}`, `{.x}`, `{/x}`)
//! capture each value; named operators (`{;x}`, `{?x}`, `{&x}`) capture their whole parameter list, which is
//! split by hand so parameters may come in any order and any may be missing. Every value is percent-decoded.
//! Raw non-ASCII characters are accepted wherever an encoded one would be (clients often send IRIs).
//!
//! Known lossy cases — RFC 6570 expansion is not injective, so these URIs cannot give the original values back:
//! - `{.x}`: a value containing `.` (unreserved, so never encoded) is split at the wrong dot.
//! - `{x}`, `{+x}`: an empty string and an undefined variable both expand to nothing; matching reports `""`.
//!   (`{;x}` *does* tell them apart: `;x` versus nothing.) Empty lists and maps are undefined by definition,
//!   and `{x*}` / `{+x*}` with `[""]` expands to nothing, which matches as undefined.
//! - An unexploded list `{x}` = `["a", "b"]` expands to `a,b`, exactly like the string `"a,b"`; matching returns
//!   the string. Likewise unexploded maps come back as the flat string `k1,v1,k2,v2`.
//! - `{+x}`, `{#x}`: reserved characters and `%HH` triplets are kept as they are, so `%41` comes back as `A`, and a
//!   `,` inside a value of a multi-variable or exploded reserved expression is taken as a separator.
//! - Multi-variable positional expressions (`{x,y}`, `{/x,y}`): if `x` is undefined but `y` is not, the value is
//!   assigned to `x`.
//! - Exploded maps in `{;x*}`, `{?x*}`, `{&x*}`: keys carry no variable name, so every key that is not a declared
//!   name goes into the (first) exploded variable as a `Map`; a `Map` whose keys all equal the variable's own name
//!   comes back as a `List`.
//! - `{x:3}` only ever gives back the first three characters.

use indexmap::IndexMap;
use regex_automata::meta::Regex;

/// A value bound to a template variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VarValue {
    String(String),
    List(Vec<String>),
    Map(Vec<(String, String)>),
}

impl VarValue {
    /// The value if it is a plain string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            VarValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// RFC 6570 §2.3: empty lists and maps count as undefined.
    fn is_defined(&self) -> bool {
        match self {
            VarValue::String(_) => true,
            VarValue::List(l) => !l.is_empty(),
            VarValue::Map(m) => !m.is_empty(),
        }
    }
}

/// Variable bindings, in template order when produced by [`UriTemplate::matches`].
pub type Vars = IndexMap<String, VarValue>;

/// Why a template did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TemplateError {
    /// Byte offset in the template text.
    pub offset: usize,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Simple,
    Reserved,
    Fragment,
    Label,
    Path,
    Param,
    Query,
    Cont,
}

impl Op {
    fn from_char(c: char) -> Op {
        match c {
            '+' => Op::Reserved,
            '#' => Op::Fragment,
            '.' => Op::Label,
            '/' => Op::Path,
            ';' => Op::Param,
            '?' => Op::Query,
            '&' => Op::Cont,
            _ => Op::Simple,
        }
    }

    /// (operator as written, text before the first value, separator between values) — RFC 6570 appendix A.
    fn syntax(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Op::Simple => ("", "", ","),
            Op::Reserved => ("+", "", ","),
            Op::Fragment => ("#", "#", ","),
            Op::Label => (".", ".", "."),
            Op::Path => ("/", "/", "/"),
            Op::Param => (";", ";", ";"),
            Op::Query => ("?", "?", "&"),
            Op::Cont => ("&", "&", "&"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct VarSpec {
    name: String,
    prefix: Option<usize>,
    explode: bool,
}

#[derive(Debug, Clone)]
enum Part {
    /// Template text and its expansion (computed once).
    Literal(String, String),
    Expr(Op, Vec<VarSpec>),
}

/// How to read variables out of one capture group.
#[derive(Debug, Clone)]
enum Extract {
    /// The group holds one positional value (exploded values still joined by the operator's separator).
    Value { group: usize, op: Op, spec: VarSpec },
    /// The group holds `sep`-separated `name[=value]` pairs of a named operator.
    Params {
        group: usize,
        sep: char,
        specs: Vec<VarSpec>,
    },
}

/// A parsed, validated URI template, ready to expand and to match.
#[derive(Debug, Clone)]
pub struct UriTemplate {
    text: String,
    parts: Vec<Part>,
    /// Built on the first URI that begins with the plain prefix (`regex`): most templates of a
    /// manifest with hundreds are never tried with one in a session, and `check` parses each
    /// again. A template longer than `LAZY_MAX` is built by `parse`, which refuses one that
    /// cannot be (`None` is never left here).
    regex: std::sync::OnceLock<Option<Regex>>,
    plan: Vec<Extract>,
    /// The length of `plain_prefix`.
    plain: usize,
}

impl UriTemplate {
    /// Parse and validate a level 1–4 template.
    pub fn parse(template: &str) -> Result<UriTemplate, TemplateError> {
        let parts = parse_parts(template)?;
        let (pattern, plan) = compile(&parts);
        let regex = std::sync::OnceLock::new();
        if template.len() > LAZY_MAX {
            let built = build_regex(&pattern).map_err(|e| TemplateError {
                offset: 0,
                message: format!("template is too large to match URIs against: {e}"),
            })?;
            let _ = regex.set(Some(built));
        }
        let plain = template
            .find(|c: char| c == '{' || c == '%' || !c.is_ascii())
            .unwrap_or(template.len());
        Ok(UriTemplate {
            text: template.to_string(),
            parts,
            regex,
            plan,
            plain,
        })
    }

    /// The anchored regex URIs are matched with (see the field).
    fn regex(&self) -> Option<&Regex> {
        self.regex
            .get_or_init(|| build_regex(&compile(&self.parts).0).ok())
            .as_ref()
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Variable names in order of first appearance, without duplicates.
    pub fn variables(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for part in &self.parts {
            if let Part::Expr(_, specs) = part {
                for spec in specs {
                    if !names.contains(&spec.name.as_str()) {
                        names.push(&spec.name);
                    }
                }
            }
        }
        names
    }

    /// Whether `name` stands only in named expressions (`{?x}`, `{&x}`, `{;x}`), where leaving
    /// it out leaves no hole in the URI.
    pub fn is_named(&self, name: &str) -> bool {
        let mut seen = false;
        for part in &self.parts {
            if let Part::Expr(op, specs) = part
                && specs.iter().any(|s| s.name == name)
            {
                if !matches!(op, Op::Query | Op::Cont | Op::Param) {
                    return false;
                }
                seen = true;
            }
        }
        seen
    }

    /// RFC 6570 expansion; variables missing from `vars` are undefined and expand to nothing.
    pub fn expand(&self, vars: &Vars) -> String {
        self.expand_as(vars, false)
    }

    /// Expansion that `matches` gives the values back from: in `{+x}` and `{#x}`, where RFC 6570
    /// keeps reserved characters and `%HH` as they are, a value's `%`, `#`, `?`, `[` and `]` are
    /// percent-encoded first (raw, they would end the path or be decoded as something else).
    pub fn expand_exact(&self, vars: &Vars) -> String {
        self.expand_as(vars, true)
    }

    fn expand_as(&self, vars: &Vars, exact: bool) -> String {
        let escape = |s: &str| -> String {
            let mut out = String::with_capacity(s.len());
            for c in s.chars() {
                match c {
                    '%' | '#' | '?' | '[' | ']' => out.push_str(&format!("%{:02X}", c as u32)),
                    c => out.push(c),
                }
            }
            out
        };
        let mut out = String::new();
        for part in &self.parts {
            let (op, specs) = match part {
                Part::Literal(_, expanded) => {
                    out.push_str(expanded);
                    continue;
                }
                Part::Expr(op, specs) => (op, specs),
            };
            let (_, first, sep) = op.syntax();
            let items: Vec<String> = specs
                .iter()
                .filter_map(|spec| {
                    let value = vars.get(&spec.name).filter(|v| v.is_defined())?;
                    let escaped;
                    let value = if exact && matches!(op, Op::Reserved | Op::Fragment) {
                        escaped = match value {
                            VarValue::String(s) => VarValue::String(escape(s)),
                            VarValue::List(l) => {
                                VarValue::List(l.iter().map(|s| escape(s)).collect())
                            }
                            VarValue::Map(m) => VarValue::Map(
                                m.iter().map(|(k, v)| (escape(k), escape(v))).collect(),
                            ),
                        };
                        &escaped
                    } else {
                        value
                    };
                    expand_spec(*op, spec, value)
                })
                .collect();
            if !items.is_empty() {
                out.push_str(first);
                out.push_str(&items.join(sep));
            }
        }
        out
    }

    /// Match a concrete URI back to variable values, or `None` if it does not fit the template.
    /// The template's text before its first expression, up to a percent-encoded or non-ASCII
    /// character: every URI it matches begins with exactly these bytes (`compile` matches
    /// plain ASCII literals as they are).
    pub fn plain_prefix(&self) -> &str {
        &self.text[..self.plain]
    }

    pub fn matches(&self, uri: &str) -> Option<Vars> {
        // A URI that does not begin with the plain prefix cannot match: no regex search (and
        // no captures to allocate) for it, which is most URIs tried against most templates.
        if !uri.starts_with(self.plain_prefix()) {
            return None;
        }
        let regex = self.regex()?;
        let mut found = regex.create_captures();
        regex.captures(uri, &mut found);
        if !found.is_match() {
            return None;
        }
        // Always on character boundaries (see `MULTIBYTE`); `get` all the same.
        let text_of = |g: usize| found.get_group(g).and_then(|span| uri.get(span.range()));
        let mut out = Vars::new();
        for step in &self.plan {
            match step {
                Extract::Value { group, op, spec } => {
                    let Some(raw) = text_of(*group) else {
                        continue; // optional expression absent: undefined
                    };
                    if spec.explode && raw.is_empty() && matches!(op, Op::Simple | Op::Reserved) {
                        continue; // an empty exploded list is undefined
                    }
                    bind(&mut out, &spec.name, positional_value(*op, spec, raw)?)?;
                }
                Extract::Params { group, sep, specs } => {
                    let raw = text_of(*group).unwrap_or("");
                    for (name, value) in param_values(raw, *sep, specs)? {
                        bind(&mut out, &name, value)?;
                    }
                }
            }
        }
        let order = self.variables();
        out.sort_by_cached_key(|name, _| order.iter().position(|v| v == name));
        Some(out)
    }
}

/// Percent-decode a string; `None` if the result is not UTF-8 or a `%` is not followed by two hex digits.
pub fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            if !is_pct(&bytes[i..]) {
                return None;
            }
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Does `b` start with a `%HH` triplet?
fn is_pct(b: &[u8]) -> bool {
    matches!(b, [b'%', h, l, ..] if h.is_ascii_hexdigit() && l.is_ascii_hexdigit())
}

fn error(template: &str, offset: usize, what: impl std::fmt::Display) -> TemplateError {
    let column = template.get(..offset).map_or(offset, |s| s.chars().count()) + 1;
    TemplateError {
        offset,
        message: format!("{what} at column {column}"),
    }
}

fn parse_parts(t: &str) -> Result<Vec<Part>, TemplateError> {
    let mut parts = Vec::new();
    let (mut i, mut literal_start) = (0, 0);
    while let Some(c) = t[i..].chars().next() {
        match c {
            '{' => {
                let body_start = i + 1;
                let Some(len) = t[body_start..]
                    .find(['{', '}'])
                    .filter(|&n| t.as_bytes()[body_start + n] == b'}')
                else {
                    return Err(error(t, i, "unclosed `{`"));
                };
                if literal_start < i {
                    parts.push(literal(&t[literal_start..i]));
                }
                let body = &t[body_start..body_start + len];
                parts.push(parse_expression(t, body_start, body)?);
                i = body_start + len + 1;
                literal_start = i;
                continue;
            }
            '}' => return Err(error(t, i, "stray `}` without a matching `{`")),
            '%' if !is_pct(&t.as_bytes()[i..]) => {
                return Err(error(t, i, "`%` not followed by two hex digits"));
            }
            // RFC 6570 §2.1 literals; `'` is allowed (a valid URI sub-delimiter, the RFC's exclusion is an oddity).
            c if c.is_control() || " \"<>\\^`|".contains(c) => {
                return Err(error(
                    t,
                    i,
                    format!("{c:?} is not allowed in a URI template"),
                ));
            }
            _ => {}
        }
        i += c.len_utf8();
    }
    if literal_start < t.len() {
        parts.push(literal(&t[literal_start..]));
    }
    Ok(parts)
}

fn literal(text: &str) -> Part {
    let mut expanded = String::with_capacity(text.len());
    encode(text, true, &mut expanded);
    Part::Literal(text.to_string(), expanded)
}

/// Appends `s` percent-encoded (RFC 6570 §3.2.1): unreserved characters stay; with `reserved`
/// (`{+x}`, `{#x}`, literals) reserved characters and `%HH` triplets stay too; every other byte
/// of the UTF-8 becomes `%HH`.
fn encode(s: &str, reserved: bool, out: &mut String) {
    let b = s.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        let keep = c.is_ascii_alphanumeric()
            || b"-._~".contains(&c)
            || (reserved
                && (b":/?#[]@!$&'()*+,;=".contains(&c)
                    || (c == b'%'
                        && b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                        && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))));
        if keep {
            out.push(char::from(c));
        } else {
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            out.push('%');
            out.push(char::from(HEX[usize::from(c >> 4)]));
            out.push(char::from(HEX[usize::from(c & 15)]));
        }
    }
}

/// One variable of an expression, expanded (RFC 6570 §3.2.1), without the operator's leading
/// character; `None` when it expands to nothing (an empty list or map). A prefix `{x:n}` keeps
/// the first `n` characters of a string.
fn expand_spec(op: Op, spec: &VarSpec, value: &VarValue) -> Option<String> {
    let (_, _, sep) = op.syntax();
    let named = matches!(op, Op::Param | Op::Query | Op::Cont);
    let reserved = matches!(op, Op::Reserved | Op::Fragment);
    // What a named variable with an empty value becomes after its name.
    let if_empty = if matches!(op, Op::Query | Op::Cont) {
        "="
    } else {
        ""
    };
    let mut out = String::new();
    let enc = |s: &str, out: &mut String| encode(s, reserved, out);
    let name = |out: &mut String| encode(&spec.name, true, out);
    match value {
        VarValue::String(s) => {
            if named {
                name(&mut out);
                if s.is_empty() {
                    out.push_str(if_empty);
                    return Some(out);
                }
                out.push('=');
            }
            match spec.prefix {
                Some(n) => enc(&s.chars().take(n).collect::<String>(), &mut out),
                None => enc(s, &mut out),
            }
        }
        VarValue::List(items) if items.is_empty() => return None,
        VarValue::Map(pairs) if pairs.is_empty() => return None,
        VarValue::List(items) if !spec.explode => {
            if named {
                name(&mut out);
                if items.iter().all(String::is_empty) {
                    out.push_str(if_empty);
                    return Some(out);
                }
                out.push('=');
            }
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                enc(item, &mut out);
            }
        }
        VarValue::List(items) => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                if named {
                    name(&mut out);
                    if item.is_empty() {
                        out.push_str(if_empty);
                        continue;
                    }
                    out.push('=');
                }
                enc(item, &mut out);
            }
        }
        VarValue::Map(pairs) if !spec.explode => {
            if named {
                name(&mut out);
                out.push('=');
            }
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                encode(k, true, &mut out);
                out.push(',');
                enc(v, &mut out);
            }
        }
        VarValue::Map(pairs) => {
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                encode(k, true, &mut out);
                if named && v.is_empty() {
                    out.push_str(if_empty);
                    continue;
                }
                out.push('=');
                enc(v, &mut out);
            }
        }
    }
    Some(out)
}

/// `body` is the text between `{` and `}`, starting at byte `start` of `t`.
fn parse_expression(t: &str, start: usize, body: &str) -> Result<Part, TemplateError> {
    let Some(first) = body.chars().next() else {
        return Err(error(t, start - 1, "empty expression `{}`"));
    };
    if "=,!@|".contains(first) {
        return Err(error(t, start, format!("operator `{first}` is reserved")));
    }
    let op = Op::from_char(first);
    let skip = op.syntax().0.len();
    let mut at = start + skip;
    let mut specs = Vec::new();
    for spec in body[skip..].split(',') {
        specs.push(parse_varspec(t, at, spec)?);
        at += spec.len() + 1;
    }
    Ok(Part::Expr(op, specs))
}

fn parse_varspec(t: &str, at: usize, spec: &str) -> Result<VarSpec, TemplateError> {
    let (rest, explode) = spec.strip_suffix('*').map_or((spec, false), |r| (r, true));
    let (name, prefix) = match rest.split_once(':') {
        None => (rest, None),
        Some((name, digits)) => {
            let err = |what: &str| Err(error(t, at + name.len(), what));
            if explode {
                return err("a prefix `:n` cannot be combined with explode `*`");
            }
            let plain = digits.bytes().all(|b| b.is_ascii_digit()) && !digits.starts_with('0');
            match digits.parse::<usize>() {
                Ok(n @ 1..=9999) if plain => (name, Some(n)),
                _ => return err(&format!("bad prefix `:{digits}` (expected 1 to 9999)")),
            }
        }
    };
    check_varname(t, at, name)?;
    Ok(VarSpec {
        name: name.to_string(),
        prefix,
        explode,
    })
}

/// varname = varchar *( ["."] varchar ); varchar = ALPHA / DIGIT / "_" / pct-encoded
fn check_varname(t: &str, at: usize, name: &str) -> Result<(), TemplateError> {
    let b = name.as_bytes();
    let (mut i, mut need_char) = (0, true);
    while i < b.len() {
        match b[i] {
            c if c.is_ascii_alphanumeric() || c == b'_' => i += 1,
            b'%' if is_pct(&b[i..]) => i += 3,
            b'.' if !need_char => {
                i += 1;
                need_char = true;
                continue;
            }
            _ => {
                let c = name[i..].chars().next().unwrap_or('?');
                let what = format!("bad variable name `{name}`: unexpected {c:?}");
                return Err(error(t, at + i, what));
            }
        }
        need_char = false;
    }
    match (need_char, name.is_empty()) {
        (true, true) => Err(error(t, at, "missing variable name")),
        (true, false) => Err(error(
            t,
            at + i,
            format!("bad variable name `{name}` ends with `.`"),
        )),
        _ => Ok(()),
    }
}

/// One non-ASCII character, as its UTF-8 bytes. The patterns are compiled without Unicode:
/// a Unicode class such as `[^\x00-\x7F]` costs the compiler a UTF-8 automaton (and a
/// 400 KiB table) per template, most of a 200-template manifest's load time and memory. A URI
/// is valid UTF-8, so a lead byte and its continuation bytes are exactly one character, and
/// every capture starts and ends on a character boundary.
const MULTIBYTE: &str =
    r"[\xC0-\xDF][\x80-\xBF]|[\xE0-\xEF][\x80-\xBF]{2}|[\xF0-\xF7][\x80-\xBF]{3}";

/// One unreserved character (plus the ASCII characters in `extra`), raw non-ASCII character, or `%HH` triplet.
fn unit(extra: &str) -> String {
    format!(r"(?:[A-Za-z0-9_~{extra}-]|{MULTIBYTE}|%[0-9A-Fa-f]{{2}})")
}

/// Any one character (`(?s:.)`), or any but `#` (`[^#]`), whole.
fn any_char(but_hash: bool) -> String {
    let ascii = if but_hash {
        r"[\x00-\x22\x24-\x7F]"
    } else {
        r"[\x00-\x7F]"
    };
    format!("(?:{ascii}|{MULTIBYTE})")
}

/// What one positional value may look like in a URI.
fn value_regex(op: Op, spec: &VarSpec, lone: bool) -> String {
    let extra = match (op, spec.explode) {
        (Op::Reserved | Op::Fragment, _) => return format!("{}*?", any_char(false)),
        // `=` only appears raw in a non-reserved exploded value as a map's key/value separator.
        (Op::Simple, true) => ".,=",
        // A lone unexploded `{x}` accepts `,`, so an unexploded list comes back as the string "a,b".
        (Op::Simple, false) if lone => ".,",
        (Op::Label, true) => ".=",
        (Op::Label, false) => "",
        (Op::Path, true) => "./=",
        _ => ".",
    };
    format!("{}*?", unit(extra))
}

fn literal_regex(re: &mut String, text: &str) {
    let mut i = 0;
    while let Some(c) = text[i..].chars().next() {
        let mut buf = [0; 4];
        let s = c.encode_utf8(&mut buf);
        if c == '%' {
            // validated by the parser: two hex digits follow; their case does not matter
            re.push_str(&format!("%(?i:{})", &text[i + 1..i + 3]));
            i += 3;
            continue;
        } else if c.is_ascii() {
            re.push_str(&regex::escape(s));
        } else {
            // expansion percent-encodes non-ASCII literals; accept the raw character too (its
            // bytes: the pattern has no Unicode)
            let raw: String = s.bytes().map(|b| format!("\\x{b:02X}")).collect();
            let encoded: String = s.bytes().map(|b| format!("%{b:02X}")).collect();
            re.push_str(&format!("(?:{raw}|(?i:{encoded}))"));
        }
        i += c.len_utf8();
    }
}

/// Templates at most this long (bytes) build their regex on first use (`UriTemplate::regex`):
/// every such template builds (a test builds the largest kind), so `parse` need not try.
const LAZY_MAX: usize = 4096;

/// `pattern` as an anchored regex. No full DFA: `regex` builds one for every small pattern,
/// which made a manifest of 200 templates take a quarter of a second to load; the lazy DFA
/// matches as fast here. No one-pass DFA (10 KiB a template; the bounded backtracker finds the
/// groups of a URI as fast), and no Unicode classes (see `MULTIBYTE`).
fn build_regex(pattern: &str) -> Result<Regex, String> {
    Regex::builder()
        .configure(Regex::config().dfa(false).onepass(false))
        .syntax(
            regex_automata::util::syntax::Config::new()
                .unicode(false)
                .utf8(false),
        )
        .build(pattern)
        .map_err(|e| e.to_string())
}

fn compile(parts: &[Part]) -> (String, Vec<Extract>) {
    let mut re = String::from(r"\A");
    let mut plan = Vec::new();
    let mut group = 0;
    let mut k = 0;
    while k < parts.len() {
        match &parts[k] {
            Part::Literal(text, _) => literal_regex(&mut re, text),
            Part::Expr(op @ (Op::Query | Op::Cont), specs) => {
                // `{?a}{&b}` share one query string; if `a` is undefined it starts with `&`.
                let mut specs = specs.clone();
                let mut lead = if *op == Op::Query { r"\?" } else { "&" };
                while let Some(Part::Expr(Op::Cont, more)) = parts.get(k + 1) {
                    specs.extend(more.iter().cloned());
                    lead = if *op == Op::Query { "[?&]" } else { lead };
                    k += 1;
                }
                group += 1;
                re.push_str(&format!("(?:{lead}({}*))?", any_char(true)));
                plan.push(Extract::Params {
                    group,
                    sep: '&',
                    specs,
                });
            }
            Part::Expr(Op::Param, specs) => {
                // Only declared names are accepted as keys, unless an exploded map may bring any key.
                let names: Vec<String> = specs.iter().map(|s| regex::escape(&s.name)).collect();
                let any_key = specs.iter().any(|s| s.explode);
                let key = if any_key {
                    format!("{}+", unit("."))
                } else {
                    names.join("|")
                };
                group += 1;
                re.push_str(&format!("((?:;(?:{key})(?:={}*)?)*)", unit(".,")));
                plan.push(Extract::Params {
                    group,
                    sep: ';',
                    specs: specs.clone(),
                });
            }
            Part::Expr(op, specs) => {
                let (_, first, sep) = op.syntax();
                let mut inner = regex::escape(first);
                for (n, spec) in specs.iter().enumerate() {
                    group += 1;
                    let value = value_regex(*op, spec, specs.len() == 1);
                    if n == 0 {
                        inner.push_str(&format!("({value})"));
                    } else {
                        inner.push_str(&format!("(?:{}({value}))?", regex::escape(sep)));
                    }
                    plan.push(Extract::Value {
                        group,
                        op: *op,
                        spec: spec.clone(),
                    });
                }
                if first.is_empty() {
                    re.push_str(&inner);
                } else {
                    re.push_str(&format!("(?:{inner})?"));
                }
            }
        }
        k += 1;
    }
    re.push_str(r"\z");
    (re, plan)
}

/// Decode one positional capture; `None` = the URI does not match.
fn positional_value(op: Op, spec: &VarSpec, raw: &str) -> Option<VarValue> {
    if !spec.explode {
        let value = percent_decode(raw)?;
        return match spec.prefix {
            Some(n) if value.chars().count() > n => None,
            _ => Some(VarValue::String(value)),
        };
    }
    let items = raw.split(op.syntax().2);
    if !matches!(op, Op::Reserved | Op::Fragment) && raw.contains('=') {
        items
            .map(|item| {
                let (k, v) = item.split_once('=').unwrap_or((item, ""));
                Some((percent_decode(k)?, percent_decode(v)?))
            })
            .collect::<Option<_>>()
            .map(VarValue::Map)
    } else {
        items
            .map(percent_decode)
            .collect::<Option<_>>()
            .map(VarValue::List)
    }
}

/// Assign `name[=value]` pairs to the declared variables of a named expression; `None` = no match.
fn param_values(raw: &str, sep: char, specs: &[VarSpec]) -> Option<Vec<(String, VarValue)>> {
    let mut out: Vec<(String, VarValue)> = Vec::new();
    let mut collected: Vec<Vec<(String, String)>> = vec![Vec::new(); specs.len()];
    let catch_all = specs.iter().position(|s| s.explode);
    for pair in raw.split(sep).filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match specs.iter().position(|s| s.name == key) {
            Some(i) if specs[i].explode => {
                collected[i].push((key.to_string(), percent_decode(value)?))
            }
            Some(i) => {
                if out.iter().any(|(n, _)| n == key) {
                    continue; // a repeated unexploded parameter: the first one wins
                }
                let value = percent_decode(value)?;
                if specs[i].prefix.is_some_and(|n| value.chars().count() > n) {
                    return None;
                }
                out.push((key.to_string(), VarValue::String(value)));
            }
            None => {
                if let Some(i) = catch_all {
                    collected[i].push((percent_decode(key)?, percent_decode(value)?));
                } // otherwise an undeclared parameter: ignored
            }
        }
    }
    for (spec, entries) in specs.iter().zip(collected) {
        if entries.is_empty() {
            continue;
        }
        let value = if entries.iter().all(|(k, _)| *k == spec.name) {
            VarValue::List(entries.into_iter().map(|(_, v)| v).collect())
        } else {
            VarValue::Map(entries)
        };
        out.push((spec.name.clone(), value));
    }
    Some(out)
}

/// Bind a variable, reconciling repeated occurrences (`{x:1}/{x}` keeps the longer of two prefix-compatible strings).
fn bind(out: &mut Vars, name: &str, value: VarValue) -> Option<()> {
    match out.get_mut(name) {
        None => {
            out.insert(name.to_string(), value);
        }
        Some(old) if *old == value => {}
        Some(VarValue::String(old)) => match value {
            VarValue::String(new) if new.starts_with(old.as_str()) => *old = new,
            VarValue::String(new) if old.starts_with(&new) => {}
            _ => return None,
        },
        Some(_) => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests;
