//! The command-line verbs: serve, check, schema, list, read, call. The only module besides
//! `main.rs` that prints to stdout (and `serve` prints nothing there but protocol messages).

// The command line prints its results and its errors: this module is where that happens.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::Value;

use crate::manifest::{self, Diagnostics};
use crate::providers::Body;
use crate::registry::Registry;
use crate::tools::{CallContext, ToolContent};

const DEFAULT_MANIFEST: &str = "mcp-server.toml";

/// Exit codes.
const OK: i32 = 0;
const FAILED: i32 = 1;

/// Loads and checks the manifest and builds its registry; diagnostics name the file as given.
pub(crate) async fn load(manifest: Option<&Path>) -> Result<Registry, Diagnostics> {
    let (path, display) = match manifest {
        Some(p) => (p.to_path_buf(), p.display().to_string()),
        None => (PathBuf::from(DEFAULT_MANIFEST), DEFAULT_MANIFEST.to_owned()),
    };
    let checked = manifest::load(&path, &display)?;
    Registry::build(checked, crate::process::Children::new()).await
}

fn report(diags: &Diagnostics) {
    eprint!("{diags}");
    let n = diags.items.len();
    eprintln!(
        "{}: {n} error{} found",
        diags.file,
        if n == 1 { "" } else { "s" }
    );
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
pub async fn serve(manifest: Option<PathBuf>, via: Via) -> i32 {
    let registry = match load(manifest.as_deref()).await {
        Ok(r) => r,
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
        "`{}` from {} ({} files, {} sqlite, {} postgres, {} git, {} templates, {} tools, {} prompts)",
        m.server.name,
        m.file,
        m.files.len(),
        m.sqlite.len(),
        m.postgres.len(),
        m.git.len(),
        m.templates.len(),
        m.tools.len(),
        m.prompts.len(),
    );
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
            crate::server::serve_stdio(registry).await
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

/// `mcp-manifest check [MANIFEST]`: a one-screen summary, or every error.
pub async fn check(manifest: Option<PathBuf>) -> i32 {
    let registry = match load(manifest.as_deref()).await {
        Ok(r) => r,
        Err(d) => {
            report(&d);
            return FAILED;
        }
    };
    let m = &registry.manifest;
    // Warnings: what will fail at run time but does not stop `serve` (exit 0).
    for (loc, message) in registry.warnings().await {
        eprintln!("{}:{}:{}: warning: {message}", m.file, loc.line, loc.col);
    }
    let resources = match registry.list_resources().await {
        Ok(r) => r.len(),
        Err(e) => {
            eprintln!("{}: listing resources failed: {e}", m.file);
            return FAILED;
        }
    };
    let templates = registry.templates().len();
    let tools = registry.tools().len();
    let prompts = m.prompts.len();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{}: ok — server `{}` {}",
        m.file, m.server.name, m.server.version
    );
    let _ = writeln!(out, "  resources  {resources}");
    let _ = writeln!(out, "  templates  {templates}");
    let _ = writeln!(out, "  tools      {tools}");
    let _ = writeln!(out, "  prompts    {prompts}");
    let _ = writeln!(
        out,
        "  sources    {} files, {} sqlite, {} postgres, {} git, {} templates",
        m.files.len(),
        m.sqlite.len(),
        m.postgres.len(),
        m.git.len(),
        m.templates.len()
    );
    OK
}

/// `mcp-manifest schema`: the JSON Schema of the manifest.
pub fn schema() -> i32 {
    match serde_json::to_string_pretty(&manifest::raw::json_schema()) {
        Ok(s) => {
            let _ = writeln!(std::io::stdout().lock(), "{s}");
            OK
        }
        Err(e) => {
            eprintln!("mcp-manifest: {e}");
            FAILED
        }
    }
}

/// `mcp-manifest list [MANIFEST]`: resources, templates, tools and prompts, one a line.
pub async fn list(manifest: Option<PathBuf>) -> i32 {
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
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "resources ({})", resources.len());
    for r in &resources {
        let _ = writeln!(
            out,
            "  {}  {}  {}",
            r.uri,
            r.mime_type.as_deref().unwrap_or("-"),
            r.size.map_or_else(|| "-".to_owned(), |s| format!("{s} B"))
        );
    }
    let templates = registry.templates();
    let _ = writeln!(out, "templates ({})", templates.len());
    for t in &templates {
        let _ = writeln!(out, "  {}  ({})", t.uri_template, t.name);
    }
    let tools = registry.tools();
    let _ = writeln!(out, "tools ({})", tools.len());
    for t in &tools {
        let _ = writeln!(
            out,
            "  {}  {}",
            t.name,
            t.description.as_deref().unwrap_or("")
        );
    }
    let prompts = &registry.manifest.prompts;
    let _ = writeln!(out, "prompts ({})", prompts.len());
    for p in prompts {
        let _ = writeln!(
            out,
            "  {}  {}",
            p.name,
            p.description.as_deref().unwrap_or("")
        );
    }
    OK
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
    let registry = match load(Some(manifest)).await {
        Ok(r) => r,
        Err(d) => {
            report(&d);
            return FAILED;
        }
    };
    match crate::server::serve(registry, input, output, shutdown).await {
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
