//! `[prompts.NAME]`: the section's checks.

use super::raw::{self, Key};
use super::{Checker, Message, MessageContent, Prompt, PromptArg};

impl Checker<'_> {
    pub(crate) fn prompt(&mut self, key: &Key, p: &raw::RawPrompt, files: &[&str]) -> Prompt {
        let name = key.get().clone();
        let args = p
            .args
            .iter()
            .map(|(k, a)| PromptArg {
                name: k.get().clone(),
                description: Self::text(&a.description),
                required: a.required.unwrap_or(false),
                completions: a
                    .completions
                    .iter()
                    .flatten()
                    .map(|c| c.get().clone())
                    .collect(),
                default: Self::text(&a.default),
                complete_from: Self::text(&a.complete_from),
            })
            .collect();
        for a in p.args.values() {
            if let Some(src) = &a.complete_from
                && !files.contains(&src.get().as_str())
            {
                self.err(src, unknown_files_source(&name, src.get(), files));
            }
        }
        let mut messages = Vec::new();
        for m in &p.messages {
            let (content, content_loc) = match (&m.text, &m.resource, &m.file) {
                (Some(t), None, None) => (MessageContent::Text(t.get().clone()), self.loc(t)),
                (None, Some(r), None) => (MessageContent::Resource(r.get().clone()), self.loc(r)),
                (None, None, Some(f)) => {
                    if !files.contains(&f.source.get().as_str()) {
                        self.err(
                            &f.source,
                            unknown_files_source(&name, f.source.get(), files),
                        );
                    }
                    let content = MessageContent::File {
                        source: f.source.get().clone(),
                        path: f.path.get().clone(),
                    };
                    (content, self.loc(&f.path))
                }
                _ => {
                    self.err(
                        &m.role,
                        format!(
                            "a message of prompt `{name}` needs exactly one of `text`, `resource` or `file`"
                        ),
                    );
                    continue;
                }
            };
            messages.push(Message {
                role: *m.role.get(),
                content,
                content_loc,
            });
        }
        if p.messages.is_empty() {
            self.err(key, format!("prompt `{name}` has no `messages`"));
        }
        Prompt {
            description: Self::text(&p.description),
            title: Self::text(&p.title),
            args,
            messages,
            name,
        }
    }
}

/// The error for a prompt naming a `[files]` source that does not exist.
fn unknown_files_source(prompt: &str, given: &str, files: &[&str]) -> String {
    if files.is_empty() {
        format!("prompt `{prompt}`: no [files] source `{given}` (this manifest has none)")
    } else {
        let known: Vec<String> = files.iter().map(|f| format!("`{f}`")).collect();
        format!(
            "prompt `{prompt}`: no [files] source `{given}`; the sources are: {}",
            known.join(", ")
        )
    }
}
