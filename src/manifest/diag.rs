//! Diagnostics: a manifest problem with its place, printed as `FILE:LINE:COL: message`.

use std::fmt;

/// A line and column in the manifest, both 1-based; the column counts characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Loc {
    pub line: usize,
    pub col: usize,
}

/// How bad a problem is: an error stops `check` and `serve`; a warning (what will fail or surprise
/// at run time) is printed by `check` and logged by `serve`, which still serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Severity {
    #[default]
    Error,
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// One problem found in a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub loc: Loc,
    pub message: String,
    pub severity: Severity,
}

/// Every problem found in one manifest, in file order.
#[derive(Debug, Clone, Default)]
pub struct Diagnostics {
    /// The manifest path as the user gave it (what gets printed).
    pub file: String,
    pub items: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn new(file: impl Into<String>) -> Self {
        Diagnostics {
            file: file.into(),
            items: Vec::new(),
        }
    }

    pub fn push(&mut self, loc: Loc, message: impl Into<String>) {
        self.items.push(Diagnostic {
            loc,
            message: message.into(),
            severity: Severity::Error,
        });
    }

    /// Adds a warning (see `Severity`). Keep warnings in a `Diagnostics` of their own while
    /// building: `is_empty` is how the builders ask "no errors so far".
    pub fn warn(&mut self, loc: Loc, message: impl Into<String>) {
        self.items.push(Diagnostic {
            loc,
            message: message.into(),
            severity: Severity::Warning,
        });
    }

    /// How many items are errors.
    pub fn errors(&self) -> usize {
        self.items
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count()
    }

    /// How many items are warnings.
    pub fn warnings(&self) -> usize {
        self.items.len() - self.errors()
    }

    /// Adds every item of `other`.
    pub fn extend(&mut self, other: Diagnostics) {
        self.items.extend(other.items);
    }

    /// The items as JSON objects, for `check --json`: `{"file", "line", "column", "severity",
    /// "message"}`, in file order.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Array(
            self.items
                .iter()
                .map(|d| {
                    serde_json::json!({
                        "file": self.file,
                        "line": d.loc.line,
                        "column": d.loc.col,
                        "severity": d.severity.as_str(),
                        "message": d.message,
                    })
                })
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Sorts by place and drops exact repeats, so the output reads top to bottom.
    pub fn finish(mut self) -> Self {
        self.items
            .sort_by_key(|d| (d.loc.line, d.loc.col, d.severity, d.message.clone()));
        self.items.dedup();
        self
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.items {
            let tag = match d.severity {
                Severity::Error => "",
                Severity::Warning => "warning: ",
            };
            writeln!(
                f,
                "{}:{}:{}: {tag}{}",
                self.file, d.loc.line, d.loc.col, d.message
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// Turns byte offsets in the manifest text into lines and columns.
#[derive(Debug, Clone)]
pub struct SourceMap {
    text: String,
    line_starts: Vec<usize>,
}

impl SourceMap {
    pub fn new(text: &str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        SourceMap {
            text: text.to_owned(),
            line_starts,
        }
    }

    pub fn loc(&self, offset: usize) -> Loc {
        let offset = offset.min(self.text.len());
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line];
        let col = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count());
        Loc {
            line: line + 1,
            col: col + 1,
        }
    }
}

/// The closest of `candidates` to `word`, when it is close enough to be a likely typo.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(word, c), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_lines_and_columns_in_characters() {
        let map = SourceMap::new("a = 1\nbé = \"x\"\n");
        assert_eq!(map.loc(0), Loc { line: 1, col: 1 });
        assert_eq!(map.loc(6), Loc { line: 2, col: 1 });
        // "bé = " is 6 bytes but 5 characters.
        assert_eq!(map.loc(12), Loc { line: 2, col: 6 });
    }

    #[test]
    fn suggests_close_words_only() {
        assert_eq!(
            did_you_mean("inlcude", ["root", "include", "exclude"]),
            Some("include")
        );
        assert_eq!(did_you_mean("zzz", ["root", "include"]), None);
    }
}
