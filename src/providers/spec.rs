//! What a source says about its resource templates (`TemplateSpec`): the template, the
//! manifest entry, the tool's name and its arguments' rules. The registry lists the variables
//! from it and `tools::templates` serves each as a tool; the sources only describe.

use serde_json::{Value, json};

use crate::params::{Noun, Params};
use crate::uri::UriTemplate;

/// What a source says about one of its resource templates: enough to list its variables and
/// to serve it as a tool.
#[derive(Debug, Clone)]
pub(crate) struct TemplateSpec {
    pub uri: UriTemplate,
    /// The manifest entry (`[sqlite.shop.queries.top]`), for messages.
    pub entry: String,
    /// The tool's name (`None`: no tool, `template_tools = false` or `tool = false`).
    pub tool: Option<String>,
    /// The variables' rules, in the order the tool lists them (messages say "argument").
    pub args: Params,
    pub description: Option<String>,
    /// The content is the rows of a SQL statement (`{"columns", "rows", "truncated"}`), so the
    /// tool declares that `outputSchema`.
    pub rows: bool,
    /// `openWorldHint`: true for what runs a program.
    pub open_world: bool,
}

/// The variables of a template with their descriptions, for `list_resources`: the declared
/// ones from `spec` when there is one, else the template's own names.
pub(crate) fn variables(uri_template: &str, spec: Option<&TemplateSpec>) -> Vec<Value> {
    let described = |name: &str| {
        let mut v = json!({ "name": name });
        if let Some(d) = spec.and_then(|s| s.args.description(name)) {
            v["description"] = json!(d);
        }
        v
    };
    match spec {
        Some(s) => s.uri.variables().into_iter().map(described).collect(),
        None => match UriTemplate::parse(uri_template) {
            Ok(t) => t.variables().into_iter().map(described).collect(),
            Err(_) => Vec::new(),
        },
    }
}

/// Arguments that are required strings without other rules (a table name, a git rev), each
/// with its description.
pub(crate) fn string_args(args: &[(&str, &str)]) -> Option<Params> {
    let list: Vec<crate::manifest::Param> = args
        .iter()
        .map(|(name, description)| crate::manifest::Param {
            description: Some((*description).to_owned()),
            allow_dash: true,
            ..crate::manifest::Param::string(name, crate::manifest::Loc::default())
        })
        .collect();
    // No patterns, so nothing can fail to compile.
    Params::new(&list, Noun::Argument).ok()
}

/// A template parsed from text the source itself wrote (never fails for those; `None` if it
/// somehow does, and then there is no tool).
pub(crate) fn parse(uri: &str) -> Option<UriTemplate> {
    UriTemplate::parse(uri).ok()
}

/// The specs of a database source (`[sqlite.S]`, `[postgres.S]`): its table template (when
/// `table` is some: the template, its description and its tool) and one per named query (with
/// its template and description), whose parameters become the tool's arguments.
pub(crate) fn database_specs<'a>(
    section: &str,
    source: &str,
    table: Option<(String, String, Option<String>)>,
    queries: impl Iterator<Item = (&'a super::sql::NamedQuery, String, String)>,
) -> Vec<TemplateSpec> {
    let mut out = Vec::new();
    if let Some((template, description, tool)) = table
        && let (Some(uri), Some(args)) = (
            parse(&template),
            string_args(&[(
                "table",
                "A table or view name (its schema is the `schema` resource of this source)",
            )]),
        )
    {
        out.push(TemplateSpec {
            uri,
            entry: format!("[{section}.{source}]"),
            tool,
            args,
            description: Some(description),
            rows: true,
            open_world: false,
        });
    }
    for (q, template, description) in queries {
        let Some(uri) = parse(&template) else {
            continue;
        };
        out.push(TemplateSpec {
            uri,
            entry: format!("[{section}.{source}.queries.{}]", q.name),
            tool: q.tool.clone(),
            args: q.params.with_noun(Noun::Argument),
            description: Some(description),
            rows: true,
            open_world: false,
        });
    }
    out
}
