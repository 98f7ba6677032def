//! The clients `register` knows, in one table: per client and scope, the file that holds its
//! servers on each OS, the entry's shape, whether the client reads JSONC, how paths in a project
//! file resolve on a teammate's machine, and the step the client still needs before it starts
//! the server (its gate). Each row cites the client's documentation and was checked against the
//! real client by scripts/clients.sh (CI), which prints the client table.

use std::path::{Path, PathBuf};

use super::Env;
use super::platform::{Dirs, Os};

/// The clients `register` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    Vscode,
    Windsurf,
    Codex,
    Gemini,
    Copilot,
    Qwen,
    Opencode,
}

impl Client {
    /// Every client, in the order of the README's table.
    pub const ALL: [Client; 10] = [
        Client::ClaudeDesktop,
        Client::ClaudeCode,
        Client::Cursor,
        Client::Vscode,
        Client::Windsurf,
        Client::Codex,
        Client::Gemini,
        Client::Copilot,
        Client::Qwen,
        Client::Opencode,
    ];

    /// The name on the command line.
    pub fn id(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "claude-desktop",
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::Vscode => "vscode",
            Client::Windsurf => "windsurf",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
            Client::Copilot => "copilot",
            Client::Qwen => "qwen",
            Client::Opencode => "opencode",
        }
    }

    /// The product's name, for messages.
    pub fn title(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "Claude Desktop",
            Client::ClaudeCode => "Claude Code",
            Client::Cursor => "Cursor",
            Client::Vscode => "VS Code",
            Client::Windsurf => "Windsurf",
            Client::Codex => "Codex",
            Client::Gemini => "Gemini CLI",
            Client::Copilot => "Copilot CLI",
            Client::Qwen => "Qwen Code",
            Client::Opencode => "opencode",
        }
    }

    /// Whether the client also reads a per-project file (then `--user` picks the user's file).
    pub fn has_project_scope(self) -> bool {
        !matches!(
            self,
            Client::ClaudeDesktop | Client::Windsurf | Client::Codex
        )
    }
}

/// How one entry is written in a client's JSON file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `{command, args, env}`.
    Plain,
    /// `{"type": "stdio", command, args, env}`.
    Stdio,
    /// Copilot CLI's own file: `{"type": "local", command, args, env, "tools": ["*"]}`, as
    /// `copilot mcp add` writes it.
    CopilotLocal,
    /// opencode: `{"type": "local", "command": [program, args...], "environment", "enabled"}`.
    Opencode,
}

/// How a client's file holds its servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// A JSON object whose member `key` maps server names to entries of `shape`; `jsonc` when
    /// the client reads comments and trailing commas (they are kept).
    Json {
        key: &'static str,
        shape: Shape,
        jsonc: bool,
    },
    /// Codex's `config.toml`: a table `[mcp_servers.NAME]` with `command`, `args`, `env`.
    CodexToml,
}

/// Which of a client's files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// One project's file, meant to be committed and shared.
    Project,
    /// The user's own file.
    User,
}

impl Scope {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::User => "user",
        }
    }
}

/// How the manifest's path is written in the entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Paths {
    /// This machine's absolute path (a user's own file).
    Absolute,
    /// Relative to the project folder: the client reads the project file only from the folder
    /// it starts in and starts servers there (checked with the real client).
    Relative,
    /// `${workspaceFolder}/…`: the client expands the variable in the file (its documentation).
    WorkspaceFolder,
    /// The client finds the project file from subfolders too but starts servers in the folder it
    /// was launched from, and expands no variable naming the project: absolute, with this reason
    /// in a warning.
    Machine(&'static str),
}

/// Where one client's servers are written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub path: PathBuf,
    pub format: Format,
    pub scope: Scope,
    pub paths: Paths,
}

const LAUNCH_FOLDER: &str = "it finds the project file from subfolders too, but starts servers in the folder it was launched from and expands no variable naming the project folder, so a relative manifest path would break in a subfolder";

/// The file that holds `client`'s servers. `user` picks the user's file of a client that also
/// reads a per-project one; `project` is the project folder.
pub(crate) fn target(
    client: Client,
    user: bool,
    project: &Path,
    os: Os,
    env: Env,
) -> Result<Target, String> {
    let d = Dirs { os, env };
    let json = |key, shape, jsonc| Format::Json { key, shape, jsonc };
    let user = user || !client.has_project_scope();
    let (scope, paths) = if user {
        (Scope::User, Paths::Absolute)
    } else {
        (Scope::Project, Paths::Absolute)
    };
    let at = |path: PathBuf, format, project_paths| Target {
        path,
        format,
        scope,
        paths: if user { paths } else { project_paths },
    };
    Ok(match client {
        // Claude Desktop (modelcontextprotocol.io "Connect to local MCP servers"; Settings →
        // Developer → Edit Config opens this file): `mcpServers` in
        // ~/Library/Application Support/Claude/claude_desktop_config.json on macOS and
        // %APPDATA%\Claude\claude_desktop_config.json on Windows. Anthropic ships no Linux
        // build; community builds read ~/.config/Claude/claude_desktop_config.json.
        Client::ClaudeDesktop => at(
            d.app_config()?
                .join("Claude")
                .join("claude_desktop_config.json"),
            json("mcpServers", Shape::Plain, false),
            Paths::Absolute,
        ),
        // Claude Code (code.claude.com/docs/en/mcp, "MCP installation scopes"): user scope is
        // the top-level `mcpServers` of ~/.claude.json (CLAUDE_CONFIG_DIR moves it), project
        // scope `.mcp.json` at the project root, both with `"type": "stdio"` as `claude mcp add`
        // writes. Strict JSON. The real client finds .mcp.json from subfolders and starts
        // servers there (CLAUDE_PROJECT_DIR is the launch folder, not expanded in .mcp.json).
        Client::ClaudeCode if user => at(
            d.var_or("CLAUDE_CONFIG_DIR", || d.home())?
                .join(".claude.json"),
            json("mcpServers", Shape::Stdio, false),
            Paths::Absolute,
        ),
        Client::ClaudeCode => at(
            project.join(".mcp.json"),
            json("mcpServers", Shape::Stdio, false),
            Paths::Machine(LAUNCH_FOLDER),
        ),
        // Cursor (cursor.com/docs/context/mcp): `mcpServers` in `.cursor/mcp.json` of the
        // project or ~/.cursor/mcp.json on every OS; `${workspaceFolder}` is expanded.
        Client::Cursor if user => at(
            d.home()?.join(".cursor").join("mcp.json"),
            json("mcpServers", Shape::Plain, false),
            Paths::Absolute,
        ),
        Client::Cursor => at(
            project.join(".cursor").join("mcp.json"),
            json("mcpServers", Shape::Plain, false),
            Paths::WorkspaceFolder,
        ),
        // VS Code (code.visualstudio.com/docs/copilot/reference/mcp-configuration): a top-level
        // `servers` object, each stdio entry with `"type": "stdio"`, in `.vscode/mcp.json` of the
        // workspace or `mcp.json` in the user profile folder (Code/User); JSONC; predefined
        // variables such as `${workspaceFolder}` are expanded.
        Client::Vscode if user => at(
            d.app_config()?.join("Code").join("User").join("mcp.json"),
            json("servers", Shape::Stdio, true),
            Paths::Absolute,
        ),
        Client::Vscode => at(
            project.join(".vscode").join("mcp.json"),
            json("servers", Shape::Stdio, true),
            Paths::WorkspaceFolder,
        ),
        // Windsurf (docs.windsurf.com/windsurf/cascade/mcp): ~/.codeium/windsurf/mcp_config.json
        // (%USERPROFILE%\.codeium\windsurf on Windows), Claude Desktop's schema.
        Client::Windsurf => at(
            d.home()?
                .join(".codeium")
                .join("windsurf")
                .join("mcp_config.json"),
            json("mcpServers", Shape::Plain, false),
            Paths::Absolute,
        ),
        // Codex (developers.openai.com/codex/mcp): `[mcp_servers.NAME]` tables with `command`,
        // `args`, `env` in config.toml under CODEX_HOME (default ~/.codex). Codex also reads a
        // project's .codex/config.toml, but only in trusted projects; the user file is the one
        // `codex mcp add` writes.
        Client::Codex => at(
            d.var_or("CODEX_HOME", || Ok(d.home()?.join(".codex")))?
                .join("config.toml"),
            Format::CodexToml,
            Paths::Absolute,
        ),
        // Gemini CLI (geminicli.com/docs/tools/mcp-server, docs/cli/configuration): `mcpServers`
        // in .gemini/settings.json of the project or ~/.gemini/settings.json; comments allowed.
        // The real client reads the project file only in the folder it starts in.
        Client::Gemini if user => at(
            d.home()?.join(".gemini").join("settings.json"),
            json("mcpServers", Shape::Plain, true),
            Paths::Absolute,
        ),
        Client::Gemini => at(
            project.join(".gemini").join("settings.json"),
            json("mcpServers", Shape::Plain, true),
            Paths::Relative,
        ),
        // Copilot CLI (docs.github.com/copilot, "Adding MCP servers for GitHub Copilot CLI";
        // `copilot mcp --help`): the user's ~/.copilot/mcp-config.json (COPILOT_HOME moves it),
        // entries as `copilot mcp add` writes them; in a trusted folder the workspace's
        // `.mcp.json` too, the file Claude Code reads (so `"type": "stdio"`, which both accept).
        Client::Copilot if user => at(
            d.var_or("COPILOT_HOME", || Ok(d.home()?.join(".copilot")))?
                .join("mcp-config.json"),
            json("mcpServers", Shape::CopilotLocal, false),
            Paths::Absolute,
        ),
        Client::Copilot => at(
            project.join(".mcp.json"),
            json("mcpServers", Shape::Stdio, false),
            Paths::Machine(LAUNCH_FOLDER),
        ),
        // Qwen Code (qwenlm.github.io/qwen-code-docs, "MCP servers"; `qwen mcp add --scope`):
        // `mcpServers` in .qwen/settings.json of the project or ~/.qwen/settings.json, read with
        // comments; project servers wait for `qwen mcp approve`. It reads the project file only
        // in the folder it starts in.
        Client::Qwen if user => at(
            d.home()?.join(".qwen").join("settings.json"),
            json("mcpServers", Shape::Plain, true),
            Paths::Absolute,
        ),
        Client::Qwen => at(
            project.join(".qwen").join("settings.json"),
            json("mcpServers", Shape::Plain, true),
            Paths::Relative,
        ),
        // opencode (opencode.ai/docs/mcp-servers, /docs/config): `mcp` entries
        // `{"type": "local", "command": [...]}` in opencode.json(c) at the project root or in
        // ~/.config/opencode/ (xdg-basedir: the same path on macOS and under %USERPROFILE% on
        // Windows); JSONC. An opencode.jsonc is edited when there is no opencode.json.
        Client::Opencode if user => at(
            jsonc_or_json(&d.xdg_config()?.join("opencode"), "opencode"),
            json("mcp", Shape::Opencode, true),
            Paths::Absolute,
        ),
        Client::Opencode => at(
            jsonc_or_json(project, "opencode"),
            json("mcp", Shape::Opencode, true),
            Paths::Machine(LAUNCH_FOLDER),
        ),
    })
}

/// `dir/stem.json` when it exists, else `dir/stem.jsonc` when that exists (opencode makes one
/// in its own folder on first start), else `dir/stem.json`.
fn jsonc_or_json(dir: &Path, stem: &str) -> PathBuf {
    let json = dir.join(format!("{stem}.json"));
    let jsonc = dir.join(format!("{stem}.jsonc"));
    let exists = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    if !exists(&json) && exists(&jsonc) {
        jsonc
    } else {
        json
    }
}

/// The step a client still needs after `register` before it starts the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Gate {
    /// The client's name for the step (`approve`, `trust the folder`, `restart`, `none`).
    pub kind: &'static str,
    /// What to do, in words.
    pub step: String,
    /// The command that does it, where one exists.
    pub command: Option<String>,
    /// The client's own listing that shows the server.
    pub check: Option<String>,
}

/// What the user still has to do for `client` to start server `name` from `target`.
pub(crate) fn gate(client: Client, target: &Target, name: &str, project: &Path) -> Gate {
    let project_scope = target.scope == Scope::Project;
    let folder = project.display();
    let g = |kind, step: String, command: Option<String>, check: Option<&str>| Gate {
        kind,
        step,
        command,
        check: check.map(str::to_owned),
    };
    match client {
        Client::ClaudeDesktop => g(
            "restart",
            format!(
                "quit Claude Desktop completely (not only its window) and start it again; the server is listed under Settings → Developer. Its log: ~/Library/Logs/Claude/mcp-server-{name}.log (macOS), %APPDATA%\\Claude\\logs\\mcp-server-{name}.log (Windows)"
            ),
            None,
            None,
        ),
        Client::ClaudeCode if project_scope => g(
            "approve",
            format!(
                "approve the server: start `claude` in {folder} and accept `{name}` when it asks about servers from .mcp.json (or list \"{name}\" in enabledMcpjsonServers of ~/.claude/settings.json); until then `claude mcp list` shows it as pending approval"
            ),
            Some(format!("cd {} && claude", crate::manifest::shell_word(&folder.to_string()))),
            Some("claude mcp list"),
        ),
        Client::ClaudeCode => g(
            "none",
            "nothing: new sessions start it".into(),
            None,
            Some("claude mcp list"),
        ),
        Client::Cursor => g(
            "enable",
            "Cursor reads mcp.json again on change: turn the server on in Cursor Settings → MCP if it is off; its log is the Output panel, channel \"MCP Logs\"".into(),
            None,
            None,
        ),
        Client::Vscode => g(
            "trust",
            if project_scope {
                "VS Code asks you to trust a workspace server the first time it starts it: open .vscode/mcp.json and press Start above the server (or run `MCP: List Servers`), then trust it".into()
            } else {
                "open mcp.json and press Start above the server (or run `MCP: List Servers`); its tools appear in Chat's agent mode".into()
            },
            None,
            None,
        ),
        Client::Windsurf => g(
            "refresh",
            "press the refresh button in Cascade's MCP panel (or restart Windsurf)".into(),
            None,
            None,
        ),
        Client::Codex => g(
            "none",
            "nothing: new sessions start it".into(),
            None,
            Some("codex mcp list"),
        ),
        Client::Gemini => g(
            "trust the folder",
            format!(
                "Gemini CLI starts no MCP server (project or user) in an untrusted folder: start `gemini` in {} and choose \"Trust folder\" (kept in ~/.gemini/trustedFolders.json)",
                if project_scope {
                    folder.to_string()
                } else {
                    "the folder you work in".into()
                }
            ),
            None,
            Some("gemini mcp list"),
        ),
        Client::Copilot if project_scope => g(
            "trust the folder",
            format!(
                "Copilot CLI reads .mcp.json only in a trusted folder: start `copilot` in {folder} and choose \"Yes, and remember this folder for future sessions\" (kept in trusted_folders of ~/.copilot/config.json)"
            ),
            Some(format!("cd {} && copilot", crate::manifest::shell_word(&folder.to_string()))),
            Some("copilot mcp list"),
        ),
        Client::Copilot => g(
            "none",
            "nothing: new sessions start it".into(),
            None,
            Some("copilot mcp list"),
        ),
        Client::Qwen if project_scope => g(
            "approve",
            format!(
                "approve the server in {folder} (Qwen Code asks again whenever its entry changes)"
            ),
            Some(format!(
                "cd {} && qwen mcp approve {name}",
                crate::manifest::shell_word(&folder.to_string())
            )),
            Some("qwen mcp list"),
        ),
        Client::Qwen => g(
            "none",
            "nothing: new sessions start it".into(),
            None,
            Some("qwen mcp list"),
        ),
        Client::Opencode => g(
            "none",
            "nothing: new sessions start it".into(),
            None,
            Some("opencode mcp list"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |k: &str| {
            pairs
                .iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    /// One OS's rows: its environment and (client, user scope, expected file).
    type OsTable<'a> = (
        Os,
        &'a dyn Fn(&str) -> Option<OsString>,
        &'a [(Client, bool, &'a str)],
    );

    /// Every client's file per OS and scope: one table per OS, pure (no file is touched).
    #[test]
    fn config_paths_per_os_and_scope() {
        let p = Path::new("/proj");
        let linux = env_of(&[("HOME", "/h")]);
        let mac = env_of(&[("HOME", "/Users/u")]);
        let win = env_of(&[
            ("USERPROFILE", "C:/Users/u"),
            ("APPDATA", "C:/Users/u/AppData/Roaming"),
        ]);
        let table: &[OsTable] = &[
            (
                Os::Linux,
                &linux,
                &[
                    (
                        Client::ClaudeDesktop,
                        true,
                        "/h/.config/Claude/claude_desktop_config.json",
                    ),
                    (Client::ClaudeCode, false, "/proj/.mcp.json"),
                    (Client::ClaudeCode, true, "/h/.claude.json"),
                    (Client::Cursor, false, "/proj/.cursor/mcp.json"),
                    (Client::Cursor, true, "/h/.cursor/mcp.json"),
                    (Client::Vscode, false, "/proj/.vscode/mcp.json"),
                    (Client::Vscode, true, "/h/.config/Code/User/mcp.json"),
                    (
                        Client::Windsurf,
                        true,
                        "/h/.codeium/windsurf/mcp_config.json",
                    ),
                    (Client::Codex, true, "/h/.codex/config.toml"),
                    (Client::Gemini, false, "/proj/.gemini/settings.json"),
                    (Client::Gemini, true, "/h/.gemini/settings.json"),
                    (Client::Copilot, false, "/proj/.mcp.json"),
                    (Client::Copilot, true, "/h/.copilot/mcp-config.json"),
                    (Client::Qwen, false, "/proj/.qwen/settings.json"),
                    (Client::Qwen, true, "/h/.qwen/settings.json"),
                    (Client::Opencode, false, "/proj/opencode.json"),
                    (Client::Opencode, true, "/h/.config/opencode/opencode.json"),
                ],
            ),
            (
                Os::Mac,
                &mac,
                &[
                    (
                        Client::ClaudeDesktop,
                        true,
                        "/Users/u/Library/Application Support/Claude/claude_desktop_config.json",
                    ),
                    (Client::ClaudeCode, true, "/Users/u/.claude.json"),
                    (Client::Cursor, true, "/Users/u/.cursor/mcp.json"),
                    (
                        Client::Vscode,
                        true,
                        "/Users/u/Library/Application Support/Code/User/mcp.json",
                    ),
                    (
                        Client::Windsurf,
                        true,
                        "/Users/u/.codeium/windsurf/mcp_config.json",
                    ),
                    (Client::Codex, true, "/Users/u/.codex/config.toml"),
                    (Client::Gemini, true, "/Users/u/.gemini/settings.json"),
                    (Client::Copilot, true, "/Users/u/.copilot/mcp-config.json"),
                    (Client::Qwen, true, "/Users/u/.qwen/settings.json"),
                    (
                        Client::Opencode,
                        true,
                        "/Users/u/.config/opencode/opencode.json",
                    ),
                ],
            ),
            (
                Os::Windows,
                &win,
                &[
                    (
                        Client::ClaudeDesktop,
                        true,
                        "C:/Users/u/AppData/Roaming/Claude/claude_desktop_config.json",
                    ),
                    (Client::ClaudeCode, true, "C:/Users/u/.claude.json"),
                    (Client::Cursor, true, "C:/Users/u/.cursor/mcp.json"),
                    (
                        Client::Vscode,
                        true,
                        "C:/Users/u/AppData/Roaming/Code/User/mcp.json",
                    ),
                    (
                        Client::Windsurf,
                        true,
                        "C:/Users/u/.codeium/windsurf/mcp_config.json",
                    ),
                    (Client::Codex, true, "C:/Users/u/.codex/config.toml"),
                    (Client::Gemini, true, "C:/Users/u/.gemini/settings.json"),
                    (Client::Copilot, true, "C:/Users/u/.copilot/mcp-config.json"),
                    (Client::Qwen, true, "C:/Users/u/.qwen/settings.json"),
                    (
                        Client::Opencode,
                        true,
                        "C:/Users/u/.config/opencode/opencode.json",
                    ),
                ],
            ),
        ];
        for (os, env, rows) in table {
            for (client, user, want) in *rows {
                let t = target(*client, *user, p, *os, env).unwrap();
                // Compare component-wise: Windows rows are built with `/` on this host.
                assert_eq!(
                    t.path.to_string_lossy().replace('\\', "/"),
                    *want,
                    "{os:?} {client:?} user={user}"
                );
                let scope = if *user || !client.has_project_scope() {
                    Scope::User
                } else {
                    Scope::Project
                };
                assert_eq!(t.scope, scope, "{client:?}");
                if scope == Scope::User {
                    assert_eq!(t.paths, Paths::Absolute, "{client:?}");
                }
            }
        }
        // Every client has a row for every OS it ships on.
        for c in Client::ALL {
            assert!(
                table[1].2.iter().any(|(x, u, _)| *x == c && *u),
                "{c:?} on macOS"
            );
            assert!(
                table[2].2.iter().any(|(x, u, _)| *x == c && *u),
                "{c:?} on Windows"
            );
        }
        // Variables that move a client's folder.
        let moved = env_of(&[
            ("HOME", "/h"),
            ("XDG_CONFIG_HOME", "/x"),
            ("CODEX_HOME", "/c"),
            ("COPILOT_HOME", "/cp"),
            ("CLAUDE_CONFIG_DIR", "/cc"),
        ]);
        let t = |c| target(c, true, p, Os::Linux, &moved).unwrap().path;
        assert_eq!(
            t(Client::ClaudeDesktop),
            Path::new("/x/Claude/claude_desktop_config.json")
        );
        assert_eq!(t(Client::Vscode), Path::new("/x/Code/User/mcp.json"));
        assert_eq!(t(Client::Codex), Path::new("/c/config.toml"));
        assert_eq!(t(Client::Copilot), Path::new("/cp/mcp-config.json"));
        assert_eq!(t(Client::ClaudeCode), Path::new("/cc/.claude.json"));
        assert_eq!(t(Client::Opencode), Path::new("/x/opencode/opencode.json"));
        // A relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
        let rel = env_of(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "rel")]);
        assert_eq!(
            target(Client::ClaudeDesktop, false, p, Os::Linux, &rel)
                .unwrap()
                .path,
            Path::new("/h/.config/Claude/claude_desktop_config.json")
        );
        let none = |_: &str| None;
        assert!(target(Client::Windsurf, false, p, Os::Linux, &none).is_err());
        // A relative HOME, CODEX_HOME or APPDATA is refused, naming the variable.
        for (vars, client, os, var) in [
            (
                &[("HOME", "relhome")][..],
                Client::Windsurf,
                Os::Linux,
                "HOME",
            ),
            (
                &[("HOME", "/h"), ("CODEX_HOME", "~/cx")][..],
                Client::Codex,
                Os::Linux,
                "CODEX_HOME",
            ),
            (
                &[("HOME", "/h"), ("APPDATA", "AppData")][..],
                Client::ClaudeDesktop,
                Os::Windows,
                "APPDATA",
            ),
        ] {
            let env = |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| OsString::from(v))
            };
            let err = target(client, true, p, os, &env).unwrap_err();
            assert!(err.starts_with(var) && err.contains("relative"), "{err}");
        }
    }

    #[test]
    fn project_files_say_how_their_paths_resolve() {
        let env = env_of(&[("HOME", "/h")]);
        let p = Path::new("/proj");
        let paths = |c| target(c, false, p, Os::Linux, &env).unwrap().paths;
        assert_eq!(paths(Client::Gemini), Paths::Relative);
        assert_eq!(paths(Client::Qwen), Paths::Relative);
        assert_eq!(paths(Client::Vscode), Paths::WorkspaceFolder);
        assert_eq!(paths(Client::Cursor), Paths::WorkspaceFolder);
        for c in [Client::ClaudeCode, Client::Copilot, Client::Opencode] {
            assert!(matches!(paths(c), Paths::Machine(_)), "{c:?}");
        }
        // An existing opencode.jsonc is the file edited.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("opencode.jsonc"), "{}").unwrap();
        let t = target(Client::Opencode, false, dir.path(), Os::Linux, &env).unwrap();
        assert_eq!(t.path, dir.path().join("opencode.jsonc"));
    }

    #[test]
    fn every_gate_is_named_with_its_command() {
        let env = env_of(&[("HOME", "/h")]);
        let p = Path::new("/my proj");
        let gate_of = |c, user| {
            let t = target(c, user, p, Os::Linux, &env).unwrap();
            gate(c, &t, "demo", p)
        };
        let g = gate_of(Client::Qwen, false);
        assert_eq!(g.kind, "approve");
        // Quoted for the platform's shell: '/my proj' (POSIX), "/my proj" (cmd, PowerShell).
        let quoted = if cfg!(windows) {
            "\"/my proj\""
        } else {
            "'/my proj'"
        };
        assert_eq!(
            g.command.as_deref(),
            Some(format!("cd {quoted} && qwen mcp approve demo").as_str())
        );
        let g = gate_of(Client::ClaudeCode, false);
        assert_eq!(g.kind, "approve");
        assert!(g.step.contains("enabledMcpjsonServers"), "{}", g.step);
        assert_eq!(gate_of(Client::ClaudeCode, true).kind, "none");
        assert_eq!(gate_of(Client::Gemini, true).kind, "trust the folder");
        assert_eq!(gate_of(Client::Copilot, false).kind, "trust the folder");
        assert_eq!(gate_of(Client::ClaudeDesktop, true).kind, "restart");
        for c in Client::ALL {
            for user in [false, true] {
                let g = gate_of(c, user);
                assert!(!g.step.is_empty(), "{c:?}");
            }
        }
    }
}
