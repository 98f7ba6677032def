//! The checker: turns the manifest as written (`raw`) into the checked model, every problem a
//! diagnostic at its place. Each kind's section checks have their own file (`files.rs`, `git.rs`,
//! `templates.rs`, `tools.rs`, `prompts.rs`, `skills.rs`, `sql/` with one file per engine); what
//! is here is shared: the `[server]` table, values (sizes, durations, paths, env), parameters, and
//! the names of the tools every entry gets (`template_tools`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use indexmap::IndexMap;

use super::read::Declared;
use super::{
    About, DEFAULT_DEBOUNCE, DEFAULT_MAX_OUTPUT, DEFAULT_MAX_PROCESSES, DEFAULT_MAX_SIZE, Diagnostics, Filter, Loc,
    MAX_MAX_PROCESSES, MAX_MAX_SIZE, Manifest, Param, ParamType, Query, RESOURCE_TOOL_NAMES,
    SEARCH_TOOL_NAME, Server, SourceMap, TemplateBackend, about, expand, groups, normalize,
    type_phrase,
};
use crate::manifest::raw::{self, Key, RawManifest, RawParam, SizeValue, Sp};

/// Checks the raw manifest into the checked one, reporting into `diags`. The SQL engines'
/// sections (`providers::sql`) use its helpers.
pub(crate) struct Checker<'a> {
    pub(crate) map: &'a SourceMap,
    pub(crate) diags: &'a mut Diagnostics,
    pub(crate) dir: &'a Path,
    /// The manifest file itself.
    pub(crate) path: &'a Path,
    pub(crate) env: &'a dyn Fn(&str) -> Option<String>,
}

impl Checker<'_> {
    pub(crate) fn loc<T>(&self, sp: &Sp<T>) -> Loc {
        self.map.loc(sp.span().start)
    }

    pub(crate) fn err<T>(&mut self, at: &Sp<T>, msg: impl Into<String>) {
        let loc = self.loc(at);
        self.diags.push(loc, msg);
    }

    /// How many problems were reported so far.
    pub(crate) fn problems(&self) -> usize {
        self.diags.items.len()
    }

    /// An error at byte `offset` of the manifest.
    pub(crate) fn err_at(&mut self, offset: usize, msg: impl Into<String>) {
        let loc = self.map.loc(offset);
        self.diags.push(loc, msg);
    }

    pub(crate) fn text(s: &Option<Sp<String>>) -> Option<String> {
        s.as_ref().map(|s| s.get().clone())
    }

    /// A path from the manifest, made absolute against the manifest folder (`~/` is the home folder).
    pub(crate) fn path(&self, s: &str) -> PathBuf {
        let p = match s.strip_prefix("~/") {
            Some(rest) => match (self.env)("HOME") {
                Some(home) => PathBuf::from(home).join(rest),
                None => PathBuf::from(s),
            },
            None => PathBuf::from(s),
        };
        let joined = if p.is_absolute() { p } else { self.dir.join(p) };
        normalize(&joined)
    }

    pub(crate) fn size(&mut self, v: &Option<Sp<SizeValue>>, default: u64) -> u64 {
        match v {
            None => default,
            Some(sp) => match sp.get() {
                SizeValue::Bytes(n) => *n,
                SizeValue::Text(t) => match expand::parse_size(t) {
                    Ok(n) => n,
                    Err(e) => {
                        self.err(sp, e);
                        default
                    }
                },
            },
        }
    }

    /// A `max_size`: a size, at most `MAX_MAX_SIZE` (a larger one is an error and the cap).
    pub(crate) fn max_size(&mut self, v: &Option<Sp<SizeValue>>) -> u64 {
        self.capped_size(
            v,
            DEFAULT_MAX_SIZE,
            "max_size",
            "what is read is held in memory whole",
        )
    }

    /// A `max_output`: a size, at most `MAX_MAX_SIZE` like `max_size` (a tool's output is held
    /// in memory whole; `max_output = "2GiB"` let a 1 GiB output abort the server).
    pub(crate) fn max_output(&mut self, v: &Option<Sp<SizeValue>>) -> u64 {
        self.capped_size(
            v,
            DEFAULT_MAX_OUTPUT,
            "max_output",
            "a program's output is held in memory whole",
        )
    }

    /// A size at most `MAX_MAX_SIZE`: a larger one is an error (naming `key` and `why`) and the cap.
    fn capped_size(
        &mut self,
        v: &Option<Sp<SizeValue>>,
        default: u64,
        key: &str,
        why: &str,
    ) -> u64 {
        let n = self.size(v, default);
        if n > MAX_MAX_SIZE
            && let Some(sp) = v
        {
            let got = match expand::format_size(n) {
                rounded if rounded.contains('.') => format!("{n} bytes"),
                exact => exact,
            };
            self.err(
                sp,
                format!(
                    "`{key}` must be at most {} ({why}), got {got}",
                    expand::format_size(MAX_MAX_SIZE)
                ),
            );
            return MAX_MAX_SIZE;
        }
        n
    }

    pub(crate) fn duration(
        &mut self,
        v: &Option<Sp<raw::DurationStr>>,
        default: Duration,
    ) -> Duration {
        match v {
            None => default,
            Some(sp) => match expand::parse_duration(&sp.get().0) {
                Ok(d) => d,
                Err(e) => {
                    self.err(sp, e);
                    default
                }
            },
        }
    }

    pub(crate) fn env_vars(&mut self, env: &IndexMap<Key, Sp<String>>) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (k, v) in env {
            let name = k.get();
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                self.err(
                    k,
                    format!("`{name}` is not a valid environment variable name"),
                );
            }
            out.push((name.clone(), v.get().clone()));
        }
        out
    }

    /// `f`'s entry, or `None` when checking it found a problem (it is reported; the entry is
    /// set aside so the checks that come later do not trip over it again). Used for the entries
    /// whose problems leave them without a meaning (a template without one backend, a postgres
    /// source without a URL); the others keep a default for the value in error, so the checks
    /// of the registry still run on the rest of them.
    pub(crate) fn clean<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        let before = self.diags.items.len();
        let entry = f(self);
        entry.filter(|_| self.diags.items.len() == before)
    }

    pub(crate) fn manifest(
        &mut self,
        mut raw: RawManifest,
        taken: &crate::manifest::sql::Taken<'_>,
        display: &str,
        path: &Path,
        declared: &Declared,
    ) -> Manifest {
        let server = self.server(raw.server.take().unwrap_or_default());
        let files = raw.files.iter().map(|(k, v)| self.files(k, v)).collect();
        let databases = taken.check(self);
        let git = raw.git.iter().map(|(k, v)| self.git(k, v)).collect();
        let templates = raw
            .templates
            .iter()
            .filter_map(|(k, v)| {
                let refs = taken.template_refs(k.get());
                self.clean(|c| Some(c.template(k, v, refs, &declared.databases)))
            })
            // A `sql` template over a source set aside for its own problem is set aside too.
            .filter(|t| match &t.backend {
                TemplateBackend::Sql {
                    section, source, ..
                } => databases
                    .iter()
                    .any(|d| d.section == *section && &d.name == source),
                _ => true,
            })
            .collect();
        let tools = raw
            .tools
            .iter()
            .filter_map(|(k, v)| self.tool(k, v, server.resource_tools))
            .collect();
        let files_names: Vec<&str> = raw.files.keys().map(|k| k.get().as_str()).collect();
        let prompts = raw
            .prompts
            .iter()
            .map(|(k, v)| self.prompt(k, v, &files_names))
            .collect();
        if raw.files.values().any(|f| f.search.unwrap_or(true)) {
            for k in raw.tools.keys().filter(|k| k.get() == SEARCH_TOOL_NAME) {
                self.err(
                    k,
                    format!("tool `{SEARCH_TOOL_NAME}` clashes with the built-in search tool of that name; rename it or set `search = false` on every [files] source"),
                );
            }
        }
        let skills = raw.skills.iter().map(|(k, v)| self.skills(k, v)).collect();
        let groups = raw
            .groups
            .iter()
            .map(|(k, v)| {
                let map = self.map;
                let diags = &mut *self.diags;
                groups::group(k, v, &|sp| map.loc(sp.span().start), &mut |sp, msg| {
                    diags.push(map.loc(sp.span().start), msg)
                })
            })
            .collect();
        let mut m = Manifest {
            file: display.to_owned(),
            path: path.to_path_buf(),
            server,
            files,
            databases,
            git,
            templates,
            tools,
            prompts,
            skills,
            groups,
            views: Vec::new(),
        };
        self.template_tools(&raw, taken, &mut m);
        m.views = self.views(&raw, taken, &m);
        m
    }

    pub(crate) fn server(&mut self, s: raw::RawServer) -> Server {
        let default_name = self
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "mcp-manifest".into());
        let page_size = match &s.page_size {
            Some(p) if *p.get() == 0 => {
                self.err(p, "`page_size` must be at least 1");
                100
            }
            Some(p) => usize::try_from(*p.get()).unwrap_or(usize::MAX),
            None => 100,
        };
        let max_processes = match &s.max_processes {
            Some(p) if *p.get() == 0 => {
                self.err(p, "`max_processes` must be at least 1");
                DEFAULT_MAX_PROCESSES
            }
            Some(p) if *p.get() > MAX_MAX_PROCESSES as u64 => {
                self.err(
                    p,
                    format!(
                        "`max_processes` must be at most {MAX_MAX_PROCESSES}, found {}",
                        p.get()
                    ),
                );
                DEFAULT_MAX_PROCESSES
            }
            Some(p) => usize::try_from(*p.get()).unwrap_or(DEFAULT_MAX_PROCESSES),
            None => DEFAULT_MAX_PROCESSES,
        };
        Server {
            name: Self::text(&s.name).unwrap_or(default_name),
            version: Self::text(&s.version).unwrap_or_else(|| env!("CARGO_PKG_VERSION").into()),
            instructions: Self::text(&s.instructions),
            page_size,
            resource_tools: s.resource_tools.unwrap_or(true),
            template_tools: s.template_tools.unwrap_or(true),
            debounce: self.duration(&s.debounce, DEFAULT_DEBOUNCE),
            path: self.search_path(&s.path),
            max_processes,
            expose: self.expose(&s.expose),
            about: self.about(&s),
            http: self.http(s.http),
        }
    }

    pub(crate) fn expose(&mut self, raw: &Option<raw::RawGroup>) -> Filter {
        let Some(raw) = raw else {
            return Filter::everything();
        };
        let map = self.map;
        let diags = &mut *self.diags;
        groups::filter(raw, &|sp| map.loc(sp.span().start), &mut |sp, msg| {
            diags.push(map.loc(sp.span().start), msg)
        })
    }

    pub(crate) fn about(&mut self, s: &raw::RawServer) -> About {
        let map = self.map;
        let diags = &mut *self.diags;
        let mut about = about::about(
            &s.title,
            &s.description,
            &s.website,
            &s.repository,
            &s.icons,
            &mut |sp, msg| diags.push(map.loc(sp.span().start), msg),
        );
        if let Some(h) = &s.http {
            if let Some(u) = &h.public_url {
                match about::http_url(u.get()) {
                    Ok(u) => about.public_url = Some(u),
                    Err(e) => self.err(u, format!("[server.http] `public_url`: {e}")),
                }
            }
            about.catalog = h.catalog.unwrap_or(false);
        }
        about
    }

    pub(crate) fn queries(&mut self, queries: &IndexMap<Key, raw::RawQuery>) -> Vec<Query> {
        queries
            .iter()
            .map(|(qk, q)| Query {
                name: qk.get().clone(),
                tool: None,
                description: Self::text(&q.description),
                sql: q.sql.get().clone(),
                sql_loc: self.loc(&q.sql),
                params: {
                    for a in q.params.values().filter_map(|p| p.allow_dash.as_ref()) {
                        self.err(
                            a,
                            "`allow_dash` is for values passed to a program; query parameters are bound to SQL, never passed as arguments",
                        );
                    }
                    self.params(&q.params)
                },
            })
            .collect()
    }

    pub(crate) fn params(&mut self, params: &IndexMap<Key, RawParam>) -> Vec<Param> {
        params.iter().map(|(k, p)| self.param(k, p)).collect()
    }

    pub(crate) fn param(&mut self, key: &Key, p: &RawParam) -> Param {
        let name = key.get().clone();
        let ty = p.ty.as_ref().map_or(ParamType::String, |t| *t.get());
        let default = p.default.as_ref().map(|d| d.get().clone());
        if let Some(d) = &p.default
            && !value_fits(ty, d.get())
        {
            self.err(
                d,
                format!(
                    "the default of `{name}` must be {} (its type)",
                    type_phrase(ty)
                ),
            );
        }
        if let (Some(true), Some(d)) = (p.required, &p.default) {
            self.err(
                d,
                format!("`{name}` has a default, so it cannot be `required = true`"),
            );
        }
        if let Some(values) = &p.enum_values {
            if values.get().is_empty() {
                self.err(values, format!("`enum` of `{name}` is empty"));
            }
            if let Some(bad) = values.get().iter().find(|v| !value_fits(ty, v)) {
                self.err(
                    values,
                    format!(
                        "`enum` of `{name}` holds {bad}, which is not {}",
                        type_phrase(ty)
                    ),
                );
            }
        }
        for bound in [&p.minimum, &p.maximum].into_iter().flatten() {
            if !matches!(ty, ParamType::Integer | ParamType::Number) {
                self.err(
                    bound,
                    format!(
                        "`minimum` / `maximum` need an integer or number parameter; `{name}` is {}",
                        type_phrase(ty)
                    ),
                );
            }
        }
        if let (Some(min), Some(max)) = (&p.minimum, &p.maximum)
            && min.get() > max.get()
        {
            self.err(
                min,
                format!("`minimum` of `{name}` is larger than its `maximum`"),
            );
        }
        if let Some(pat) = &p.pattern {
            if !matches!(ty, ParamType::String | ParamType::Array) {
                self.err(
                    pat,
                    format!(
                        "`pattern` needs a string parameter; `{name}` is {}",
                        type_phrase(ty)
                    ),
                );
            }
            if let Err(e) = crate::pattern::Pattern::new(pat.get()) {
                self.err(
                    pat,
                    format!("invalid `pattern` for `{name}`: {}", last_line(&e)),
                );
            }
        }
        if let Some(d) = &p.default
            && value_fits(ty, d.get())
            && let Some(why) = default_breaks(p, d.get())
        {
            self.err(d, format!("the default of `{name}` {why}"));
        }
        Param {
            loc: self.loc(key),
            required: p.required.unwrap_or(p.default.is_none()),
            name,
            ty,
            description: Self::text(&p.description),
            default,
            enum_values: p.enum_values.as_ref().map(|v| v.get().clone()),
            minimum: p.minimum.as_ref().map(|v| *v.get()),
            maximum: p.maximum.as_ref().map(|v| *v.get()),
            pattern: p.pattern.as_ref().map(|v| v.get().clone()),
            allow_dash: p.allow_dash.as_ref().is_some_and(|v| *v.get()),
        }
    }
}

impl Checker<'_> {
    /// Names the tools `template_tools` makes (each entry's `tool` setting applied) and reports
    /// two tools with one name, from any section, naming both entries.
    pub(crate) fn template_tools(
        &mut self,
        raw: &RawManifest,
        databases: &crate::manifest::sql::Taken<'_>,
        m: &mut Manifest,
    ) {
        // (name, where, which entry) of every tool so far, built-ins first.
        let mut taken: Vec<(String, Option<Loc>, String)> = Vec::new();
        if m.server.resource_tools {
            for n in RESOURCE_TOOL_NAMES {
                taken.push((n.to_owned(), None, "the built-in resource tool".into()));
            }
        }
        if raw.files.values().any(|f| f.search.unwrap_or(true)) {
            taken.push((
                SEARCH_TOOL_NAME.to_owned(),
                None,
                "the built-in search tool".into(),
            ));
        }
        for (k, _) in &raw.tools {
            taken.push((
                k.get().clone(),
                Some(self.loc(k)),
                format!("[tools.{}]", k.get()),
            ));
        }
        let on = m.server.template_tools;
        // Entries in file order, so the later of two clashing entries is the one reported.
        let mut wanted: Vec<(Loc, Want)> = Vec::new();
        for (loc, w) in crate::manifest::sql::wanted_tools(self, databases, on) {
            wanted.push((loc, Want::Database(w)));
        }
        for (i, (k, g)) in raw.git.iter().enumerate() {
            let entry = format!("[git.{}]", k.get());
            let prefix = self.tool_name(on, &g.tool, k.get().clone(), &entry);
            let commit = prefix.as_ref().map(|p| format!("{p}_commit"));
            let file = prefix.as_ref().map(|p| format!("{p}_file"));
            wanted.push((self.loc(k), Want::GitCommit(i, commit, entry.clone())));
            wanted.push((self.loc(k), Want::GitFile(i, file, entry)));
        }
        for (i, (k, t)) in raw.templates.iter().enumerate() {
            let entry = format!("[templates.{}]", k.get());
            let name = self.tool_name(on, &t.tool, k.get().clone(), &entry);
            wanted.push((self.loc(k), Want::Template(i, name, entry)));
        }
        wanted.sort_by_key(|(loc, _)| (loc.line, loc.col));
        for (loc, want) in wanted {
            let (name, entry) = want.name_and_entry();
            let Some(name) = name else { continue };
            if let Some((_, other_loc, other)) = taken.iter().find(|(n, _, _)| *n == name) {
                let at = match other_loc {
                    Some(l) => format!(" ({}:{}:{})", m.file, l.line, l.col),
                    None => String::new(),
                };
                let hint = if other_loc.is_none() && name == SEARCH_TOOL_NAME {
                    format!(
                        "set `tool = \"…\"` on {entry} (or `search = false` on every [files] source)"
                    )
                } else if other_loc.is_none() {
                    format!(
                        "set `tool = \"…\"` on {entry} (or `resource_tools = false` in [server])"
                    )
                } else {
                    "set `tool = \"…\"` (or `tool = false`) on one of them".to_owned()
                };
                self.diags.push(
                    loc,
                    format!("tool `{name}` of {entry} has the same name as {other}{at}; {hint}"),
                );
                continue;
            }
            taken.push((name.clone(), Some(loc), entry.clone()));
            let name = Some(name);
            // `i` counts the entries as written; an entry set aside for its own problem is
            // missing from `m`, so the checked entry is found by its name.
            let i = want.index();
            let key = |keys: &mut dyn Iterator<Item = &Key>| keys.nth(i).map(|k| k.get().clone());
            match want {
                Want::Database(w) => w.apply(databases, &mut m.databases, name),
                Want::GitCommit(..) => {
                    if let Some(e) = key(&mut raw.git.keys())
                        .and_then(|n| m.git.iter_mut().find(|e| e.name == n))
                    {
                        e.commit_tool = name;
                    }
                }
                Want::GitFile(..) => {
                    if let Some(e) = key(&mut raw.git.keys())
                        .and_then(|n| m.git.iter_mut().find(|e| e.name == n))
                    {
                        e.file_tool = name;
                    }
                }
                Want::Template(..) => {
                    if let Some(e) = key(&mut raw.templates.keys())
                        .and_then(|n| m.templates.iter_mut().find(|e| e.name == n))
                    {
                        e.tool = name;
                    }
                }
            }
        }
    }

    /// The tool name an entry asks for: `None` when `template_tools` is off or `tool = false`.
    pub(crate) fn tool_name(
        &mut self,
        on: bool,
        setting: &Option<Sp<raw::RawToolSetting>>,
        default: String,
        entry: &str,
    ) -> Option<String> {
        match setting.as_ref().map(|s| (s, s.get())) {
            _ if !on => None,
            None | Some((_, raw::RawToolSetting::On(true))) => Some(default),
            Some((_, raw::RawToolSetting::On(false))) => None,
            Some((at, raw::RawToolSetting::Named(n))) => {
                let ok = !n.is_empty()
                    && n.len() <= 128
                    && n.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
                if !ok {
                    self.err(
                        at,
                        format!("{entry} `tool = \"{}\"` is not a tool name: use 1 to 128 letters, digits, `_`, `-` or `.`", n.escape_debug()),
                    );
                    return None;
                }
                Some(n.clone())
            }
        }
    }
}

/// One tool `template_tools` would make: indexes into the manifest's sections, its name (`None`:
/// none) and the entry, for messages.
enum Want {
    Database(crate::manifest::sql::WantedTool),
    GitCommit(usize, Option<String>, String),
    GitFile(usize, Option<String>, String),
    Template(usize, Option<String>, String),
}

impl Want {
    /// The entry's position among its section's entries as written.
    pub(crate) fn index(&self) -> usize {
        match self {
            Want::Database(_) => 0,
            Want::GitCommit(i, ..) | Want::GitFile(i, ..) | Want::Template(i, ..) => *i,
        }
    }

    pub(crate) fn name_and_entry(&self) -> (Option<String>, String) {
        match self {
            Want::Database(w) => w.name_and_entry(),
            Want::GitCommit(_, n, e) | Want::GitFile(_, n, e) | Want::Template(_, n, e) => {
                (n.clone(), e.clone())
            }
        }
    }
}

/// Which of its own rules (`enum`, `pattern`, `minimum`, `maximum`) a parameter's default breaks,
/// worded as a value's problem is when a call brings it ("must be at most 200, got 500").
fn default_breaks(p: &RawParam, default: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let show = |v: &Value| v.to_string();
    let items: Vec<&Value> = match default {
        Value::Array(items) => items.iter().collect(),
        one => vec![one],
    };
    for item in items {
        if let Some(allowed) = &p.enum_values
            && !allowed
                .get()
                .iter()
                .any(|a| a == item || a.as_f64().is_some_and(|x| Some(x) == item.as_f64()))
        {
            let list: Vec<String> = allowed.get().iter().map(show).collect();
            return Some(format!(
                "must be one of {}, got {}",
                list.join(", "),
                show(item)
            ));
        }
        if let (Some(pattern), Some(text)) = (&p.pattern, item.as_str())
            && let Ok(re) = crate::pattern::Pattern::new(pattern.get())
            && !re.is_match(text)
        {
            return Some(format!(
                "must match the pattern `{}`, got {}",
                pattern.get(),
                show(item)
            ));
        }
    }
    let x = default.as_f64()?;
    let number = |n: f64| {
        if n.fract() == 0.0 && n.abs() < 9.0e15 {
            format!("{}", n as i64)
        } else {
            n.to_string()
        }
    };
    if let Some(min) = &p.minimum
        && x < *min.get()
    {
        return Some(format!(
            "must be at least {}, got {}",
            number(*min.get()),
            show(default)
        ));
    }
    if let Some(max) = &p.maximum
        && x > *max.get()
    {
        return Some(format!(
            "must be at most {}, got {}",
            number(*max.get()),
            show(default)
        ));
    }
    None
}

fn value_fits(ty: ParamType, v: &serde_json::Value) -> bool {
    match ty {
        ParamType::String => v.is_string(),
        ParamType::Integer => v.is_i64() || v.is_u64(),
        ParamType::Number => v.is_number(),
        ParamType::Boolean => v.is_boolean(),
        ParamType::Array => v
            .as_array()
            .is_some_and(|a| a.iter().all(serde_json::Value::is_string)),
    }
}

/// The last line of a multi-line error (regex errors end with the reason).
fn last_line(s: &str) -> &str {
    s.lines().last().unwrap_or(s).trim()
}
