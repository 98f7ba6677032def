//! The shells a `run` script runs in (`[tools.NAME] shell`), and how each is started: the script
//! is the manifest's text, and the tool's parameters reach it only as environment variables,
//! never spliced into it.

use base64::Engine as _;
use schemars::JsonSchema;
use serde::Deserialize;

/// `shell = "sh" | "cmd" | "powershell" | "pwsh"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Shell {
    /// `sh -c SCRIPT NAME`: parameters as `"$name"`.
    Sh,
    /// `cmd /d /v:on /s /c "SCRIPT"` (Windows): parameters as `!name!`, expanded after the
    /// line is parsed (`%name%` is expanded before, where a value's `&` would run).
    Cmd,
    /// Windows PowerShell, `-EncodedCommand`: parameters as `$env:name`.
    Powershell,
    /// PowerShell 7 (`pwsh`), `-EncodedCommand`: parameters as `$env:name`.
    Pwsh,
}

/// How a script is started: a program, its arguments, and whether the arguments are the
/// command line as it is (Windows; `cmd` parses its own line) rather than argv to quote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptCommand {
    pub program: String,
    pub args: Vec<String>,
    pub raw: bool,
}

impl Shell {
    /// The shell `run` uses when the manifest names none: `sh`, except on Windows, where a
    /// manifest must choose (`None`).
    pub fn default_here() -> Option<Shell> {
        super::os::DEFAULT_SHELL
    }

    pub fn name(self) -> &'static str {
        match self {
            Shell::Sh => "sh",
            Shell::Cmd => "cmd",
            Shell::Powershell => "powershell",
            Shell::Pwsh => "pwsh",
        }
    }

    /// How `script` of the tool `name` is started in this shell.
    pub fn command(self, script: &str, name: &str) -> ScriptCommand {
        let program = self.name().to_owned();
        match self {
            Shell::Sh => ScriptCommand {
                program,
                args: vec!["-c".into(), script.into(), name.into()],
                raw: false,
            },
            Shell::Cmd => ScriptCommand {
                program,
                // `/s /c "…"`: cmd drops the outer quotes and runs the rest as it is. A line
                // break before or after the one line (TOML's `'''` strings end with one) would be
                // part of it.
                args: vec![format!(
                    "/d /v:on /s /c \"{}\"",
                    script.trim_matches(['\r', '\n'])
                )],
                raw: true,
            },
            Shell::Powershell | Shell::Pwsh => {
                let utf16: Vec<u8> = script.encode_utf16().flat_map(u16::to_le_bytes).collect();
                ScriptCommand {
                    program,
                    args: vec![
                        "-NoLogo".into(),
                        "-NoProfile".into(),
                        "-NonInteractive".into(),
                        "-EncodedCommand".into(),
                        base64::engine::general_purpose::STANDARD.encode(utf16),
                    ],
                    raw: false,
                }
            }
        }
    }

    /// What this shell would not run as written, a message for each: a parameter written where
    /// its value is spliced into the script text before parsing (`cmd`'s `%name%`), and a `cmd`
    /// script of several lines (`cmd /c` runs one command line: Windows' cmd ignores what follows
    /// the first line break, Wine's passes it on as text).
    pub fn mistakes(self, script: &str, declared: &[String]) -> Vec<String> {
        if self != Shell::Cmd {
            return Vec::new();
        }
        let lower = script.to_ascii_lowercase();
        let mut found: Vec<String> = declared
            .iter()
            .filter(|name| lower.contains(&format!("%{}%", name.to_ascii_lowercase())))
            .map(|name| {
                format!(
                    "`%{name}%` in a `cmd` script is expanded before the line is parsed (a value's `&` or `|` would run); write `!{name}!`"
                )
            })
            .collect();
        if script.trim_matches(['\r', '\n']).contains(['\n', '\r']) {
            found.push(
                "a `cmd` script is one line (`cmd /c` runs up to the first line break and ignores the rest); join its commands with `&` (or `&&` to stop at a failure)".into(),
            );
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_shell_gets_the_script_whole_and_values_never() {
        let sh = Shell::Sh.command("echo \"$x\"", "t");
        assert_eq!(sh.args, ["-c", "echo \"$x\"", "t"]);
        let cmd = Shell::Cmd.command("echo !x!", "t");
        assert!(cmd.raw);
        assert_eq!(cmd.args, ["/d /v:on /s /c \"echo !x!\""]);
        let ps = Shell::Pwsh.command("Write-Output $env:x", "t");
        let encoded = ps.args.last().unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap();
        let units: Vec<u16> = bytes
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(String::from_utf16(&units).unwrap(), "Write-Output $env:x");
        let declared = vec!["Name".to_owned()];
        assert_eq!(
            Shell::Cmd.mistakes("echo %name% !name!", &declared).len(),
            1
        );
        assert!(Shell::Cmd.mistakes("echo !Name!", &declared).is_empty());
        assert!(Shell::Sh.mistakes("echo %Name%", &declared).is_empty());
        // One line, with the line breaks around it dropped.
        assert_eq!(Shell::Cmd.mistakes("echo a\necho b", &[]).len(), 1);
        assert!(Shell::Cmd.mistakes("\necho a & echo b\r\n", &[]).is_empty());
        assert!(Shell::Sh.mistakes("echo a\necho b", &[]).is_empty());
        let cmd = Shell::Cmd.command("echo !x!\n", "t");
        assert_eq!(cmd.args, ["/d /v:on /s /c \"echo !x!\""]);
    }
}
