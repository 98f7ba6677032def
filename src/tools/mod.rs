//! Tools: what a call carries (`CallContext`; the plain types it answers with are
//! `providers::tool`'s, as sources offer tools too) and the manifest's shell-backed tools (`command.rs`: `ShellTool`, one `[tools.NAME]`: build-time checks,
//! listing, calling through `crate::process`, arguments checked by `crate::params`).

pub(crate) mod command;
pub(crate) mod output_schema;
pub(crate) mod search;
pub(crate) mod templates;

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

pub(crate) use crate::process::Progress;
pub use crate::providers::tool::{Hints, ToolContent, ToolInfo, ToolResult};
pub(crate) use command::ShellTool;
pub(crate) use search::SearchTool;

/// What a call may be stopped by and where its progress goes.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    /// Cancelled when the client cancels the request (or the server stops): the process group
    /// is killed.
    pub cancel: CancellationToken,
    /// Progress reports while a process runs; none when the client did not ask for progress.
    pub progress: Option<UnboundedSender<Progress>>,
    /// What the caller's endpoint shows (`[groups]`, `[server] expose`); none: everything. The
    /// tools that reach resources generically (`list_resources`, `read_resource`,
    /// `search_files`) keep to its resources.
    pub seen: Option<std::sync::Arc<crate::manifest::Filter>>,
}

impl CallContext {
    pub fn new(cancel: CancellationToken) -> CallContext {
        CallContext {
            cancel,
            progress: None,
            seen: None,
        }
    }

    /// Whether the caller sees the resource `uri`.
    pub fn sees_resource(&self, uri: &str) -> bool {
        self.seen.as_ref().is_none_or(|f| f.resource(uri))
    }
}
