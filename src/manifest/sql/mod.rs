//! The manifest sections of the SQL engines (`[sqlite.NAME]`, `[postgres.NAME]`, `[mysql.NAME]`),
//! written once: the keys every engine shares (`RawCommon`: `row_limit`, `tables`, `watch`,
//! `timeout`, `max_size`, `description`, `tool`, `view`, `queries`, `sql_tool`) and their checks, the
//! `sqlite = "…"` / `postgres = "…"` / `mysql = "…"` keys of `[templates]`, and the part of the
//! JSON Schema that describes them. Each engine adds its own keys and their checks (its file
//! here, a `Section`); how its source is built is `providers::sql`'s (`build`).
//!
//! The manifest's TOML is read in two steps (`manifest::check_str`): the engine sections and the
//! engine keys of templates are taken out of the parsed document (`take`) before the rest is
//! deserialized, then checked here with the manifest's own `Checker`. So the manifest names no
//! engine: `ENGINES` (in `sql/mod.rs`) is the only list of them.

mod mysql;
mod postgres;
pub(crate) mod server;
mod sqlite;
pub(crate) mod url;

pub use mysql::MysqlKeys;
pub use postgres::PostgresKeys;
pub use sqlite::SqliteKeys;

use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use schemars::{JsonSchema, SchemaGenerator};
use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::raw::{DurationStr, Key, RawQuery, RawToolSetting, RawView, SizeValue, Sp};
use crate::manifest::{self, Checker, Loc, Query};

/// One SQL engine's manifest section: what it is called and says, and its own keys.
pub(crate) struct Section {
    /// The section's name (`mysql`), which is also the URI scheme and the key a `[templates]`
    /// entry names a source of this engine with.
    pub name: &'static str,
    /// What the section holds, for the JSON Schema (`MySQL or MariaDB databases, …`).
    pub about: &'static str,
    /// The schema of the engine's own keys (an object; the common keys are added to it).
    pub keys_schema: fn(&mut SchemaGenerator) -> schemars::Schema,
    /// Checks the engine's own keys of the entry `[name.NAME]` (`value` is the whole entry: the
    /// common keys, checked already, are in it too). `None` after reporting a problem that
    /// leaves the entry without a meaning (the entry is then set aside).
    pub check: fn(&mut Checker<'_>, &str, &Spanned<DeValue<'_>>) -> Option<EngineKeys>,
}

/// An engine's own checked keys of one entry (`[sqlite]`: the path; server engines: the URL and
/// connection keys, …). How a source is built from them is the engine's business
/// (`providers::sql`, one line per engine).
#[derive(Debug, Clone)]
pub enum EngineKeys {
    Sqlite(Arc<SqliteKeys>),
    Postgres(Arc<PostgresKeys>),
    Mysql(Arc<MysqlKeys>),
}

/// Every SQL engine's manifest section, in the order the schema lists them.
pub(crate) static ENGINES: [&Section; 3] = [&sqlite::SECTION, &postgres::SECTION, &mysql::SECTION];

/// A checked database entry of any engine.
#[derive(Debug, Clone)]
pub struct DatabaseDef {
    /// The engine's section (`sqlite`, `postgres`, `mysql`).
    pub section: &'static str,
    pub name: String,
    pub loc: Loc,
    pub row_limit: u64,
    /// One resource per table and view.
    pub tables: bool,
    pub watch: bool,
    /// How long one statement may run.
    pub timeout: Duration,
    /// The largest answer, in bytes of JSON.
    pub max_size: u64,
    pub description: Option<String>,
    pub queries: Vec<Query>,
    /// The table template's tool (`template_tools`); `None`: no tool.
    pub table_tool: Option<String>,
    /// The SQL tool (`sql_tool = true`): its name, `NAME_sql`; `None`: no tool.
    pub sql_tool: Option<String>,
    pub engine: EngineKeys,
}

impl DatabaseDef {
    /// `[mysql.shop]`
    pub fn entry(&self) -> String {
        format!("[{}.{}]", self.section, self.name)
    }

    /// `mysql://shop/`: every URI of this source starts so.
    pub fn prefix(&self) -> String {
        format!("{}://{}/", self.section, self.name)
    }
}

/// The keys every engine's section has.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct RawCommon {
    /// Rows returned per table read and query (default 100).
    #[schemars(range(min = 1))]
    pub row_limit: Option<Sp<u64>>,
    /// One resource per table and view (default true).
    pub tables: Option<bool>,
    /// Updated notifications for subscribed resources when the database changes (default true).
    pub watch: Option<bool>,
    /// A statement running longer than this is stopped and its read fails (default 30s).
    pub timeout: Option<Sp<DurationStr>>,
    /// The largest answer: rows past it are left out (`truncated`), and a row or value larger
    /// than it is an error (default 10MiB, at most 256MiB).
    pub max_size: Option<Sp<SizeValue>>,
    /// Description of this source.
    pub description: Option<Sp<String>>,
    /// The table template's tool (`template_tools`): false for none, or its name (default
    /// `NAME_table`).
    pub tool: Option<Sp<RawToolSetting>>,
    /// A tool `NAME_sql` that runs one reading statement a client writes, read-only by the
    /// engine, with this source's `row_limit`, `max_size` and `timeout` (default false).
    pub sql_tool: Option<Sp<bool>>,
    /// The MCP Apps view of the table tool's rows: "table", or a chart
    /// (`{ chart = "line" | "bar", x = "COLUMN", y = ["COLUMN", …] }`).
    pub view: Option<Sp<RawView>>,
    /// Named queries: `SECTION://NAME/queries/QUERY{?params}`.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "pattern": "^[a-z][a-z0-9_-]*$" }))]
    pub queries: IndexMap<Key, RawQuery>,
}

/// An engine key of a template: the section and the source's name as written.
pub(crate) type SourceRef = (&'static str, Sp<String>);

/// What `take` took out of a manifest's document.
#[derive(Debug, Default)]
pub struct Taken<'i> {
    /// Every entry of every engine section, in file order: its section, name and table.
    entries: Vec<(&'static Section, Key, Spanned<DeValue<'i>>)>,
    /// The engine keys of `[templates]` entries: template name → (section, source name), and
    /// every such key of each template (more than one is an error).
    templates: Vec<(String, Vec<SourceRef>)>,
}

impl std::fmt::Debug for Section {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The engine sections' names, in `ENGINES` order.
pub(crate) fn section_names() -> impl Iterator<Item = &'static str> {
    ENGINES.iter().map(|e| e.name)
}

/// The names each engine section declares, as written (before entries with problems are set
/// aside), for the references of `sql` templates.
pub(crate) fn declared(doc: &DeTable<'_>) -> Vec<(&'static str, Vec<String>)> {
    ENGINES
        .iter()
        .map(|e| {
            let names = match doc.get(e.name).map(|v| v.get_ref()) {
                Some(DeValue::Table(t)) => t.iter().map(|(k, _)| k.get_ref().to_string()).collect(),
                _ => Vec::new(),
            };
            (e.name, names)
        })
        .collect()
}

/// Takes the engine sections, and the engine keys of `[templates]` entries, out of `doc` (so the
/// rest deserializes as `RawManifest`).
pub(crate) fn take<'i>(doc: &mut DeTable<'i>) -> Taken<'i> {
    let mut taken = Taken::default();
    for engine in ENGINES.iter().copied() {
        let Some(section) = doc.remove(engine.name) else {
            continue;
        };
        if let DeValue::Table(entries) = section.into_inner() {
            for (k, v) in entries {
                let key = Sp(Spanned::new(k.span(), k.into_inner().to_string()));
                taken.entries.push((engine, key, v));
            }
        }
    }
    taken.entries.sort_by_key(|(_, k, _)| k.span().start);
    if let Some(templates) = doc.get_mut("templates")
        && let DeValue::Table(templates) = templates.get_mut()
    {
        for (name, t) in templates.iter_mut() {
            let DeValue::Table(t) = t.get_mut() else {
                continue;
            };
            let mut refs = Vec::new();
            for section in section_names() {
                if let Some(v) = t.remove(section) {
                    let span = v.span();
                    if let DeValue::String(s) = v.into_inner() {
                        refs.push((section, Sp(Spanned::new(span, s.to_string()))));
                    }
                }
            }
            if !refs.is_empty() {
                taken.templates.push((name.get_ref().to_string(), refs));
            }
        }
    }
    taken
}

impl Taken<'_> {
    /// The engine keys a template named `template` has (the section and the source's name).
    pub fn template_refs(&self, template: &str) -> &[(&'static str, Sp<String>)] {
        self.templates
            .iter()
            .find(|(n, _)| n == template)
            .map_or(&[], |(_, r)| r.as_slice())
    }

    /// Each entry as `(section, key, common keys)` in file order, for the tool names.
    pub fn entries(&self) -> impl Iterator<Item = (&'static str, &Key, Option<RawCommon>)> {
        self.entries
            .iter()
            .map(|(s, k, v)| (s.name, k, RawCommon::deserialize(value_de(v)).ok()))
    }

    /// Checks every entry: the common keys here, the engine's own keys by its `Section`.
    pub fn check(&self, cx: &mut Checker<'_>) -> Vec<DatabaseDef> {
        let mut out = Vec::new();
        for (engine, key, value) in &self.entries {
            if let Some(def) = check_entry(cx, engine, key, value) {
                out.push(def);
            }
        }
        out
    }
}

/// An engine's own keys of the entry `[section.name]` (`value`), or `None` after reporting why
/// they do not deserialize (the schema's walk reported most problems already).
pub(crate) fn keys<T: serde::de::DeserializeOwned>(
    cx: &mut Checker<'_>,
    section: &str,
    name: &str,
    value: &Spanned<DeValue<'_>>,
) -> Option<T> {
    match T::deserialize(value_de(value)) {
        Ok(keys) => Some(keys),
        Err(e) => {
            let at = e.span().map_or(value.span().start, |s| s.start);
            cx.err_at(at, format!("[{section}.{name}] {}", e.message().trim()));
            None
        }
    }
}

/// A deserializer for one value of the document (its spans are the document's).
pub(crate) fn value_de<'i>(v: &Spanned<DeValue<'i>>) -> toml::de::ValueDeserializer<'i> {
    toml::de::ValueDeserializer::from(v.clone())
}

fn check_entry(
    cx: &mut Checker<'_>,
    engine: &'static Section,
    key: &Key,
    value: &Spanned<DeValue<'_>>,
) -> Option<DatabaseDef> {
    let section = engine.name;
    let name = key.get().clone();
    let common = match RawCommon::deserialize(value_de(value)) {
        Ok(c) => c,
        Err(e) => {
            let at = e.span().map_or(key.span().start, |s| s.start);
            cx.err_at(at, format!("[{section}.{name}] {}", e.message().trim()));
            return None;
        }
    };
    let timeout = cx.duration(&common.timeout, manifest::DEFAULT_QUERY_TIMEOUT);
    if let Some(t) = &common.timeout
        && timeout < Duration::from_millis(1)
    {
        cx.err(
            t,
            format!("[{section}.{name}] `timeout` must be at least 1ms"),
        );
    }
    let max_size = cx.max_size(&common.max_size);
    let queries = cx.queries(&common.queries);
    let engine_def = (engine.check)(cx, &name, value)?;
    Some(DatabaseDef {
        section,
        loc: cx.loc(key),
        row_limit: common.row_limit.as_ref().map_or(100, |r| *r.get()),
        tables: common.tables.unwrap_or(true),
        watch: common.watch.unwrap_or(true),
        timeout,
        max_size,
        description: common.description.as_ref().map(|d| d.get().clone()),
        queries,
        table_tool: None,
        // Named with the other tools (`wanted_tools`), where clashes are found.
        sql_tool: None,
        engine: engine_def,
        name,
    })
}

/// The `[templates]` backend of a template with engine keys: its section and source, after
/// checking that there is one and that it names a declared source.
pub(crate) fn template_source(
    cx: &mut Checker<'_>,
    template: &str,
    refs: &[(&'static str, Sp<String>)],
    declared: &[(&'static str, Vec<String>)],
) -> Option<(&'static str, Sp<String>)> {
    if let [first, second, ..] = refs {
        cx.err(
            &second.1,
            format!(
                "template `{template}` names both a `{}` and a `{}` source; keep one",
                first.0, second.0
            ),
        );
    }
    let (section, src) = refs.first()?;
    let names: Vec<&str> = declared
        .iter()
        .find(|(s, _)| s == section)
        .map(|(_, n)| n.iter().map(String::as_str).collect())
        .unwrap_or_default();
    if !names.contains(&src.get().as_str()) {
        let hint = match manifest::diag::did_you_mean(src.get(), names.iter().copied()) {
            Some(m) => format!(", did you mean `{m}`?"),
            None if names.is_empty() => format!("; there is no [{section}.NAME] section"),
            None => format!("; the {section} sources are: {}", names.join(", ")),
        };
        cx.err(
            src,
            format!(
                "template `{template}` names {section} source `{}`, which does not exist{hint}",
                src.get()
            ),
        );
    }
    Some((*section, src.clone()))
}

/// `sqlite`, `postgres` or `mysql` as a template's backend keys are listed in messages: "`sqlite`
/// + `sql`, `postgres` + `sql`, `mysql` + `sql`".
pub(crate) fn backend_keys() -> String {
    section_names()
        .map(|s| format!("`{s}` + `sql`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Adds the engine sections to the manifest's JSON Schema (after `files`, in `ENGINES` order)
/// and their keys to `[templates]` entries.
pub(crate) fn extend_schema(schema: &mut serde_json::Value, generator: &mut SchemaGenerator) {
    use serde_json::{Map, Value, json};
    let common = RawCommon::json_schema(generator);
    let mut defs = Map::new();
    let mut sections = Vec::new();
    for engine in ENGINES.iter() {
        let def_name = format!("Raw{}", capitalized(engine.name));
        let mut entry = (engine.keys_schema)(generator).to_value();
        if let (Some(props), Some(more)) = (
            entry.get_mut("properties").and_then(Value::as_object_mut),
            common
                .as_value()
                .get("properties")
                .and_then(Value::as_object),
        ) {
            for (k, v) in more {
                let mut v = v.clone();
                if let Some(Value::String(d)) = v.get_mut("description") {
                    *d = d.replace("SECTION://", &format!("{}://", engine.name));
                }
                props.insert(k.clone(), v);
            }
            for v in props.values_mut() {
                description_first(v);
            }
        }
        entry["additionalProperties"] = json!(false);
        entry["description"] = json!(format!("`[{}.NAME]`: {}", engine.name, engine.about));
        defs.insert(def_name.clone(), entry);
        sections.push((
            engine.name,
            json!({
                "description": engine.about,
                "type": "object",
                "additionalProperties": { "$ref": format!("#/$defs/{def_name}") },
                "propertyNames": { "pattern": "^[a-z][a-z0-9_-]*$" }
            }),
        ));
    }
    let Some(root) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(props)) = root.get_mut("properties") {
        let old = std::mem::take(props);
        for (k, v) in old {
            let after_files = k == "files";
            props.insert(k, v);
            if after_files {
                for (name, s) in &sections {
                    props.insert((*name).to_owned(), s.clone());
                }
            }
        }
    }
    let generated = generator.definitions().clone();
    if let Some(Value::Object(all)) = root.get_mut("$defs") {
        for (k, v) in generated {
            all.entry(k).or_insert(v);
        }
        for (k, v) in defs {
            all.insert(k, v);
        }
        if let Some(Value::Object(props)) = all
            .get_mut("RawTemplate")
            .and_then(|t| t.get_mut("properties"))
        {
            let old = std::mem::take(props);
            for (k, v) in old {
                let before_sql = k == "sql";
                if before_sql {
                    for name in section_names() {
                        props.insert(
                            name.to_owned(),
                            json!({
                                "description": format!("Backend `sql`: the `[{name}.NAME]` source to query."),
                                "type": ["string", "null"]
                            }),
                        );
                    }
                }
                props.insert(k, v);
            }
        }
    }
}

/// "`sqlite`, `postgres` or `mysql`"
pub(crate) fn either_key() -> String {
    let keys: Vec<String> = section_names().map(|s| format!("`{s}`")).collect();
    match keys.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Puts an object's `description` first, as schemars writes it for the manifest's other keys.
fn description_first(v: &mut serde_json::Value) {
    if let Some(o) = v.as_object_mut()
        && let Some(d) = o.remove("description")
    {
        let rest = std::mem::take(o);
        o.insert("description".into(), d);
        o.extend(rest);
    }
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The tools every database entry may make, for the clash check of tool names: the table
/// template's (`NAME_table`, or `tool`), each query's, and the SQL tool (`NAME_sql`).
pub(crate) fn wanted_tools(
    cx: &mut Checker<'_>,
    taken: &Taken<'_>,
    on: bool,
) -> Vec<(Loc, WantedTool)> {
    let mut out = Vec::new();
    for (i, (section, key, common)) in taken.entries().enumerate() {
        let Some(common) = common else { continue };
        let entry = format!("[{section}.{}]", key.get());
        if common.tables.unwrap_or(true) {
            let name = cx.tool_name(on, &common.tool, format!("{}_table", key.get()), &entry);
            out.push((cx.loc(key), WantedTool::Table(i, name, entry.clone())));
        }
        for (j, (qk, q)) in common.queries.iter().enumerate() {
            let qentry = format!("[{section}.{}.queries.{}]", key.get(), qk.get());
            let name = cx.tool_name(on, &q.tool, qk.get().clone(), &qentry);
            out.push((cx.loc(qk), WantedTool::Query(i, j, name, qentry)));
        }
        if let Some(s) = common.sql_tool.as_ref().filter(|s| *s.get()) {
            out.push((
                cx.loc(s),
                WantedTool::Sql(i, Some(format!("{}_sql", key.get())), entry),
            ));
        }
    }
    out
}

/// A tool a database entry would make: the entry's position among all database entries as
/// written, its name (`None`: none) and the entry, for messages.
pub(crate) enum WantedTool {
    Table(usize, Option<String>, String),
    Query(usize, usize, Option<String>, String),
    Sql(usize, Option<String>, String),
}

impl WantedTool {
    pub fn name_and_entry(&self) -> (Option<String>, String) {
        match self {
            WantedTool::Table(_, n, e)
            | WantedTool::Query(_, _, n, e)
            | WantedTool::Sql(_, n, e) => (n.clone(), e.clone()),
        }
    }

    /// Gives the checked entry its tool's name (`name`, or `None` when it clashed).
    pub fn apply(&self, taken: &Taken<'_>, defs: &mut [DatabaseDef], name: Option<String>) {
        let i = match self {
            WantedTool::Table(i, ..) | WantedTool::Query(i, ..) | WantedTool::Sql(i, ..) => *i,
        };
        // An entry set aside for its own problem is missing from `defs`: found by section and
        // name.
        let Some((engine, key, _)) = taken.entries.get(i) else {
            return;
        };
        let Some(def) = defs
            .iter_mut()
            .find(|d| d.section == engine.name && &d.name == key.get())
        else {
            return;
        };
        match self {
            WantedTool::Table(..) => def.table_tool = name,
            WantedTool::Query(_, j, ..) => {
                if let Some(q) = def.queries.get_mut(*j) {
                    q.tool = name;
                }
            }
            WantedTool::Sql(..) => def.sql_tool = name,
        }
    }
}
