//! `[tools.NAME]` and the argv of `command` templates: the section's checks.

use std::path::PathBuf;

use indexmap::IndexMap;

use super::raw::{self, Key, RawArg, SizeValue, Sp};
use super::{
    ArgvItem, Checker, Command, DEFAULT_TIMEOUT, Exec, Loc, OutputKind,
    RESOURCE_TOOL_NAMES, Tool,
};

impl Checker<'_> {
    pub(crate) fn tool(
        &mut self,
        key: &Key,
        t: &raw::RawTool,
        resource_tools: bool,
    ) -> Option<Tool> {
        let name = key.get().clone();
        if resource_tools && RESOURCE_TOOL_NAMES.contains(&name.as_str()) {
            self.err(
                key,
                format!("tool `{name}` clashes with the built-in resource tool of that name; rename it or set `resource_tools = false` in [server]"),
            );
        }
        let exec = match (&t.command, &t.run) {
            (Some(argv), None) => {
                if let Some(shell) = &t.shell {
                    self.err(
                        shell,
                        format!("tool `{name}`: `shell` is for `run` scripts; `command` runs its program without a shell"),
                    );
                }
                Exec::Command(self.argv(argv, key, &format!("tool `{name}`")))
            }
            (None, Some(script)) => {
                let shell = match (&t.shell, crate::process::Shell::default_here()) {
                    (Some(shell), _) => *shell.get(),
                    (None, Some(default)) => default,
                    (None, None) => {
                        self.err(
                            script,
                            format!("tool `{name}`: `run` needs `shell = \"powershell\"`, \"pwsh\", \"cmd\" or \"sh\" on this system (there is no default shell here)"),
                        );
                        return None;
                    }
                };
                Exec::Run(script.get().clone(), self.loc(script), shell)
            }
            (Some(_), Some(run)) => {
                self.err(
                    run,
                    format!("tool `{name}` has both `command` and `run`; keep one"),
                );
                return None;
            }
            (None, None) => {
                self.err(
                    key,
                    format!("tool `{name}` needs `command` (argv) or `run` (a script)"),
                );
                return None;
            }
        };
        let output = t.output.as_ref().map_or(OutputKind::Text, |o| *o.get());
        if let Some(schema) = &t.output_schema {
            if output != OutputKind::Json {
                self.err(
                    schema,
                    format!("tool `{name}` has `output_schema` but not `output = \"json\"`"),
                );
            }
            match schema.get().get("type") {
                _ if !schema.get().is_object() => self.err(
                    schema,
                    format!("`output_schema` of tool `{name}` must be a table (a JSON Schema object)"),
                ),
                Some(ty) if ty != "object" => self.err(
                    schema,
                    format!("`output_schema` of tool `{name}` must describe an object (`type = \"object\"`): structured content is always a JSON object"),
                ),
                _ => {}
            }
        }
        let (cwd, cwd_loc) = self.cwd(&t.cwd, key);
        // MCP's defaults unless the manifest says otherwise: a read-only tool is not destructive.
        let read_only = t.read_only.as_ref().is_some_and(|r| *r.get());
        let destructive = match &t.destructive {
            Some(d) if read_only && *d.get() => {
                self.err(
                    d,
                    format!("tool `{name}` cannot be both `read_only` and `destructive`; a tool that only reads changes nothing"),
                );
                false
            }
            Some(d) => *d.get(),
            None => !read_only,
        };
        Some(Tool {
            description: Self::text(&t.description),
            title: Self::text(&t.title),
            exec,
            cwd,
            cwd_loc,
            env: self.env_vars(&t.env),
            timeout: self.duration(&t.timeout, DEFAULT_TIMEOUT),
            max_output: self.max_output(&t.max_output),
            output,
            output_schema: t
                .output_schema
                .as_ref()
                .map(|s| (s.get().clone(), self.loc(s))),
            read_only,
            destructive,
            idempotent: t.idempotent.unwrap_or(false),
            open_world: t.open_world.unwrap_or(true),
            ok_exit_codes: self.ok_exit_codes(&t.ok_exit_codes, &name),
            params: self.params(&t.params),
            name,
        })
    }

    /// Checks the shape of a `command` array (placeholders are checked when the registry builds
    /// the entry, against its parameters): a program first, no empty group.
    pub(crate) fn argv(&mut self, argv: &[Sp<RawArg>], at: &Key, what: &str) -> Vec<ArgvItem> {
        let mut out = Vec::with_capacity(argv.len());
        for (i, item) in argv.iter().enumerate() {
            let loc = self.loc(item);
            match item.get() {
                RawArg::One(program) if i == 0 => {
                    if program.is_empty() {
                        self.err(
                            item,
                            format!("{what}: the program (first element of `command`) is empty"),
                        );
                    }
                    let program = if program.contains('/') {
                        self.path(program).to_string_lossy().into_owned()
                    } else {
                        program.clone()
                    };
                    out.push(ArgvItem::Arg(program, loc));
                }
                RawArg::One(arg) => out.push(ArgvItem::Arg(arg.clone(), loc)),
                RawArg::Group(_) if i == 0 => {
                    self.err(item, format!("{what}: the first element of `command` is the program, a string, not a group"));
                }
                RawArg::Group(items) if items.is_empty() => {
                    self.err(item, format!("{what}: an empty group in `command`"));
                }
                RawArg::Group(items) => out.push(ArgvItem::Group(
                    items
                        .iter()
                        .map(|a| (a.get().clone(), self.loc(a)))
                        .collect(),
                    loc,
                )),
            }
        }
        if argv.is_empty() {
            self.err(
                at,
                format!("{what}: `command` needs at least a program name"),
            );
        }
        out
    }

    pub(crate) fn cwd(&self, cwd: &Option<Sp<String>>, at: &Key) -> (PathBuf, Loc) {
        match cwd {
            Some(c) => (self.path(c.get()), self.loc(c)),
            None => (self.dir.to_path_buf(), self.loc(at)),
        }
    }

    pub(crate) fn command(
        &mut self,
        argv: &[Sp<RawArg>],
        at: &Key,
        cwd: &Option<Sp<String>>,
        env: &IndexMap<Key, Sp<String>>,
        timeout: &Option<Sp<raw::DurationStr>>,
        max_output: &Option<Sp<SizeValue>>,
    ) -> Command {
        let (cwd, cwd_loc) = self.cwd(cwd, at);
        Command {
            argv: self.argv(argv, at, &format!("template `{}`", at.get())),
            cwd,
            cwd_loc,
            env: self.env_vars(env),
            timeout: self.duration(timeout, DEFAULT_TIMEOUT),
            max_output: self.max_output(max_output),
        }
    }

    /// `[server] path`: folders, absolute; `:` cannot be inside one (it separates `PATH`).
    pub(crate) fn search_path(&mut self, list: &Option<Vec<Sp<String>>>) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for p in list.iter().flatten() {
            if p.get().is_empty() || p.get().contains(':') || p.get().contains('\0') {
                self.err(
                    p,
                    format!(
                        "`path` entry `{}` cannot be used in PATH: it is empty or holds `:` or a NUL",
                        p.get().escape_debug()
                    ),
                );
                continue;
            }
            out.push(self.path(p.get()));
        }
        out
    }

    /// `ok_exit_codes`: a non-empty list of exit codes (0–255); `[0]` when not written.
    pub(crate) fn ok_exit_codes(
        &mut self,
        codes: &Option<Sp<Vec<Sp<raw::OkExitCode>>>>,
        tool: &str,
    ) -> Vec<i32> {
        let Some(list) = codes else {
            return vec![0];
        };
        if list.get().is_empty() {
            self.err(
                list,
                format!("`ok_exit_codes` of tool `{tool}` is empty; list the exit codes that mean success (e.g. [0])"),
            );
            return vec![0];
        }
        let mut out = Vec::new();
        for c in list.get() {
            match i32::try_from(c.get().0) {
                Ok(code) if (0..=255).contains(&code) => {
                    if !out.contains(&code) {
                        out.push(code);
                    }
                }
                _ => self.err(
                    c,
                    format!(
                        "`ok_exit_codes` of tool `{tool}`: an exit code is 0 to 255, found {}",
                        c.get().0
                    ),
                ),
            }
        }
        out
    }
}
