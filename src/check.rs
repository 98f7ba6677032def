//! `check`: every problem of a manifest in one run, errors and warnings.
//!
//! The manifest is checked (`manifest::check`, which keeps the entries without problems), the
//! registry is built from what is left (`Registry::build_partial`, the checks that need the
//! filesystem), then the checks that look across sections run on the result:
//!
//! - errors: a prompt embedding a URI that no source can serve;
//! - warnings (what fails or surprises at run time, never a reason to stop serving): a program
//!   not on the tools' PATH, an `include` glob that matches no file, sources whose URIs overlap,
//!   a prompt passing an argument (which may hold `/`) into a template variable that cannot
//!   hold `/`, and the sources' own warnings (`Source::warnings`: a database that cannot be
//!   reached, SQL it rejects), which may connect and so run only for `check`.
//!
//! `serve` runs the same checks but the connecting ones, refuses errors and logs warnings.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::argv::{self, Piece};
use crate::manifest::{self, ArgvItem, Diagnostics, Exec, Loc, Manifest, MessageContent, groups};
use crate::process::Children;
use crate::providers::encode_path;
use crate::providers::visible::Visibility;
use crate::registry::Registry;
use crate::uri::{UriTemplate, VarValue, Vars};

/// What `check` found.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// The registry of every entry without a problem; `None` when the manifest is not TOML.
    pub registry: Option<Registry>,
    /// Every error and warning, in file order.
    pub diags: Diagnostics,
}

/// How much to check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Errors only (the verbs that read, call, list).
    Errors,
    /// Errors and the warnings that need no connection (`serve` logs them).
    Offline,
    /// Everything, connecting to databases with a short timeout (`check`).
    All,
}

/// Checks the manifest at `path` (named `display` in messages): see the module doc.
pub(crate) async fn run(
    path: &Path,
    display: &str,
    children: Arc<Children>,
    mode: Mode,
) -> Outcome {
    let checked = manifest::check(path, display);
    let mut diags = checked.diags;
    let Some(manifest) = checked.manifest else {
        return Outcome {
            registry: None,
            diags: diags.finish(),
        };
    };
    let declared = source_entries(&manifest);
    let (registry, built) = Registry::build_partial(manifest, children).await;
    diags.extend(built);
    let sources_complete = !checked.sources_dropped && registry.manifest_source_count() == declared;
    diags.extend(prompt_uris(&registry, sources_complete).await);
    if sources_complete {
        diags.extend(groups(&registry, mode != Mode::Errors).await);
    }
    if mode != Mode::Errors {
        // Only a manifest that is whole: sections dropped for an error are not "nothing".
        let m = &registry.manifest;
        if diags.errors() == 0 && declared == 0 && m.tools.is_empty() && m.prompts.is_empty() {
            // The SQL engines' sections from their one list (`manifest::sql::ENGINES`).
            let sections: Vec<String> = std::iter::once("files")
                .chain(crate::manifest::sql::section_names())
                .chain(["git", "templates", "skills", "tools"])
                .map(|s| format!("[{s}]"))
                .collect();
            diags.warn(
                Loc { line: 1, col: 1 },
                format!(
                    "the manifest serves nothing: no {} or [prompts] section (`mcp-manifest init --force` writes a starter one from what the folder holds)",
                    sections.join(", ")
                ),
            );
        }
        diags.extend(static_warnings(&registry.manifest));
    }
    if mode == Mode::All {
        for (loc, message) in registry.warnings().await {
            diags.warn(loc, message);
        }
    }
    Outcome {
        registry: Some(registry),
        diags: diags.finish(),
    }
}

impl Outcome {
    /// The registry when there is no error (warnings are not errors), else the diagnostics.
    pub fn into_result(self) -> Result<(Registry, Diagnostics), Diagnostics> {
        match self.registry {
            Some(r) if self.diags.errors() == 0 => Ok((r, self.diags)),
            _ => Err(self.diags),
        }
    }
}

fn source_entries(m: &Manifest) -> usize {
    m.files.len() + m.databases.len() + m.git.len() + m.templates.len() + m.skills.len()
}

/// Warnings computed from the manifest and the filesystem alone (no database, no network).
fn static_warnings(m: &Manifest) -> Diagnostics {
    let mut w = Diagnostics::new(m.file.clone());
    programs(m, &mut w);
    includes(m, &mut w);
    overlaps(m, &mut w);
    w
}

// ---------------------------------------------------------------------------------------------
// Programs on the tools' PATH.

/// The PATH a process of this manifest searches its program in: `[server] path`, then the
/// process's own `PATH` from its `env` or the inherited one — the same as `process::run`.
fn tools_path(m: &Manifest, env: &[(String, String)]) -> OsString {
    crate::process::process_path(&m.server.path, env)
}

/// One warning per process whose program cannot be started.
fn programs(m: &Manifest, w: &mut Diagnostics) {
    let mut check = |what: String,
                     program: &str,
                     loc: Loc,
                     env: &[(String, String)],
                     cwd: &Path| {
        if program.is_empty() {
            return; // reported as an error already
        }
        if crate::process::names_a_path(program) {
            let p = cwd.join(program);
            if !p.exists() {
                w.warn(loc, format!("{what}: program `{program}` does not exist"));
            } else if !crate::process::is_runnable(&p) {
                w.warn(
                    loc,
                    format!("{what}: program `{program}` is not an executable file"),
                );
            }
            return;
        }
        let path = tools_path(m, env);
        if crate::process::find_program(program, &path, cwd).is_err() {
            w.warn(
                loc,
                format!(
                    "{what}: program `{program}` is not on the tools' PATH (`{}`); install it, give its absolute path, or add its folder to PATH",
                    path.to_string_lossy()
                ),
            );
        }
    };
    for t in &m.tools {
        let what = format!("[tools.{}]", t.name);
        match &t.exec {
            Exec::Command(items) => {
                if let Some(ArgvItem::Arg(program, loc)) = items.first() {
                    check(what, program, *loc, &t.env, &t.cwd);
                }
            }
            Exec::Run(_, loc, shell) => check(what, shell.name(), *loc, &t.env, &t.cwd),
        }
    }
    for t in &m.templates {
        if let manifest::TemplateBackend::Command(c) = &t.backend
            && let Some(ArgvItem::Arg(program, loc)) = c.argv.first()
        {
            check(
                format!("[templates.{}]", t.name),
                program,
                *loc,
                &c.env,
                &c.cwd,
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// `include` globs that match nothing.

/// A files source's rules, compiled for the checks: which files under its root it serves.
struct Served<'a> {
    def: &'a manifest::Files,
    root: PathBuf,
    /// Each `include` glob on its own (to say which matched nothing).
    include: Vec<Option<globset::GlobMatcher>>,
    exclude: globset::GlobSet,
    /// What the source hides: the serving rules themselves.
    vis: Visibility,
}

impl<'a> Served<'a> {
    /// `None` when the root cannot be opened (an error already).
    fn new(def: &'a manifest::Files) -> Option<Served<'a>> {
        let root = crate::providers::platform::canonical(&def.root).ok()?;
        let glob = |g: &str| {
            globset::GlobBuilder::new(g)
                .literal_separator(true)
                .build()
                .ok()
        };
        let include = def
            .include
            .iter()
            .map(|(g, _)| glob(g).map(|g| g.compile_matcher()))
            .collect();
        let mut exclude = globset::GlobSetBuilder::new();
        for g in def.exclude.iter().filter_map(|(g, _)| glob(g)) {
            exclude.add(g);
        }
        let exclude = exclude
            .build()
            .unwrap_or_else(|_| globset::GlobSet::empty());
        let texts = |list: &[(String, manifest::Loc)]| -> Vec<String> {
            list.iter().map(|(g, _)| g.clone()).collect()
        };
        let vis = Visibility::new(&root, def.hidden, def.gitignore)
            .selecting(&texts(&def.include), &texts(&def.exclude));
        Some(Served {
            def,
            root,
            include,
            exclude,
            vis,
        })
    }

    /// The first file under the root the source serves for which `want` holds, in name order
    /// (so the file a warning names is the same on every machine).
    fn first_served(&self, mut want: impl FnMut(&str) -> bool) -> Option<String> {
        let mut found = None;
        self.vis.walk(true, |rel| {
            if self.vis.selects(rel) && want(rel) {
                found = Some(rel.to_owned());
                return false;
            }
            true
        });
        found
    }
}

/// Walks each files source (stopping as soon as every `include` glob has matched a file) and
/// warns about the globs that matched none of the files the source would serve.
fn includes(m: &Manifest, w: &mut Diagnostics) {
    for s in m.files.iter().filter_map(Served::new) {
        if !s.root.is_dir() {
            continue;
        }
        let mut unmatched: Vec<usize> = (0..s.include.len())
            .filter(|i| s.include[*i].is_some())
            .collect();
        if unmatched.is_empty() {
            continue;
        }
        // In any order: a sorted walk reads a whole folder before its first file (100 000
        // names in a flat root, at every start of `serve`, for the default `**/*`). The walk
        // hides what serving hides (`Visibility`); `include` is matched glob by glob here.
        s.vis.walk(false, |rel| {
            if !s.exclude.is_match(rel) {
                unmatched.retain(|i| !s.include[*i].as_ref().is_some_and(|g| g.is_match(rel)));
            }
            !unmatched.is_empty()
        });
        for i in unmatched {
            let (glob, loc) = &s.def.include[i];
            w.warn(
                *loc,
                format!(
                    "[files.{}] include `{glob}` matches no file under `{}` (after `exclude`, hidden files and ignore rules)",
                    s.def.name,
                    s.root.display()
                ),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Overlapping sources.

/// Two files sources that serve a same file (roots one inside the other, and a file there both
/// select), and a `[templates]` entry whose URIs fall where another source answers first.
fn overlaps(m: &Manifest, w: &mut Diagnostics) {
    let served: Vec<Served> = m.files.iter().filter_map(Served::new).collect();
    for (i, later) in served.iter().enumerate() {
        for earlier in &served[..i] {
            let (inner, outer) = if later.root.starts_with(&earlier.root) {
                (later, earlier)
            } else if earlier.root.starts_with(&later.root) {
                (earlier, later)
            } else {
                continue;
            };
            // A file both would serve (the inner one's files, seen from the outer root).
            let Ok(offset) = inner.root.strip_prefix(&outer.root) else {
                continue;
            };
            let offset = offset
                .to_string_lossy()
                .replace(std::path::MAIN_SEPARATOR, "/");
            let seen_from_outer = |rel: &str| {
                if offset.is_empty() {
                    rel.to_owned()
                } else {
                    format!("{offset}/{rel}")
                }
            };
            let shared = inner
                .first_served(|rel| outer.vis.visible(&seen_from_outer(rel)))
                .map(|rel| seen_from_outer(&rel));
            let Some(shared) = shared else { continue };
            w.warn(
                later.def.root_loc,
                format!(
                    "[files.{}] overlaps [files.{}]: both serve `{}` (and maybe more); a file both serve is listed once, under [files.{}], and read with its rules",
                    later.def.name,
                    earlier.def.name,
                    shared
                        .split('/')
                        .fold(outer.root.clone(), |p, part| p.join(part))
                        .display(),
                    earlier.def.name
                ),
            );
        }
    }
    // Where the other sources' URIs live: a template URI there is tried after them.
    let mut owners: Vec<(String, String)> = served
        .iter()
        .filter_map(|s| {
            Some((
                format!("[files.{}]", s.def.name),
                crate::providers::platform::file_uri(&s.root)?,
            ))
        })
        .collect();
    for d in &m.databases {
        owners.push((d.entry(), d.prefix()));
    }
    for g in &m.git {
        owners.push((format!("[git.{}]", g.name), format!("git://{}/", g.name)));
    }
    // Each template with the URI it gives for `x` everywhere.
    let parsed: Vec<(&manifest::Template, UriTemplate, String)> = m
        .templates
        .iter()
        .filter_map(|t| {
            let uri = UriTemplate::parse(&t.uri).ok()?;
            let sample = sample(&uri, "x");
            Some((t, uri, sample))
        })
        .collect();
    for (i, (t, uri, sample)) in parsed.iter().enumerate() {
        if let Some((owner, _)) = owners.iter().find(|(_, prefix)| {
            sample.strip_prefix(prefix.as_str()).is_some_and(|rest| {
                prefix.ends_with('/') || rest.is_empty() || rest.starts_with('/')
            })
        }) {
            w.warn(
                t.uri_loc,
                format!(
                    "[templates.{}] URI `{}` overlaps {owner}, which is asked first: a URI both could serve is read from {owner}",
                    t.name, t.uri
                ),
            );
            continue;
        }
        // (`matches` compares plain prefixes before any regex: hundreds of templates do not
        // cost a regex match per pair.)
        if let Some((earlier, _, _)) = parsed[..i]
            .iter()
            .find(|(_, e, e_sample)| e.matches(sample).is_some() && uri.matches(e_sample).is_some())
        {
            w.warn(
                t.uri_loc,
                format!(
                    "[templates.{}] URI `{}` matches the same URIs as [templates.{}] (`{}`), which is asked first: it is reached only when that one finds nothing",
                    t.name, t.uri, earlier.name, earlier.uri
                ),
            );
        }
    }
}

/// `template` expanded with `value` for every variable.
fn sample(template: &UriTemplate, value: &str) -> String {
    let vars: Vars = template
        .variables()
        .into_iter()
        .map(|v| (v.to_owned(), VarValue::String(value.to_owned())))
        .collect();
    template.expand(&vars)
}

// ---------------------------------------------------------------------------------------------
// Prompts embedding resources.

/// More tools than this on the default endpoint get a warning: assistants choose worse among
/// many (and every tool's schema takes room in their context).
pub(crate) const MANY_TOOLS: usize = 40;

/// `[groups.NAME]` and `[server] expose`: a pattern that matches nothing is an error (a typo
/// would otherwise hide what it meant to show, silently); with `warnings`, a default endpoint
/// showing more than `MANY_TOOLS` tools is a warning. Only when every entry was built (else a
/// tool of an entry with a problem would be "missing").
async fn groups(registry: &Registry, warnings: bool) -> Diagnostics {
    let m = &registry.manifest;
    let mut out = Diagnostics::new(m.file.clone());
    let tools: Vec<String> = registry.tools().into_iter().map(|t| t.name).collect();
    let filters: Vec<(String, &manifest::Filter)> =
        std::iter::once(("[server] expose".to_owned(), &m.server.expose))
            .chain(
                m.groups
                    .iter()
                    .map(|g| (format!("[groups.{}]", g.name), &g.filter)),
            )
            .collect();
    let wants_resources = filters.iter().any(|(_, f)| {
        f.patterns()
            .iter()
            .any(|(k, _)| matches!(k, groups::Kind::Resources | groups::Kind::Exclude))
    });
    let mut resources: Vec<String> = Vec::new();
    if wants_resources {
        resources.extend(
            registry
                .list_resources()
                .await
                .unwrap_or_default()
                .into_iter()
                .map(|r| r.uri),
        );
        resources.extend(registry.templates().into_iter().map(|t| t.uri_template));
    }
    let prompts: Vec<String> = registry
        .prompt_infos()
        .into_iter()
        .map(|p| p.name)
        .collect();
    for (entry, filter) in &filters {
        for (kind, pattern) in filter.patterns() {
            let (pool, noun): (Vec<&String>, &str) = match kind {
                groups::Kind::Tools => (tools.iter().collect(), "tool"),
                groups::Kind::Resources => (resources.iter().collect(), "resource or template"),
                groups::Kind::Prompts => (prompts.iter().collect(), "prompt"),
                groups::Kind::Exclude => (
                    tools.iter().chain(&resources).chain(&prompts).collect(),
                    "tool, resource or prompt",
                ),
            };
            if pool.iter().any(|x| pattern.matches(x)) {
                continue;
            }
            let known = match kind {
                groups::Kind::Tools => format!("; the tools are: {}", names(&tools)),
                groups::Kind::Prompts if prompts.is_empty() => "; there are no prompts".into(),
                groups::Kind::Prompts => format!("; the prompts are: {}", names(&prompts)),
                _ => String::new(),
            };
            out.push(
                pattern.loc,
                format!(
                    "{entry} `{}`: `{}` matches no {noun}{known}",
                    kind.key(),
                    pattern.text
                ),
            );
        }
    }
    if warnings {
        let shown = match m.server.expose.is_everything() {
            true => tools.len(),
            false => tools.iter().filter(|t| m.server.expose.tool(t)).count(),
        };
        if shown > MANY_TOOLS {
            out.warn(
                Loc { line: 1, col: 1 },
                format!(
                    "clients of the default endpoint see {shown} tools (more than {MANY_TOOLS}: assistants choose worse among many, and every schema takes room in their context); show a subset with [server] expose, or define [groups.NAME] (`serve --group NAME`, or the HTTP endpoint /mcp/NAME)"
                ),
            );
        }
    }
    out
}

/// At most 20 names, then how many more.
fn names(all: &[String]) -> String {
    let shown: Vec<String> = all.iter().take(20).map(|n| format!("`{n}`")).collect();
    match all.len() > 20 {
        true => format!("{} and {} more", shown.join(", "), all.len() - 20),
        false => shown.join(", "),
    }
}

/// A prompt embedding a URI that no source can serve is an error; one passing an argument into
/// a template variable that cannot hold `/` is a warning. The error is only given when every
/// source was built (`complete`): with one missing, "no source" would be a guess.
async fn prompt_uris(registry: &Registry, complete: bool) -> Diagnostics {
    let m = &registry.manifest;
    let mut out = Diagnostics::new(m.file.clone());
    // Parsed only when a prompt embeds a resource (a manifest of hundreds of templates starts
    // the server without compiling each twice more).
    let embeds = m.prompts.iter().any(|p| {
        p.messages
            .iter()
            .any(|msg| matches!(msg.content, MessageContent::Resource(_)))
    });
    let templates: Vec<UriTemplate> = if embeds {
        registry
            .templates()
            .iter()
            .filter_map(|t| UriTemplate::parse(&t.uri_template).ok())
            .collect()
    } else {
        Vec::new()
    };
    let user_templates: Vec<&str> = m.templates.iter().map(|t| t.uri.as_str()).collect();
    let matching = |uri: &str| templates.iter().find(|t| t.matches(uri).is_some());
    // Prompts with a problem of their own (an unknown `{name}`) were left out of the registry.
    let built: Vec<String> = registry
        .prompt_infos()
        .into_iter()
        .map(|p| p.name)
        .collect();
    for p in m.prompts.iter().filter(|p| built.contains(&p.name)) {
        for msg in &p.messages {
            let MessageContent::Resource(text) = &msg.content else {
                continue;
            };
            let pieces = argv::parse(text);
            let vars: Vec<&str> = argv::vars(&pieces).collect();
            let render = |marked: Option<(&str, &str)>| {
                argv::substitute(&pieces, |v| match marked {
                    Some((name, value)) if name == v => encode_path(value),
                    _ => "x".to_owned(),
                })
            };
            let plain = render(None);
            let found = matching(&plain);
            if found.is_none() && !registry.serves(&plain).await {
                if complete && !prefix_fits(&pieces, &templates) {
                    out.push(
                        msg.content_loc,
                        format!(
                            "prompt `{}` embeds `{text}`, which no source of this manifest can serve (no resource or template matches it)",
                            p.name
                        ),
                    );
                }
                continue;
            }
            let Some(template) = found else { continue };
            let user = user_templates.contains(&template.as_str());
            if !user && !template.as_str().starts_with("git://") {
                continue;
            }
            for var in vars
                .iter()
                .copied()
                .collect::<std::collections::BTreeSet<_>>()
            {
                let slashed = render(Some((var, "x/y")));
                if matching(&slashed).is_some() || registry.serves(&slashed).await {
                    continue;
                }
                // Which variable of the template the argument lands in.
                let marker = "zzqmarkerqzz";
                let target = template
                    .matches(&render(Some((var, marker))))
                    .and_then(|vs| {
                        vs.into_iter().find_map(|(name, value)| {
                            value
                                .as_str()
                                .is_some_and(|s| s.contains(marker))
                                .then_some(name)
                        })
                    })
                    .unwrap_or_else(|| var.to_owned());
                let fix = if user {
                    format!("; write `{{+{target}}}` in the template's `uri` to accept `/`")
                } else {
                    String::new()
                };
                out.warn(
                    msg.content_loc,
                    format!(
                        "prompt `{}` passes argument `{var}` into `{{{target}}}` of `{}`, which cannot hold `/`: a value such as `feature/x` is not found{fix}",
                        p.name,
                        template.as_str()
                    ),
                );
            }
        }
    }
    out
}

/// Whether some template's fixed beginning and the prompt URI's fixed beginning agree, so some
/// value of the arguments may give a URI the template serves (`file://{path}` with an absolute
/// path is served by a files root's `file:///root/{+path}`).
fn prefix_fits(pieces: &[Piece], templates: &[UriTemplate]) -> bool {
    let Some(Piece::Lit(prefix)) = pieces.first() else {
        return pieces.iter().any(|p| matches!(p, Piece::Var(_)));
    };
    if !pieces.iter().any(|p| matches!(p, Piece::Var(_))) {
        return false;
    }
    templates.iter().any(|t| {
        let text = t.as_str();
        let fixed = &text[..text.find('{').unwrap_or(text.len())];
        fixed.starts_with(prefix.as_str()) || prefix.starts_with(fixed)
    })
}
