//! The command-line verbs: serve, check, schema, list, read, call, init, register, unregister.
//! The only module besides `main.rs` that prints to stdout (and `serve` prints nothing there but
//! protocol messages). Arguments are normalized here (`~/` expanded, defaults filled in); the
//! work is done by the library modules.

// The command line prints its results and its errors: this module is where that happens.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::Value;

use crate::check::{self, Mode};
use crate::manifest::{self, Diagnostics};
use crate::providers::Body;
use crate::registry::{PromptContent, PromptMessages, Registry};
use crate::setup;
use crate::tools::{CallContext, ToolContent};

mod setup_verbs;

pub use setup_verbs::{RegisterArgs, UnregisterArgs, init, register, unregister};

const DEFAULT_MANIFEST: &str = "mcp-server.toml";

/// Exit codes.
const OK: i32 = 0;
const FAILED: i32 = 1;

/// The manifest a verb works on (`~/` expanded), and how to name it in messages (as given).
fn manifest_path(manifest: Option<&Path>) -> (PathBuf, String) {
    match manifest {
        Some(p) => (
            setup::expand_home(p, &setup::process_env),
            p.display().to_string(),
        ),
        None => (PathBuf::from(DEFAULT_MANIFEST), DEFAULT_MANIFEST.to_owned()),
    }
}

/// Loads and checks the manifest and builds its registry; diagnostics name the file as given.
/// Every error of the manifest is reported, not only the first section's (see `check`).
pub(crate) async fn load(manifest: Option<&Path>) -> Result<Registry, Diagnostics> {
    let (registry, _) = load_with(manifest, Mode::Errors).await?;
    registry.put_in_service();
    Ok(registry)
}

/// `load`, with the warnings `mode` asks for.
async fn load_with(
    manifest: Option<&Path>,
    mode: Mode,
) -> Result<(Registry, Diagnostics), Diagnostics> {
    let (path, display) = manifest_path(manifest);
    check::run(&path, &display, crate::process::Children::new(), mode)
        .await
        .into_result()
}

/// Prints every diagnostic and a summary line, on stderr.
fn report(diags: &Diagnostics) {
    eprint!("{diags}");
    eprintln!("{}: {} found", diags.file, counts(diags));
}

/// "2 errors", "1 error and 3 warnings", "1 warning".
fn counts(diags: &Diagnostics) -> String {
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    match (diags.errors(), diags.warnings()) {
        (e, 0) => plural(e, "error"),
        (0, w) => plural(w, "warning"),
        (e, w) => format!("{} and {}", plural(e, "error"), plural(w, "warning")),
    }
}

/// Where `serve` serves.
pub enum Via {
    /// HTTP when the manifest sets `[server.http] listen`, else stdio.
    Default,
    /// stdio, whatever the manifest says.
    Stdio,
    /// HTTP on this address (`serve --http ADDR`).
    Http(String),
}

/// `mcp-manifest serve [MANIFEST]`: check, then serve on stdio until stdin closes, or over HTTP
/// until SIGTERM / SIGINT.
pub async fn serve(manifest: Option<PathBuf>, via: Via, group: Option<String>) -> i32 {
    let registry = match load_with(manifest.as_deref(), Mode::Offline).await {
        Ok((r, warnings)) => {
            // Logged, never a reason not to serve (`check` prints them too).
            for line in warnings.to_string().lines() {
                tracing::warn!("{line}");
            }
            r
        }
        Err(d) => {
            report(&d);
            return FAILED;
        }
    };
    let listen = match via {
        Via::Stdio => None,
        Via::Default => registry.manifest.server.http.listen,
        Via::Http(addr) => match manifest::parse_listen(&addr) {
            Ok(a) => Some(a),
            Err(e) => {
                eprintln!("mcp-manifest: --http: {e}");
                return FAILED;
            }
        },
    };
    let m = &registry.manifest;
    let what = format!(
        "`{}` from {} ({} files, {}{} git, {} templates, {} skills, {} tools, {} prompts)",
        m.server.name,
        m.file,
        m.files.len(),
        database_counts(m),
        m.git.len(),
        m.templates.len(),
        m.skills.len(),
        m.tools.len(),
        m.prompts.len(),
    );
    if let (Some(addr), Some(g)) = (listen, &group) {
        eprintln!(
            "mcp-manifest: --group serves one group on stdio; over HTTP every group has its own endpoint (http://{addr}/mcp/{g})"
        );
        return FAILED;
    }
    let served = match listen {
        Some(addr) => {
            let ready = |bound: std::net::SocketAddr, auth: &str| {
                eprintln!(
                    "mcp-manifest {}: serving {what} over MCP Streamable HTTP at http://{bound}/mcp (auth: {auth}); SIGTERM or Ctrl-C stops",
                    env!("CARGO_PKG_VERSION"),
                );
            };
            crate::server::serve_http(registry, addr, ready).await
        }
        None => {
            if std::io::stdin().is_terminal() {
                eprintln!(
                    "mcp-manifest {}: serving {what} over MCP on stdio; waiting for an MCP client (Ctrl-D quits)",
                    env!("CARGO_PKG_VERSION"),
                );
            }
            crate::server::serve_stdio(registry, group.as_deref()).await
        }
    };
    match served {
        Ok(()) => OK,
        Err(e) => {
            eprintln!("mcp-manifest: {e}");
            FAILED
        }
    }
}

/// `mcp-manifest check [MANIFEST]`: every error and warning of the whole manifest, then a
/// one-screen summary when there is no error. Exit 1 on an error, or on a warning with
/// `--deny-warnings`. `--json` prints the diagnostics as one JSON array on stdout instead.
pub async fn check(manifest: Option<PathBuf>, deny_warnings: bool, json: bool) -> i32 {
    let (path, display) = manifest_path(manifest.as_deref());
    let outcome = check::run(&path, &display, crate::process::Children::new(), Mode::All).await;
    let failed = outcome.diags.errors() > 0 || (deny_warnings && outcome.diags.warnings() > 0);
    if json {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", outcome.diags.to_json());
        return if failed { FAILED } else { OK };
    }
    let registry = match outcome.registry {
        Some(r) if !failed => r,
        _ => {
            report(&outcome.diags);
            if outcome.diags.errors() == 0 {
                eprintln!("{display}: failing because of --deny-warnings");
            }
            return FAILED;
        }
    };
    // Warnings: what will fail at run time but does not stop `serve` (exit 0).
    eprint!("{}", outcome.diags);
    let m = &registry.manifest;
    let resources = match registry.list_resources().await {
        Ok(r) => r.len(),
        Err(e) => {
            eprintln!("{}: listing resources failed: {e}", m.file);
            return FAILED;
        }
    };
    let templates = registry.templates().len();
    let tools = registry.tools();
    let from_manifest: Vec<&str> = m.tools.iter().map(|t| t.name.as_str()).collect();
    let built_in: Vec<&str> = tools
        .iter()
        .map(|t| t.name.as_str())
        .filter(|n| !from_manifest.contains(n))
        .collect();
    let prompts = m.prompts.len();
    let sources =
        m.files.len() + m.databases.len() + m.git.len() + m.templates.len() + m.skills.len();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{}: ok — server `{}` {}",
        m.file, m.server.name, m.server.version
    );
    let _ = writeln!(
        out,
        "  sources    {sources} ({} files, {}{} git, {} templates, {} skills)",
        m.files.len(),
        database_counts(m),
        m.git.len(),
        m.templates.len(),
        m.skills.len()
    );
    let _ = writeln!(out, "  resources  {resources}");
    let _ = writeln!(out, "  templates  {templates}");
    let _ = writeln!(
        out,
        "  tools      {} ({} from the manifest, {} built-in{})",
        tools.len(),
        from_manifest.len(),
        built_in.len(),
        if built_in.is_empty() {
            String::new()
        } else {
            format!(": {}", built_in.join(", "))
        }
    );
    // Which sources run any reading statement a client writes (`sql_tool = true`).
    let sql_tools: Vec<String> = m
        .databases
        .iter()
        .filter_map(|d| {
            d.sql_tool
                .as_ref()
                .map(|t| format!("`{t}` ({})", d.entry()))
        })
        .collect();
    if !sql_tools.is_empty() {
        let _ = writeln!(
            out,
            "  sql tools  {} (`sql_tool = true`: each runs any statement a client writes, read-only)",
            sql_tools.join(", ")
        );
    }
    let _ = writeln!(out, "  prompts    {prompts}");
    if !m.groups.is_empty() || !m.server.expose.is_everything() {
        let _ = write!(out, "{}", endpoints_summary(std::sync::Arc::new(registry)));
    }
    OK
}

/// What a client of each endpoint loads before any call: the tools `tools/list` gives there and
/// the answer's size (`check`'s summary, when the manifest has groups or `[server] expose`).
fn endpoints_summary(registry: std::sync::Arc<Registry>) -> String {
    let rows = crate::server::tools_per_endpoint(registry);
    let width = rows
        .iter()
        .map(|r| r.group.as_deref().map_or(7, str::len))
        .max()
        .unwrap_or(7);
    let mut s =
        String::from("  tools/list per endpoint (stdio: serve --group NAME; HTTP: /mcp/NAME):\n");
    for r in rows {
        let name = r.group.as_deref().unwrap_or("default");
        s.push_str(&format!(
            "    {name:<width$}  {:>4} tool{}  {:>8} bytes\n",
            r.tools,
            if r.tools == 1 { " " } else { "s" },
            r.bytes
        ));
    }
    s
}

/// "2 sqlite, 1 postgres, 0 mysql, ": the database sources by engine.
fn database_counts(m: &manifest::Manifest) -> String {
    crate::manifest::sql::section_names()
        .map(|section| {
            let n = m.databases.iter().filter(|d| d.section == section).count();
            format!("{n} {section}, ")
        })
        .collect()
}

/// The manifest's JSON Schema as `schema` prints it (and `init` writes it).
fn schema_text() -> String {
    // The schema is plain JSON built from our own types: serializing it cannot fail.
    let mut s = serde_json::to_string_pretty(&manifest::raw::json_schema()).unwrap_or_default();
    s.push('\n');
    s
}

/// `mcp-manifest schema [--write PATH]`: the JSON Schema of the manifest, printed or written.
pub fn schema(write: Option<PathBuf>) -> i32 {
    let text = schema_text();
    let Some(path) = write else {
        let _ = std::io::stdout().lock().write_all(text.as_bytes());
        return OK;
    };
    let path = setup::expand_home(&path, &setup::process_env);
    match setup::write_file(&path, text.as_bytes()) {
        Ok(()) => {
            let _ = writeln!(
                std::io::stdout().lock(),
                "Wrote {}; name it on the manifest's first line: #:schema ./{}",
                path.display(),
                path.file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
            );
            OK
        }
        Err(e) => {
            eprintln!("mcp-manifest: cannot write {}: {e}", path.display());
            FAILED
        }
    }
}

/// `mcp-manifest card [MANIFEST] [--group G] [--http ADDR]`: the server card, as `serve
/// --http` answers it at `/mcp/server-card` (or `/mcp/G/server-card`).
pub async fn card(manifest: Option<PathBuf>, group: Option<&str>, http: Option<&str>) -> i32 {
    let (path, display) = manifest_path(manifest.as_deref());
    let m = match manifest::load(&path, &display) {
        Ok(m) => m,
        Err(d) => {
            report(&d);
            return FAILED;
        }
    };
    let listen = match http.map(manifest::parse_listen) {
        None => None,
        Some(Ok(a)) => Some(a),
        Some(Err(e)) => {
            eprintln!("mcp-manifest: --http: {e}");
            return FAILED;
        }
    };
    let group = match group {
        None => None,
        Some(g) => match m.group_or_why(g) {
            Ok(g) => Some(g),
            Err(why) => {
                eprintln!("mcp-manifest: {why}");
                return FAILED;
            }
        },
    };
    let endpoint = crate::card::endpoint(&m, listen);
    let card = crate::card::card(&m, group, endpoint.as_deref());
    println!(
        "{}",
        serde_json::to_string_pretty(&card).unwrap_or_default()
    );
    OK
}

/// `mcp-manifest list [MANIFEST] [--json]`: resources, templates, tools and prompts, one a line
/// (or one JSON object, with MCP's field names).
pub async fn list(manifest: Option<PathBuf>, json: bool) -> i32 {
    let registry = match load(manifest.as_deref()).await {
        Ok(r) => r,
        Err(d) => {
            report(&d);
            return FAILED;
        }
    };
    let resources = match registry.list_resources().await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mcp-manifest: {e}");
            return FAILED;
        }
    };
    let templates = registry.templates();
    let tools = registry.tools();
    let prompts = registry.prompt_infos();
    // One write per 64 KiB, not one per line (stdout is line-buffered): a 100 000-file
    // listing is 100 000 lines.
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
    if json {
        let value = list_json(&registry, &resources, &templates, &tools, &prompts);
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
        return OK;
    }
    let _ = writeln!(out, "resources ({})", resources.len());
    for r in &resources {
        // Pieces written as they are: no line or size formatted into a string of its own.
        let _ = out.write_all(b"  ");
        let _ = out.write_all(r.uri.as_bytes());
        let _ = out.write_all(b"  ");
        let _ = out.write_all(r.mime_type.as_deref().unwrap_or("-").as_bytes());
        let _ = match r.size {
            Some(s) => writeln!(out, "  {s} B"),
            None => out.write_all(b"  -\n"),
        };
    }
    // Overlapping sources: their shared URIs are listed once, by the first source. Finding
    // them lists every source again, so only when there are two to overlap.
    let overlaps = if registry.source_count() > 1 {
        registry.overlaps().await.unwrap_or_default()
    } else {
        Vec::new()
    };
    for o in overlaps {
        eprintln!(
            "note: {} URI(s) of the source at line {} are also served by the source at line {} and listed once (e.g. {})",
            o.count, o.second.line, o.first.line, o.example
        );
    }
    let _ = writeln!(out, "templates ({})", templates.len());
    for t in &templates {
        match registry.template_tool_for(&t.uri_template) {
            Some(tool) => {
                let _ = writeln!(out, "  {}  ({})  tool {tool}", t.uri_template, t.name);
            }
            None => {
                let _ = writeln!(out, "  {}  ({})", t.uri_template, t.name);
            }
        }
    }
    let _ = writeln!(out, "tools ({})", tools.len());
    for t in &tools {
        let view = match &t.view {
            Some(uri) => format!("(view {uri})  "),
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "  {}  {view}{}",
            t.name,
            t.description.as_deref().unwrap_or("")
        );
    }
    let _ = writeln!(out, "prompts ({})", prompts.len());
    for p in &prompts {
        let _ = writeln!(
            out,
            "  {}  {}",
            p.name,
            p.description.as_deref().unwrap_or("")
        );
    }
    OK
}

/// The listing as JSON: `server`, then `resources`, `resourceTemplates`, `tools`, `prompts` as
/// their `*/list` answers hold them (absent optional fields left out).
fn list_json(
    registry: &Registry,
    resources: &[crate::providers::ResourceInfo],
    templates: &[crate::providers::TemplateInfo],
    tools: &[crate::tools::ToolInfo],
    prompts: &[crate::prompts::PromptInfo],
) -> Value {
    use serde_json::{Map, json};
    fn put(m: &mut Map<String, Value>, k: &str, v: Option<Value>) {
        if let Some(v) = v {
            m.insert(k.to_owned(), v);
        }
    }
    let resources: Vec<Value> = resources
        .iter()
        .map(|r| {
            let mut m = Map::new();
            m.insert("uri".into(), r.uri.clone().into());
            m.insert("name".into(), r.name.clone().into());
            put(&mut m, "title", r.title.clone().map(Value::from));
            put(
                &mut m,
                "description",
                r.description.clone().map(Value::from),
            );
            put(&mut m, "mimeType", r.mime_type.clone().map(Value::from));
            put(&mut m, "size", r.size.map(Value::from));
            Value::Object(m)
        })
        .collect();
    let templates: Vec<Value> = templates
        .iter()
        .map(|t| {
            let mut m = Map::new();
            m.insert("uriTemplate".into(), t.uri_template.clone().into());
            m.insert("name".into(), t.name.clone().into());
            put(
                &mut m,
                "description",
                t.description.clone().map(Value::from),
            );
            put(&mut m, "mimeType", t.mime_type.clone().map(Value::from));
            put(
                &mut m,
                "tool",
                registry.template_tool_for(&t.uri_template).map(Value::from),
            );
            Value::Object(m)
        })
        .collect();
    let tools: Vec<Value> = tools
        .iter()
        .map(|t| {
            let mut m = Map::new();
            m.insert("name".into(), t.name.clone().into());
            put(&mut m, "title", t.title.clone().map(Value::from));
            put(
                &mut m,
                "description",
                t.description.clone().map(Value::from),
            );
            m.insert("inputSchema".into(), Value::Object(t.input_schema.clone()));
            put(
                &mut m,
                "outputSchema",
                t.output_schema.clone().map(Value::Object),
            );
            put(
                &mut m,
                "_meta",
                t.view
                    .as_deref()
                    .map(|uri| Value::Object(crate::views::tool_meta(uri))),
            );
            m.insert(
                "annotations".into(),
                json!({
                    "readOnlyHint": t.hints.read_only,
                    "destructiveHint": t.hints.destructive,
                    "idempotentHint": t.hints.idempotent,
                    "openWorldHint": t.hints.open_world,
                }),
            );
            Value::Object(m)
        })
        .collect();
    let prompts: Vec<Value> = prompts
        .iter()
        .map(|p| {
            let mut m = Map::new();
            m.insert("name".into(), p.name.clone().into());
            put(&mut m, "title", p.title.clone().map(Value::from));
            put(
                &mut m,
                "description",
                p.description.clone().map(Value::from),
            );
            let args: Vec<Value> = p
                .arguments
                .iter()
                .map(|a| {
                    let mut m = Map::new();
                    m.insert("name".into(), a.name.clone().into());
                    put(
                        &mut m,
                        "description",
                        a.description.clone().map(Value::from),
                    );
                    m.insert("required".into(), a.required.into());
                    Value::Object(m)
                })
                .collect();
            m.insert("arguments".into(), Value::Array(args));
            Value::Object(m)
        })
        .collect();
    let server = &registry.manifest.server;
    json!({
        "server": {"name": server.name, "version": server.version},
        "resources": resources,
        "resourceTemplates": templates,
        "tools": tools,
        "prompts": prompts,
    })
}

/// `mcp-manifest read URI`: text as is; binary as base64 (or raw bytes with `--raw`).
pub async fn read(manifest: Option<PathBuf>, uri: &str, raw: bool) -> i32 {
    let registry = match load(manifest.as_deref()).await {
        Ok(r) => r,
        Err(d) => {
            report(&d);
            return FAILED;
        }
    };
    match registry.read(uri).await {
        Ok(contents) => {
            let mut out = std::io::stdout().lock();
            for c in contents {
                let _ = match c.body {
                    Body::Text(t) => out.write_all(t.as_bytes()),
                    Body::Bytes(b) if raw => out.write_all(&b),
                    Body::Bytes(b) => writeln!(
                        out,
                        "{}",
                        base64::engine::general_purpose::STANDARD.encode(b)
                    ),
                };
            }
            let _ = out.flush();
            OK
        }
        Err(e) => {
            eprintln!("mcp-manifest: {e}");
            FAILED
        }
    }
}

/// `mcp-manifest call TOOL [NAME=VALUE ...] [--json OBJECT]`: exit 1 when the result is an error.
pub async fn call(
    manifest: Option<PathBuf>,
    tool: &str,
    pairs: &[String],
    json: Option<&str>,
) -> i32 {
    let registry = match load(manifest.as_deref()).await {
        Ok(r) => r,
        Err(d) => {
            report(&d);
            return FAILED;
        }
    };
    let Some(info) = registry.tools().into_iter().find(|t| t.name == tool) else {
        let names: Vec<String> = registry.tools().into_iter().map(|t| t.name).collect();
        eprintln!(
            "mcp-manifest: unknown tool `{tool}`; the tools are: {}",
            names.join(", ")
        );
        return FAILED;
    };
    let args = match build_args(&info.input_schema, pairs, json) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mcp-manifest: {e}");
            return FAILED;
        }
    };
    // Ctrl-C cancels the call, which kills the tool's process group (it has a group of its own,
    // so the terminal's SIGINT does not reach it).
    let cancel = tokio_util::sync::CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_interrupt.cancel();
        }
    });
    match registry
        .call_tool(tool, args, CallContext::new(cancel))
        .await
    {
        Ok(result) => {
            let mut out = std::io::stdout().lock();
            for c in &result.content {
                let _ = match c {
                    ToolContent::Text(t) => write_line(&mut out, t),
                    ToolContent::Resource(r) => match &r.body {
                        Body::Text(t) => write_line(&mut out, t),
                        Body::Bytes(b) => writeln!(
                            out,
                            "{}",
                            base64::engine::general_purpose::STANDARD.encode(b)
                        ),
                    },
                };
            }
            if result.content.is_empty()
                && let Some(s) = &result.structured
            {
                let _ = writeln!(out, "{s}");
            }
            if result.is_error { FAILED } else { OK }
        }
        Err(e) => {
            eprintln!("mcp-manifest: {e}");
            FAILED
        }
    }
}

/// `mcp-manifest prompt NAME [NAME=VALUE ...] [--json]`: renders a prompt as `prompts/get` would
/// (defaults, embedded files read through the server's rules) and prints its messages: each under
/// a `[role]` line, an embedded resource under `[role] resource URI (MIME type)`, blobs in base64.
pub async fn prompt(manifest: Option<PathBuf>, name: &str, pairs: &[String], json: bool) -> i32 {
    let registry = match load(manifest.as_deref()).await {
        Ok(r) => r,
        Err(d) => {
            report(&d);
            return FAILED;
        }
    };
    if !registry.prompt_infos().iter().any(|p| p.name == name) {
        let names: Vec<String> = registry
            .prompt_infos()
            .into_iter()
            .map(|p| p.name)
            .collect();
        if names.is_empty() {
            eprintln!("mcp-manifest: unknown prompt `{name}`: this manifest has no prompts");
        } else {
            eprintln!(
                "mcp-manifest: unknown prompt `{name}`; the prompts are: {}",
                names.join(", ")
            );
        }
        return FAILED;
    }
    let mut args = serde_json::Map::new();
    for pair in pairs {
        let Some((k, v)) = pair.split_once('=') else {
            eprintln!("mcp-manifest: `{pair}` is not NAME=VALUE");
            return FAILED;
        };
        if args
            .insert(k.to_owned(), Value::String(v.to_owned()))
            .is_some()
        {
            eprintln!("mcp-manifest: argument `{k}` is given twice");
            return FAILED;
        }
    }
    let rendered = match registry.get_prompt(name, &args).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mcp-manifest: {e}");
            return FAILED;
        }
    };
    let mut out = std::io::stdout().lock();
    if json {
        let _ = writeln!(out, "{}", prompt_json(&rendered));
        return OK;
    }
    for (i, (role, content)) in rendered.messages.iter().enumerate() {
        if i > 0 {
            let _ = writeln!(out);
        }
        let role = match role {
            manifest::Role::User => "user",
            manifest::Role::Assistant => "assistant",
        };
        let _ = match content {
            PromptContent::Text(t) => {
                writeln!(out, "[{role}]").and_then(|()| write_line(&mut out, t))
            }
            PromptContent::Resource(c) => {
                let mime = c.mime_type.as_deref().unwrap_or("no MIME type");
                let _ = writeln!(out, "[{role}] resource {} ({mime})", c.uri);
                match &c.body {
                    Body::Text(t) => write_line(&mut out, t),
                    Body::Bytes(b) => writeln!(
                        out,
                        "{}",
                        base64::engine::general_purpose::STANDARD.encode(b)
                    ),
                }
            }
        };
    }
    OK
}

/// A rendered prompt as the `prompts/get` result's JSON.
fn prompt_json(rendered: &PromptMessages) -> Value {
    let messages: Vec<Value> = rendered
        .messages
        .iter()
        .map(|(role, content)| {
            let role = match role {
                manifest::Role::User => "user",
                manifest::Role::Assistant => "assistant",
            };
            let content = match content {
                PromptContent::Text(t) => serde_json::json!({ "type": "text", "text": t }),
                PromptContent::Resource(c) => {
                    let mut r = serde_json::json!({ "uri": c.uri });
                    if let Some(m) = &c.mime_type {
                        r["mimeType"] = Value::String(m.clone());
                    }
                    match &c.body {
                        Body::Text(t) => r["text"] = Value::String(t.clone()),
                        Body::Bytes(b) => {
                            r["blob"] =
                                Value::String(base64::engine::general_purpose::STANDARD.encode(b));
                        }
                    }
                    serde_json::json!({ "type": "resource", "resource": r })
                }
            };
            serde_json::json!({ "role": role, "content": content })
        })
        .collect();
    let mut out = serde_json::json!({ "messages": messages });
    if let Some(d) = &rendered.description {
        out["description"] = Value::String(d.clone());
    }
    out
}

/// What a directory entry that is not a regular file is, for messages.
fn entry_kind(m: &std::fs::Metadata) -> &'static str {
    setup::entry_kind(m).unwrap_or("is a file")
}

fn cwd_text() -> String {
    std::env::current_dir().map_or_else(|e| format!("unknown: {e}"), |p| p.display().to_string())
}

/// Writes `text`, ending it with a newline unless it already ends with one.
fn write_line(out: &mut impl Write, text: &str) -> std::io::Result<()> {
    out.write_all(text.as_bytes())?;
    if text.ends_with('\n') {
        Ok(())
    } else {
        out.write_all(b"\n")
    }
}

/// Turns `NAME=VALUE` pairs into JSON typed by the tool's input schema: integers, numbers and
/// booleans are parsed, arrays collect repeated names (or take a JSON array), the rest are strings.
pub fn build_args(
    schema: &serde_json::Map<String, Value>,
    pairs: &[String],
    json: Option<&str>,
) -> Result<serde_json::Map<String, Value>, String> {
    let mut args = match json {
        None => serde_json::Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err("--json must be a JSON object".into()),
            Err(e) => return Err(format!("--json is not valid JSON: {e}")),
        },
    };
    for pair in pairs {
        let Some((name, value)) = pair.split_once('=') else {
            return Err(format!("`{pair}` is not NAME=VALUE"));
        };
        let ty = schema
            .get("properties")
            .and_then(|p| p.get(name))
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("string");
        let typed = match ty {
            "integer" => value
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| format!("`{name}` must be an integer, got `{value}`"))?,
            "number" => value
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| format!("`{name}` must be a number, got `{value}`"))?,
            "boolean" => match value {
                "true" | "yes" | "1" => Value::Bool(true),
                "false" | "no" | "0" => Value::Bool(false),
                _ => return Err(format!("`{name}` must be true or false, got `{value}`")),
            },
            "array" => {
                if value.trim_start().starts_with('[') {
                    serde_json::from_str(value)
                        .map_err(|e| format!("`{name}` is not a JSON array: {e}"))?
                } else {
                    let mut items = match args.remove(name) {
                        Some(Value::Array(a)) => a,
                        _ => Vec::new(),
                    };
                    items.push(Value::String(value.to_owned()));
                    Value::Array(items)
                }
            }
            _ => Value::String(value.to_owned()),
        };
        args.insert(name.to_owned(), typed);
    }
    Ok(args)
}

/// `serve` on any byte streams until the input ends or `shutdown` completes: what the binary
/// does on stdin/stdout, for running a server inside another program (the tests drive it this
/// way). Returns the exit code `serve` would have.
pub async fn serve_streams<R, W>(
    manifest: &Path,
    input: R,
    output: W,
    shutdown: impl std::future::Future<Output = ()>,
) -> i32
where
    R: std::io::Read + Send + 'static,
    W: Write + Send + 'static,
{
    serve_group_streams(manifest, None, input, output, shutdown).await
}

/// `serve_streams` for one `[groups.NAME]` (`serve --group NAME`).
pub async fn serve_group_streams<R, W>(
    manifest: &Path,
    group: Option<&str>,
    input: R,
    output: W,
    shutdown: impl std::future::Future<Output = ()>,
) -> i32
where
    R: std::io::Read + Send + 'static,
    W: Write + Send + 'static,
{
    let registry = match load(Some(manifest)).await {
        Ok(r) => r,
        Err(d) => {
            report(&d);
            return FAILED;
        }
    };
    match crate::server::serve(registry, group, input, output, shutdown).await {
        Ok(()) => OK,
        Err(e) => {
            eprintln!("mcp-manifest: {e}");
            FAILED
        }
    }
}

/// What `check` reports for `manifest`, as its `FILE:LINE:COL: message` lines (none when it is
/// valid), without a process.
pub async fn diagnostics(manifest: &Path) -> Vec<String> {
    match load(Some(manifest)).await {
        Ok(_) => Vec::new(),
        Err(d) => d.to_string().lines().map(str::to_owned).collect(),
    }
}

/// Every error and warning `check` reports for `manifest` (`FILE:LINE:COL: [warning: ]message`
/// lines, in file order), without a process and without connecting to databases.
pub async fn check_lines(manifest: &Path) -> Vec<String> {
    let (path, display) = manifest_path(Some(manifest));
    check::run(
        &path,
        &display,
        crate::process::Children::new(),
        Mode::Offline,
    )
    .await
    .diags
    .to_string()
    .lines()
    .map(str::to_owned)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn types_pairs_by_the_schema() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer"}, "x": {"type": "number"}, "b": {"type": "boolean"},
            "tags": {"type": "array"}, "s": {"type": "string"}
        }});
        let schema = schema.as_object().unwrap();
        let pairs: Vec<String> = [
            "n=5", "x=1.5", "b=true", "tags=a", "tags=b", "s=5", "free=x=y",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let args = build_args(schema, &pairs, Some(r#"{"s": "old", "k": 1}"#)).unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"s": "5", "k": 1, "n": 5, "x": 1.5, "b": true, "tags": ["a", "b"], "free": "x=y"})
        );
        assert!(build_args(schema, &["n=five".into()], None).is_err());
        assert!(build_args(schema, &["novalue".into()], None).is_err());
        assert!(build_args(schema, &[], Some("[1]")).is_err());
    }
}
