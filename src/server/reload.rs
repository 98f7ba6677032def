//! What a manifest reload changed, said in one line at the default log level:
//! `reloaded: +2 resources, -1 tool (bye), prompts unchanged`.
//!
//! Each kind (resources, templates, tools, prompts) is compared by its key (URI or name) between
//! the registry before and after: what was added, removed, or kept under the same key with
//! another definition. A kind that neither registry serves is not mentioned.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use crate::manifest::Filter;

/// Names shown per added / removed / changed group before "…".
const NAMES_SHOWN: usize = 3;

/// What one registry serves, keyed for the comparison: each item's key and a value that
/// differs when its definition does.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Served {
    pub resources: Vec<(String, String)>,
    pub templates: Vec<(String, String)>,
    /// Each template's URI template, in `templates`' order (what a group's filter matches).
    pub template_uris: Vec<String>,
    pub tools: Vec<(String, String)>,
    pub prompts: Vec<(String, String)>,
}

impl Served {
    /// What `registry` serves now (its resources listed: a reload lists them anyway to decide
    /// `list_changed`).
    pub async fn of(registry: &crate::registry::Registry) -> Served {
        let resources = registry
            .list_resources()
            .await
            .unwrap_or_default()
            .into_iter()
            // What the listing says of it, not its size or time (a file's edit is not a reload's).
            .map(|r| {
                let what = format!("{:?}", (&r.name, &r.title, &r.description, &r.mime_type));
                (r.uri, what)
            })
            .collect();
        let (templates, template_uris) = registry
            .templates()
            .into_iter()
            .map(|t| ((t.name.clone(), format!("{t:?}")), t.uri_template.clone()))
            .unzip();
        let tools = registry
            .tools()
            .into_iter()
            .map(|t| (t.name.clone(), format!("{t:?}")))
            .collect();
        let prompts = registry
            .manifest
            .prompts
            .iter()
            // What a client sees of it, not where the manifest writes it.
            .map(|p| {
                let messages: Vec<_> = p.messages.iter().map(|m| (m.role, &m.content)).collect();
                let what = format!("{:?}", (&p.description, &p.title, &p.args, messages));
                (p.name.clone(), what)
            })
            .collect();
        Served {
            resources,
            templates,
            template_uris,
            tools,
            prompts,
        }
    }
}

/// Which lists an endpoint sees differently after a reload: `old` and `new` are what it shows
/// before and after (`None`: everything), so a reload that changes a group's patterns counts
/// as much as one that changes what the group matches. One filter test per item served.
pub(super) fn seen_changed(
    (before, old): (&Served, &Option<Arc<Filter>>),
    (after, new): (&Served, &Option<Arc<Filter>>),
) -> super::shared::ListChanged {
    /// Whether what `keep_old` keeps of `before` is what `keep_new` keeps of `after`.
    fn same<'a, T: PartialEq + 'a>(
        before: impl Iterator<Item = (&'a T, &'a str)>,
        keep_old: impl Fn(&str) -> bool,
        after: impl Iterator<Item = (&'a T, &'a str)>,
        keep_new: impl Fn(&str) -> bool,
    ) -> bool {
        let kept =
            |(item, key): (&'a T, &'a str), keep: &dyn Fn(&str) -> bool| keep(key).then_some(item);
        before
            .filter_map(|i| kept(i, &keep_old))
            .eq(after.filter_map(|i| kept(i, &keep_new)))
    }
    fn keyed(items: &[(String, String)]) -> impl Iterator<Item = (&(String, String), &str)> {
        items.iter().map(|item| (item, item.0.as_str()))
    }
    fn templates(s: &Served) -> impl Iterator<Item = (&(String, String), &str)> {
        s.templates
            .iter()
            .zip(&s.template_uris)
            .map(|(item, uri)| (item, uri.as_str()))
    }
    let resource = |f: &Option<Arc<Filter>>| {
        let f = f.clone();
        move |uri: &str| super::sees_resource(&f, uri)
    };
    let tool = |f: &Option<Arc<Filter>>| {
        let f = f.clone();
        move |name: &str| f.as_ref().is_none_or(|f| f.tool(name))
    };
    let prompt = |f: &Option<Arc<Filter>>| {
        let f = f.clone();
        move |name: &str| f.as_ref().is_none_or(|f| f.prompt(name))
    };
    super::shared::ListChanged {
        resources: !same(
            keyed(&before.resources),
            resource(old),
            keyed(&after.resources),
            resource(new),
        ) || !same(
            templates(before),
            resource(old),
            templates(after),
            resource(new),
        ),
        tools: !same(
            keyed(&before.tools),
            tool(old),
            keyed(&after.tools),
            tool(new),
        ),
        prompts: !same(
            keyed(&before.prompts),
            prompt(old),
            keyed(&after.prompts),
            prompt(new),
        ),
    }
}

/// One kind's items: key and definition.
type Keyed = [(String, String)];

/// One kind's difference.
#[derive(Debug, Default, PartialEq)]
struct Diff<'a> {
    added: Vec<&'a str>,
    removed: Vec<&'a str>,
    changed: Vec<&'a str>,
}

fn diff<'a>(old: &'a Keyed, new: &'a Keyed) -> Diff<'a> {
    let before: HashMap<&str, &str> = old.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let after: HashMap<&str, &str> = new.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut d = Diff::default();
    for (k, v) in new {
        match before.get(k.as_str()) {
            None => d.added.push(k),
            Some(was) if *was != v.as_str() => d.changed.push(k),
            Some(_) => {}
        }
    }
    d.added.dedup();
    d.changed.dedup();
    d.removed = old
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| !after.contains_key(k))
        .collect();
    d.removed.dedup();
    d
}

/// `N kind(s)`, then the first names in parentheses when `named`.
fn count(n: usize, kind: &str, names: &[&str], named: bool) -> String {
    let mut s = format!("{n} {kind}{}", if n == 1 { "" } else { "s" });
    if named && !names.is_empty() {
        let shown: Vec<&str> = names.iter().take(NAMES_SHOWN).copied().collect();
        let _ = write!(s, " ({}", shown.join(", "));
        if names.len() > NAMES_SHOWN {
            s.push_str(", …");
        }
        s.push(')');
    }
    s
}

/// The log line: `reloaded: ` and, per kind served before or after, what was added (`+`),
/// removed (`-`) or changed, or `KIND unchanged`. Resources are counted (their URIs are long
/// and many); templates, tools and prompts are named too.
pub(super) fn summary(old: &Served, new: &Served) -> String {
    let kinds: [(&str, &Keyed, &Keyed, bool); 4] = [
        ("resource", &old.resources, &new.resources, false),
        ("template", &old.templates, &new.templates, true),
        ("tool", &old.tools, &new.tools, true),
        ("prompt", &old.prompts, &new.prompts, true),
    ];
    let mut parts = Vec::new();
    for (kind, before, after, named) in kinds {
        if before.is_empty() && after.is_empty() {
            continue;
        }
        let d = diff(before, after);
        if d == Diff::default() {
            parts.push(format!("{kind}s unchanged"));
            continue;
        }
        if !d.added.is_empty() {
            parts.push(format!("+{}", count(d.added.len(), kind, &d.added, named)));
        }
        if !d.removed.is_empty() {
            parts.push(format!(
                "-{}",
                count(d.removed.len(), kind, &d.removed, named)
            ));
        }
        if !d.changed.is_empty() {
            parts.push(format!(
                "{} changed",
                count(d.changed.len(), kind, &d.changed, named)
            ));
        }
    }
    if parts.is_empty() {
        return "reloaded: nothing served, before or after".to_owned();
    }
    format!("reloaded: {}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(keys: &[(&str, &str)]) -> Vec<(String, String)> {
        keys.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn says_what_was_added_removed_and_changed_per_kind() {
        let old = Served {
            resources: items(&[("file:///a", "1")]),
            tools: items(&[("hi", "1"), ("bye", "1"), ("grep", "1")]),
            prompts: items(&[("review", "1")]),
            ..Served::default()
        };
        let new = Served {
            resources: items(&[("file:///a", "1"), ("file:///b", "1"), ("file:///c", "1")]),
            tools: items(&[("hi", "1"), ("grep", "2")]),
            prompts: items(&[("review", "1")]),
            ..Served::default()
        };
        assert_eq!(
            summary(&old, &new),
            "reloaded: +2 resources, -1 tool (bye), 1 tool (grep) changed, prompts unchanged"
        );
        assert_eq!(
            summary(&new, &old),
            "reloaded: -2 resources, +1 tool (bye), 1 tool (grep) changed, prompts unchanged"
        );
    }

    #[test]
    fn long_lists_of_names_are_cut() {
        let old = Served::default();
        let new = Served {
            prompts: items(&[("a", ""), ("b", ""), ("c", ""), ("d", "")]),
            ..Served::default()
        };
        assert_eq!(summary(&old, &new), "reloaded: +4 prompts (a, b, c, …)");
        assert_eq!(
            summary(&old, &old),
            "reloaded: nothing served, before or after"
        );
        assert_eq!(summary(&new, &new), "reloaded: prompts unchanged");
    }
}
