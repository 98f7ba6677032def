//! A manifest tool (`[tools.NAME]`): checked against its parameters when the registry is built,
//! listed as a `ToolInfo`, and called: arguments → argv or environment → `process::run` → result.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value as Json};

use crate::argv::{self, Argv, Piece};
use crate::manifest::expand::{format_duration, format_size};
use crate::manifest::{self, Diagnostics, Exec, OutputKind};
use crate::params::{Noun, Params};
use crate::process::{self, Children, Ending, ProcessOutcome, ProcessSpec};
use crate::tools::output_schema::OutputSchema;
use crate::tools::{CallContext, Hints, ToolContent, ToolInfo, ToolResult};

/// Lines of stderr quoted in an error result.
const STDERR_LINES: usize = 20;

/// A tool ready to be called.
pub(crate) struct ShellTool {
    def: manifest::Tool,
    children: Arc<Children>,
    params: Params,
    exec: Compiled,
    output_schema: Option<OutputSchema>,
    info: ToolInfo,
}

enum Compiled {
    Argv(Argv),
    Script(String, process::Shell),
}

impl fmt::Debug for ShellTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShellTool")
            .field("name", &self.def.name)
            .finish_non_exhaustive()
    }
}

impl ShellTool {
    /// Checks what needs more than the manifest text: placeholders against the parameters, the
    /// working directory, the output schema. Problems go to `diags` with the manifest's place.
    pub fn build(
        def: &manifest::Tool,
        children: &Arc<Children>,
        diags: &mut Diagnostics,
    ) -> Option<ShellTool> {
        let name = &def.name;
        let before = diags.items.len();
        let params = match Params::new(&def.params, Noun::Argument) {
            Ok(p) => Some(p),
            Err(errors) => {
                for (loc, m) in errors {
                    diags.push(loc, format!("tool `{name}`: {m}"));
                }
                None
            }
        };
        let declared = params.as_ref().map(Params::declared).unwrap_or_default();
        let exec = match &def.exec {
            Exec::Command(items) => match Argv::compile(items, &declared, "parameter") {
                Ok(a) => Some(Compiled::Argv(a)),
                Err(errors) => {
                    for (loc, m) in errors {
                        diags.push(loc, format!("tool `{name}`: {m}"));
                    }
                    None
                }
            },
            Exec::Run(script, loc, shell) => {
                let names: Vec<String> = declared.iter().map(|(n, _)| n.clone()).collect();
                for m in spliced_params(script, &declared)
                    .into_iter()
                    .chain(shell.mistakes(script, &names))
                {
                    diags.push(*loc, format!("tool `{name}`: {m}"));
                }
                Some(Compiled::Script(script.clone(), *shell))
            }
        };
        if !def.cwd.is_dir() {
            diags.push(
                def.cwd_loc,
                format!(
                    "tool `{name}`: working directory `{}` does not exist or is not a folder",
                    def.cwd.display()
                ),
            );
        }
        let output_schema = match &def.output_schema {
            Some((schema, loc)) => match OutputSchema::compile(schema) {
                Ok(v) => Some(v),
                Err(e) => {
                    diags.push(
                        *loc,
                        format!("tool `{name}`: `output_schema` is not a valid JSON Schema: {e}"),
                    );
                    None
                }
            },
            None => None,
        };
        let (Some(params), Some(exec)) = (params, exec) else {
            return None;
        };
        if diags.items.len() > before {
            return None;
        }
        let info = ToolInfo {
            name: def.name.clone(),
            title: def.title.clone(),
            description: def.description.clone(),
            input_schema: params.input_schema(),
            output_schema: def.output_schema.as_ref().and_then(|(s, _)| match s {
                Json::Object(m) => Some(m.clone()),
                _ => None,
            }),
            hints: Hints {
                read_only: def.read_only,
                destructive: def.destructive,
                idempotent: def.idempotent,
                open_world: def.open_world,
            },
            view: None,
        };
        Some(ShellTool {
            def: def.clone(),
            children: children.clone(),
            params,
            exec,
            output_schema,
            info,
        })
    }

    pub fn info(&self) -> &ToolInfo {
        &self.info
    }

    pub fn name(&self) -> &str {
        &self.def.name
    }

    /// Calls the tool. Every failure is an `is_error` result whose text says what happened.
    pub async fn call(&self, args: &Map<String, Json>, cx: CallContext) -> ToolResult {
        let values: HashMap<String, argv::Value> = match self.params.bind_json(args) {
            Ok(v) => v.into_iter().map(|(k, t)| (k, t.to_argv())).collect(),
            Err(problems) => {
                return ToolResult::error(format!("invalid arguments:\n{}", problems.join("\n")));
            }
        };
        if let Some(name) = argv::with_nul(&values) {
            return ToolResult::error(format!(
                "invalid arguments:\nargument `{name}` holds a NUL character, which cannot be passed to a program"
            ));
        }
        let spec = match self.spec(&values) {
            Ok(spec) => spec,
            Err(dash) => {
                return ToolResult::error(format!(
                    "invalid arguments:\n{}",
                    dash.message("argument")
                ));
            }
        };
        if let Some(why) = argv::too_large(&spec.program, &spec.args, &spec.env) {
            return ToolResult::error(format!(
                "invalid arguments:\nthe arguments are too large to pass to a program: {why}"
            ));
        }
        match process::run(spec, cx.cancel, cx.progress).await {
            Ok(outcome) => self.result(outcome),
            Err(e) => ToolResult::error(format!("tool `{}` could not start: {e}", self.def.name)),
        }
    }

    /// What to run for `values`; a value that would become an option is refused.
    fn spec(&self, values: &HashMap<String, argv::Value>) -> Result<ProcessSpec, argv::DashValue> {
        let mut env = self.def.env.clone();
        let (program, args, raw_args) = match &self.exec {
            Compiled::Argv(a) => (
                a.program().to_owned(),
                a.args(values, &|name| self.params.allows_dash(name))?,
                false,
            ),
            Compiled::Script(script, shell) => {
                // Parameters reach the script only as environment variables, never as text.
                for (name, _) in self.params.declared() {
                    match values.get(&name) {
                        Some(v) => env.push((name, v.joined())),
                        // An inherited variable of the same name must not pose as the argument.
                        None => env.push((name, String::new())),
                    }
                }
                let c = shell.command(script, &self.def.name);
                (c.program, c.args, c.raw)
            }
        };
        Ok(ProcessSpec {
            program,
            args,
            raw_args,
            cwd: self.def.cwd.clone(),
            env,
            timeout: self.def.timeout,
            max_output: self.def.max_output,
            children: self.children.clone(),
        })
    }

    fn result(&self, o: ProcessOutcome) -> ToolResult {
        let name = &self.def.name;
        let stdout = text_of(o.stdout);
        let what = match o.ending {
            Ending::Exited(code) if self.def.ok_exit_codes.contains(&code) => {
                return self.success(stdout);
            }
            e @ (Ending::Exited(_) | Ending::Signaled(_)) => {
                format!("tool `{name}` failed: {}", e.describe())
            }
            Ending::TimedOut => format!(
                "tool `{name}` timed out after {}; its processes were killed",
                format_duration(self.def.timeout)
            ),
            Ending::Cancelled => format!("tool `{name}` was cancelled; its processes were killed"),
            Ending::OutputCut => {
                let marker = format!(
                    "[output cut: tool `{name}` wrote more than {} to stdout; the rest was dropped and its processes were stopped]",
                    format_size(self.def.max_output)
                );
                let mut text = stdout;
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&marker);
                return ToolResult::error(text);
            }
        };
        let mut text = what;
        let tail = stderr_tail(&o.stderr_tail);
        if !tail.is_empty() {
            text.push_str(&format!("\n\nstderr (last lines):\n{tail}"));
        }
        if !stdout.trim().is_empty() {
            text.push_str(&format!("\n\nstdout:\n{}", stdout.trim_end()));
        }
        ToolResult::error(text)
    }

    fn success(&self, stdout: String) -> ToolResult {
        // Empty stdout is an empty text (grep finding nothing), unless an output schema
        // promises structured content.
        if self.def.output != OutputKind::Json
            || (stdout.trim().is_empty() && self.output_schema.is_none())
        {
            return ToolResult::text(stdout);
        }
        let name = &self.def.name;
        let value: Json = match serde_json::from_str(stdout.trim()) {
            Ok(v) => v,
            Err(e) => {
                return ToolResult::error(format!(
                    "tool `{name}` should print JSON (output = \"json\"), but its output is not JSON: {e}\n\nstdout:\n{}",
                    clip(&stdout, 4000)
                ));
            }
        };
        // Structured content is a JSON object; anything else is wrapped as `{"result": …}`.
        let structured = match value {
            Json::Object(_) => value,
            other => serde_json::json!({ "result": other }),
        };
        if let Some(v) = &self.output_schema {
            let problems = v.problems(&structured, 10);
            if !problems.is_empty() {
                return ToolResult::error(format!(
                    "tool `{name}` printed JSON that does not match its output_schema:\n{}\n\nstdout:\n{}",
                    problems.join("\n"),
                    clip(&stdout, 4000)
                ));
            }
        }
        ToolResult {
            content: vec![ToolContent::Text(structured.to_string())],
            structured: Some(structured),
            is_error: false,
        }
    }
}

/// `{param}` written in a `run` script (not `${param}`, which is the shell's own syntax): it would
/// look like a splice, but parameters only ever arrive as environment variables.
fn spliced_params(script: &str, declared: &[(String, argv::Kind)]) -> Vec<String> {
    let pieces = argv::parse(script);
    let mut out = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        let Piece::Var(v) = p else { continue };
        let after_dollar = i > 0 && matches!(&pieces[i - 1], Piece::Lit(l) if l.ends_with('$'));
        if !after_dollar && declared.iter().any(|(n, _)| n == v) {
            out.push(format!(
                "`{{{v}}}` in `run`: parameters are never spliced into the script; they arrive as environment variables: write \"${v}\" (or \"$${{{v}}}\" for the braced form)"
            ));
        }
    }
    out
}

/// Output as text: invalid UTF-8 becomes U+FFFD, except a sequence cut short at the end (by the
/// output cap), which is dropped.
fn text_of(mut bytes: Vec<u8>) -> String {
    if let Err(e) = std::str::from_utf8(&bytes)
        && e.error_len().is_none()
    {
        bytes.truncate(e.valid_up_to());
    }
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

fn stderr_tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let start = lines.len().saturating_sub(STDERR_LINES);
    lines[start..].join("\n")
}

fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &s[..end], s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_drops_a_sequence_cut_at_the_end() {
        assert_eq!(text_of("aé".as_bytes()[..2].to_vec()), "a");
        assert_eq!(text_of(b"a\xffb".to_vec()), "a\u{fffd}b");
        assert_eq!(text_of("日本".as_bytes().to_vec()), "日本");
    }

    #[test]
    fn run_scripts_may_not_splice_parameters() {
        let declared = vec![("count".to_owned(), argv::Kind::One)];
        assert_eq!(
            spliced_params("echo \"$count\" ${count}", &declared).len(),
            0
        );
        assert_eq!(spliced_params("echo {{count}} {other}", &declared).len(), 0);
        let errs = spliced_params("git log -n {count}", &declared);
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("`{count}` in `run`"), "{errs:?}");
    }
}
