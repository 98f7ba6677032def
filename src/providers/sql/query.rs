//! Statements and named queries, whatever the engine: the text checks of a manifest's SQL (one
//! reading statement, its `:name` parameters exactly the declared ones, rewritten for the
//! engine's placeholders), the declared parameters of a named query (`Params`), and the values
//! a URI's query string gives them.

use std::sync::Arc;

use super::text::{self, Dialect, Names};
use crate::manifest::{self, Diagnostics, Loc, ParamType};
use crate::params::{Noun, Params, Typed};
use crate::providers::RequestError;
use crate::quote::{Quote, quote};

/// A checked statement: a named query's or a `sql` template's.
#[derive(Debug, Clone)]
pub(crate) struct Statement {
    /// `[postgres.crm.queries.open]` or `[templates.deal]`, for messages.
    pub context: String,
    /// The SQL with its `:name` parameters rewritten as the engine's placeholders.
    pub sql: Arc<str>,
    /// `binds[i]`: which value (an index into the values, in declared order) the `i`-th
    /// placeholder takes.
    pub binds: Vec<usize>,
    /// The declared type of each value (a template's variables are strings).
    pub types: Vec<ParamType>,
    /// Where the SQL is written.
    pub loc: Loc,
}

impl Statement {
    /// Checks `sql` as one reading statement of `dialect` whose `:name` parameters are exactly
    /// `declared` (name and type, in binding order) and rewrites it; every problem is reported at
    /// `loc`, prefixed with `context`.
    pub(crate) fn check(
        dialect: Dialect,
        context: &str,
        sql: &str,
        loc: Loc,
        declared: &[(&str, ParamType)],
        names: Names<'_>,
        diags: &mut Diagnostics,
    ) -> Option<Statement> {
        let declared_names: Vec<&str> = declared.iter().map(|(n, _)| *n).collect();
        match text::bind_by_name_in(dialect, sql, &declared_names) {
            Ok(named) => Some(Statement {
                context: context.to_owned(),
                sql: named.sql.into(),
                binds: named.binds,
                types: declared.iter().map(|(_, t)| *t).collect(),
                loc,
            }),
            Err(problems) => {
                for p in problems {
                    diags.push(
                        loc,
                        format!(
                            "{context} {}",
                            text::problem_message(dialect, &p, &declared_names, names)
                        ),
                    );
                }
                None
            }
        }
    }

    /// The values in placeholder order (`binds`).
    pub(crate) fn bound<'a>(&'a self, args: &'a [Typed]) -> impl Iterator<Item = &'a Typed> {
        self.binds
            .iter()
            .map(|&i| args.get(i).unwrap_or(&Typed::Null))
    }
}

/// A checked named query: its statement and its parameters in binding order.
#[derive(Debug)]
pub(crate) struct NamedQuery {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) statement: Statement,
    pub(crate) params: Params,
    /// Its tool (`template_tools`), if any.
    pub(crate) tool: Option<String>,
}

impl NamedQuery {
    /// Checks a manifest's query: its parameters (`query_params`) and its SQL.
    pub(crate) fn check(
        dialect: Dialect,
        section: &str,
        source: &str,
        q: &manifest::Query,
        diags: &mut Diagnostics,
    ) -> Option<NamedQuery> {
        let context = format!("[{section}.{source}.queries.{}]", q.name);
        let params = query_params(&context, &q.params, diags);
        let declared: Vec<(&str, ParamType)> =
            q.params.iter().map(|p| (p.name.as_str(), p.ty)).collect();
        let statement = Statement::check(
            dialect,
            &context,
            &q.sql,
            q.sql_loc,
            &declared,
            Names::QueryParams,
            diags,
        )?;
        Some(NamedQuery {
            name: q.name.clone(),
            description: q.description.clone(),
            statement,
            params: params?,
            tool: q.tool.clone(),
        })
    }

    /// The bound values for a query string: every declared parameter converted to its type and
    /// checked, defaults for the missing ones; unknown, repeated or missing required ones are
    /// errors.
    pub(crate) fn arguments(&self, query: &str) -> Result<Vec<Typed>, RequestError> {
        let mut given: Vec<(String, String)> = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let decoded = crate::uri::percent_decode(k).zip(crate::uri::percent_decode(v));
            let Some((key, value)) = decoded else {
                return Err(RequestError::InvalidParams(format!(
                    "query `{}`: {} is not a valid percent-encoded parameter",
                    self.name,
                    quote(pair, Quote::Code)
                )));
            };
            given.push((key, value));
        }
        self.params.bind_text(&given).map_err(|problems| {
            RequestError::InvalidParams(format!("query `{}`: {}", self.name, problems.join("; ")))
        })
    }
}

/// Checks the declared parameters of a query: SQL can bind strings, integers, numbers and
/// booleans, not arrays. `None` after reporting problems.
pub(crate) fn query_params(
    context: &str,
    params: &[manifest::Param],
    diags: &mut Diagnostics,
) -> Option<Params> {
    let mut ok = true;
    for p in params {
        if p.ty == ParamType::Array {
            diags.push(
                p.loc,
                format!(
                    "{context} parameter `{}` is an array; SQL parameters are string, integer, number or boolean",
                    p.name
                ),
            );
            ok = false;
        }
    }
    if !ok {
        return None;
    }
    match Params::new(params, Noun::Parameter) {
        Ok(p) => Some(p),
        Err(errors) => {
            for (loc, m) in errors {
                diags.push(loc, format!("{context} {m}"));
            }
            None
        }
    }
}
