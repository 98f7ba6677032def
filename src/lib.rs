//! mcp-manifest: serve a TOML manifest's files, SQLite databases, git history, URI templates,
//! shell tools and prompts to AI assistants over the Model Context Protocol (stdio).
//!
//! Codemap (ARCHITECTURE.md has the long version):
//! - `manifest`: `mcp-server.toml` → checked `Manifest` (spans, diagnostics `FILE:LINE:COL`).
//! - `registry`: `Manifest` → live sources, tools, prompts; answers every request.
//! - `providers`: files, sqlite, git, templates; plain types, no MCP.
//! - `tools`: tool types, the manifest's shell-backed tools, and the one process spawner.
//! - `params`: typed parameters (tool `params`, query `params`, template `vars`); `pattern`: a
//!   parameter's compiled `pattern` (a leaf).
//! - `prompts`: prompt arguments → messages; pure.
//! - `server`: the only module that imports rmcp; the stdio transport.
//! - `uri`: RFC 6570 URI templates: expansion and matching (pure).
//! - `quote`: how much of a client's value a message may repeat (pure).
//! - `watch`: file watching → debounced batches of changed paths.
//! - `setup`: `init` (a starter manifest for a folder) and `register` / `unregister` (client
//!   configuration files).
//! - `card`: the server card (SEP-2127) built from `[server]`; pure.
//! - `views`: MCP Apps views (`ui://mcp-manifest/…`): a tool's rows as a table or a chart.
//! - `check`: every problem of a manifest in one run (errors and warnings across sections).
//! - `cli`: the command-line verbs that print results.

pub(crate) mod argv;
pub(crate) mod card;
pub(crate) mod check;
pub mod cli;
pub(crate) mod manifest;
pub(crate) mod params;
pub(crate) mod pattern;
pub(crate) mod process;
pub(crate) mod prompts;
pub(crate) mod providers;
pub(crate) mod quote;
pub(crate) mod registry;
pub(crate) mod server;
pub mod setup;
pub(crate) mod tools;
pub(crate) mod uri;
pub(crate) mod views;
pub(crate) mod watch;

/// What the binary's `main` (and the tests' in-process servers) need of the process module: the
/// supervisor entry point (`mcp-manifest __supervise …`, Unix), the server as a child subreaper
/// (Linux), the supervisor binary of a process that is not `mcp-manifest`.
pub mod processes {
    pub use crate::process::{SUPERVISE, adopt_orphans, supervise, use_supervisor};
}

/// Runs `f` when the value it returns is dropped, however the scope is left (a panic too).
pub(crate) fn scopeguard(f: impl FnOnce()) -> impl Drop {
    struct Guard<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for Guard<F> {
        fn drop(&mut self) {
            if let Some(f) = self.0.take() {
                f();
            }
        }
    }
    Guard(Some(f))
}
