//! `[templates.NAME]`: a URI template you define (RFC 6570, parsed and matched by `crate::uri`),
//! whose variables feed one backend: a `file` path template resolved inside a root, a `sql`
//! statement of a `[sqlite.NAME]`, `[postgres.NAME]` or `[mysql.NAME]` source with the variables
//! bound as `:name` parameters, or a
//! `command` run through the crate's one process spawner (`tools::process`), argv built by the
//! tools' brace rules (`tools::argv`) — no shell — whose stdout is the content.
//!
//! Invariant: a `file` template serves a path only if it is plain (`paths::is_plain_relative`),
//! came from a URI without an encoded `/` or `\`, and `paths::open_beneath` opens it as a regular
//! file below the root (no symlink leaving it, also under races). Anything else is "not found".

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;

use super::paths::{self, OpenError, ReadError, is_plain_relative, mime_for};
use super::visible::Visibility;
use super::{
    Body, BoxFut, ChangeEffect, Completion, CompletionRequest, Contents, Database, RequestError,
    ResourceInfo, Source, SqlCheck, TemplateInfo, blocking, ready,
};
use crate::argv::{self, Argv, Kind, Piece};
use crate::manifest::{
    self, Diagnostics, TemplateBackend,
    diag::did_you_mean,
    expand::{format_duration, format_size},
};
use crate::params::{Noun, Params, Typed};
use crate::process::{self, Children, Ending, ProcessSpec};
use crate::quote::{Quote, quote};
use crate::uri::{UriTemplate, VarValue, Vars};
use crate::watch::Change;

/// The `root` folders of a manifest's `file` templates and the working folders of its `command`
/// ones, looked up together off the runtime thread: one hand-off to the blocking pool for a
/// manifest of hundreds of templates (which mostly share one folder), not one per template, and
/// no file system call on the runtime thread. Each root: its canonical path and whether it is a
/// folder, or why it cannot be opened; and the `cwd`s that are folders.
#[derive(Debug, Default)]
pub(crate) struct Roots {
    roots: HashMap<PathBuf, Result<(PathBuf, bool), String>>,
    dirs: HashSet<PathBuf>,
}

impl Roots {
    pub(crate) async fn of(templates: &[manifest::Template]) -> Roots {
        let mut roots = Vec::new();
        let mut cwds = Vec::new();
        for t in templates {
            match &t.backend {
                TemplateBackend::File { root, .. } => roots.push(root.clone()),
                TemplateBackend::Command(cmd) => cwds.push(cmd.cwd.clone()),
                TemplateBackend::Sql { .. } => {}
            }
        }
        for paths in [&mut roots, &mut cwds] {
            paths.sort();
            paths.dedup();
        }
        if roots.is_empty() && cwds.is_empty() {
            return Roots::default();
        }
        let asked = roots.clone();
        let looked_up = blocking(move || {
            let roots = roots
                .into_iter()
                .map(|root| {
                    let found = super::platform::canonical(&root)
                        .map(|c| {
                            let is_dir = c.is_dir();
                            (c, is_dir)
                        })
                        .map_err(|e| e.to_string());
                    (root, found)
                })
                .collect();
            let dirs = cwds.into_iter().filter(|cwd| cwd.is_dir()).collect();
            Roots { roots, dirs }
        })
        .await;
        looked_up.unwrap_or_else(|e| Roots {
            roots: asked.into_iter().map(|r| (r, Err(e.to_string()))).collect(),
            // Not looked up: each is reported as not a folder.
            dirs: HashSet::new(),
        })
    }

    fn get(&self, root: &Path) -> Result<(PathBuf, bool), String> {
        self.roots
            .get(root)
            .cloned()
            .unwrap_or_else(|| Err("it was not looked up".to_owned()))
    }

    /// Whether the working folder `cwd` of a command template was found to be a folder.
    fn is_dir(&self, cwd: &Path) -> bool {
        self.dirs.contains(cwd)
    }
}

/// The live template.
#[derive(Debug)]
pub(crate) struct TemplateSource {
    pub name: String,
    uri: UriTemplate,
    description: Option<String>,
    mime_type: Option<String>,
    backend: Backend,
    completions: IndexMap<String, Vec<String>>,
    /// Every variable's rules (`vars.VAR`; a variable without a declaration is any string).
    rules: Params,
    /// Variables declared `required = true`: a URI without them is refused.
    required: Vec<String>,
    /// The tool `template_tools` makes of this template, if any.
    tool: Option<String>,
}

#[derive(Debug)]
enum Backend {
    File {
        parts: Vec<Piece>,
        /// Canonical folder every served path must stay inside.
        root: PathBuf,
        /// What a files source would hide below `root` (dot names, `.git`, ignored files), and
        /// the manifest file (unless `hidden = true`).
        rules: Arc<Visibility>,
    },
    Sql {
        db: Arc<dyn Database>,
        /// The statement, checked and rewritten for its engine; its values are `vars`' in order.
        statement: super::sql::Statement,
        vars: Vec<String>,
    },
    Command {
        argv: Argv,
        /// Everything but the arguments (`args` is filled per read).
        spec: ProcessSpec,
    },
}

impl TemplateSource {
    /// Builds a template: the URI template must parse, `completions` must name its variables,
    /// and the backend must use exactly its variables. `databases` are the SQL sources that
    /// built; `children` is where a `command` backend's processes are registered.
    pub(crate) async fn build(
        def: &manifest::Template,
        databases: &[Arc<dyn Database>],
        roots: &Roots,
        children: &Arc<Children>,
        diags: &mut Diagnostics,
    ) -> Option<TemplateSource> {
        let context = format!("[templates.{}]", def.name);
        let uri = match UriTemplate::parse(&def.uri) {
            Ok(u) => u,
            Err(e) => {
                diags.push(
                    def.uri_loc,
                    format!("{context} invalid URI template `{}`: {e}", def.uri),
                );
                return None;
            }
        };
        let vars: Vec<String> = uri.variables().iter().map(|v| (*v).to_owned()).collect();
        let var_list = || {
            if vars.is_empty() {
                "it has none".to_owned()
            } else {
                format!("its variables are: {}", vars.join(", "))
            }
        };
        let mut ok = true;
        for (var, loc) in &def.completions_loc {
            if !vars.contains(var) {
                let hint = did_you_mean(var, vars.iter().map(String::as_str))
                    .map(|m| format!(" (did you mean `{m}`?)"))
                    .unwrap_or_default();
                diags.push(
                    *loc,
                    format!(
                        "{context} `completions.{var}` names no variable of `{}`{hint}; {}",
                        def.uri,
                        var_list()
                    ),
                );
                ok = false;
            }
        }
        let (rules, required) = match var_rules(def, &context, &uri, diags) {
            Some(r) => r,
            None => {
                ok = false;
                (Params::new(&[], Noun::Variable).ok()?, Vec::new())
            }
        };
        let backend = match &def.backend {
            TemplateBackend::File {
                path,
                path_loc,
                root,
                hidden,
                gitignore,
                manifest,
            } => {
                let parts = parse_path_template(path);
                let used: Vec<&str> = parts
                    .iter()
                    .filter_map(|p| match p {
                        Piece::Var(v) => Some(v.as_str()),
                        Piece::Lit(_) => None,
                    })
                    .collect();
                for v in &used {
                    if !vars.iter().any(|x| x == v) {
                        let hint = did_you_mean(v, vars.iter().map(String::as_str))
                            .map(|m| format!(" (did you mean `{m}`?)"))
                            .unwrap_or_default();
                        diags.push(
                            *path_loc,
                            format!(
                                "{context} `{{{v}}}` in `file` names no variable of `{}`{hint}; {}",
                                def.uri,
                                var_list()
                            ),
                        );
                        ok = false;
                    }
                }
                for v in &vars {
                    if !used.contains(&v.as_str()) {
                        diags.push(
                            *path_loc,
                            format!("{context} variable `{v}` of `{}` is not used in `file` (write `{{{v}}}` where its value goes)", def.uri),
                        );
                        ok = false;
                    }
                }
                let literal: String = parts
                    .iter()
                    .map(|p| match p {
                        Piece::Lit(l) => l.as_str(),
                        Piece::Var(_) => "x",
                    })
                    .collect();
                if Path::new(&literal).is_absolute()
                    || Path::new(&literal)
                        .components()
                        .any(|c| matches!(c, Component::ParentDir))
                {
                    diags.push(
                        *path_loc,
                        format!("{context} `file` is a path inside `root` (default: the manifest's folder): it cannot be absolute or use `..`; set `root` to the folder to serve"),
                    );
                    ok = false;
                }
                let root = match roots.get(root) {
                    Ok((r, true)) => r,
                    Ok((_, false)) => {
                        diags.push(
                            *path_loc,
                            format!("{context} root `{}` is not a folder", root.display()),
                        );
                        return None;
                    }
                    Err(e) => {
                        diags.push(
                            *path_loc,
                            format!("{context} root `{}` cannot be opened: {e}", root.display()),
                        );
                        return None;
                    }
                };
                Backend::File {
                    rules: Arc::new(
                        Visibility::new(&root, *hidden, *gitignore)
                            .hiding_manifest((!hidden).then(|| manifest.clone())),
                    ),
                    parts,
                    root,
                }
            }
            TemplateBackend::Sql {
                section,
                source,
                sql,
                sql_loc,
                ..
            } => {
                // A missing source was reported when the manifest (or the source) was checked.
                let db = databases
                    .iter()
                    .find(|s| s.section() == *section && s.name() == source)?
                    .clone();
                let names: Vec<&str> = vars.iter().map(String::as_str).collect();
                let check = SqlCheck {
                    context: &context,
                    sql,
                    loc: *sql_loc,
                    uri: &def.uri,
                    vars: &names,
                };
                let statement = db.check_template_sql(check, diags).await?;
                Backend::Sql {
                    db,
                    statement,
                    vars: vars.clone(),
                }
            }
            TemplateBackend::Command(cmd) => {
                let declared: Vec<(String, Kind)> =
                    vars.iter().map(|v| (v.clone(), Kind::One)).collect();
                let compiled = match Argv::compile(&cmd.argv, &declared, "variable") {
                    Ok(a) => Some(a),
                    Err(errors) => {
                        for (loc, m) in errors {
                            diags.push(loc, format!("{context} {m}"));
                        }
                        ok = false;
                        None
                    }
                };
                let mut used = Vec::new();
                for item in &cmd.argv {
                    let texts: Vec<&str> = match item {
                        manifest::ArgvItem::Arg(t, _) => vec![t.as_str()],
                        manifest::ArgvItem::Group(list, _) => {
                            list.iter().map(|(t, _)| t.as_str()).collect()
                        }
                    };
                    for t in texts {
                        used.extend(argv::vars(&argv::parse(t)).map(str::to_owned));
                    }
                }
                let at = match cmd.argv.first() {
                    Some(manifest::ArgvItem::Arg(_, loc) | manifest::ArgvItem::Group(_, loc)) => {
                        *loc
                    }
                    None => def.loc,
                };
                for v in &vars {
                    if !used.contains(v) {
                        diags.push(
                            at,
                            format!("{context} variable `{v}` of `{}` is not used in `command` (write `{{{v}}}` where its value goes)", def.uri),
                        );
                        ok = false;
                    }
                }
                if !roots.is_dir(&cmd.cwd) {
                    diags.push(
                        cmd.cwd_loc,
                        format!(
                            "{context} working directory `{}` does not exist or is not a folder",
                            cmd.cwd.display()
                        ),
                    );
                    ok = false;
                }
                let argv = compiled?;
                Backend::Command {
                    spec: ProcessSpec {
                        program: argv.program().to_owned(),
                        args: Vec::new(),
                        raw_args: false,
                        cwd: cmd.cwd.clone(),
                        env: cmd.env.clone(),
                        timeout: cmd.timeout,
                        max_output: cmd.max_output,
                        children: children.clone(),
                    },
                    argv,
                }
            }
        };
        ok.then(|| TemplateSource {
            name: def.name.clone(),
            uri,
            description: def.description.clone(),
            mime_type: def.mime_type.clone(),
            backend,
            completions: def.completions.clone(),
            rules,
            required,
            tool: def.tool.clone(),
        })
    }

    /// This template as `template_tools` serves it.
    fn spec(&self) -> crate::providers::spec::TemplateSpec {
        let mime = self.listed_mime();
        let json = mime.as_deref().is_none_or(|m| m == "application/json");
        crate::providers::spec::TemplateSpec {
            uri: self.uri.clone(),
            entry: format!("[templates.{}]", self.name),
            tool: self.tool.clone(),
            args: self.rules.with_noun(Noun::Argument),
            description: self.description.clone(),
            rows: json && matches!(self.backend, Backend::Sql { .. }),
            open_world: matches!(self.backend, Backend::Command { .. }),
        }
    }

    /// The matched variables checked against their rules (`vars`), defaults filled in for the
    /// absent ones: the values as text for the backends, and as their types for SQL.
    fn checked(&self, mut vars: Vars) -> Result<(Vars, HashMap<String, Typed>), RequestError> {
        let context = format!("[templates.{}]", self.name);
        let bad = |m: String| RequestError::InvalidParams(format!("{context} {m}"));
        let mut typed = HashMap::new();
        for name in self.uri.variables() {
            match vars.get(name) {
                Some(VarValue::String(s)) => {
                    typed.insert(
                        name.to_owned(),
                        self.rules.text_value(name, s).map_err(bad)?,
                    );
                }
                Some(VarValue::List(items)) => {
                    for item in items {
                        self.rules.text_value(name, item).map_err(bad)?;
                    }
                }
                // The backends say what they make of a map.
                Some(VarValue::Map(_)) => {}
                None => match self.rules.default_value(name) {
                    Some(d) => {
                        vars.insert(name.to_owned(), VarValue::String(d.to_text()));
                        typed.insert(name.to_owned(), d);
                    }
                    None if self.required.iter().any(|r| r == name) => {
                        return Err(bad(format!("missing required variable `{name}`")));
                    }
                    None => {}
                },
            }
        }
        Ok((vars, typed))
    }

    /// A template without variables is one fixed URI: it is listed as a resource.
    fn fixed_resources(&self) -> Vec<ResourceInfo> {
        if !self.uri.variables().is_empty() {
            return Vec::new();
        }
        let mut r = ResourceInfo::new(self.uri.expand(&Vars::new()), self.name.clone());
        r.description = self.description.clone();
        r.mime_type = self.listed_mime();
        vec![r]
    }

    fn template_infos(&self) -> Vec<TemplateInfo> {
        if self.uri.variables().is_empty() {
            return Vec::new();
        }
        vec![TemplateInfo {
            uri_template: self.uri.as_str().to_owned(),
            name: self.name.clone(),
            description: self.description.clone(),
            mime_type: self.listed_mime(),
        }]
    }

    /// The declared MIME type; else JSON for `sql`, or what the file extension says.
    fn listed_mime(&self) -> Option<String> {
        if let Some(m) = &self.mime_type {
            return Some(m.clone());
        }
        match &self.backend {
            Backend::Sql { .. } => Some("application/json".into()),
            Backend::Command { .. } => Some("text/plain".into()),
            Backend::File { parts, .. } => match parts.last() {
                Some(Piece::Lit(tail)) if tail.contains('.') => {
                    let m = mime_for(Path::new(&format!("x{tail}")), || false);
                    (m != "application/octet-stream").then_some(m)
                }
                _ => None,
            },
        }
    }

    /// Reads `uri` if it matches the template; "not found" otherwise.
    async fn read_uri(&self, uri: &str) -> Result<Contents, RequestError> {
        let not_found = || RequestError::NotFound(uri.to_owned());
        let vars = self.uri.matches(uri).ok_or_else(not_found)?;
        let (vars, typed) = self.checked(vars)?;
        let value = |name: &str| -> Result<Option<String>, RequestError> {
            match vars.get(name) {
                None => Ok(None),
                Some(VarValue::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(RequestError::InvalidParams(format!(
                    "`{name}` must be a single value in `{}`",
                    self.uri.as_str()
                ))),
            }
        };
        match &self.backend {
            Backend::File { parts, root, rules } => {
                let lower = uri.to_ascii_lowercase();
                if lower.contains("%2f") || lower.contains("%5c") || lower.contains("%00") {
                    return Err(not_found());
                }
                let mut rel = String::new();
                for p in parts {
                    match p {
                        Piece::Lit(l) => rel.push_str(l),
                        Piece::Var(v) => rel.push_str(&value(v)?.unwrap_or_default()),
                    }
                }
                let (root, mime) = (root.clone(), self.mime_type.clone());
                let rules = rules.clone();
                let uri = uri.to_owned();
                blocking(move || read_file(&root, &rules, &rel, &uri, mime)).await?
            }
            Backend::Sql {
                db,
                statement,
                vars: names,
            } => {
                let mut args = Vec::with_capacity(names.len());
                for n in names {
                    match typed.get(n) {
                        Some(t) => args.push(t.clone()),
                        None => args.push(value(n)?.map_or(Typed::Null, Typed::Text)),
                    }
                }
                db.clone()
                    .read_sql(
                        uri.to_owned(),
                        statement.clone(),
                        args,
                        self.mime_type.clone(),
                    )
                    .await
            }
            Backend::Command { argv, spec } => {
                let mut values = HashMap::new();
                for (name, v) in &vars {
                    let value = match v {
                        VarValue::String(s) => argv::Value::One(s.clone()),
                        VarValue::List(items) => argv::Value::Many(items.clone()),
                        VarValue::Map(_) => {
                            return Err(RequestError::InvalidParams(format!(
                                "`{name}` must be a value or a list in `{}`",
                                self.uri.as_str()
                            )));
                        }
                    };
                    values.insert(name.clone(), value);
                }
                if let Some(name) = argv::with_nul(&values) {
                    return Err(RequestError::InvalidParams(format!(
                        "[templates.{}] variable `{name}` holds a NUL character, which cannot be passed to a program",
                        self.name
                    )));
                }
                let mut spec = spec.clone();
                // A value becomes an option only where its variable says `allow_dash = true`.
                spec.args = argv
                    .args(&values, &|n| self.rules.allows_dash(n))
                    .map_err(|dash| {
                        RequestError::InvalidParams(format!(
                            "[templates.{}] {}",
                            self.name,
                            dash.message("variable")
                        ))
                    })?;
                if let Some(why) = argv::too_large(&spec.program, &spec.args, &spec.env) {
                    return Err(RequestError::InvalidParams(format!(
                        "[templates.{}] the variables are too large to pass to a program: {why}",
                        self.name
                    )));
                }
                self.run(uri, spec).await
            }
        }
    }

    /// Runs a `command` template's process; exit status 0 makes its stdout the content.
    async fn run(&self, uri: &str, spec: ProcessSpec) -> Result<Contents, RequestError> {
        let name = &self.name;
        let program = spec.program.clone();
        let (timeout, cap) = (spec.timeout, spec.max_output);
        // A cancelled read drops this future (see `server::Handler::read_resource`), which
        // kills the process group; otherwise it ends with its timeout or the server.
        let outcome = process::run(spec, tokio_util::sync::CancellationToken::new(), None)
            .await
            .map_err(|e| {
                RequestError::Internal(format!("[templates.{name}] could not start: {e}"))
            })?;
        let stderr = String::from_utf8_lossy(&outcome.stderr_tail);
        let lines: Vec<&str> = stderr.trim_end().lines().collect();
        let tail = lines[lines.len().saturating_sub(10)..].join("\n");
        let with_stderr = |what: String| {
            if tail.is_empty() {
                what
            } else {
                format!("{what}\n\nstderr (last lines):\n{tail}")
            }
        };
        match outcome.ending {
            Ending::Exited(0) => {
                let body = Body::from_bytes(outcome.stdout);
                let fallback = match body {
                    Body::Text(_) => "text/plain",
                    Body::Bytes(_) => "application/octet-stream",
                };
                Ok(Contents {
                    uri: uri.to_owned(),
                    mime_type: Some(self.mime_type.clone().unwrap_or_else(|| fallback.into())),
                    body,
                })
            }
            Ending::Exited(code) => Err(RequestError::InvalidParams(with_stderr(format!(
                "[templates.{name}] `{program}` failed: exit code {code}"
            )))),
            Ending::Signaled(sig) => Err(RequestError::Refused(with_stderr(format!(
                "[templates.{name}] `{program}` was killed by signal {sig}"
            )))),
            Ending::TimedOut => Err(RequestError::Refused(format!(
                "[templates.{name}] `{program}` timed out after {}; its processes were killed",
                format_duration(timeout)
            ))),
            Ending::OutputCut => Err(RequestError::Refused(format!(
                "[templates.{name}] `{program}` wrote more than {} (`max_output`); its processes were stopped",
                format_size(cap)
            ))),
            Ending::Cancelled => Err(RequestError::Internal(format!(
                "[templates.{name}] `{program}` was cancelled"
            ))),
        }
    }

    /// Completes a variable: its `completions` list; else, for a `file` template whose last
    /// path segment holds just this variable, the names in that folder (earlier variables come
    /// from `context`).
    async fn complete_var(
        &self,
        var: &str,
        prefix: &str,
        context: &std::collections::HashMap<String, String>,
    ) -> Result<Completion, RequestError> {
        let vars = self.uri.variables();
        if !vars.contains(&var) {
            return Err(RequestError::InvalidParams(format!(
                "`{}` has no variable {}; its variables are: {}",
                self.uri.as_str(),
                quote(var, Quote::Code),
                vars.join(", ")
            )));
        }
        if let Some(values) = self.completions.get(var) {
            return Ok(Completion::from_candidates(values, prefix));
        }
        let Backend::File { parts, root, rules } = &self.backend else {
            return Ok(Completion::default());
        };
        let Some((dir, before, after)) = folder_of_last_segment(parts, var, context) else {
            return Ok(Completion::default());
        };
        let (root, prefix) = (root.clone(), prefix.to_owned());
        let rules = rules.clone();
        blocking(move || {
            let names = list_folder(&root, &rules, &dir, &before, &after);
            Completion::from_candidates(names, &prefix)
        })
        .await
    }
}

impl Source for TemplateSource {
    fn owns(&self, _uri: &str) -> bool {
        // Any URI may match a pattern; `read` answers "not found" for the others.
        true
    }

    fn tried_last(&self) -> bool {
        true
    }

    fn list(self: Arc<Self>) -> BoxFut<Result<Vec<ResourceInfo>, RequestError>> {
        ready(Ok(self.fixed_resources()))
    }

    fn templates(&self) -> Vec<TemplateInfo> {
        self.template_infos()
    }

    fn template_specs(&self) -> Vec<crate::providers::spec::TemplateSpec> {
        vec![self.spec()]
    }

    fn read(self: Arc<Self>, uri: String) -> BoxFut<Result<Contents, RequestError>> {
        Box::pin(async move { self.read_uri(&uri).await })
    }

    /// A URI the template matches. (A `file` backend's hidden files are checked when read.)
    fn serves(self: Arc<Self>, uri: String) -> BoxFut<bool> {
        ready(self.uri.matches(&uri).is_some())
    }

    fn complete(
        self: Arc<Self>,
        req: CompletionRequest,
    ) -> BoxFut<Result<Completion, RequestError>> {
        Box::pin(async move { self.complete_var(&req.var, &req.prefix, &req.context).await })
    }

    /// Templates are not watched: what they read is computed per read.
    fn watch_dirs(self: Arc<Self>) -> BoxFut<Vec<PathBuf>> {
        ready(Vec::new())
    }

    fn apply_changes(self: Arc<Self>, _changes: Arc<[Change]>) -> BoxFut<ChangeEffect> {
        ready(ChangeEffect::default())
    }

    fn affected(&self, _uri: &str, _changes: &[Change]) -> bool {
        false
    }
}

/// The rules of every variable of `uri`: the declared ones (`vars.VAR`, which must name a
/// variable and hold a single value) and a plain string for the others. A variable is
/// required (in its tool) unless it has a default, says `required = false`, or stands only in
/// `{?x}` / `{&x}` / `{;x}`. Also the variables a URI must carry (`required = true`).
/// `None` after reporting problems.
fn var_rules(
    def: &manifest::Template,
    context: &str,
    uri: &UriTemplate,
    diags: &mut Diagnostics,
) -> Option<(Params, Vec<String>)> {
    let names = uri.variables();
    let mut ok = true;
    for (p, _) in &def.vars {
        if !names.contains(&p.name.as_str()) {
            let hint = did_you_mean(&p.name, names.iter().copied())
                .map(|m| format!(" (did you mean `{m}`?)"))
                .unwrap_or_default();
            let list = if names.is_empty() {
                "it has none".to_owned()
            } else {
                format!("its variables are: {}", names.join(", "))
            };
            diags.push(
                p.loc,
                format!(
                    "{context} `vars.{}` names no variable of `{}`{hint}; {list}",
                    p.name, def.uri
                ),
            );
            ok = false;
        } else if p.ty == manifest::ParamType::Array {
            diags.push(
                p.loc,
                format!(
                    "{context} variable `{}` is an array; a template variable is a string, integer, number or boolean (an exploded `{{{}*}}` checks each item against these rules)",
                    p.name, p.name
                ),
            );
            ok = false;
        }
    }
    let mut list = Vec::with_capacity(names.len());
    let mut required = Vec::new();
    for name in &names {
        let declared = def.vars.iter().find(|(p, _)| p.name == *name);
        let mut param = match declared {
            Some((p, _)) => p.clone(),
            None => manifest::Param::string(name, def.uri_loc),
        };
        let given = declared.and_then(|(_, r)| *r);
        if given == Some(true) {
            required.push((*name).to_owned());
        }
        param.required = given.unwrap_or(param.default.is_none() && !uri.is_named(name));
        list.push(param);
    }
    match Params::new(&list, Noun::Variable) {
        Ok(p) => ok.then_some((p, required)),
        Err(errors) => {
            for (loc, m) in errors {
                diags.push(loc, format!("{context} {m}"));
            }
            None
        }
    }
}

/// A `file` path template: `{var}` placeholders by the tools' brace rules, where a name is a
/// URI template variable name (letters, digits, `_`, `.`).
fn parse_path_template(text: &str) -> Vec<Piece> {
    argv::parse_with(text, |name| {
        !name.is_empty()
            && name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '.')
    })
}

/// The file `rel` under `root`, if it is one a `file` template may serve (blocking).
fn read_file(
    root: &Path,
    rules: &Visibility,
    rel: &str,
    uri: &str,
    mime_type: Option<String>,
) -> Result<Contents, RequestError> {
    let not_found = || RequestError::NotFound(uri.to_owned());
    if !is_plain_relative(rel) {
        return Err(not_found());
    }
    let mut opened = match paths::open_beneath(root, rel) {
        Ok(o) => o,
        Err(OpenError::NotFound | OpenError::Io(_)) => return Err(not_found()),
    };
    // What a files source hides, judged on the path asked for and the one opened; the manifest
    // by identity (a hard link or a symlink to it is the manifest too).
    rules.fresh();
    if !rules.shows(rel, &opened.real_rel) || rules.is_manifest(&opened.file) {
        return Err(not_found());
    }
    let cap = manifest::DEFAULT_MAX_SIZE;
    let bytes = match paths::read_capped(&mut opened.file, cap, opened.size) {
        Ok(b) => b,
        Err(ReadError::TooLarge(n)) => {
            return Err(RequestError::Refused(format!(
                "{uri} is {}, larger than the {} a file template serves",
                format_size(n.max(opened.size)),
                format_size(cap)
            )));
        }
        Err(ReadError::Io(_)) => return Err(not_found()),
    };
    let body = Body::from_bytes(bytes);
    let is_text = matches!(body, Body::Text(_));
    Ok(Contents {
        uri: uri.to_owned(),
        mime_type: Some(
            mime_type.unwrap_or_else(|| mime_for(Path::new(&opened.real_rel), || is_text)),
        ),
        body,
    })
}

/// For completing `var`: the folder (relative to the root) that the last path segment lives in,
/// and the literal text around `var` in that segment. `None` when `var` is not alone in the last
/// segment or an earlier variable has no value in `context`.
fn folder_of_last_segment(
    parts: &[Piece],
    var: &str,
    context: &std::collections::HashMap<String, String>,
) -> Option<(String, String, String)> {
    let mut path = String::new();
    let mut marker = None;
    for p in parts {
        match p {
            Piece::Lit(l) => path.push_str(l),
            Piece::Var(v) if v == var && marker.is_none() => {
                marker = Some(path.len());
                path.push('\u{0}');
            }
            Piece::Var(v) => {
                let value = context.get(v)?;
                if value.contains('/') {
                    return None;
                }
                path.push_str(value);
            }
        }
    }
    marker?;
    let (dir, segment) = match path.rfind('/') {
        Some(i) => (path[..i].to_owned(), &path[i + 1..]),
        None => (String::new(), path.as_str()),
    };
    if dir.contains('\0') {
        return None;
    }
    let (before, after) = segment.split_once('\0')?;
    if after.contains('\0') {
        return None;
    }
    Some((dir, before.to_owned(), after.to_owned()))
}

/// Values of the completed variable: names of files in `root/dir` (inside the root) that start
/// with `before` and end with `after`, with those cut off. Dotfiles only when `before` asks.
fn list_folder(
    root: &Path,
    rules: &Visibility,
    dir: &str,
    before: &str,
    after: &str,
) -> Vec<String> {
    let folder = if dir.is_empty() {
        Some(root.to_path_buf())
    } else if !is_plain_relative(dir) {
        None
    } else {
        super::platform::canonical(&root.join(dir))
            .ok()
            .filter(|f| f.starts_with(root))
    };
    let Some(folder) = folder else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&folder) else {
        return Vec::new();
    };
    rules.fresh();
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            if name.starts_with('.') && !before.starts_with('.') {
                return None;
            }
            let value = name.strip_prefix(before)?.strip_suffix(after)?;
            let real = super::platform::canonical(&e.path()).ok()?;
            let rel = if dir.is_empty() {
                name.clone()
            } else {
                format!("{dir}/{name}")
            };
            // `/`-separated on every platform, as the rules read paths.
            let real_rel = super::platform::below_root(real.to_str()?, root)?;
            let shown =
                real.is_file() && rules.shows(&rel, &real_rel) && !rules.is_manifest_at(&real);
            (!value.is_empty() && shown).then(|| value.to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Piece {
        Piece::Lit(s.into())
    }
    fn var(s: &str) -> Piece {
        Piece::Var(s.into())
    }

    #[test]
    fn path_templates_have_placeholders_and_literal_braces() {
        assert_eq!(
            parse_path_template("notes/{topic}.md"),
            [lit("notes/"), var("topic"), lit(".md")]
        );
        assert_eq!(
            parse_path_template("{a}/{b}"),
            [var("a"), lit("/"), var("b")]
        );
        assert_eq!(
            parse_path_template("x{{y}}/{}/{not a name}/{z"),
            [lit("x{y}/{}/{not a name}/{z")]
        );
    }

    #[test]
    fn only_plain_relative_paths_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("notes")).unwrap();
        std::fs::write(root.join("notes/a.md"), "a").unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        let rules = Visibility::new(&root, false, true);
        let read = |rel: &str| read_file(&root, &rules, rel, "x://", None).ok();
        assert!(read("notes/a.md").is_some());
        for bad in [
            "",
            "notes",
            "notes/../secret",
            "./notes/a.md",
            "notes//a.md",
            "/etc/passwd",
            "notes\\a.md",
            "notes/a.md\0",
            "missing.md",
        ] {
            assert_eq!(read(bad), None, "{bad:?}");
        }
    }

    // Unix only: symlinks (Windows needs a privilege to make them and Wine makes none; the
    // Windows walk's links are tested in `platform::windows::tests`).
    #[cfg(unix)]
    #[test]
    fn symlinks_are_followed_only_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("notes")).unwrap();
        std::fs::write(root.join("notes/a.md"), "a").unwrap();
        let rules = Visibility::new(&root, false, true);
        let read = |rel: &str| read_file(&root, &rules, rel, "x://", None).ok();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.md"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("x.md"), root.join("notes/out.md")).unwrap();
        std::os::unix::fs::symlink(root.join("notes/a.md"), root.join("notes/in.md")).unwrap();
        assert_eq!(read("notes/out.md"), None);
        assert!(read("notes/in.md").is_some());
    }

    #[test]
    fn completion_folder_comes_from_the_last_segment() {
        let parts = parse_path_template("notes/{area}/{topic}.md");
        let mut cx = std::collections::HashMap::new();
        assert_eq!(folder_of_last_segment(&parts, "topic", &cx), None);
        cx.insert("area".to_owned(), "work".to_owned());
        assert_eq!(
            folder_of_last_segment(&parts, "topic", &cx),
            Some(("notes/work".into(), String::new(), ".md".into()))
        );
        assert_eq!(folder_of_last_segment(&parts, "area", &cx), None);
        let flat = parse_path_template("n-{x}.txt");
        assert_eq!(
            folder_of_last_segment(&flat, "x", &cx),
            Some((String::new(), "n-".into(), ".txt".into()))
        );
    }
}
