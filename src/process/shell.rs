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
                // `/s /c "…"`: cmd drops the outer quotes and runs the rest as it is.
                args: vec![format!("/d /v:on /s /c \"{script}\"")],
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

    /// A parameter written where this shell would splice its value into the script text before
    /// parsing it (`cmd`'s `%name%`): the message, for each such place.
    pub fn splices(self, script: &str, declared: &[String]) -> Vec<String> {
        if self != Shell::Cmd {
            return Vec::new();
        }
        let lower = script.to_ascii_lowercase();
        declared
            .iter()
            .filter(|name| lower.contains(&format!("%{}%", name.to_ascii_lowercase())))
            .map(|name| {
                format!(
                    "`%{name}%` in a `cmd` script is expanded before the line is parsed (a value's `&` or `|` would run); write `!{name}!`"
                )
            })
            .collect()
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
        assert_eq!(Shell::Cmd.splices("echo %name% !name!", &declared).len(), 1);
        assert!(Shell::Cmd.splices("echo !Name!", &declared).is_empty());
        assert!(Shell::Sh.splices("echo %Name%", &declared).is_empty());
    }
}
