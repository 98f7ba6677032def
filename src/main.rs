//! Command line only: parse arguments, send logs to stderr, run one verb from the library.

#![allow(clippy::print_stderr)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use mcp_manifest::cli;
use mcp_manifest::setup::Client;

#[derive(Parser)]
#[command(
    name = "mcp-manifest",
    version,
    about = "Serve files, SQLite, git, URI templates, shell tools and prompts over MCP (stdio), from one TOML manifest.",
    after_help = "With no command, serves ./mcp-server.toml (same as `mcp-manifest serve`).\nStart here: `mcp-manifest init` in a folder, then `check`, then `register claude-desktop`."
)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
}

/// The manifest of a verb whose only positional argument it is: positional or `--manifest`.
#[derive(clap::Args)]
struct ManifestArg {
    /// The manifest (default ./mcp-server.toml; a leading ~/ is your home folder).
    #[arg(value_name = "MANIFEST")]
    manifest: Option<PathBuf>,
    /// The manifest, as an option (same as the positional MANIFEST).
    #[arg(
        long = "manifest",
        short = 'm',
        value_name = "MANIFEST",
        conflicts_with = "manifest"
    )]
    manifest_flag: Option<PathBuf>,
}

impl ManifestArg {
    fn get(self) -> Option<PathBuf> {
        self.manifest.or(self.manifest_flag)
    }
}

#[derive(Subcommand)]
enum Command {
    /// Serve the manifest over stdio (MCP, newline-delimited JSON-RPC 2.0), or over Streamable
    /// HTTP with --http (or when the manifest sets [server.http] listen).
    Serve {
        #[command(flatten)]
        manifest: ManifestArg,
        /// Serve over MCP Streamable HTTP on ADDR (IP:PORT, e.g. 127.0.0.1:8080) instead of
        /// stdio; /mcp is the endpoint, /healthz the health check.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// Serve on stdio even when the manifest sets [server.http] listen.
        #[arg(long, conflicts_with = "http")]
        stdio: bool,
        /// Serve only what [groups.NAME] shows (stdio; over HTTP each group is served at
        /// /mcp/NAME).
        #[arg(long, value_name = "NAME")]
        group: Option<String>,
    },
    /// Print the server card (SEP-2127): what `serve --http` answers at /mcp/server-card.
    Card {
        #[command(flatten)]
        manifest: ManifestArg,
        /// The card of one [groups.NAME] endpoint.
        #[arg(long, value_name = "NAME")]
        group: Option<String>,
        /// The server's listen address, when the manifest has no [server.http] listen or
        /// public_url.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
    },
    /// Validate the manifest without serving; print a summary, or every error as FILE:LINE:COL.
    /// Warnings (FILE:LINE:COL: warning: …) do not fail the check unless --deny-warnings.
    Check {
        #[command(flatten)]
        manifest: ManifestArg,
        /// Exit 1 when there are warnings too.
        #[arg(long)]
        deny_warnings: bool,
        /// Print the diagnostics as one JSON array on stdout: objects with `file`, `line`,
        /// `column`, `severity` ("error" or "warning") and `message`.
        #[arg(long)]
        json: bool,
    },
    /// Print the JSON Schema of the manifest (or write it to a file).
    Schema {
        /// Write the schema to this file instead (name it on the manifest's first line:
        /// `#:schema ./FILE`).
        #[arg(long, value_name = "PATH")]
        write: Option<PathBuf>,
    },
    /// Print what the manifest serves: resources, templates, tools, prompts.
    List {
        #[command(flatten)]
        manifest: ManifestArg,
        /// One JSON object (`server`, `resources`, `resourceTemplates`, `tools`, `prompts`).
        #[arg(long)]
        json: bool,
    },
    /// Read one resource as a client would and print it.
    Read {
        /// The resource URI.
        uri: String,
        /// The manifest (default ./mcp-server.toml).
        #[arg(long, short)]
        manifest: Option<PathBuf>,
        /// Write binary contents as raw bytes instead of base64.
        #[arg(long)]
        raw: bool,
    },
    /// Render one prompt as a client would and print its messages (exit 1 on a bad argument).
    Prompt {
        /// The prompt name.
        name: String,
        /// Arguments as NAME=VALUE.
        #[arg(value_name = "NAME=VALUE")]
        args: Vec<String>,
        /// The manifest (default ./mcp-server.toml).
        #[arg(long, short)]
        manifest: Option<PathBuf>,
        /// Print the `prompts/get` result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Call one tool as a client would and print the result (exit 1 when it is an error).
    Call {
        /// The tool name.
        tool: String,
        /// Arguments as NAME=VALUE, typed by the tool's input schema.
        #[arg(value_name = "NAME=VALUE")]
        args: Vec<String>,
        /// Arguments as one JSON object (NAME=VALUE pairs override its keys).
        #[arg(long, value_name = "OBJECT")]
        json: Option<String>,
        /// The manifest (default ./mcp-server.toml).
        #[arg(long, short)]
        manifest: Option<PathBuf>,
    },
    /// Write a commented starter mcp-server.toml for a folder from what it holds (a git
    /// repository, documentation, source folders, SQLite files, agent skills), and its JSON
    /// Schema beside it.
    Init {
        /// The folder (default: the current one).
        dir: Option<PathBuf>,
        /// Overwrite an existing mcp-server.toml (and mcp-server.schema.json).
        #[arg(long)]
        force: bool,
    },
    /// Add this server to an MCP client's configuration (absolute paths; other entries kept;
    /// a backup first; a second run changes nothing).
    Register {
        /// The client.
        client: Client,
        #[command(flatten)]
        manifest: ManifestArg,
        /// The server's name in the client (default: the manifest's [server] name).
        #[arg(long)]
        name: Option<String>,
        /// An environment variable for the server, NAME=VALUE (repeatable).
        #[arg(long = "env", value_name = "NAME=VALUE")]
        env: Vec<String>,
        /// The user's file instead of the project's (claude-code, cursor, vscode, gemini).
        #[arg(long)]
        user: bool,
        /// The project folder of a project file (default: the manifest's folder).
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        /// Print the entry instead of writing it.
        #[arg(long)]
        print: bool,
        /// Point an existing entry of the same name that serves another manifest at this one.
        #[arg(long)]
        replace: bool,
        /// Serve only what [groups.NAME] of the manifest shows (the entry runs
        /// `serve MANIFEST --group NAME`).
        #[arg(long, value_name = "NAME")]
        group: Option<String>,
    },
    /// Remove this server from an MCP client's configuration (only an entry that runs
    /// mcp-manifest).
    Unregister {
        /// The client.
        client: Client,
        /// The server's name (default: the [server] name of the manifest).
        #[arg(long)]
        name: Option<String>,
        /// The manifest whose server name to remove (default ./mcp-server.toml).
        #[arg(long, short, value_name = "MANIFEST")]
        manifest: Option<PathBuf>,
        /// The user's file instead of the project's (claude-code, cursor, vscode, gemini).
        #[arg(long)]
        user: bool,
        /// The project folder of a project file (default: the manifest's folder).
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
    },
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

fn main() -> ExitCode {
    // A tool's supervisor (`mcp-manifest __supervise …`, started by the server for every
    // program it runs): nothing else of the binary is set up for it.
    let mut argv = std::env::args_os();
    if argv
        .nth(1)
        .is_some_and(|a| a == mcp_manifest::processes::SUPERVISE)
    {
        return mcp_manifest::processes::supervise(argv.collect());
    }
    // What a killed supervisor leaves behind comes back to the server (Linux), which kills it.
    mcp_manifest::processes::adopt_orphans();
    tune_allocator();
    let args = Args::parse();
    init_logging();
    // One async thread routes requests; everything that blocks or takes CPU runs elsewhere
    // (stdin/stdout threads parse and serialize, `spawn_blocking` for files, git and SQLite,
    // sqlx's worker threads, child processes). Measured: one thread answers pipelined pings
    // ~1.3x faster than two workers handing tasks to each other, with less memory.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcp-manifest: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(async {
        match args.command {
            None => cli::serve(None, cli::Via::Default, None).await,
            Some(Command::Serve {
                manifest,
                http,
                stdio,
                group,
            }) => {
                let via = match (http, stdio) {
                    (Some(addr), _) => cli::Via::Http(addr),
                    (None, true) => cli::Via::Stdio,
                    (None, false) => cli::Via::Default,
                };
                cli::serve(manifest.get(), via, group).await
            }
            Some(Command::Card {
                manifest,
                group,
                http,
            }) => cli::card(manifest.get(), group.as_deref(), http.as_deref()).await,
            Some(Command::Check {
                manifest,
                deny_warnings,
                json,
            }) => cli::check(manifest.get(), deny_warnings, json).await,
            Some(Command::Schema { write }) => cli::schema(write),
            Some(Command::List { manifest, json }) => cli::list(manifest.get(), json).await,
            Some(Command::Read { uri, manifest, raw }) => cli::read(manifest, &uri, raw).await,
            Some(Command::Prompt {
                name,
                args,
                manifest,
                json,
            }) => cli::prompt(manifest, &name, &args, json).await,
            Some(Command::Call {
                tool,
                args,
                json,
                manifest,
            }) => cli::call(manifest, &tool, &args, json.as_deref()).await,
            Some(Command::Init { dir, force }) => cli::init(dir, force).await,
            Some(Command::Register {
                client,
                manifest,
                name,
                env,
                user,
                project,
                print,
                replace,
                group,
            }) => {
                cli::register(cli::RegisterArgs {
                    client,
                    manifest: manifest.get(),
                    name,
                    env,
                    user,
                    print,
                    project,
                    replace,
                    group,
                })
                .await
            }
            Some(Command::Unregister {
                client,
                name,
                manifest,
                user,
                project,
            }) => cli::unregister(cli::UnregisterArgs {
                client,
                manifest,
                name,
                user,
                project,
            }),
            Some(Command::Completions { shell }) => {
                clap_complete::generate(
                    shell,
                    &mut Args::command(),
                    "mcp-manifest",
                    &mut std::io::stdout(),
                );
                0
            }
        }
    });
    // Exit without waiting for the runtime: a blocking stdin read cannot be cancelled, and
    // children were already killed by the verb that started them.
    std::process::exit(code)
}

/// Large answers (a 1 MiB file read is 1 MiB of bytes, then 1.33 MiB of base64, then as much
/// serialized) are allocated and freed on several threads. With glibc's defaults each thread's
/// arena keeps what it freed and peak RSS under load is about twice what is live (measured:
/// 83 MiB against 31 MiB for 1 000 pipelined reads). So blocks of 128 KiB or more are mapped
/// and unmapped on their own, in at most two arenas.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_allocator() {
    // SAFETY: mallopt(3) only sets allocator parameters; this runs before any other thread.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_allocator() {}

/// Logs go to stderr only (stdout is the protocol). `MCP_MANIFEST_LOG` (or `RUST_LOG`) sets the
/// filter; the default is warnings, one access line per HTTP request, and one line per manifest
/// reload saying what changed.
fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = std::env::var("MCP_MANIFEST_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .ok()
        .and_then(|f| EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| {
            EnvFilter::new("warn,rmcp=error,mcp_manifest::access=info,mcp_manifest::reload=info")
        });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}
