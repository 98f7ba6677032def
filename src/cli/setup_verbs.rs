//! The verbs that set up a machine: `init` (a starter manifest from what a folder holds),
//! `register` / `unregister` (this server in an MCP client's configuration). What they print is
//! here; what they write is `setup`'s.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{FAILED, OK, cwd_text, entry_kind, load, manifest_path, report, schema_text};
use crate::manifest;
use crate::registry::Registry;
use crate::setup::platform::Os;
use crate::setup::{self, Client, clients, init as starter, register as reg};

/// `mcp-manifest init [DIR] [--force]`: a commented starter manifest (and its schema) for DIR,
/// from what DIR holds; what it writes passes `check`.
pub async fn init(dir: Option<PathBuf>, force: bool) -> i32 {
    let given = dir.unwrap_or_else(|| PathBuf::from("."));
    let dir = setup::expand_home(&given, &setup::process_env);
    let dir = match crate::providers::platform::canonical(&dir) {
        Ok(d) if d.is_dir() => d,
        Ok(d) => {
            eprintln!("mcp-manifest: {} is not a folder", d.display());
            return FAILED;
        }
        Err(e) => {
            eprintln!(
                "mcp-manifest: cannot use the folder {}: {e} (working directory {})",
                dir.display(),
                cwd_text()
            );
            return FAILED;
        }
    };
    let manifest = dir.join(starter::MANIFEST);
    // The entry itself (a symlink is not followed): a dangling link exists too.
    match std::fs::symlink_metadata(&manifest) {
        Ok(m) if !m.is_file() && !m.file_type().is_symlink() => {
            eprintln!(
                "mcp-manifest: {} exists and {}; init writes only a file there: move it away first",
                manifest.display(),
                entry_kind(&m)
            );
            return FAILED;
        }
        Ok(m) if !force => {
            let what = if m.file_type().is_symlink() {
                let to = std::fs::read_link(&manifest).unwrap_or_default();
                format!(
                    " (a symlink to {}{})",
                    to.display(),
                    if manifest.exists() {
                        ""
                    } else {
                        ", which does not exist"
                    }
                )
            } else {
                String::new()
            };
            eprintln!(
                "mcp-manifest: {}{what} exists; init leaves it as it is (--force replaces it with a new file; a symlink is replaced, never its target)",
                manifest.display()
            );
            return FAILED;
        }
        _ => {}
    }
    let walk_dir = dir.clone();
    let findings = match tokio::task::spawn_blocking(move || starter::inspect(&walk_dir)).await {
        Ok(f) => f,
        Err(e) => {
            eprintln!("mcp-manifest: looking at {} failed: {e}", dir.display());
            return FAILED;
        }
    };
    let (accepted, left_out) = starter::accept(starter::propose(&findings), &dir).await;
    let folder_name = dir
        .file_name()
        .map_or_else(|| "server".to_owned(), |n| n.to_string_lossy().into_owned());
    let text = starter::render(&reg::suggest_name(&folder_name), &accepted);
    let mut out = std::io::stdout().lock();
    let _ = write!(
        out,
        "{}",
        starter::report(&dir, &findings, &accepted, &left_out)
    );
    // Every section passed alone; the whole must build too before anything is written.
    if let Err(e) = starter::check_text(&text, &dir).await {
        eprintln!(
            "mcp-manifest: the manifest init would write does not pass check (a bug; nothing written):\n{e}"
        );
        return FAILED;
    }
    let written = if force {
        setup::replace_entry(&manifest, text.as_bytes())
    } else {
        setup::create_file(&manifest, text.as_bytes())
    };
    if let Err(e) = written {
        eprintln!("mcp-manifest: cannot write {}: {e}", manifest.display());
        return FAILED;
    }
    let schema_path = dir.join(starter::SCHEMA);
    let schema = schema_text();
    // Only a regular file is read (a FIFO would never answer); a symlink is kept unless
    // --force, which replaces the link itself.
    let old_schema = match std::fs::symlink_metadata(&schema_path) {
        Ok(m) if m.is_file() => std::fs::read(&schema_path).ok(),
        Ok(m) if m.file_type().is_symlink() => Some(Vec::new()),
        Ok(m) => {
            let _ = writeln!(
                out,
                "Left {} as it is: it {}.",
                schema_path.display(),
                entry_kind(&m)
            );
            Some(schema.as_bytes().to_vec())
        }
        Err(_) => None,
    };
    let schema_note = match old_schema {
        Some(old) if old == schema.as_bytes() => String::new(),
        Some(_) if !force => format!(
            " (kept the existing {}: it differs from this version's; `mcp-manifest schema --write {}` replaces it)",
            starter::SCHEMA,
            schema_path.display()
        ),
        _ => match setup::replace_entry(&schema_path, schema.as_bytes()) {
            Ok(()) => format!(" and {} (for editors)", schema_path.display()),
            Err(e) => format!(" (could not write {}: {e})", schema_path.display()),
        },
    };
    let _ = writeln!(
        out,
        "Wrote {}{schema_note}.",
        starter::shown(&manifest.display().to_string())
    );
    let shown = starter::shown(&crate::manifest::shell_word(
        &manifest.display().to_string(),
    ));
    let _ = writeln!(out, "Next:  mcp-manifest check {shown}");
    let _ = writeln!(
        out,
        "Then:  mcp-manifest register claude-desktop {shown}   (or claude-code, cursor, vscode, windsurf, codex, gemini, copilot, qwen, opencode)"
    );
    OK
}

/// What `register` is asked to do.
pub struct RegisterArgs {
    pub client: Client,
    pub manifest: Option<PathBuf>,
    pub name: Option<String>,
    pub env: Vec<String>,
    pub user: bool,
    pub print: bool,
    pub project: Option<PathBuf>,
    /// Repoint an entry of the same name that serves another manifest.
    pub replace: bool,
    /// Serve only this `[groups.NAME]` (`serve --group NAME`).
    pub group: Option<String>,
}

/// `mcp-manifest register CLIENT [MANIFEST]`: adds this server (absolute binary and manifest
/// paths) to the client's configuration file, or prints the entry with `--print`.
pub async fn register(args: RegisterArgs) -> i32 {
    let registry = match load(args.manifest.as_deref()).await {
        Ok(r) => r,
        Err(d) => {
            report(&d);
            eprintln!(
                "mcp-manifest: fix the manifest first (`mcp-manifest check` shows the same); nothing registered"
            );
            return FAILED;
        }
    };
    let (path, _) = manifest_path(args.manifest.as_deref());
    match register_checked(&args, &registry, &path) {
        Ok(()) => OK,
        Err(e) => {
            eprintln!("mcp-manifest: {e}");
            FAILED
        }
    }
}

fn register_checked(args: &RegisterArgs, registry: &Registry, path: &Path) -> Result<(), String> {
    let manifest = crate::providers::platform::canonical(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| registry.manifest.server.name.clone());
    reg::check_name(&name)?;
    if let Some(group) = &args.group {
        known_group(registry, group)?;
    }
    let env = reg::parse_env(&args.env)?;
    let exe = std::env::current_exe()
        .and_then(|p| crate::providers::platform::canonical(&p))
        .map_err(|e| format!("cannot find this program's own path: {e}"))?;
    let os = Os::current();
    let project = project_dir(args.project.as_deref(), &manifest)?;
    let target = clients::target(args.client, args.user, &project, os, &setup::process_env)?;
    let (mut entry, machine_paths) = entry_for(&target, &exe, os, &manifest, &project, env)?;
    // A manifest that listens on HTTP would serve there: a client's entry is stdio.
    if registry.manifest.server.http.listen.is_some() {
        entry.args.push("--stdio".to_owned());
    }
    if let Some(group) = &args.group {
        entry.args.extend(["--group".to_owned(), group.clone()]);
    }
    if args.print {
        let _ = write!(
            std::io::stdout().lock(),
            "{}",
            reg::snippet(target.format, &name, &entry)
        );
        eprintln!(
            "mcp-manifest: --print: this entry goes in {} ({} scope); nothing written",
            target.path.display(),
            target.scope.as_str()
        );
        return Ok(());
    }
    let opts = reg::Opts {
        own: &exe,
        replace: args.replace,
        project: &project,
    };
    let state = state_of(os);
    let done = reg::register(&target, &name, &entry, opts, state.as_ref())?;
    let mut out = std::io::stdout().lock();
    let file = target.path.display();
    for note in &done.notes {
        let _ = writeln!(out, "Note: {note}.");
    }
    let scope = target.scope.as_str();
    let title = args.client.title();
    match done.outcome {
        reg::Outcome::Unchanged => {
            let _ = writeln!(
                out,
                "`{name}` is already registered for {title} in {file}; nothing changed."
            );
        }
        reg::Outcome::Added => {
            let _ = writeln!(
                out,
                "Registered `{name}` for {title} in {file} ({scope} scope)."
            );
        }
        reg::Outcome::Updated => {
            let _ = writeln!(
                out,
                "Updated `{name}` for {title} in {file} ({scope} scope)."
            );
        }
    }
    if done.outcome != reg::Outcome::Unchanged {
        if let Some(b) = &done.backup {
            let _ = writeln!(out, "  backup   {}", b.display());
        }
        let _ = writeln!(out, "  command  {}", entry.command);
        let _ = writeln!(out, "  args     {}", entry.args.join(" "));
        for (k, v) in &entry.env {
            let _ = writeln!(out, "  env      {k}={v}");
        }
    }
    if let Some(why) = machine_paths {
        let _ = writeln!(
            out,
            "Warning: {file} is a project file, meant to be committed, but holds this machine's paths: {why}. Each teammate runs `mcp-manifest register {}` on their own machine.",
            args.client.id()
        );
    }
    if exe.components().any(|c| c.as_os_str() == "target") && entry.command != "mcp-manifest" {
        let _ = writeln!(
            out,
            "Note: this binary is a build output ({}); `cargo clean` removes it. `cargo install --path .` gives a lasting path (then register again).",
            entry.command
        );
    }
    let gate = clients::gate(args.client, &target, &name, &project);
    let _ = writeln!(out, "Still needed ({}): {}.", gate.kind, gate.step);
    if let Some(cmd) = &gate.command {
        let _ = writeln!(out, "  run:    {cmd}");
    }
    if let Some(check) = &gate.check {
        let _ = writeln!(out, "  check:  {check}");
    }
    Ok(())
}

/// `Ok` when the manifest declares `[groups.GROUP]`; else what to write instead.
fn known_group(registry: &Registry, group: &str) -> Result<(), String> {
    registry
        .manifest
        .group_or_why(group)
        .map(|_| ())
        .map_err(|why| format!("--group {group}: {why}; nothing registered"))
}

/// The entry `register` writes for `target`, and why it holds this machine's paths when a
/// project file cannot do without them. A user's file gets absolute paths; a project file
/// the program's name when the `mcp-manifest` on PATH is this program, and the manifest's path
/// as the client resolves it (relative, or `${workspaceFolder}/…`).
fn entry_for(
    target: &clients::Target,
    exe: &Path,
    os: Os,
    manifest: &Path,
    project: &Path,
    env: Vec<(String, String)>,
) -> Result<(reg::Entry, Option<String>), String> {
    let (command, on_path) = own_command(exe, os);
    let absolute = utf8(manifest)?;
    if target.scope == clients::Scope::User {
        let entry = reg::Entry {
            command: utf8(&command)?,
            args: vec!["serve".to_owned(), absolute],
            env,
        };
        return Ok((entry, None));
    }
    let mut why = Vec::new();
    let command = if on_path {
        "mcp-manifest".to_owned()
    } else {
        why.push(format!(
            "the program's path ({}: no `mcp-manifest` on PATH is this program)",
            command.display()
        ));
        utf8(&command)?
    };
    let relative = manifest.strip_prefix(project).ok().and_then(|r| {
        let parts: Option<Vec<&str>> = r.components().map(|c| c.as_os_str().to_str()).collect();
        parts.map(|p| p.join("/"))
    });
    let manifest_arg = match (target.paths, relative) {
        (clients::Paths::Relative, Some(rel)) => rel,
        (clients::Paths::WorkspaceFolder, Some(rel)) => format!("${{workspaceFolder}}/{rel}"),
        (clients::Paths::Machine(reason), _) => {
            why.push(format!("the manifest's path ({reason})"));
            absolute
        }
        (clients::Paths::Absolute, _) => absolute,
        (_, None) => {
            why.push(format!(
                "the manifest's path ({} is outside the project folder {})",
                manifest.display(),
                project.display()
            ));
            absolute
        }
    };
    let entry = reg::Entry {
        command,
        args: vec!["serve".to_owned(), manifest_arg],
        env,
    };
    Ok((entry, (!why.is_empty()).then(|| why.join("; "))))
}

/// Setup's state folder (backups of project files, the files `register` created).
fn state_of(os: Os) -> Option<setup::state::State> {
    setup::platform::Dirs {
        os,
        env: &setup::process_env,
    }
    .state()
    .ok()
    .map(|dir| setup::state::State { dir })
}

/// What `unregister` is asked to do.
pub struct UnregisterArgs {
    pub client: Client,
    pub manifest: Option<PathBuf>,
    pub name: Option<String>,
    pub user: bool,
    pub project: Option<PathBuf>,
}

/// `mcp-manifest unregister CLIENT [--name N]`: removes the entry `register` wrote (only an
/// entry that runs mcp-manifest); the name defaults to the manifest's server name.
pub fn unregister(args: UnregisterArgs) -> i32 {
    match unregister_checked(&args) {
        Ok(()) => OK,
        Err(e) => {
            eprintln!("mcp-manifest: {e}");
            FAILED
        }
    }
}

fn unregister_checked(args: &UnregisterArgs) -> Result<(), String> {
    let (path, display) = manifest_path(args.manifest.as_deref());
    let name = match &args.name {
        Some(n) => n.clone(),
        None => match manifest::load(&path, &display) {
            Ok(m) => m.server.name,
            Err(d) => {
                return Err(format!(
                    "cannot tell which server to remove: {}give --name NAME",
                    d
                ));
            }
        },
    };
    let abs = std::path::absolute(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let project = project_dir(args.project.as_deref(), &abs)?;
    let os = Os::current();
    let target = clients::target(args.client, args.user, &project, os, &setup::process_env)?;
    let own = std::env::current_exe()
        .and_then(|p| crate::providers::platform::canonical(&p))
        .unwrap_or_default();
    let state = state_of(os);
    let mut out = std::io::stdout().lock();
    match reg::unregister(&target, &name, &own, state.as_ref())? {
        None => {
            let _ = writeln!(
                out,
                "No server `{name}` in {}; nothing changed.",
                target.path.display()
            );
        }
        Some(done) => {
            let _ = writeln!(
                out,
                "Removed `{name}` from {} ({}).",
                target.path.display(),
                args.client.title()
            );
            if let Some(b) = done.backup {
                let _ = writeln!(out, "  backup   {}", b.display());
            }
            for gone in &done.removed {
                let _ = writeln!(
                    out,
                    "  removed  {} (register had created it; it held nothing else)",
                    gone.display()
                );
            }
            for note in &done.notes {
                let _ = writeln!(out, "Note: {note}.");
            }
        }
    }
    Ok(())
}

/// The path written as an entry's command, and whether it is the `mcp-manifest` found on
/// PATH: `exe` (canonical), or the `mcp-manifest` on PATH, or `argv[0]` when it is a path, when
/// that is the same file: a symlinked install (`bin/mcp-manifest` →
/// `Cellar/mcp-manifest/0.1.0/bin/mcp-manifest`) keeps working after an upgrade replaces the
/// versioned folder.
fn own_command(exe: &Path, os: Os) -> (PathBuf, bool) {
    let name = os.exe_name();
    let on_path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .filter(|d| d.is_absolute())
                .map(|d| d.join(name))
                .collect()
        })
        .unwrap_or_default();
    // The first `mcp-manifest` on PATH is what a bare name runs.
    let first = on_path.iter().find(|c| c.is_file());
    if let Some(same) = on_path
        .iter()
        .find(|c| c.is_file() && crate::providers::platform::same_path(c, exe))
    {
        return (same.clone(), first == Some(same));
    }
    let argv0 = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .filter(|p| p.components().count() > 1)
        .and_then(|p| std::path::absolute(p).ok());
    let found = argv0
        .into_iter()
        .find(|c| c.is_file() && crate::providers::platform::same_path(c, exe))
        .unwrap_or_else(|| exe.to_path_buf());
    (found, false)
}

/// The project folder of a project-scoped client: `--project`, else the manifest's folder.
fn project_dir(given: Option<&Path>, manifest: &Path) -> Result<PathBuf, String> {
    match given {
        Some(p) => {
            let p = setup::expand_home(p, &setup::process_env);
            crate::providers::platform::canonical(&p)
                .map_err(|e| format!("--project {}: {e}", p.display()))
        }
        None => Ok(manifest
            .parent()
            .map_or_else(|| PathBuf::from("/"), Path::to_path_buf)),
    }
}

fn utf8(p: &Path) -> Result<String, String> {
    p.to_str().map(str::to_owned).ok_or_else(|| {
        format!(
            "{}: the path is not valid UTF-8, which clients' configuration files cannot hold",
            p.display()
        )
    })
}
