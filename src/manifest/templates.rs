//! `[templates.NAME]`: the section's checks.

use indexmap::IndexMap;

use super::raw::{self, Key, Sp};
use super::{Checker, Loc, Template, TemplateBackend};

impl Checker<'_> {
    pub(crate) fn template(
        &mut self,
        key: &Key,
        t: &raw::RawTemplate,
        db_refs: &[(&'static str, Sp<String>)],
        declared: &[(&'static str, Vec<String>)],
    ) -> Template {
        use super::sql;
        let name = key.get().clone();
        let backends = [
            t.file.is_some(),
            !db_refs.is_empty() || t.sql.is_some(),
            t.command.is_some(),
        ];
        let count = backends.iter().filter(|b| **b).count();
        if count != 1 {
            self.err(
                key,
                format!(
                    "template `{name}` needs exactly one backend: `file`, {}, or `command` (found {count})",
                    sql::backend_keys()
                ),
            );
        }
        let not_with = |this: &mut Self, field: &str, present: bool, backend: &str| {
            if present {
                this.err(
                    key,
                    format!("`{field}` only applies to the `{backend}` backend"),
                );
            }
        };
        if t.file.is_none() {
            not_with(self, "root", t.root.is_some(), "file");
            not_with(self, "hidden", t.hidden.is_some(), "file");
            not_with(self, "gitignore", t.gitignore.is_some(), "file");
        }
        if t.command.is_none() {
            not_with(self, "cwd", t.cwd.is_some(), "command");
            not_with(self, "env", !t.env.is_empty(), "command");
            not_with(self, "timeout", t.timeout.is_some(), "command");
            not_with(self, "max_output", t.max_output.is_some(), "command");
        }
        let backend = if let Some(file) = &t.file {
            TemplateBackend::File {
                path: file.get().clone(),
                path_loc: self.loc(file),
                root: t
                    .root
                    .as_ref()
                    .map_or_else(|| self.dir.to_path_buf(), |r| self.path(r.get())),
                hidden: t.hidden.unwrap_or(false),
                gitignore: t.gitignore.unwrap_or(true),
                manifest: self.path.to_path_buf(),
            }
        } else if let Some(argv) = &t.command {
            TemplateBackend::Command(self.command(
                argv,
                key,
                &t.cwd,
                &t.env,
                &t.timeout,
                &t.max_output,
            ))
        } else {
            let db = sql::template_source(self, &name, db_refs, declared);
            let nothing = || TemplateBackend::File {
                path: String::new(),
                path_loc: Loc::default(),
                root: self.dir.to_path_buf(),
                hidden: false,
                gitignore: true,
                manifest: self.path.to_path_buf(),
            };
            match (db, &t.sql) {
                (Some((section, src)), Some(sql)) => TemplateBackend::Sql {
                    section,
                    source: src.get().clone(),
                    sql: sql.get().clone(),
                    sql_loc: self.loc(sql),
                },
                (Some((section, src)), None) => {
                    self.err(
                        &src,
                        format!("template `{name}` has `{section}` but no `sql`"),
                    );
                    nothing()
                }
                (None, Some(sql)) => {
                    self.err(
                        sql,
                        format!(
                            "template `{name}` has `sql` but no {} source",
                            sql::either_key()
                        ),
                    );
                    nothing()
                }
                (None, None) => nothing(),
            }
        };
        let mut completions = IndexMap::new();
        let mut completions_loc = IndexMap::new();
        for (var, values) in &t.completions {
            completions.insert(
                var.get().clone(),
                values.iter().map(|v| v.get().clone()).collect(),
            );
            completions_loc.insert(var.get().clone(), self.loc(var));
        }
        let vars = t
            .vars
            .iter()
            .map(|(k, p)| (self.param(k, p), p.required))
            .collect();
        Template {
            vars,
            tool: None,
            name,
            loc: self.loc(key),
            uri: t.uri.get().clone(),
            uri_loc: self.loc(&t.uri),
            description: Self::text(&t.description),
            mime_type: Self::text(&t.mime_type),
            backend,
            completions,
            completions_loc,
        }
    }
}
