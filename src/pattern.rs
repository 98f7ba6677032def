//! A parameter's `pattern` (Rust `regex` syntax), compiled once per text: a leaf module, so
//! the manifest's checks and the typed parameters (`params`) both use it without importing
//! each other.

use std::collections::HashMap;

/// A parameter's `pattern` (Rust `regex` syntax), compiled to test whole values.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    text: String,
    regex: regex_automata::meta::Regex,
}

impl Pattern {
    /// Compiles `text`, or says what is wrong with it (`regex`'s own message). The same engine
    /// as `regex::Regex` without the full DFA, which `regex` builds for every small pattern:
    /// most of the load time of a manifest with many patterns. The lazy DFA tests a value as
    /// fast.
    ///
    /// Compiled once per text for the process (`BUILT`, at most `BUILT_MAX` kept): a manifest is
    /// checked, then built, and every pattern was compiled three times; a pattern repeated
    /// across tools and templates (`^[a-z0-9-]+$`) is compiled once, and its clones share the
    /// compiled program.
    pub fn new(text: &str) -> Result<Pattern, String> {
        static BUILT: std::sync::Mutex<Option<HashMap<String, regex_automata::meta::Regex>>> =
            std::sync::Mutex::new(None);
        /// Kept compiled patterns, at most (a few KiB each); all are dropped when one more comes.
        const BUILT_MAX: usize = 256;
        let built = || -> std::sync::MutexGuard<'_, _> {
            BUILT
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some(regex) = built().as_ref().and_then(|m| m.get(text)) {
            return Ok(Pattern {
                text: text.to_owned(),
                regex: regex.clone(),
            });
        }
        let compiled = regex_automata::meta::Regex::builder()
            .configure(
                regex_automata::meta::Regex::config()
                    .dfa(false)
                    .onepass(false),
            )
            .build(text);
        match compiled {
            Ok(regex) => {
                let mut kept = built();
                let kept = kept.get_or_insert_with(HashMap::new);
                if kept.len() >= BUILT_MAX {
                    kept.clear();
                }
                kept.insert(text.to_owned(), regex.clone());
                Ok(Pattern {
                    text: text.to_owned(),
                    regex,
                })
            }
            // The message users know (the same parser and limits made it fail).
            Err(e) => Err(regex::Regex::new(text)
                .err()
                .map_or_else(|| e.to_string(), |e| e.to_string())),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn is_match(&self, value: &str) -> bool {
        self.regex.is_match(value)
    }
}

#[cfg(test)]
mod tests {
    use super::Pattern;

    /// Patterns are compiled once per text and kept (at most `BUILT_MAX`): more distinct ones
    /// than that, each asked twice, still each match what they say, and a bad one still gets
    /// `regex`'s message.
    #[test]
    fn kept_patterns_match_what_they_say() {
        for round in 0..2 {
            for i in 0..300 {
                let p = Pattern::new(&format!("^a{i}b$")).expect("compiles");
                assert_eq!(p.as_str(), format!("^a{i}b$"));
                assert!(p.is_match(&format!("a{i}b")), "{i} (round {round})");
                assert!(!p.is_match(&format!("a{}b", i + 1)), "{i} (round {round})");
            }
        }
        let e = Pattern::new("(unclosed").expect_err("a bad pattern");
        assert!(e.contains("unclosed"), "{e}");
    }
}
