//! The one integration-test binary: the real `mcp-manifest` binary driven over pipes, with
//! fixtures (file trees, databases, repositories) built in temp dirs by code.

// Tests start the binary, git and sqlite3 themselves.
#![allow(clippy::disallowed_methods)]

mod support;

mod cards;
mod check;
mod cli;
mod engines;
mod files;
mod git;
mod groups;
mod http;
mod hygiene;
mod manifest_errors;
mod mysql;
mod paging;
mod postgres;
mod procs;
mod prompts;
mod protocol;
mod robustness;
mod safety;
mod search;
mod setup;
mod skills;
mod sqlite;
mod template_tools;
mod templates;
mod tools;
mod views;
mod visibility;
mod watch;
