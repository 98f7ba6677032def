//! `view = …` on an entry whose tool answers rows: checked into the tool's `View` (which
//! `crate::views` serves as an MCP Apps resource). A view belongs to a tool, so it is checked
//! once every tool has its name (`template_tools`): an entry without a tool, or a tool whose
//! answer is text, cannot show a view, and that is an error at the `view` key.

use super::raw::{RawChart, RawManifest, RawToolSetting, RawView, Sp};
use super::{Checker, Loc, Manifest, OutputKind, TemplateBackend};

/// How a tool's rows are shown to a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum View {
    /// A table one can sort by a column and filter by text.
    Table,
    /// A chart of some columns; the table when a column is missing or not numeric.
    Chart(Chart),
}

/// `{ chart = "line" | "bar", x = "COLUMN", y = ["COLUMN", …] }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chart {
    pub kind: ChartKind,
    /// The column along the x axis.
    pub x: String,
    /// The columns plotted, one series each (at least one).
    pub y: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartKind {
    Line,
    Bar,
}

impl ChartKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChartKind::Line => "line",
            ChartKind::Bar => "bar",
        }
    }
}

/// One tool's view, in manifest order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolView {
    /// The tool's name (unique among tools).
    pub tool: String,
    pub view: View,
    /// Where `view` is written.
    pub loc: Loc,
}

/// Where a `view` key stands, for its checks and messages.
struct Entry {
    /// `[sqlite.shop.queries.top]`, `[tools.search]`, …
    name: String,
    view: Sp<RawView>,
    /// The tool that would show the view; `None`: the entry has no tool.
    tool: Option<String>,
    /// Why the entry has no tool, when it is a setting of the manifest (`None` with no tool:
    /// its name clashed, which is reported already).
    no_tool: Option<&'static str>,
    /// Why the tool's answer is not rows, if it is not.
    not_rows: Option<String>,
}

impl Checker<'_> {
    /// The view of every entry that has one and whose entry survived its own checks (an entry
    /// set aside for its problems is not looked at again).
    pub(super) fn views(
        &mut self,
        raw: &RawManifest,
        databases: &crate::manifest::sql::Taken<'_>,
        m: &Manifest,
    ) -> Vec<ToolView> {
        let on = m.server.template_tools;
        let why = |setting: &Option<Sp<RawToolSetting>>, removed: Option<&'static str>| {
            if !on {
                Some("`template_tools = false` in [server]")
            } else if let Some(r) = removed {
                Some(r)
            } else {
                match setting.as_ref().map(|s| s.get()) {
                    Some(RawToolSetting::On(false)) => Some("`tool = false`"),
                    _ => None,
                }
            }
        };
        let mut entries: Vec<Entry> = Vec::new();
        for (section, key, common) in databases.entries() {
            let Some(common) = common else { continue };
            let source = key.get();
            let Some(db) = m
                .databases
                .iter()
                .find(|d| d.section == section && &d.name == source)
            else {
                continue;
            };
            if let Some(view) = &common.view {
                entries.push(Entry {
                    name: format!("[{section}.{source}]"),
                    view: view.clone(),
                    tool: db.table_tool.clone(),
                    no_tool: why(
                        &common.tool,
                        (common.tables == Some(false)).then_some("`tables = false`"),
                    ),
                    not_rows: None,
                });
            }
            for (qk, q) in &common.queries {
                let Some(view) = &q.view else { continue };
                let Some(checked) = db.queries.iter().find(|c| &c.name == qk.get()) else {
                    continue;
                };
                entries.push(Entry {
                    name: format!("[{section}.{source}.queries.{}]", qk.get()),
                    view: view.clone(),
                    tool: checked.tool.clone(),
                    no_tool: why(&q.tool, None),
                    not_rows: None,
                });
            }
        }
        for (key, t) in &raw.templates {
            let Some(view) = &t.view else { continue };
            let Some(checked) = m.templates.iter().find(|c| &c.name == key.get()) else {
                continue;
            };
            let json = checked
                .mime_type
                .as_deref()
                .is_some_and(|m| m == "application/json" || m.ends_with("+json"));
            let not_rows = match &checked.backend {
                TemplateBackend::Sql { .. } => None,
                TemplateBackend::File { .. } if !json => Some(
                    "a `file` template's content is text: set `mime_type = \"application/json\"` for a file of JSON rows".to_owned(),
                ),
                TemplateBackend::Command(_) if !json => Some(
                    "a `command` template's output is text: set `mime_type = \"application/json\"` for a program that prints JSON rows".to_owned(),
                ),
                _ => None,
            };
            entries.push(Entry {
                name: format!("[templates.{}]", key.get()),
                view: view.clone(),
                tool: checked.tool.clone(),
                no_tool: why(&t.tool, None),
                not_rows,
            });
        }
        for (key, t) in &raw.tools {
            let Some(view) = &t.view else { continue };
            let Some(checked) = m.tools.iter().find(|c| &c.name == key.get()) else {
                continue;
            };
            entries.push(Entry {
                name: format!("[tools.{}]", key.get()),
                view: view.clone(),
                tool: Some(checked.name.clone()),
                no_tool: None,
                not_rows: (checked.output != OutputKind::Json).then(|| {
                    "this tool's output is text: set `output = \"json\"` (stdout parsed into structured rows)".to_owned()
                }),
            });
        }
        let mut out = Vec::new();
        for e in entries {
            if let Some(view) = self.view(&e) {
                out.push(view);
            }
        }
        out.sort_by_key(|v| (v.loc.line, v.loc.col));
        out
    }

    /// One entry's view, every problem reported at the place it is written.
    fn view(&mut self, e: &Entry) -> Option<ToolView> {
        let entry = &e.name;
        let before = self.diags.items.len();
        let view = match e.view.get() {
            RawView::Named(n) if n == "table" => Some(View::Table),
            RawView::Named(n) => {
                self.err(
                    &e.view,
                    format!("{entry} `view = \"{}\"` is not a view: write `view = \"table\"` or `view = {{ chart = \"line\", x = \"COLUMN\", y = [\"COLUMN\"] }}`", n.escape_debug()),
                );
                None
            }
            RawView::Chart(c) => self.chart(entry, c).map(View::Chart),
        };
        match (&e.tool, e.no_tool) {
            (Some(_), _) => {}
            (None, Some(why)) => self.err(
                &e.view,
                format!("{entry} has a `view`, but no tool to show it with ({why}); a view shows a tool's result"),
            ),
            (None, None) => {}
        }
        if let Some(why) = &e.not_rows {
            self.err(
                &e.view,
                format!("{entry} has a `view`, which shows structured rows, but {why}"),
            );
        }
        let tool = e.tool.clone()?;
        let view = view?;
        (self.diags.items.len() == before).then(|| ToolView {
            tool,
            view,
            loc: self.loc(&e.view),
        })
    }

    fn chart(&mut self, entry: &str, c: &RawChart) -> Option<Chart> {
        let kind = match c.chart.get().as_str() {
            "line" => Some(ChartKind::Line),
            "bar" => Some(ChartKind::Bar),
            other => {
                self.err(
                    &c.chart,
                    format!(
                        "{entry} `view.chart = \"{}\"` is not a kind of chart: use \"line\" or \"bar\"",
                        other.escape_debug()
                    ),
                );
                None
            }
        };
        if c.x.get().trim().is_empty() {
            self.err(
                &c.x,
                format!("{entry} `view.x` is empty: name the column along the x axis"),
            );
        }
        if c.y.get().is_empty() {
            self.err(
                &c.y,
                format!("{entry} `view.y` is empty: name at least one numeric column to plot"),
            );
        }
        let mut y: Vec<String> = Vec::new();
        for col in c.y.get() {
            let name = col.get();
            if name.trim().is_empty() {
                self.err(col, format!("{entry} `view.y` holds an empty column name"));
            } else if y.contains(name) {
                self.err(
                    col,
                    format!(
                        "{entry} `view.y` names column `{}` twice",
                        name.escape_debug()
                    ),
                );
            } else {
                y.push(name.clone());
            }
        }
        Some(Chart {
            kind: kind?,
            x: c.x.get().clone(),
            y,
        })
    }
}
