//! The registry: a checked `Manifest` turned into live sources, tools and prompts. Every request
//! the server gets is answered through here. Sources are `Arc<dyn Source>` in manifest order;
//! the registry loops over them and delegates, knowing no kind but in `build`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::manifest::{Diagnostics, Loc, Manifest, Role};
use crate::process::Children;
use crate::prompts::{PromptDef, PromptInfo, Rendered};
use crate::providers::files::FilesSource;
use crate::providers::git::GitSource;
use crate::providers::skills::{Skill, SkillsSource};
use crate::providers::spec::TemplateSpec;
use crate::providers::template::{Roots, TemplateSource};
use crate::providers::{
    Body, ChangeEffect, Completion, CompletionRequest, Contents, Database, MAX_URI_BYTES,
    RequestError, ResourceInfo, Source, TemplateInfo, blocking, check_uri_length,
    check_uri_length_at,
};
use crate::quote::{Quote, quote};
use crate::tools::templates::TemplateTool;
use crate::tools::{CallContext, Hints, SearchTool, ShellTool, ToolContent, ToolInfo, ToolResult};
use crate::views::ViewsSource;
use crate::watch::Change;

/// One page of `resources/list`: the resources, and the cursor of the next page.
pub(crate) type ResourcePage = (Vec<ResourceInfo>, Option<String>);

/// Everything one manifest serves.
#[derive(Debug)]
pub(crate) struct Registry {
    pub manifest: Manifest,
    /// The manifest file, canonical when it can be (change events carry canonical paths).
    pub manifest_path: PathBuf,
    /// Every source, in manifest order.
    sources: Vec<Arc<dyn Source>>,
    /// Where each source is declared (same order as `sources`).
    source_locs: Vec<Loc>,
    /// Every source's resource templates with their typed variables, in source order.
    specs: Vec<TemplateSpec>,
    /// The templates served as tools (`template_tools`), in source order.
    template_tools: Vec<TemplateTool>,
    /// Tools sources serve themselves (a database's SQL tool), each with its source.
    source_tools: Vec<(ToolInfo, Arc<dyn Source>)>,
    /// The manifest's tools, in manifest order.
    tools: Vec<ShellTool>,
    /// The manifest's prompts, in manifest order.
    prompts: Vec<PromptDef>,
    /// The files sources (also in `sources`), for prompts' `file` and `complete_from`.
    files: Vec<Arc<FilesSource>>,
    /// `search_files`, when a files source has `search = true`.
    search: Option<SearchTool>,
    /// The skills sources (also in `sources`), for `skills/list` and `skills/get`.
    skills: Vec<Arc<SkillsSource>>,
    /// The MCP Apps views of the tools that have one (also in `sources`).
    views: Option<Arc<ViewsSource>>,
    /// The processes tools and command templates started (shared with the registries that
    /// replace this one after a manifest edit).
    pub children: Arc<Children>,
}

/// A rendered prompt: its messages, embedded resources already read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PromptMessages {
    pub description: Option<String>,
    pub messages: Vec<(Role, PromptContent)>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PromptContent {
    Text(String),
    Resource(Contents),
}

impl Registry {
    /// Builds every source. Checks that need the filesystem happen here and are reported as
    /// diagnostics with the manifest's line and column, all at once. The one place that names
    /// each kind of source.
    pub async fn build(
        manifest: Manifest,
        children: Arc<Children>,
    ) -> Result<Registry, Diagnostics> {
        let (registry, diags) = Self::build_partial(manifest, children).await;
        if diags.is_empty() {
            Ok(registry)
        } else {
            Err(diags.finish())
        }
    }

    /// `build`, keeping what builds: the registry of every entry without a problem, and the
    /// problems of the others (for `check`, which reports everything in one run).
    pub async fn build_partial(
        manifest: Manifest,
        children: Arc<Children>,
    ) -> (Registry, Diagnostics) {
        let mut diags = Diagnostics::new(manifest.file.clone());
        // Built kind by kind (templates need the databases), then put back in file order.
        let mut placed: Vec<(Loc, Arc<dyn Source>)> = Vec::new();
        let mut databases: Vec<Arc<dyn Database>> = Vec::new();
        let mut files: Vec<Arc<FilesSource>> = Vec::new();
        for def in &manifest.files {
            if let Some(src) = FilesSource::build(def, &mut diags) {
                let src = Arc::new(src);
                files.push(src.clone());
                placed.push((def.loc, src));
            }
        }
        let search = SearchTool::build(&files);
        for def in &manifest.databases {
            if let Some(built) = crate::providers::sql::build(def, &mut diags).await {
                databases.push(built.database);
                placed.push((def.loc, built.source));
            }
        }
        for def in &manifest.git {
            if let Some(src) = GitSource::build(def, &mut diags) {
                placed.push((def.loc, Arc::new(src)));
            }
        }
        let mut skills = Vec::new();
        for def in &manifest.skills {
            if let Some(src) = SkillsSource::build(def, &mut diags) {
                let src = Arc::new(src);
                skills.push(src.clone());
                placed.push((def.loc, src));
            }
        }
        let roots = Roots::of(&manifest.templates).await;
        for def in &manifest.templates {
            if let Some(t) =
                TemplateSource::build(def, &databases, &roots, &children, &mut diags).await
            {
                placed.push((def.loc, Arc::new(t)));
            }
        }
        placed.sort_by_key(|(loc, _)| (loc.line, loc.col));
        let mut source_locs: Vec<Loc> = placed.iter().map(|(loc, _)| *loc).collect();
        let mut sources: Vec<Arc<dyn Source>> = placed.into_iter().map(|(_, s)| s).collect();
        let specs: Vec<TemplateSpec> = sources.iter().flat_map(|s| s.template_specs()).collect();
        let template_tools: Vec<TemplateTool> = specs
            .iter()
            .cloned()
            .filter_map(TemplateTool::new)
            .collect();
        let source_tools = sources
            .iter()
            .flat_map(|s| s.tools().into_iter().map(|t| (t, s.clone())))
            .collect();
        let tools: Vec<ShellTool> = manifest
            .tools
            .iter()
            .filter_map(|t| ShellTool::build(t, &children, &mut diags))
            .collect();
        // The views of the tools that were built: their `ui://` resources come after every
        // source's (no source of the manifest can serve `ui://mcp-manifest/`).
        let views = ViewsSource::build(&manifest.views, |name| {
            tools.iter().any(|t| t.name() == name)
                || template_tools.iter().any(|t| t.name() == name)
        })
        .map(Arc::new);
        if let Some(v) = &views {
            sources.push(v.clone());
            source_locs.push(Loc::default());
        }
        let prompts = manifest
            .prompts
            .iter()
            .filter_map(|p| PromptDef::build(p, &mut diags))
            .collect();
        let manifest_path = crate::providers::paths::canonical_or_same(&manifest.path);
        let registry = Registry {
            manifest,
            manifest_path,
            sources,
            source_locs,
            specs,
            template_tools,
            source_tools,
            tools,
            prompts,
            files,
            search,
            skills,
            views,
            children,
        };
        (registry, diags)
    }

    /// Puts this registry's `[server]` process settings (`path`, `max_processes`) into the
    /// process table it shares with the registries before and after it. Building a registry
    /// changes nothing live (a reload that is refused leaves the old settings in force); this is
    /// called when the registry starts serving: at start, when a reload replaces the old one,
    /// and by the one-shot verbs.
    pub fn put_in_service(&self) {
        self.children.configure(
            &self.manifest.server.path,
            self.manifest.server.max_processes,
        );
    }

    /// Whether the manifest serves skills (the Skills extension is declared).
    pub fn has_skills(&self) -> bool {
        !self.manifest.skills.is_empty()
    }

    /// Every skill of every `[skills]` source, in manifest order, a skill URI listed once
    /// (blocking work on a blocking thread).
    pub async fn skills(&self) -> Vec<Skill> {
        let sources = self.skills.clone();
        blocking(move || {
            let mut out: Vec<Skill> = Vec::new();
            for s in &sources {
                for skill in s.skills() {
                    if !out.iter().any(|o| o.uri == skill.uri) {
                        out.push(skill);
                    }
                }
            }
            out
        })
        .await
        .unwrap_or_default()
    }

    /// The skill whose `SKILL.md` is `uri`, or invalid params (SEP-2640: `-32602` with a
    /// message naming the URI).
    pub async fn skill(&self, uri: &str) -> Result<Skill, RequestError> {
        let sources: Vec<Arc<SkillsSource>> = self
            .skills
            .iter()
            .filter(|s| s.owns_uri(uri))
            .cloned()
            .collect();
        let wanted = uri.to_owned();
        let found = blocking(move || sources.iter().find_map(|s| s.skill(&wanted)))
            .await
            .map_err(|e| RequestError::Internal(e.to_string()))?;
        found.ok_or_else(|| {
            RequestError::InvalidParams(format!(
                "No skill is served at {}",
                quote(uri, Quote::Code)
            ))
        })
    }

    /// How many sources were built (`build_partial` leaves out those with problems).
    pub fn source_count(&self) -> usize {
        self.sources.len()
    }

    /// How many of the manifest's source entries were built (the views' own source, which no
    /// entry declares, left out).
    pub fn manifest_source_count(&self) -> usize {
        self.sources.len() - usize::from(self.views.is_some())
    }

    /// The folders to watch: every watched source's, plus the manifest's own folder. Sorted and
    /// without duplicates.
    pub async fn watch_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        if let Some(dir) = self.manifest_path.parent() {
            dirs.push(dir.to_path_buf());
        }
        for source in &self.sources {
            dirs.extend(source.clone().watch_dirs().await);
        }
        dirs.sort();
        dirs.dedup();
        dirs
    }

    /// The folders to poll (`watch = "poll"`), each with how often.
    pub async fn poll_dirs(&self) -> Vec<(PathBuf, std::time::Duration)> {
        let mut dirs = Vec::new();
        for source in &self.sources {
            dirs.extend(source.clone().poll_dirs().await);
        }
        dirs
    }

    /// Tells every source that the folders they asked for are watched (`Source::watch_ready`).
    pub fn watch_ready(&self) {
        for source in &self.sources {
            source.watch_ready();
        }
    }

    /// Applies a batch of file changes: drops stale caches and says whether the resource list
    /// changed and whether the watched folders must be recomputed.
    pub async fn apply_changes(&self, changes: &Arc<[Change]>) -> ChangeEffect {
        let mut effect = ChangeEffect::default();
        for source in &self.sources {
            effect.merge(source.clone().apply_changes(changes.clone()).await);
        }
        effect
    }

    /// Whether any of `changes` changes what `uri` reads as.
    pub fn affected(&self, uri: &str, changes: &[Change]) -> bool {
        self.sources
            .iter()
            .any(|s| s.owns(uri) && s.affected(uri, changes))
    }

    /// The shortest `poll_interval` of the sources that poll for changes, if any does.
    pub fn poll_interval(&self) -> Option<std::time::Duration> {
        self.sources.iter().filter_map(|s| s.poll_interval()).min()
    }

    /// Of the `subscribed` URIs, those a polling source says changed since its last poll.
    pub async fn poll(&self, subscribed: &std::collections::HashSet<String>) -> Vec<String> {
        let mut out = Vec::new();
        for source in self.sources.iter().filter(|s| s.poll_interval().is_some()) {
            let mine: Vec<String> = subscribed
                .iter()
                .filter(|u| source.owns(u))
                .cloned()
                .collect();
            if !mine.is_empty() {
                out.extend(source.clone().poll(mine).await);
            }
        }
        out
    }

    /// The server is stopping: every source stops what it runs elsewhere (queries on database
    /// servers) and closes its connections.
    pub async fn close(&self) {
        for source in &self.sources {
            source.clone().close().await;
        }
    }

    /// `check`'s warnings from every source (see `Source::warnings`), in file order.
    pub async fn warnings(&self) -> Vec<(Loc, String)> {
        let mut out = Vec::new();
        for source in &self.sources {
            out.extend(source.clone().warnings().await);
        }
        out.sort_by_key(|(loc, _)| (loc.line, loc.col));
        out
    }

    /// Whether `uri` names something a source would read (see `Source::serves`). A URI over
    /// `MAX_URI_BYTES` is not asked of any source.
    pub async fn serves(&self, uri: &str) -> bool {
        if check_uri_length(uri).is_err() {
            return false;
        }
        for source in self.sources.iter().filter(|s| s.owns(uri)) {
            if source.clone().serves(uri.to_owned()).await {
                return true;
            }
        }
        false
    }

    /// `serves` as a subscription's answer: "not found" for a URI no source would read, and a
    /// URI over `MAX_URI_BYTES` refused as such (not looked up).
    pub async fn check_serves(&self, uri: &str) -> Result<(), RequestError> {
        check_uri_length(uri)?;
        if self.serves(uri).await {
            Ok(())
        } else {
            Err(RequestError::NotFound(uri.to_owned()))
        }
    }

    pub fn page_size(&self) -> usize {
        self.manifest.server.page_size
    }

    /// Every resource, in manifest order (sources) and name order (within a source). A URI
    /// two sources serve (overlapping roots) is listed once, by the first source.
    pub async fn list_resources(&self) -> Result<Vec<ResourceInfo>, RequestError> {
        let mut lists = Vec::with_capacity(self.sources.len());
        for source in &self.sources {
            lists.push(source.clone().list().await?);
        }
        // A URI listed twice needs two sources that list something: with one, no set of every
        // URI (a fifth of `mcp-manifest list`'s time on 100 000 files).
        if lists.iter().filter(|l| !l.is_empty()).count() <= 1 {
            // The one list as it is: collecting a flattened iterator would grow a vector by
            // doubling, copying 100 000 entries' worth of memory several times.
            return Ok(lists
                .into_iter()
                .find(|l| !l.is_empty())
                .unwrap_or_default());
        }
        let mut seen = std::collections::HashSet::new();
        Ok(lists
            .into_iter()
            .flatten()
            .filter(|r| seen.insert(r.uri.clone()))
            .collect())
    }

    /// Pairs of sources that list the same URIs (overlapping roots), in manifest order: where
    /// each is declared, one such URI and how many there are. For `check`'s warning; listing
    /// keeps the first source's entry.
    pub async fn overlaps(&self) -> Result<Vec<Overlap>, RequestError> {
        let mut owner: HashMap<String, usize> = HashMap::new();
        let mut pairs: Vec<Overlap> = Vec::new();
        for (i, source) in self.sources.iter().enumerate() {
            for r in source.clone().list().await? {
                match owner.get(&r.uri) {
                    None => {
                        owner.insert(r.uri, i);
                    }
                    Some(&first) => {
                        let (a, b) = (self.source_locs[first], self.source_locs[i]);
                        match pairs.iter_mut().find(|o| o.first == a && o.second == b) {
                            Some(o) => o.count += 1,
                            None => pairs.push(Overlap {
                                first: a,
                                second: b,
                                example: r.uri,
                                count: 1,
                            }),
                        }
                    }
                }
            }
        }
        Ok(pairs)
    }

    /// One page of `list_resources` after `cursor` (from a previous page's next cursor), and
    /// the next cursor. A cursor names the source and that source's own key to resume after
    /// (`Source::list_page`), so a page costs O(page) whatever comes before it.
    pub async fn list_resources_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<ResourcePage, RequestError> {
        let page_size = self.page_size().max(1);
        let invalid = |c: &str| {
            RequestError::InvalidParams(format!("invalid cursor {}", quote(c, Quote::Code)))
        };
        let (mut index, mut after) = match cursor {
            None => (0, None),
            Some(c) => match decode_resource_cursor(c).filter(|(i, _)| *i < self.sources.len()) {
                Some(start) => start,
                None => return Err(invalid(c)),
            },
        };
        let mut out = Vec::new();
        while index < self.sources.len() {
            let source = &self.sources[index];
            if out.len() == page_size {
                // Full: is there anything after? Ask for one item.
                let probe = source.clone().list_page(None, 1).await?;
                if !probe.items.is_empty() {
                    return Ok((out, Some(encode_resource_cursor(index, None))));
                }
                index += 1;
                continue;
            }
            let found = match source
                .clone()
                .list_page(after.take(), page_size - out.len())
                .await
            {
                Ok(p) => p,
                Err(RequestError::InvalidParams(_)) => {
                    return Err(invalid(cursor.unwrap_or_default()));
                }
                Err(e) => return Err(e),
            };
            out.extend(self.not_listed_before(index, found.items).await);
            if let Some(key) = found.next {
                return Ok((out, Some(encode_resource_cursor(index, Some(&key)))));
            }
            index += 1;
        }
        Ok((out, None))
    }

    /// What stays the same exactly while every page of `list_resources_page` does: the
    /// largest `Source::listing_stamp` of the sources (each new stamp is larger than all
    /// before); `None` when a source cannot say.
    pub fn listing_stamp(&self) -> Option<u64> {
        let mut largest = None;
        for s in &self.sources {
            largest = largest.max(Some(s.listing_stamp()?));
        }
        largest
    }

    /// `items` of source `index` without those an earlier source lists too (overlapping roots:
    /// a URI is listed once, by the first source). Only sources that list what they serve are
    /// asked (not templates), and only for URIs they own, so sources that do not overlap cost a
    /// prefix check per item.
    async fn not_listed_before(&self, index: usize, items: Vec<ResourceInfo>) -> Vec<ResourceInfo> {
        let earlier: Vec<&Arc<dyn Source>> = self.sources[..index]
            .iter()
            .filter(|s| !s.tried_last())
            .collect();
        let mut out = Vec::with_capacity(items.len());
        for r in items {
            let mut listed = false;
            for s in earlier.iter().filter(|s| s.owns(&r.uri)) {
                if Arc::clone(s).serves(r.uri.clone()).await {
                    listed = true;
                    break;
                }
            }
            if !listed {
                out.push(r);
            }
        }
        out
    }

    pub fn templates(&self) -> Vec<TemplateInfo> {
        self.sources.iter().flat_map(|s| s.templates()).collect()
    }

    /// Reads one resource. Sources that own the URI are tried in manifest order, fixed URIs
    /// before user templates (which come last); the first answer that is not "not found" wins.
    pub async fn read(&self, uri: &str) -> Result<Vec<Contents>, RequestError> {
        // Before any source: a template matches a URI in time proportional to its length, so
        // no source sees a URI longer than it takes (`Source::max_uri_bytes`); one no source
        // takes is refused for its length.
        let longest = self
            .sources
            .iter()
            .filter(|s| s.owns(uri))
            .map(|s| s.max_uri_bytes())
            .max()
            .unwrap_or(MAX_URI_BYTES);
        check_uri_length_at(uri, longest)?;
        let mut refused = None;
        // A source that does not take URIs this long (a template, after a SQL source that did
        // not know the URI): "not found" if another was asked, else the length.
        let mut too_long = None;
        let mut asked = false;
        let first = self.sources.iter().filter(|s| !s.tried_last());
        let last = self.sources.iter().filter(|s| s.tried_last());
        for source in first.chain(last).filter(|s| s.owns(uri)) {
            if let Err(e) = check_uri_length_at(uri, source.max_uri_bytes()) {
                too_long.get_or_insert(e);
                continue;
            }
            asked = true;
            match source.clone().read(uri.to_owned()).await {
                Ok(c) => return Ok(vec![c]),
                Err(RequestError::NotFound(_)) => {}
                Err(e) => refused = Some(e),
            }
        }
        Err(refused.unwrap_or_else(|| match too_long {
            Some(e) if !asked => e,
            _ => RequestError::NotFound(uri.to_owned()),
        }))
    }

    /// Completes a variable of a resource template (`ref/resource`).
    pub async fn complete_resource(
        &self,
        template: &str,
        var: &str,
        value: &str,
        context: &HashMap<String, String>,
    ) -> Result<Completion, RequestError> {
        let source = self
            .sources
            .iter()
            .find(|s| s.templates().iter().any(|t| t.uri_template == template))
            .ok_or_else(|| {
                RequestError::InvalidParams(format!(
                    "no resource template {}",
                    quote(template, Quote::Code)
                ))
            })?;
        let req = CompletionRequest {
            template: template.to_owned(),
            var: var.to_owned(),
            prefix: value.to_owned(),
            context: context.clone(),
        };
        source.clone().complete(req).await
    }

    /// Completes an argument of a prompt (`ref/prompt`) from its declared `completions`.
    pub async fn complete_prompt(
        &self,
        prompt: &str,
        arg: &str,
        value: &str,
    ) -> Result<Completion, RequestError> {
        let def = self.prompt(prompt)?;
        if let Some(source) = def.complete_from(arg).and_then(|n| self.files_source(n)) {
            let req = CompletionRequest {
                template: String::new(),
                var: "path".to_owned(),
                prefix: value.to_owned(),
                context: HashMap::new(),
            };
            return source.clone().complete(req).await;
        }
        def.complete(arg, value)
    }

    fn files_source(&self, name: &str) -> Option<&Arc<FilesSource>> {
        self.files.iter().find(|f| f.name == name)
    }

    /// Reads a prompt's `file = { source, path }`: `path` relative to the source's root, with
    /// the same access rules as reading its URI (anything else is "not found").
    async fn read_prompt_file(&self, source: &str, path: &str) -> Result<Contents, RequestError> {
        let src = self
            .files_source(source)
            .ok_or_else(|| RequestError::NotFound(format!("[files.{source}]")))?;
        let rel = path.trim_start_matches("./");
        if !crate::providers::paths::is_plain_relative(rel) {
            return Err(RequestError::NotFound(path.to_owned()));
        }
        src.clone().read(src.uri_for(rel)).await
    }

    pub fn has_completions(&self) -> bool {
        !self.templates().is_empty() || self.prompts.iter().any(PromptDef::has_completions)
    }

    pub fn has_prompts(&self) -> bool {
        !self.prompts.is_empty()
    }

    /// Every prompt, in manifest order.
    pub fn prompt_infos(&self) -> Vec<PromptInfo> {
        self.prompts.iter().map(|p| p.info().clone()).collect()
    }

    fn prompt(&self, name: &str) -> Result<&PromptDef, RequestError> {
        self.prompts
            .iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| {
                RequestError::InvalidParams(format!("unknown prompt {}", quote(name, Quote::Code)))
            })
    }

    /// Renders a prompt. Arguments are strings (numbers and booleans are taken as their JSON
    /// text). An embedded resource is read through `read`, so the same access rules apply: a
    /// resource that cannot be read is invalid params naming the URI, never its contents.
    pub async fn get_prompt(
        &self,
        name: &str,
        args: &serde_json::Map<String, Value>,
    ) -> Result<PromptMessages, RequestError> {
        let prompt = self.prompt(name)?;
        let mut text_args = HashMap::new();
        for (k, v) in args {
            let text = match v {
                Value::Null => continue,
                Value::String(s) => s.clone(),
                Value::Bool(_) | Value::Number(_) => v.to_string(),
                Value::Array(_) | Value::Object(_) => {
                    return Err(RequestError::InvalidParams(format!(
                        "prompt `{name}`: argument {} must be a string",
                        quote(k, Quote::Code)
                    )));
                }
            };
            text_args.insert(k.clone(), text);
        }
        let mut messages = Vec::new();
        for m in prompt.render(&text_args)? {
            match m {
                Rendered::Text { role, text } => messages.push((role, PromptContent::Text(text))),
                Rendered::File { role, source, path } => {
                    let contents = self.read_prompt_file(&source, &path).await.map_err(|e| {
                        RequestError::InvalidParams(format!(
                            "prompt `{name}`: cannot embed {} of [files.{source}]: {e}",
                            quote(&path, Quote::Code)
                        ))
                    })?;
                    messages.push((role, PromptContent::Resource(contents)));
                }
                Rendered::Resource { role, uri } => {
                    let contents = self.read(&uri).await.map_err(|e| {
                        RequestError::InvalidParams(format!(
                            "prompt `{name}`: cannot embed {}: {e}",
                            quote(&uri, Quote::Code)
                        ))
                    })?;
                    messages.extend(
                        contents
                            .into_iter()
                            .map(|c| (role, PromptContent::Resource(c))),
                    );
                }
            }
        }
        Ok(PromptMessages {
            description: prompt.info().description.clone(),
            messages,
        })
    }

    /// Every tool, in order: the resource tools (when on), the manifest's tools, then the
    /// template tools (when on) in source order.
    pub fn tools(&self) -> Vec<ToolInfo> {
        let mut out = Vec::new();
        if self.manifest.server.resource_tools {
            out.extend(resource_tool_infos());
        }
        if let Some(search) = &self.search {
            out.push(search.info().clone());
        }
        out.extend(self.tools.iter().map(|t| t.info().clone()));
        out.extend(self.template_tools.iter().map(|t| t.info().clone()));
        out.extend(self.source_tools.iter().map(|(t, _)| t.clone()));
        if let Some(views) = &self.views {
            for t in &mut out {
                t.view = views.uri_for(&t.name);
            }
        }
        out
    }

    /// Whether a tool has an MCP Apps view (the server then declares the extension).
    pub fn has_views(&self) -> bool {
        self.views.is_some()
    }

    /// Whether any tool is served (without building the list).
    pub fn has_tools(&self) -> bool {
        self.manifest.server.resource_tools
            || self.search.is_some()
            || !self.tools.is_empty()
            || !self.template_tools.is_empty()
            || !self.source_tools.is_empty()
    }

    /// Runs one tool. An unknown tool is an error (`-32602`); everything else is a result.
    pub async fn call_tool(
        &self,
        name: &str,
        args: serde_json::Map<String, Value>,
        cx: CallContext,
    ) -> Result<ToolResult, RequestError> {
        if let Some(seen) = &cx.seen
            && !seen.tool(name)
        {
            return Err(unknown_tool(name));
        }
        if name == crate::manifest::SEARCH_TOOL_NAME
            && let Some(search) = &self.search
        {
            return Ok(search.call(&args, cx).await);
        }
        match name {
            "list_resources" if self.manifest.server.resource_tools => {
                Ok(self.list_resources_tool(&args, &cx).await)
            }
            "read_resource" if self.manifest.server.resource_tools => {
                Ok(self.read_resource_tool(&args, &cx).await)
            }
            _ => match self.tools.iter().find(|t| t.name() == name) {
                Some(tool) => Ok(tool.call(&args, cx).await),
                None => match self.template_tools.iter().find(|t| t.name() == name) {
                    Some(tool) => Ok(self.call_template_tool(tool, &args, cx).await),
                    None => match self.source_tools.iter().find(|(t, _)| t.name == name) {
                        // A cancelled call drops the source's future (its query is stopped).
                        Some((_, source)) => Ok(tokio::select! {
                            r = source.clone().call_tool(name.to_owned(), args) => r,
                            () = cx.cancel.cancelled() => {
                                ToolResult::error(format!("`{name}` was cancelled"))
                            }
                        }),
                        None => Err(unknown_tool(name)),
                    },
                },
            },
        }
    }

    /// A template tool: the arguments expanded into the template's URI, which is read exactly
    /// as `resources/read` reads it. A cancelled call drops the read (a `command` template's
    /// processes are killed with it).
    async fn call_template_tool(
        &self,
        tool: &TemplateTool,
        args: &serde_json::Map<String, Value>,
        cx: CallContext,
    ) -> ToolResult {
        let uri = match tool.uri(args) {
            Ok(u) => u,
            Err(problems) => {
                return ToolResult::error(format!(
                    "invalid arguments for `{}`: {}",
                    tool.name(),
                    problems.join("; ")
                ));
            }
        };
        let read = tokio::select! {
            r = self.read(&uri) => r,
            () = cx.cancel.cancelled() => {
                return ToolResult::error(format!(
                    "reading {} was cancelled",
                    quote(&uri, Quote::Code)
                ));
            }
        };
        tool.result(&uri, read)
    }

    async fn list_resources_tool(
        &self,
        args: &serde_json::Map<String, Value>,
        cx: &CallContext,
    ) -> ToolResult {
        let cursor = match args.get("cursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => return ToolResult::error("`cursor` must be a string"),
        };
        // Resources (O(page), `list_resources_page`), then templates, as one list: a cursor is
        // either a resource cursor or, once the resources are done, a template offset.
        let templates = self.templates();
        let page_size = self.page_size().max(1);
        let (resources, mut next, template_start) = match cursor.and_then(decode_cursor) {
            Some(start) if start <= templates.len() => (Vec::new(), None, Some(start)),
            Some(_) => {
                return ToolResult::error(format!(
                    "invalid cursor {}",
                    quote(cursor.unwrap_or_default(), Quote::Code)
                ));
            }
            None => match self.list_resources_page(cursor).await {
                Ok((page, next)) => {
                    let done = next.is_none();
                    (page, next, done.then_some(0))
                }
                Err(e) => return ToolResult::error(e.to_string()),
            },
        };
        let mut page: Vec<Listed> = resources.iter().map(Listed::Resource).collect();
        if let Some(start) = template_start {
            let end = start
                .saturating_add(page_size.saturating_sub(page.len()))
                .min(templates.len());
            page.extend(templates[start..end].iter().map(Listed::Template));
            if end < templates.len() {
                next = Some(encode_cursor(end));
            }
        }
        let (page, next) = match Ok::<_, RequestError>((page, next)) {
            Ok(p) => p,
            Err(e) => return ToolResult::error(e.to_string()),
        };
        let mut resources = Vec::new();
        let mut resource_templates = Vec::new();
        for item in page {
            let uri = match item {
                Listed::Resource(r) => &r.uri,
                Listed::Template(t) => &t.uri_template,
            };
            if !cx.sees_resource(uri) {
                continue;
            }
            match item {
                Listed::Resource(r) => {
                    let mut o = json!({ "uri": r.uri, "name": r.name });
                    if let Some(d) = &r.description {
                        o["description"] = json!(d);
                    }
                    if let Some(m) = &r.mime_type {
                        o["mimeType"] = json!(m);
                    }
                    resources.push(o);
                }
                Listed::Template(t) => resource_templates.push(self.template_json(t)),
            }
        }
        let mut body = json!({ "resources": resources, "resourceTemplates": resource_templates });
        if let Some(n) = next {
            body["nextCursor"] = json!(n);
        }
        ToolResult {
            content: vec![ToolContent::Text(body.to_string())],
            structured: Some(body),
            is_error: false,
        }
    }

    /// One template as `list_resources` answers it: URI template, name, description, MIME type,
    /// its variables (with their descriptions) and the tool that reads it, if any.
    fn template_json(&self, t: &TemplateInfo) -> Value {
        let spec = self.template_spec(&t.uri_template);
        let mut o = json!({ "uriTemplate": t.uri_template, "name": t.name });
        if let Some(d) = &t.description {
            o["description"] = json!(d);
        }
        if let Some(m) = &t.mime_type {
            o["mimeType"] = json!(m);
        }
        o["variables"] = json!(crate::providers::spec::variables(&t.uri_template, spec));
        if let Some(tool) = self.template_tool_for(&t.uri_template) {
            o["tool"] = json!(tool);
        }
        o
    }

    fn template_spec(&self, uri_template: &str) -> Option<&TemplateSpec> {
        self.specs.iter().find(|s| s.uri.as_str() == uri_template)
    }

    /// The tool that reads `uri_template`, if it is served as one.
    pub fn template_tool_for(&self, uri_template: &str) -> Option<&str> {
        self.template_tools
            .iter()
            .find(|t| t.spec().uri.as_str() == uri_template)
            .map(TemplateTool::name)
    }

    async fn read_resource_tool(
        &self,
        args: &serde_json::Map<String, Value>,
        cx: &CallContext,
    ) -> ToolResult {
        let Some(uri) = args.get("uri").and_then(Value::as_str) else {
            return ToolResult::error("`uri` is required and must be a string");
        };
        let read = match cx.sees_resource(uri) {
            true => self.read(uri).await,
            false => Err(not_found(uri)),
        };
        match read {
            Ok(contents) => ToolResult {
                content: contents
                    .into_iter()
                    .map(|c| match c.body {
                        Body::Text(t) => ToolContent::Text(t),
                        Body::Bytes(_) => ToolContent::Resource(c),
                    })
                    .collect(),
                structured: None,
                is_error: false,
            },
            Err(e) => ToolResult::error(e.to_string()),
        }
    }
}

/// The answer to a call of a tool this server does not have (or the caller does not see).
pub(crate) fn unknown_tool(name: &str) -> RequestError {
    RequestError::InvalidParams(format!("unknown tool {}", quote(name, Quote::Code)))
}

/// The answer to a read of a resource this server does not serve (or the caller does not see).
pub(crate) fn not_found(uri: &str) -> RequestError {
    RequestError::NotFound(uri.to_owned())
}

/// One item of `list_resources`' pages.
enum Listed<'a> {
    Resource(&'a ResourceInfo),
    Template(&'a TemplateInfo),
}

/// Two sources listing the same URIs (see `Registry::overlaps`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Overlap {
    /// The source whose entries are listed.
    pub first: Loc,
    /// The later source, whose entries for these URIs are left out.
    pub second: Loc,
    pub example: String,
    pub count: usize,
}

fn resource_tool_infos() -> [ToolInfo; 2] {
    let object = |v: Value| match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    let read_only = Hints::READ_ONLY;
    [
        ToolInfo {
            name: "list_resources".into(),
            title: Some("List resources".into()),
            description: Some(
                "List the resources this server serves (URI, name, description, MIME type) and \
                 its resource templates (URI template, variables and the tool that reads each). \
                 Pass `cursor` from a previous answer's `nextCursor` for the next page."
                    .into(),
            ),
            input_schema: object(json!({
                "type": "object",
                "properties": {
                    "cursor": { "type": "string", "description": "nextCursor from the previous page" }
                },
                "additionalProperties": false
            })),
            output_schema: None,
            hints: read_only,
            view: None,
        },
        ToolInfo {
            name: "read_resource".into(),
            title: Some("Read a resource".into()),
            description: Some(
                "Read one resource by its URI (from list_resources or a resource template).".into(),
            ),
            input_schema: object(json!({
                "type": "object",
                "properties": {
                    "uri": { "type": "string", "description": "The resource URI" }
                },
                "required": ["uri"],
                "additionalProperties": false
            })),
            output_schema: None,
            hints: read_only,
            view: None,
        },
    ]
}

/// One page of `items` after `cursor`. Cursors are opaque to clients: base64 of the offset.
pub(crate) fn paginate<'a, T>(
    items: &'a [T],
    cursor: Option<&str>,
    page_size: usize,
) -> Result<(&'a [T], Option<String>), RequestError> {
    let start = match cursor {
        None => 0,
        Some(c) => decode_cursor(c)
            .filter(|&n| n <= items.len())
            .ok_or_else(|| {
                RequestError::InvalidParams(format!("invalid cursor {}", quote(c, Quote::Code)))
            })?,
    };
    let end = start.saturating_add(page_size.max(1)).min(items.len());
    let next = (end < items.len()).then(|| encode_cursor(end));
    Ok((&items[start..end], next))
}

fn encode_cursor(offset: usize) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("page:{offset}"))
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()?;
    std::str::from_utf8(&raw)
        .ok()?
        .strip_prefix("page:")?
        .parse()
        .ok()
}

/// A `resources/list` cursor: the source's index and its key (`Source::list_page`), opaque to
/// clients (base64).
fn encode_resource_cursor(index: usize, key: Option<&str>) -> String {
    let raw = match key {
        Some(k) => format!("res:{index}:{k}"),
        None => format!("res:{index}"),
    };
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
}

fn decode_resource_cursor(cursor: &str) -> Option<(usize, Option<String>)> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()?;
    let rest = String::from_utf8(raw)
        .ok()?
        .strip_prefix("res:")?
        .to_owned();
    match rest.split_once(':') {
        Some((i, key)) => Some((i.parse().ok()?, Some(key.to_owned()))),
        None => Some((rest.parse().ok()?, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_to_the_end_and_rejects_bad_cursors() {
        let items: Vec<u32> = (0..7).collect();
        let (p1, c1) = paginate(&items, None, 3).unwrap();
        assert_eq!(p1, [0, 1, 2]);
        let (p2, c2) = paginate(&items, c1.as_deref(), 3).unwrap();
        assert_eq!(p2, [3, 4, 5]);
        let (p3, c3) = paginate(&items, c2.as_deref(), 3).unwrap();
        assert_eq!(p3, [6]);
        assert_eq!(c3, None);
        assert!(paginate(&items, Some("nope"), 3).is_err());
        assert!(paginate(&items, Some(&encode_cursor(99)), 3).is_err());
        let (empty, none) = paginate::<u32>(&[], None, 3).unwrap();
        assert!(empty.is_empty() && none.is_none());
    }
}
