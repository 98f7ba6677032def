//! `check` as a whole: every section checked in one run, warnings (`FILE:LINE:COL: warning: …`)
//! for what fails or surprises at run time, errors for what can never work, `--deny-warnings`,
//! `--json`, the one duration grammar, and `serve` logging warnings but serving.

use serde_json::Value;

use crate::support::{Fixture, stderr, stdout};

/// A fixture with a `docs` folder holding one markdown file.
fn fixture() -> Fixture {
    let f = Fixture::new();
    f.write("docs/a.md", "# a\n");
    f
}

fn warnings(lines: &[String]) -> Vec<&String> {
    lines.iter().filter(|l| l.contains(": warning: ")).collect()
}

#[test]
fn a_server_problem_hides_no_tool_problem() {
    // The issue's example: an unknown key in [server] used to hide an undeclared `{x}`.
    let lines = fixture().diagnose(
        "[server]\nnmae = \"x\"\nresource_tools = false\n\n[tools.t]\ncommand = [\"echo\", \"{x}\"]\n\n[tools.list_resources]\ncommand = [\"echo\"]\n",
    );
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(
        lines[0],
        "bad.toml:2:1: unknown key `nmae`, did you mean `name`?"
    );
    assert!(
        lines[1].starts_with("bad.toml:6:20: ") && lines[1].contains("`{x}`"),
        "{lines:?}"
    );
    // `resource_tools = false` kept its meaning although [server] had a problem: no clash with
    // the built-in `list_resources` was reported.
}

#[test]
fn problems_of_load_build_and_cross_checks_come_in_one_run() {
    let f = fixture();
    let lines = f.diagnose(
        "[files.docs]\nroot = \"nowhere\"\n\n[files.ok]\nroot = \"docs\"\nmax_size = \"lots\"\n\n[tools.t]\ncommand = [\"echo\", \"{y}\"]\ntimeout = \"30 sec\"\n\n[prompts.p]\nmessages = [{ role = \"user\", text = \"{z}\" }]\n",
    );
    let at: Vec<&str> = lines
        .iter()
        .map(|l| l.split(": ").next().unwrap_or(""))
        .collect();
    assert_eq!(
        at,
        [
            "bad.toml:2:8",
            "bad.toml:6:12",
            "bad.toml:9:20",
            "bad.toml:10:11",
            "bad.toml:13:37"
        ],
        "{lines:#?}"
    );
    assert!(lines[3].ends_with("`30 sec` is not how durations are written here; write \"30s\""));
}

#[test]
fn durations_have_one_grammar() {
    let f = fixture();
    assert_eq!(
        f.diagnose("[tools.t]\ncommand = [\"echo\"]\ntimeout = 30\n"),
        [
            "bad.toml:3:11: `tools.t.timeout` is a duration string with its unit: write `timeout = \"30s\"` (or \"30ms\", \"30m\")"
        ]
    );
    assert_eq!(
        f.diagnose("[server]\ndebounce = \"2 minutes\"\n"),
        ["bad.toml:2:12: `2 minutes` is not how durations are written here; write \"2m\""]
    );
    assert_eq!(
        f.diagnose("[sqlite.s]\npath = \"docs/a.md\"\ntimeout = \"1 hour 30 minutes\"\n")
            .iter()
            .filter(|l| l.contains("duration"))
            .collect::<Vec<_>>(),
        [
            "bad.toml:3:11: `1 hour 30 minutes` is not how durations are written here; write \"1h30m\""
        ]
    );
    assert_eq!(
        f.diagnose("[tools.t]\ncommand = [\"echo\"]\ntimeout = \"30m1h\"\n"),
        [
            "bad.toml:3:11: the units of `30m1h` are not in order (h, m, s, ms, each once); a duration is a number and a unit, `h`, `m`, `s` or `ms`, in that order and without spaces, e.g. \"500ms\", \"90s\", \"2m\", \"1h30m\""
        ]
    );
    // Compound and short forms pass.
    assert_eq!(
        f.check_lines(
            // `find`: a program on the PATH of every platform (findutils; Windows' find.exe).
            "[server]\ndebounce = \"500ms\"\n[tools.t]\ncommand = [\"find\"]\ntimeout = \"1h30m\"\n[tools.u]\ncommand = [\"find\"]\ntimeout = \"90s\"\n"
        ),
        Vec::<String>::new()
    );
}

#[test]
fn a_default_that_breaks_its_own_rules_is_an_error() {
    let lines = fixture().diagnose(concat!(
        "[tools.t]\ncommand = [\"echo\", \"{n}\", \"{m}\", \"{mode}\", \"{name}\", \"{tags}\"]\n",
        "params.n = { type = \"integer\", default = 500, maximum = 200 }\n",
        "params.m = { type = \"number\", default = 0.5, minimum = 1 }\n",
        "params.mode = { type = \"string\", default = \"medium\", enum = [\"fast\", \"slow\"] }\n",
        "params.name = { type = \"string\", default = \"Bob\", pattern = \"^[a-z]+$\" }\n",
        "params.tags = { type = \"array\", default = [\"ok\", \"NO\"], pattern = \"^[a-z]+$\" }\n",
        "params.fine = { type = \"integer\", default = 5, minimum = 1, maximum = 10, enum = [5, 6] }\n",
        "\n[sqlite.s]\npath = \"x.db\"\n",
        "[sqlite.s.queries.q]\nsql = \"select :k\"\nparams.k = { type = \"integer\", default = 0, minimum = 1 }\n",
    ));
    let defaults: Vec<&String> = lines.iter().filter(|l| l.contains("the default")).collect();
    assert_eq!(
        defaults,
        [
            "bad.toml:3:42: the default of `n` must be at most 200, got 500",
            "bad.toml:4:41: the default of `m` must be at least 1, got 0.5",
            "bad.toml:5:44: the default of `mode` must be one of \"fast\", \"slow\", got \"medium\"",
            "bad.toml:6:44: the default of `name` must match the pattern `^[a-z]+$`, got \"Bob\"",
            "bad.toml:7:43: the default of `tags` must match the pattern `^[a-z]+$`, got \"NO\"",
            "bad.toml:14:42: the default of `k` must be at least 1, got 0",
        ],
        "{lines:#?}"
    );
}

#[test]
fn a_program_not_on_the_path_is_a_warning_naming_that_path() {
    let f = fixture();
    let lines = f.check_lines(concat!(
        "[tools.gone]\ncommand = [\"mcp-manifest-surely-no-such-program\"]\n",
        // `find`: a program on the PATH of every platform (findutils; Windows' find.exe).
        "[tools.here]\ncommand = [\"find\", \".\"]\n",
        "[tools.abs]\ncommand = [\"./bin/missing\"]\n",
        "[tools.own_path]\ncommand = [\"find\"]\nenv = { PATH = \"/mcp-manifest-nowhere\" }\n",
        "[templates.cmd]\nuri = \"cmd://{x}\"\ncommand = [\"mcp-manifest-no-such-either\", \"{x}\"]\n",
    ));
    let path = std::env::var("PATH").unwrap_or_default();
    let root = f.root();
    assert_eq!(
        lines,
        [
            format!("bad.toml:2:12: warning: [tools.gone]: program `mcp-manifest-surely-no-such-program` is not on the tools' PATH (`{path}`); install it, give its absolute path, or add its folder to PATH"),
            format!("bad.toml:6:12: warning: [tools.abs]: program `{}` does not exist", root.join("bin").join("missing").display()),
            "bad.toml:8:12: warning: [tools.own_path]: program `find` is not on the tools' PATH (`/mcp-manifest-nowhere`); install it, give its absolute path, or add its folder to PATH".to_owned(),
            format!("bad.toml:12:12: warning: [templates.cmd]: program `mcp-manifest-no-such-either` is not on the tools' PATH (`{path}`); install it, give its absolute path, or add its folder to PATH"),
        ]
    );
}

#[test]
fn an_include_matching_no_file_is_a_warning() {
    let f = fixture();
    f.write("docs/drafts/b.md", "b\n");
    f.write("docs/.hidden.rst", "h\n");
    let lines = f.check_lines(
        "[files.docs]\nroot = \"docs\"\ninclude = [\"**/*.md\", \"**/*.rst\", \"drafts/*.md\"]\nexclude = [\"drafts/**\"]\n",
    );
    let root = f.path("docs");
    assert_eq!(
        lines,
        [
            format!(
                "bad.toml:3:23: warning: [files.docs] include `**/*.rst` matches no file under `{}` (after `exclude`, hidden files and ignore rules)",
                root.display()
            ),
            format!(
                "bad.toml:3:35: warning: [files.docs] include `drafts/*.md` matches no file under `{}` (after `exclude`, hidden files and ignore rules)",
                root.display()
            ),
        ]
    );
}

#[test]
fn overlapping_sources_are_a_warning() {
    let f = fixture();
    f.write("docs/sub/b.md", "b\n");
    // Roots one inside the other whose globs keep them apart do not overlap.
    assert_eq!(
        f.check_lines(
            "[files.top]\nroot = \".\"\ninclude = [\"*.toml\"]\n[files.docs]\nroot = \"docs\"\n"
        ),
        Vec::<String>::new()
    );
    let lines = f.check_lines(concat!(
        "[files.all]\nroot = \".\"\n",
        "[files.docs]\nroot = \"docs\"\n",
        "[files.sub]\nroot = \"docs/sub\"\n",
        "[templates.one]\nuri = \"notes://{topic}\"\nfile = \"docs/{topic}.md\"\n",
        "[templates.two]\nuri = \"notes://{name}\"\nfile = \"docs/sub/{name}.md\"\n",
        "[git.repo]\npath = \".\"\n",
        "[templates.shadow]\nuri = \"git://repo/mine/{x}\"\nfile = \"docs/{x}.md\"\n",
    ));
    let w: Vec<String> = warnings(&lines)
        .into_iter()
        .map(|l| match l.split_once(" (`") {
            // Template warnings: cut the other template's URI and the explanation.
            Some((head, _)) if l.contains("[templates.") => head.to_owned(),
            _ => l.to_string(),
        })
        .collect();
    // The file's path as the platform writes it.
    let a = f.root().join("docs").join("a.md");
    let b = f.root().join("docs").join("sub").join("b.md");
    assert_eq!(
        w,
        [
            format!("bad.toml:4:8: warning: [files.docs] overlaps [files.all]: both serve `{}` (and maybe more); a file both serve is listed once, under [files.all], and read with its rules", a.display()),
            format!("bad.toml:6:8: warning: [files.sub] overlaps [files.all]: both serve `{}` (and maybe more); a file both serve is listed once, under [files.all], and read with its rules", b.display()),
            format!("bad.toml:6:8: warning: [files.sub] overlaps [files.docs]: both serve `{}` (and maybe more); a file both serve is listed once, under [files.docs], and read with its rules", b.display()),
            "bad.toml:11:7: warning: [templates.two] URI `notes://{name}` matches the same URIs as [templates.one]".to_owned(),
            "bad.toml:16:7: warning: [templates.shadow] URI `git://repo/mine/{x}` overlaps [git.repo], which is asked first: a URI both could serve is read from [git.repo]".to_owned(),
        ],
        "{lines:#?}"
    );
}

#[test]
fn a_prompt_passing_slashes_into_a_simple_variable_is_a_warning() {
    let f = fixture();
    let text = |op: &str| {
        format!(
            "[templates.compare]\nuri = \"compare://main/{{{op}branch}}\"\ncommand = [\"find\", \"{{branch}}\"]\n\n[prompts.review]\nargs.branch = {{ required = true }}\nmessages = [{{ role = \"user\", resource = \"compare://main/{{branch}}\" }}]\n"
        )
    };
    assert_eq!(
        f.check_lines(&text("")),
        [
            "bad.toml:7:41: warning: prompt `review` passes argument `branch` into `{branch}` of `compare://main/{branch}`, which cannot hold `/`: a value such as `feature/x` is not found; write `{+branch}` in the template's `uri` to accept `/`"
        ]
    );
    assert_eq!(f.check_lines(&text("+")), Vec::<String>::new());
}

#[test]
fn a_prompt_embedding_a_uri_no_source_serves_is_an_error() {
    let f = fixture();
    let lines = f.diagnose(concat!(
        "[files.docs]\nroot = \"docs\"\n",
        "[prompts.bad]\nargs.x = { required = true }\n",
        "messages = [{ role = \"user\", resource = \"nothing://{x}\" }, { role = \"user\", resource = \"git://repo/log\" }]\n",
        "[prompts.good]\nargs.path = { required = true }\n",
        "messages = [{ role = \"user\", resource = \"file://{path}\" }]\n",
    ));
    assert_eq!(
        lines,
        [
            "bad.toml:5:41: prompt `bad` embeds `nothing://{x}`, which no source of this manifest can serve (no resource or template matches it)",
            "bad.toml:5:88: prompt `bad` embeds `git://repo/log`, which no source of this manifest can serve (no resource or template matches it)",
        ]
    );
    // With a source set aside for its own problem, "no source" would be a guess: not said.
    let lines = f.diagnose(concat!(
        "[git.repo]\npath = \"not-a-repo\"\n",
        "[prompts.p]\nmessages = [{ role = \"user\", resource = \"git://repo/log\" }]\n",
    ));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("bad.toml:2:8: "), "{lines:?}");
}

#[test]
fn the_binary_prints_warnings_denies_them_on_request_and_speaks_json() {
    let f = fixture();
    f.write(
        "mcp-server.toml",
        "[files.docs]\nroot = \"docs\"\ninclude = [\"**/*.rst\"]\n",
    );
    let root = f.path("docs");
    let warning = format!(
        "mcp-server.toml:3:12: warning: [files.docs] include `**/*.rst` matches no file under `{}` (after `exclude`, hidden files and ignore rules)",
        root.display()
    );

    let out = f.run(&["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().collect::<Vec<_>>(), [warning.as_str()]);
    assert!(
        stdout(&out).starts_with("mcp-server.toml: ok"),
        "{}",
        stdout(&out)
    );

    let out = f.run(&["check", "--deny-warnings"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).is_empty());
    assert_eq!(
        stderr(&out).lines().collect::<Vec<_>>(),
        [
            warning.as_str(),
            "mcp-server.toml: 1 warning found",
            "mcp-server.toml: failing because of --deny-warnings"
        ]
    );

    let out = f.run(&["check", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let json: Value = serde_json::from_str(&stdout(&out)).expect("one JSON value");
    assert_eq!(
        json,
        serde_json::json!([{
            "file": "mcp-server.toml",
            "line": 3,
            "column": 12,
            "severity": "warning",
            "message": format!("[files.docs] include `**/*.rst` matches no file under `{}` (after `exclude`, hidden files and ignore rules)", root.display()),
        }])
    );
    let out = f.run(&["check", "--json", "--deny-warnings"]);
    assert_eq!(out.status.code(), Some(1));

    // Errors and warnings together, in file order, as JSON.
    f.write(
        "mcp-server.toml",
        "[files.docs]\nroot = \"docs\"\ninclude = [\"**/*.rst\"]\n[tools.t]\ncommand = [\"echo\"]\ntimeout = 5\n",
    );
    let out = f.run(&["check", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let json: Value = serde_json::from_str(&stdout(&out)).expect("one JSON value");
    let severities: Vec<(&str, u64)> = json
        .as_array()
        .expect("an array")
        .iter()
        .map(|d| {
            (
                d["severity"].as_str().unwrap_or(""),
                d["line"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(severities, [("warning", 3), ("error", 6)]);
    // Without --json: both, and a summary counting each.
    let out = f.run(&["check"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.ends_with("mcp-server.toml: 1 error and 1 warning found\n"),
        "{err}"
    );
}

#[test]
fn serve_logs_warnings_and_serves() {
    let f = fixture();
    f.manifest("[files.docs]\nroot = \"docs\"\ninclude = [\"**/*.rst\"]\n");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let out = {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let mut child = Command::new(crate::support::BIN)
            .arg("serve")
            .current_dir(f.root())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn serve");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(format!("{init}\n").as_bytes())
            .expect("write");
        drop(stdin);
        child.wait_with_output().expect("output")
    };
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: [files.docs] include `**/*.rst` matches no file"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("\"id\":1"), "{}", stdout(&out));
}
