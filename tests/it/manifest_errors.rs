//! Bad manifests and their exact diagnostics (`FILE:LINE:COL: message`), through `check` and
//! `serve` (which must refuse to start with the same output, before reading stdin).

use crate::support::{Fixture, stderr, stdout};

/// Runs `check` on `text` (written as bad.toml next to a `docs` folder) and returns stderr lines.
fn diagnose(text: &str) -> Vec<String> {
    let f = Fixture::new();
    f.write("docs/a.md", "# a\n");
    f.diagnose(text)
}

#[test]
fn unknown_key_suggests_the_close_one() {
    // Through the real binary once: `check` exits 1 with the lines and a summary.
    let f = Fixture::new();
    f.write("docs/a.md", "# a\n");
    assert_eq!(
        f.diagnose_with_binary("[files.docs]\nroot = \"docs\"\ninlcude = [\"*.md\"]\n"),
        ["bad.toml:3:1: unknown key `inlcude`, did you mean `include`?"]
    );
    assert_eq!(
        diagnose("[files.docs]\nroot = \"docs\"\ninlcude = [\"*.md\"]\n"),
        ["bad.toml:3:1: unknown key `inlcude`, did you mean `include`?"]
    );
}

#[test]
fn unknown_section_suggests_the_close_one() {
    assert_eq!(
        diagnose("[filez.docs]\nroot = \"docs\"\n"),
        ["bad.toml:1:2: unknown section `filez`, did you mean `files`?"]
    );
}

#[test]
fn wrong_types_are_all_reported_at_once() {
    assert_eq!(
        diagnose(
            "[server]\npage_size = \"ten\"\n\n[files.docs]\nroot = \"docs\"\nwatch = \"yes\"\ngitignore = 1\n"
        ),
        [
            "bad.toml:2:13: `server.page_size` must be an integer, found a string",
            "bad.toml:6:9: `files.docs.watch` cannot be `yes`; expected one of: `poll`",
            "bad.toml:7:13: `files.docs.gitignore` must be true or false, found an integer",
        ]
    );
}

#[test]
fn missing_required_key_points_at_the_table() {
    assert_eq!(
        diagnose("[server]\nname = \"x\"\n\n[files.docs]\ninclude = [\"*\"]\n"),
        ["bad.toml:4:1: missing required key `root` in `files.docs`"]
    );
}

#[test]
fn invalid_names_are_rejected() {
    assert_eq!(
        diagnose("[files.Docs]\nroot = \"docs\"\n"),
        ["bad.toml:1:8: invalid name `Docs` in `files`: names match [a-z][a-z0-9_-]*"]
    );
}

#[test]
fn missing_environment_variable_without_default() {
    assert_eq!(
        diagnose("[files.docs]\nroot = \"${MCP_MANIFEST_SURELY_UNSET}/docs\"\n"),
        [
            "bad.toml:2:8: environment variable `MCP_MANIFEST_SURELY_UNSET` is not set (give a default with `${MCP_MANIFEST_SURELY_UNSET:-value}`)"
        ]
    );
}

#[test]
fn dangling_reference_to_a_sqlite_source() {
    // The missing database file is reported too: a problem in one entry hides none in another.
    let lines = diagnose(
        "[sqlite.shop]\npath = \"x.db\"\n\n[templates.t]\nuri = \"x://{a}\"\nsqlite = \"shopp\"\nsql = \"select 1\"\n",
    );
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("bad.toml:2:8: [sqlite.shop] database `")
            && lines[0].ends_with(
                "x.db` cannot be opened: no such file (it is opened read-only and never created)"
            ),
        "{lines:?}"
    );
    assert_eq!(
        lines[1],
        "bad.toml:6:10: template `t` names sqlite source `shopp`, which does not exist, did you mean `shop`?"
    );
}

#[test]
fn bad_units_name_the_value() {
    assert_eq!(
        diagnose("[tools.t]\ncommand = [\"ls\"]\ntimeout = \"5 parsecs\"\nmax_output = \"lots\"\n"),
        [
            "bad.toml:3:11: `5 parsecs` is not a duration; a duration is a number and a unit, `h`, `m`, `s` or `ms`, in that order and without spaces, e.g. \"500ms\", \"90s\", \"2m\", \"1h30m\"",
            "bad.toml:4:14: `lots` is not a size; write e.g. \"64KiB\" or \"1MiB\"",
        ]
    );
}

#[test]
fn enum_values_are_checked() {
    assert_eq!(
        diagnose("[tools.t]\ncommand = [\"ls\"]\noutput = \"jsno\"\n"),
        ["bad.toml:3:10: `tools.t.output` cannot be `jsno`, did you mean `json`?"]
    );
}

#[test]
fn toml_syntax_errors_have_a_place() {
    assert_eq!(
        diagnose("[server]\nname = \n"),
        ["bad.toml:2:8: string values must be quoted, expected literal string"]
    );
}

#[test]
fn duplicate_names_are_rejected() {
    let lines = diagnose("[files.docs]\nroot = \"docs\"\n\n[files.docs]\nroot = \"docs\"\n");
    assert_eq!(
        lines[0],
        "bad.toml:4:8: duplicate key `docs`: each name appears once in its table"
    );
}

#[test]
fn resource_tool_names_are_reserved_while_resource_tools_is_on() {
    assert_eq!(
        diagnose("[tools.read_resource]\ncommand = [\"cat\"]\n"),
        [
            "bad.toml:1:8: tool `read_resource` clashes with the built-in resource tool of that name; rename it or set `resource_tools = false` in [server]"
        ]
    );
}

#[test]
fn missing_root_is_reported_with_its_place() {
    let f = Fixture::new();
    f.write("bad.toml", "[files.docs]\nroot = \"nope\"\n");
    let out = f.run(&["check", "bad.toml"]);
    assert_eq!(out.status.code(), Some(1));
    let first = stderr(&out).lines().next().unwrap_or_default().to_owned();
    assert_eq!(
        first,
        format!(
            "bad.toml:2:8: [files.docs] root `{}` cannot be opened: no such file or folder",
            f.path("nope").display()
        )
    );
}

#[test]
fn bad_glob_and_bad_size() {
    assert_eq!(
        diagnose("[files.docs]\nroot = \"docs\"\ninclude = [\"[a-\"]\nmax_size = -5\n"),
        ["bad.toml:4:12: `files.docs.max_size` must be at least 0, found -5"]
    );
    let lines = diagnose("[files.docs]\nroot = \"docs\"\ninclude = [\"[a-\"]\n");
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].starts_with("bad.toml:3:12: invalid glob `[a-`"),
        "{lines:?}"
    );
}

#[test]
fn serve_refuses_a_bad_manifest_with_the_same_diagnostics_before_reading_stdin() {
    let f = Fixture::new();
    f.write(
        "mcp-server.toml",
        "[files.docs]\nroot = \"docs\"\ninlcude = []\n",
    );
    // stdin stays open and is never written: the process must exit on its own with status 1.
    let child = std::process::Command::new(crate::support::BIN)
        .arg("serve")
        .current_dir(f.root())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let out = child.wait_with_output_keeping_stdin();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).is_empty(),
        "nothing on stdout: {}",
        stdout(&out)
    );
    assert!(
        stderr(&out)
            .starts_with("mcp-server.toml:3:1: unknown key `inlcude`, did you mean `include`?\n"),
        "{}",
        stderr(&out)
    );
    let check = f.run(&["check"]);
    assert_eq!(stderr(&check), stderr(&out));
}

trait KeepStdin {
    fn wait_with_output_keeping_stdin(self) -> std::process::Output;
}

impl KeepStdin for std::process::Child {
    /// Like `wait_with_output`, but holds stdin open until the process has exited.
    fn wait_with_output_keeping_stdin(mut self) -> std::process::Output {
        let stdin = self.stdin.take();
        let deadline = std::time::Instant::now() + crate::support::TIMEOUT;
        while self.try_wait().expect("try_wait").is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "serve kept running with a bad manifest"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let out = self.wait_with_output().expect("output");
        drop(stdin);
        out
    }
}

#[test]
fn problems_of_every_phase_in_different_entries_are_reported_in_one_run() {
    assert_eq!(
        diagnose(
            "[server]\npage_size = \"x\"\n[files.docs]\nroot = \"docs\"\ninclude = [\"[a-\"]\n[files.other]\nroot = \"docs\"\ngitignore = 3\n[tools.t]\ncommand = [\"ls\"]\ntimeout = \"5x\"\n"
        ),
        [
            "bad.toml:2:13: `server.page_size` must be an integer, found a string",
            "bad.toml:5:12: invalid glob `[a-`: unclosed character class; missing ']'",
            "bad.toml:8:13: `files.other.gitignore` must be true or false, found an integer",
            "bad.toml:11:11: `x` in `5x` is not a duration unit; a duration is a number and a unit, `h`, `m`, `s` or `ms`, in that order and without spaces, e.g. \"500ms\", \"90s\", \"2m\", \"1h30m\"",
        ]
    );
}

#[test]
fn watch_is_true_false_or_poll_and_poll_interval_at_least_100ms() {
    assert_eq!(
        diagnose("[files.docs]\nroot = \"docs\"\nwatch = \"polling\"\n"),
        ["bad.toml:3:9: `files.docs.watch` cannot be `polling`, did you mean `poll`?"]
    );
    assert_eq!(
        diagnose("[files.docs]\nroot = \"docs\"\nwatch = 1\n"),
        ["bad.toml:3:9: `files.docs.watch` must be true or false or a string, found an integer"]
    );
    assert_eq!(
        diagnose("[files.docs]\nroot = \"docs\"\nwatch = \"poll\"\npoll_interval = \"10ms\"\n"),
        ["bad.toml:4:17: [files.docs] `poll_interval` must be at least 100ms"]
    );
}

/// `${param}` in a tool's `run` (or `command`) is the manifest's own `${VAR}` expansion, done
/// when the manifest loads: the message says how the parameter does reach the tool, in that
/// tool's shell, at the reference itself, and no second "environment variable is not set"
/// message follows. A script's own variable not in the environment is told to write `$${f}`.
#[test]
fn dollar_brace_param_in_run_names_the_form_that_works() {
    assert_eq!(
        diagnose(concat!(
            "[tools.recent]\n",
            "run = 'git log -n \"${count}\" -- \"$path\"'\n",
            "params.count = { type = \"integer\", default = 10 }\n",
            "params.path = { type = \"string\", default = \".\" }\n",
            "\n",
            "[tools.ps]\n",
            "shell = \"pwsh\"\n",
            "run = 'Write-Output ${name}'\n",
            "params.name = { type = \"string\" }\n",
            "\n",
            "[tools.argv]\n",
            "command = [\"echo\", \"--\", \"${word}\"]\n",
            "params.word = { type = \"string\" }\n",
            "\n",
            "[tools.loop]\n",
            "run = 'for f in *; do echo \"${MCP_MANIFEST_NO_SUCH_f}\"; done; echo $${f} ${MCP_MANIFEST_NO_SUCH_g:-x}'\n",
        )),
        [
            "bad.toml:2:20: tool `recent`: `${count}` in `run` is the manifest's `${VAR}`, filled from the server's environment when the manifest loads, not parameter `count`; parameters reach the script as environment variables: write `\"$count\"` (or `$${count}`, which the shell reads as `${count}`)",
            "bad.toml:8:21: tool `ps`: `${name}` in `run` is the manifest's `${VAR}`, filled from the server's environment when the manifest loads, not parameter `name`; parameters reach the script as environment variables: write `$env:name`",
            "bad.toml:12:27: tool `argv`: `${word}` in `command` is the manifest's `${VAR}`, filled from the server's environment when the manifest loads, not parameter `word`; write `{word}`: in `command` each `{param}` becomes part of one argument",
            "bad.toml:16:29: tool `loop`: `${MCP_MANIFEST_NO_SUCH_f}` in `run` is the manifest's `${VAR}`, filled when the manifest loads, and environment variable `MCP_MANIFEST_NO_SUCH_f` is not set; for the script's own variable write `$${MCP_MANIFEST_NO_SUCH_f}` (or `$MCP_MANIFEST_NO_SUCH_f`), for the environment give a default: `${MCP_MANIFEST_NO_SUCH_f:-value}`",
        ]
    );
    // Written as the message says, each checks.
    let f = Fixture::new();
    f.manifest(concat!(
        "[tools.recent]\n",
        "run = 'echo \"$count\" $${count}'\n",
        "params.count = { type = \"integer\", default = 10 }\n",
    ));
    let out = f.run(&["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// A section of named entries written as an array of tables (`[[tools]]`, `tools = [{…}]`) is
/// told the `[tools.NAME]` form, with the entry's `name` when it has one; `[[server]]` that it
/// is one table.
#[test]
fn array_of_tables_gets_the_named_table_form() {
    assert_eq!(
        diagnose(concat!(
            "[[server]]\n",
            "name = \"x\"\n",
            "\n",
            "[[tools]]\n",
            "name = \"search\"\n",
            "command = [\"rg\", \"{pattern}\"]\n",
            "\n",
            "[[prompts]]\n",
            "description = \"no name\"\n",
        )),
        [
            "bad.toml:1:1: `server` must be a table or a value, found an array; write `[server]` (one table), not `[[server]]`",
            "bad.toml:4:1: `tools` must be a table, found an array; each entry of `[tools]` is a table named by its key, not an item of an array (`[[tools]]`): write `[tools.search]` (the name goes in the header, not in a `name` key)",
            "bad.toml:8:1: `prompts` must be a table, found an array; each entry of `[prompts]` is a table named by its key, not an item of an array (`[[prompts]]`): write `[prompts.NAME]`",
        ]
    );
    assert_eq!(
        diagnose("tools = [{ name = \"a\", command = [\"true\"] }]\n"),
        [
            "bad.toml:1:9: `tools` must be a table, found an array; each entry of `[tools]` is a table named by its key, not an item of an array (`[[tools]]`): write `[tools.a]` (the name goes in the header, not in a `name` key)"
        ]
    );
}
