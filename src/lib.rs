//! mcp-manifest: serve a TOML manifest's files, SQLite databases, git history, URI templates,
//! shell tools and prompts to AI assistants over the Model Context Protocol (stdio).
//!
//! Codemap (ARCHITECTURE.md has the long version):
//! - `manifest`: `mcp-server.toml` → checked `Manifest` (spans, diagnostics `FILE:LINE:COL`).
//! - `registry`: `Manifest` → live sources, tools, prompts; answers every request.
//! - `providers`: files, sqlite, git, templates; plain types, no MCP.
//! - `tools`: tool types, the manifest's shell-backed tools, and the one process spawner.
//! - `prompts`: prompt arguments → messages; pure.
//! - `server`: the only module that imports rmcp; the stdio transport.
//! - `uri`: RFC 6570 URI templates: expansion and matching (pure).
//! - `quote`: how much of a client's value a message may repeat (pure).
//! - `watch`: file watching → debounced batches of changed paths.
//! - `setup`: `init` (a starter manifest for a folder) and `register` / `unregister` (client
//!   configuration files).
//! - `views`: MCP Apps views (`ui://mcp-manifest/…`): a tool's rows as a table or a chart.
//! - `check`: every problem of a manifest in one run (errors and warnings across sections).
//! - `cli`: the command-line verbs that print results.

pub(crate) mod argv;
pub(crate) mod check;
pub mod cli;
pub(crate) mod manifest;
pub(crate) mod params;
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
