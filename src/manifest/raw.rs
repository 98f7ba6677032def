//! The manifest as written: serde + schemars types, one struct per section entry.
//!
//! These types are the single source of the JSON Schema (`mcp-manifest schema`) and of
//! deserialization. They hold spans (`Sp<T>`) so later checks can name line and column.
//! No internally tagged enums and no `flatten`: serde buffers those and the spans are lost.

use std::borrow::Cow;

use indexmap::IndexMap;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer};

/// A value with its byte span in the manifest.
#[derive(Debug, Clone)]
pub struct Sp<T>(pub toml::Spanned<T>);

impl<T> Sp<T> {
    pub fn get(&self) -> &T {
        self.0.get_ref()
    }
    pub fn span(&self) -> std::ops::Range<usize> {
        self.0.span()
    }
}

impl<T: PartialEq> PartialEq for Sp<T> {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}
impl<T: Eq> Eq for Sp<T> {}
impl<T: std::hash::Hash> std::hash::Hash for Sp<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.get().hash(state)
    }
}

/// A name written as a table key, with its span.
pub type Key = Sp<String>;

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Sp<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        toml::Spanned::<T>::deserialize(d).map(Sp)
    }
}

impl<T: JsonSchema> JsonSchema for Sp<T> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }
    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
    fn inline_schema() -> bool {
        T::inline_schema()
    }
}

/// A duration string: "500ms", "30s", "2m", "1h30m" (`expand::parse_duration`).
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct DurationStr(pub String);

impl JsonSchema for DurationStr {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "A duration: numbers with units h, m, s, ms, largest first, no spaces, e.g. \"500ms\", \"90s\", \"2m\", \"1h30m\".",
            "pattern": "^([0-9]+(\\.[0-9]+)?(h|m|s|ms))+$"
        })
    }
}

/// A size: bytes as an integer, or a string with a unit.
#[derive(Debug, Clone)]
pub enum SizeValue {
    Bytes(u64),
    Text(String),
}

impl<'de> Deserialize<'de> for SizeValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = SizeValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a size: bytes as an integer, or a string such as \"64KiB\" or \"1MiB\"",
                )
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<SizeValue, E> {
                Ok(SizeValue::Bytes(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<SizeValue, E> {
                u64::try_from(v)
                    .map(SizeValue::Bytes)
                    .map_err(|_| E::custom("a size cannot be negative"))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SizeValue, E> {
                Ok(SizeValue::Text(v.to_owned()))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for SizeValue {
    fn schema_name() -> Cow<'static, str> {
        "Size".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A size: bytes as an integer, or a string with a unit, e.g. \"64KiB\", \"1MiB\".",
            "anyOf": [
                { "type": "integer", "minimum": 0 },
                { "type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?\\s*([kKmMgG]i?[bB]?|[bB])?$" }
            ]
        })
    }
}

/// `watch = true | false | "poll"` of a files source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawWatch {
    On(bool),
    Poll,
}

impl<'de> Deserialize<'de> for RawWatch {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = RawWatch;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("true, false or \"poll\"")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<RawWatch, E> {
                Ok(RawWatch::On(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawWatch, E> {
                match v {
                    "poll" => Ok(RawWatch::Poll),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for RawWatch {
    fn schema_name() -> Cow<'static, str> {
        "Watch".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Subscriptions and list_changed notifications (default true); \"poll\" looks for changes every `poll_interval` instead of asking the system to report them.",
            "oneOf": [{"type": "boolean"}, {"type": "string", "enum": ["poll"]}]
        })
    }
}

/// `tool = false` (no tool) or `tool = "name"` (the tool's name) on an entry that `template_tools`
/// serves as a tool. `true` keeps the default name.
#[derive(Debug, Clone, PartialEq)]
pub enum RawToolSetting {
    On(bool),
    Named(String),
}

impl<'de> Deserialize<'de> for RawToolSetting {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = RawToolSetting;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("false (no tool), true (the default name) or a tool name (a string)")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<RawToolSetting, E> {
                Ok(RawToolSetting::On(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawToolSetting, E> {
                Ok(RawToolSetting::Named(v.to_owned()))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for RawToolSetting {
    fn schema_name() -> Cow<'static, str> {
        "ToolSetting".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "The tool `template_tools` makes of this entry: false for none, or its name (default: see `template_tools`).",
            "anyOf": [
                { "type": "boolean" },
                { "type": "string", "pattern": "^[A-Za-z0-9_.-]{1,128}$" }
            ]
        })
    }
}

/// One element of `command`: an argument (a string), or a group of arguments (an array of
/// strings) that is kept or dropped as a whole.
///
/// Deserialized by hand (not `#[serde(untagged)]`, which buffers the value and loses spans).
#[derive(Debug, Clone)]
pub enum RawArg {
    One(String),
    Group(Vec<Sp<String>>),
}

impl<'de> Deserialize<'de> for RawArg {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawArg;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an argument (a string) or a group of arguments (an array of strings)")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawArg, E> {
                Ok(RawArg::One(v.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<RawArg, E> {
                Ok(RawArg::One(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<RawArg, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<Sp<String>>()? {
                    items.push(item);
                }
                Ok(RawArg::Group(items))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for RawArg {
    fn schema_name() -> Cow<'static, str> {
        "Arg".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "An argument, or a group of arguments (an array of strings) that is dropped as a whole when a `{param}` in it has no value.",
            "anyOf": [
                { "type": "string" },
                { "type": "array", "items": { "type": "string" }, "minItems": 1 }
            ]
        })
    }
}

/// `view = "table"` or `view = { chart = "line" | "bar", x = "COLUMN", y = ["COLUMN", …] }`:
/// the MCP Apps view (`crate::views`) that shows a tool's rows.
///
/// Deserialized by hand (not `#[serde(untagged)]`, which buffers the value and loses spans).
/// What may be written is the schema's to say: the names are checked by `validate.rs`, the
/// rest by `manifest::view`.
#[derive(Debug, Clone)]
pub enum RawView {
    Named(String),
    Chart(RawChart),
}

/// `view = { chart = …, x = …, y = […] }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawChart {
    pub chart: Sp<String>,
    pub x: Sp<String>,
    pub y: Sp<Vec<Sp<String>>>,
}

impl<'de> Deserialize<'de> for RawView {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawView;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "\"table\", or a table such as { chart = \"line\", x = \"COLUMN\", y = [\"COLUMN\"] }",
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawView, E> {
                Ok(RawView::Named(v.to_owned()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<RawView, A::Error> {
                RawChart::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(RawView::Chart)
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for RawView {
    fn schema_name() -> Cow<'static, str> {
        "View".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "The MCP Apps view (SEP-1865) that shows this tool's rows in hosts that render views: \"table\" (sortable, filterable), or a chart of the rows.",
            "anyOf": [
                { "type": "string", "enum": ["table"] },
                {
                    "type": "object",
                    "properties": {
                        "chart": { "type": "string", "enum": ["line", "bar"], "description": "The kind of chart." },
                        "x": { "type": "string", "description": "The column along the x axis." },
                        "y": { "type": "array", "items": { "type": "string" }, "minItems": 1, "description": "The numeric columns plotted, one series each." }
                    },
                    "required": ["chart", "x", "y"],
                    "additionalProperties": false
                }
            ]
        })
    }
}

/// The whole manifest (`mcp-server.toml`, version 1).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "mcp-manifest manifest (mcp-server.toml)")]
pub struct RawManifest {
    /// Server identity and behaviour.
    pub server: Option<RawServer>,
    /// Folders (or single files) served as resources. The key is the source's name.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "pattern": "^[a-z][a-z0-9_-]*$" }))]
    pub files: IndexMap<Key, RawFiles>,
    // The SQL engines' sections (`[sqlite]`, `[postgres]`, `[mysql]`) are taken out of the
    // document before it is deserialized: `providers::sql::section`.
    /// Git repositories.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "pattern": "^[a-z][a-z0-9_-]*$" }))]
    pub git: IndexMap<Key, RawGit>,
    /// Templated-URI resources you define.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "pattern": "^[a-z][a-z0-9_-]*$" }))]
    pub templates: IndexMap<Key, RawTemplate>,
    /// Shell-backed tools.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "pattern": "^[a-z][a-z0-9_-]*$" }))]
    pub tools: IndexMap<Key, RawTool>,
    /// Prompt templates.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "pattern": "^[a-z][a-z0-9_-]*$" }))]
    pub prompts: IndexMap<Key, RawPrompt>,
    /// Folders of agent skills (every folder holding a `SKILL.md`), served as the Skills
    /// extension (`skills/list`, `skills/get`) and as `skill://` resources.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "pattern": "^[a-z][a-z0-9_-]*$" }))]
    pub skills: IndexMap<Key, RawSkills>,
    /// Named subsets of the tools, resources and prompts: `serve --group NAME` (stdio) and the
    /// HTTP endpoint `<path>/NAME` serve exactly one.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "pattern": "^[a-z][a-z0-9_-]*$" }))]
    pub groups: IndexMap<Key, RawGroup>,
}

/// `[skills.NAME]`: a folder of agent skills.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSkills {
    /// The folder holding the skills (e.g. ".agents/skills", "~/.claude/skills"): every folder
    /// under it holding a `SKILL.md` is a skill.
    pub root: Sp<String>,
    /// Honour .gitignore / .ignore files (default true).
    pub gitignore: Option<bool>,
    /// Subscriptions and list_changed notifications (default true).
    pub watch: Option<bool>,
    /// The first segment of every `skill://` URI of this source (default: none, so
    /// `skill://NAME/SKILL.md` for a skill folder `NAME` directly under `root`).
    pub prefix: Option<Sp<String>>,
}

/// `[groups.NAME]` and `[server] expose`: which tools, resources and prompts a client sees.
/// Each list holds names (tools, prompts) or URIs (resources), or globs of them (`*` matches
/// any run of characters, `/` included; `?` one character; `[abc]` a set). A key left out
/// keeps everything of its kind; `[]` keeps nothing of it.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawGroup {
    /// Tools seen: names or globs (`repo_*`).
    pub tools: Option<Vec<Sp<String>>>,
    /// Resources and resource templates seen: URIs or globs (`git://repo/*`); a template is
    /// seen when its URI template matches.
    pub resources: Option<Vec<Sp<String>>>,
    /// Prompts seen: names or globs.
    pub prompts: Option<Vec<Sp<String>>>,
    /// Names and URIs (or globs) left out of the lists above.
    pub exclude: Option<Vec<Sp<String>>>,
    /// What this group is for (its server card's description).
    pub description: Option<Sp<String>>,
}

/// `[server]`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawServer {
    /// Server name sent to clients (default: the manifest folder's name).
    pub name: Option<Sp<String>>,
    /// Server version sent to clients (default: the binary's version).
    pub version: Option<Sp<String>>,
    /// Instructions for the assistant, sent at initialize / discover.
    pub instructions: Option<Sp<String>>,
    /// Items per page in every */list answer (default 100).
    #[schemars(range(min = 1))]
    pub page_size: Option<Sp<u64>>,
    /// Also serve resources through the `list_resources` and `read_resource` tools (default true).
    pub resource_tools: Option<bool>,
    /// Also serve every resource template (each `[templates]` entry, named query, table
    /// template and git `commit` / `blob` template) as a typed tool of its own (default true).
    pub template_tools: Option<bool>,
    /// Change-notification window: one URI gets at most one `updated` per window, and the last
    /// change of a burst is always announced (default "50ms").
    pub debounce: Option<Sp<DurationStr>>,
    /// Folders put before the inherited `PATH` for every process started (tools, `run` scripts,
    /// `command` templates); `~/` and relative paths are expanded like other manifest paths
    /// (default: none).
    pub path: Option<Vec<Sp<String>>>,
    /// Tool and command-template processes running at once; more calls wait in order
    /// (default 16).
    #[schemars(range(min = 1))]
    pub max_processes: Option<Sp<u64>>,
    /// Serving over MCP Streamable HTTP (`serve --http`): address, allowed origins and hosts,
    /// authentication.
    pub http: Option<RawHttp>,
    /// Which tools, resources and prompts clients of the default endpoint see (same keys as
    /// `[groups.NAME]`; default: everything).
    pub expose: Option<RawGroup>,
    /// Human-readable name shown by clients and in the server card.
    pub title: Option<Sp<String>>,
    /// One line on what this server offers (server card; at most 100 characters).
    pub description: Option<Sp<String>>,
    /// The project's home page or documentation (server card `websiteUrl`).
    pub website: Option<Sp<String>>,
    /// Where the source of this server's manifest lives (server card `repository`), e.g.
    /// "https://github.com/acme/shop".
    pub repository: Option<Sp<String>>,
    /// Icons clients may show (server card and serverInfo).
    pub icons: Option<Vec<RawIcon>>,
}

/// An icon of the server.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawIcon {
    /// An https URL (or a data: URI) of the image.
    pub src: Sp<String>,
    /// Its MIME type, e.g. "image/png", "image/svg+xml".
    pub mime_type: Option<Sp<String>>,
    /// Sizes it holds, e.g. ["48x48"] or ["any"].
    pub sizes: Option<Vec<Sp<String>>>,
    /// "light" or "dark": the theme it is drawn for.
    pub theme: Option<Sp<String>>,
}

/// `[server.http]`: how `serve --http` listens and whom it lets in.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHttp {
    /// Address to listen on, `IP:PORT` (e.g. "127.0.0.1:8080"). When set, `serve` serves over
    /// HTTP (`serve --stdio` still serves on stdio); `serve --http ADDR` overrides it. A
    /// non-loopback address needs `auth = "token"` or `"oauth"`.
    pub listen: Option<Sp<String>>,
    /// Browser origins allowed to call the server (`scheme://host[:port]`, e.g.
    /// "https://app.example.com"). A request whose `Origin` header is present and not listed is
    /// refused with 403 (default: none).
    pub allowed_origins: Option<Vec<Sp<String>>>,
    /// Host names (or `host:port`) clients may put in the `Host` header besides the listen
    /// address, e.g. the public name behind a proxy (DNS-rebinding protection). `"*"` accepts
    /// any Host (only behind a proxy that checks it).
    pub allowed_hosts: Option<Vec<Sp<String>>>,
    /// Who may call: "none" (default; loopback addresses only), "token" (a bearer token from
    /// `tokens`) or "oauth" (a JWT checked against `[server.http.oauth]`).
    pub auth: Option<Sp<AuthKind>>,
    /// Bearer tokens accepted with `auth = "token"`; write them as `${VAR}` so they stay out of
    /// the file.
    pub tokens: Option<Vec<Sp<String>>>,
    /// With `auth = "oauth"`: this server is an OAuth 2.1 resource server.
    pub oauth: Option<RawOAuth>,
    /// Handshake-era sessions kept at once (default 256, at most 1000000). A new session beyond
    /// it ends the one idle longest (no request in flight, no open stream); its client gets 404
    /// and starts a new session. When every session is busy, `initialize` gets 503. It also
    /// bounds the `subscriptions/listen` streams open at once (beyond, the oldest ends).
    pub max_sessions: Option<Sp<u64>>,
    /// Connections served at once (default 1024, at most 1000000; fewer when the descriptor
    /// limit would leave under 256 for files, databases and tools). Beyond it, new connections
    /// wait until one closes.
    pub max_connections: Option<Sp<u64>>,
    /// How long a connection may stay idle (no request begun, a request's head or body not
    /// arriving, an answer not taken by its client) before it is closed (default "75s", from
    /// "100ms" to "1h"): longer than nginx's upstream keepalive (60 s), so a proxy never reuses
    /// a connection the server is closing.
    pub idle_timeout: Option<Sp<DurationStr>>,
    /// Connections one client address may have open at once (default a quarter of
    /// `max_connections`, or 64 when that is fewer; at most `max_connections`). Beyond it, that client's new connections
    /// are closed at once; others are not affected. Behind a reverse proxy every connection
    /// comes from the proxy's address: raise it to `max_connections` there.
    pub max_connections_per_client: Option<Sp<u64>>,
    /// How long a handshake-era stream's messages are kept after they are sent, so a client whose
    /// connection dropped gets them again by reconnecting with `Last-Event-ID` (default "60s",
    /// from "1s" to "1h"). The answer to a request waits this long for a client that went away
    /// mid-call; fewer are kept when the server is short of room.
    pub resume_window: Option<Sp<DurationStr>>,
    /// The URL clients reach this server's MCP endpoint at, as the server card gives it
    /// (default `http://LISTEN/mcp`); set it when a proxy puts the server behind another name.
    pub public_url: Option<Sp<String>>,
    /// Also serve `/.well-known/ai-catalog.json` listing this server's cards (default false).
    pub catalog: Option<bool>,
}

/// How HTTP requests are authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AuthKind {
    None,
    Token,
    Oauth,
}

/// `[server.http.oauth]`: the JWT access tokens this server accepts.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawOAuth {
    /// The authorization server: tokens must carry this `iss`; listed in the protected-resource
    /// metadata.
    pub issuer: Sp<String>,
    /// This server's resource identifier (usually its public URL): tokens must carry it in
    /// `aud`.
    pub audience: Sp<String>,
    /// The signing keys: a JWKS file (relative to the manifest's folder) or an https URL, fetched
    /// and cached (fetched again for an unknown `kid`).
    pub jwks: Sp<String>,
    /// Scopes every token must carry (in `scope` or `scp`); default none.
    pub scopes: Option<Vec<Sp<String>>>,
}

/// `[files.NAME]`: a folder (or one file) served as resources.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawFiles {
    /// Folder or single file, relative to the manifest's folder.
    pub root: Sp<String>,
    /// Globs relative to root; default ["**/*"].
    pub include: Option<Vec<Sp<String>>>,
    /// Globs relative to root; default [].
    pub exclude: Option<Vec<Sp<String>>>,
    /// Honour .gitignore / .ignore files (default true).
    pub gitignore: Option<bool>,
    /// Serve dotfiles and dot-folders (default false; `.git` is never served).
    pub hidden: Option<bool>,
    /// Larger files are listed; reading one is a clear error (default 10MiB, at most 256MiB).
    pub max_size: Option<Sp<SizeValue>>,
    /// Subscriptions and list_changed notifications (default true); "poll" looks for changes
    /// every `poll_interval` instead of asking the system to report them (network and
    /// container-mounted file systems).
    pub watch: Option<RawWatch>,
    /// How often a root with `watch = "poll"` is looked at (default 2s, at least 100ms).
    pub poll_interval: Option<Sp<DurationStr>>,
    /// Shown to clients as the description of every resource of this source.
    pub description: Option<Sp<String>>,
    /// Search this source's files with the built-in `search_files` tool (default true).
    pub search: Option<bool>,
}

/// `[sqlite.NAME.queries.QUERY]`, `[postgres.NAME.queries.QUERY]`, `[mysql.NAME.queries.QUERY]`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawQuery {
    /// What the query answers.
    pub description: Option<Sp<String>>,
    /// One SQL statement; parameters are written `:name` and always bound.
    pub sql: Sp<String>,
    /// The query's tool (`template_tools`): false for none, or its name (default: the query's
    /// name).
    pub tool: Option<Sp<RawToolSetting>>,
    /// The MCP Apps view of the query tool's rows: "table", or a chart
    /// (`{ chart = "line" | "bar", x = "COLUMN", y = ["COLUMN", …] }`).
    pub view: Option<Sp<RawView>>,
    /// Declared parameters, bound to `:name` in the SQL.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "pattern": "^[a-z_][a-z0-9_]*$" }))]
    pub params: IndexMap<Key, RawParam>,
}

/// The type of a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ParamType {
    String,
    Integer,
    Number,
    Boolean,
    Array,
}

/// A parameter of a tool or a named query, or a template variable's rules.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawParam {
    /// string (default), integer, number, boolean, or array (of strings).
    #[serde(rename = "type")]
    pub ty: Option<Sp<ParamType>>,
    /// Shown to the assistant.
    pub description: Option<Sp<String>>,
    /// Value used when the argument is absent; makes the parameter optional.
    pub default: Option<Sp<serde_json::Value>>,
    /// Whether the argument must be given (default: true unless there is a default).
    pub required: Option<bool>,
    /// The only values allowed.
    #[serde(rename = "enum")]
    pub enum_values: Option<Sp<Vec<serde_json::Value>>>,
    /// Smallest allowed number.
    pub minimum: Option<Sp<f64>>,
    /// Largest allowed number.
    pub maximum: Option<Sp<f64>>,
    /// Regular expression a string must match.
    pub pattern: Option<Sp<String>>,
    /// Whether a value may begin a command-line argument with `-` (default false: refused,
    /// unless a literal `--` comes earlier in `command`).
    pub allow_dash: Option<Sp<bool>>,
}

/// `[git.NAME]`: a git repository.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawGit {
    /// A working tree (or a folder inside one) or a bare repository.
    pub path: Sp<String>,
    /// Commits in git://NAME/log (default 50).
    #[schemars(range(min = 1))]
    pub log_limit: Option<Sp<u64>>,
    /// Updated notifications when HEAD, refs, the index or the worktree change (default true).
    pub watch: Option<bool>,
    /// Description of this source.
    pub description: Option<Sp<String>>,
    /// The tools of the `commit/{rev}` and `blob/{rev}/{+path}` templates (`template_tools`):
    /// false for none, or the prefix of their names (default `NAME`: `NAME_commit`,
    /// `NAME_file`).
    pub tool: Option<Sp<RawToolSetting>>,
}

/// `[templates.NAME]`: a templated-URI resource you define. Exactly one backend: file, sql or command.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTemplate {
    /// RFC 6570 URI template; its variables are the inputs.
    pub uri: Sp<String>,
    /// Shown to clients.
    pub description: Option<Sp<String>>,
    /// MIME type of the content (default: from the file extension, application/json for sql, text/plain for command).
    pub mime_type: Option<Sp<String>>,
    /// Backend `file`: a path template resolved against the manifest folder (or `root`).
    pub file: Option<Sp<String>>,
    /// With `file`: the folder the expanded path must stay inside (default: the manifest folder).
    pub root: Option<Sp<String>>,
    /// With `file`: serve dotfiles and dot-folders, and the manifest itself (default false; `.git`
    /// is never served).
    pub hidden: Option<bool>,
    /// With `file`: honour .gitignore / .ignore files (default true).
    pub gitignore: Option<bool>,
    // Backend `sql`: `sqlite = "…"`, `postgres = "…"` or `mysql = "…"` names the source to
    // query (taken out before this is deserialized: `providers::sql::section`).
    /// Backend `sql`: one statement; template variables bind to `:var`.
    pub sql: Option<Sp<String>>,
    /// Backend `command`: argv, no shell; `{var}` is replaced inside an element. An element may
    /// be a group (an array of strings) kept or dropped as a whole.
    pub command: Option<Vec<Sp<RawArg>>>,
    /// With `command`: working directory (default: the manifest folder).
    pub cwd: Option<Sp<String>>,
    /// With `command`: variables added to the inherited environment.
    #[serde(default)]
    pub env: IndexMap<Key, Sp<String>>,
    /// With `command`: the process is killed after this long (default 30s).
    pub timeout: Option<Sp<DurationStr>>,
    /// With `command`: stdout beyond this is cut (default 1MiB).
    pub max_output: Option<Sp<SizeValue>>,
    /// Static completion values per template variable.
    #[serde(default)]
    pub completions: IndexMap<Key, Vec<Sp<String>>>,
    /// Rules per template variable, with the keys of tool `params` (`type`, `description`,
    /// `default`, `enum`, `pattern`, `minimum`, `maximum`, `allow_dash`): a read whose value
    /// breaks them is an invalid-params error, and the template's tool carries them.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "pattern": "^[A-Za-z_][A-Za-z0-9_]*$" }))]
    pub vars: IndexMap<Key, RawParam>,
    /// The template's tool (`template_tools`): false for none, or its name (default: the
    /// template's name).
    pub tool: Option<Sp<RawToolSetting>>,
    /// The MCP Apps view of the template tool's rows (a `sql` template, or JSON content):
    /// "table", or a chart (`{ chart = "line" | "bar", x = "COLUMN", y = ["COLUMN", …] }`).
    pub view: Option<Sp<RawView>>,
}

/// How a tool's stdout is returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutputKind {
    Text,
    Json,
}

/// `[tools.NAME]`: a shell-backed tool. Exactly one of `command` or `run`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTool {
    /// Shown to the assistant.
    pub description: Option<Sp<String>>,
    /// Display name.
    pub title: Option<Sp<String>>,
    /// argv, no shell: each `{param}` becomes part of exactly one element. An element may be a
    /// group (an array of strings, e.g. `["--max-count", "{max}"]`), dropped as a whole when a
    /// parameter it names has no value.
    pub command: Option<Vec<Sp<RawArg>>>,
    /// A script run by `shell` (`sh -c` by default); parameters arrive as environment variables
    /// named after them.
    pub run: Option<Sp<String>>,
    /// With `run`: the shell that runs the script, `"sh"`, `"cmd"`, `"powershell"` or `"pwsh"`
    /// (default `"sh"`; required on Windows).
    pub shell: Option<Sp<crate::process::Shell>>,
    /// Working directory (default: the manifest folder).
    pub cwd: Option<Sp<String>>,
    /// Variables added to the inherited environment.
    #[serde(default)]
    pub env: IndexMap<Key, Sp<String>>,
    /// The whole process group is killed after this long (default 30s).
    pub timeout: Option<Sp<DurationStr>>,
    /// Output beyond this is cut, with a marker saying so (default 1MiB).
    pub max_output: Option<Sp<SizeValue>>,
    /// "text" (default) or "json" (stdout parsed into structuredContent).
    pub output: Option<Sp<OutputKind>>,
    /// JSON Schema of the JSON output (with output = "json").
    pub output_schema: Option<Sp<serde_json::Value>>,
    /// The MCP Apps view of the JSON output's rows (with output = "json"): "table", or a chart
    /// (`{ chart = "line" | "bar", x = "COLUMN", y = ["COLUMN", …] }`).
    pub view: Option<Sp<RawView>>,
    /// Annotation readOnlyHint (default false); `true` also makes `destructive` default to false.
    pub read_only: Option<Sp<bool>>,
    /// Annotation destructiveHint (default true, false when `read_only = true`).
    pub destructive: Option<Sp<bool>>,
    /// Annotation idempotentHint (default false).
    pub idempotent: Option<bool>,
    /// Annotation openWorldHint (default true).
    pub open_world: Option<bool>,
    /// Exit codes that are success (default [0]), e.g. [0, 1] for grep / rg, which exit 1 when
    /// nothing matches.
    #[schemars(length(min = 1))]
    pub ok_exit_codes: Option<Sp<Vec<Sp<OkExitCode>>>>,
    /// Parameters; they become the tool's inputSchema.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "pattern": "^[a-z_][a-z0-9_]*$" }))]
    pub params: IndexMap<Key, RawParam>,
}

/// An exit code listed in `ok_exit_codes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct OkExitCode(#[schemars(range(min = 0, max = 255))] pub i64);

/// `[prompts.NAME]`: a prompt template.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPrompt {
    /// Shown to clients.
    pub description: Option<Sp<String>>,
    /// Display name.
    pub title: Option<Sp<String>>,
    /// Arguments; `{arg}` in message text is replaced by the value.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "pattern": "^[a-z_][a-z0-9_]*$" }))]
    pub args: IndexMap<Key, RawPromptArg>,
    /// The messages, in order.
    #[serde(default)]
    pub messages: Vec<RawMessage>,
}

/// An argument of a prompt.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPromptArg {
    /// Shown to clients.
    pub description: Option<Sp<String>>,
    /// Whether the argument must be given (default false).
    pub required: Option<bool>,
    /// Static completion values.
    pub completions: Option<Vec<Sp<String>>>,
    /// The value used when the argument is not given.
    pub default: Option<Sp<String>>,
    /// Complete the argument with the paths of this `[files]` source.
    pub complete_from: Option<Sp<String>>,
}

/// Who speaks a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One prompt message: `text`, or `resource` (a URI template read through this server).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMessage {
    /// "user" or "assistant".
    pub role: Sp<Role>,
    /// Message text; `{arg}` is replaced by the argument's value.
    pub text: Option<Sp<String>>,
    /// A resource URI (template) embedded as a resource, read through this server.
    pub resource: Option<Sp<String>>,
    /// A file embedded by its path relative to a `[files]` source's root.
    pub file: Option<RawMessageFile>,
}

/// `file = { source, path }` in a prompt message.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMessageFile {
    /// The `[files]` source's name.
    pub source: Sp<String>,
    /// The path relative to the source's root; `{arg}` is replaced by the argument's value.
    pub path: Sp<String>,
}

/// The JSON Schema of the manifest, as printed by `mcp-manifest schema`.
pub fn json_schema() -> serde_json::Value {
    let mut generator = schemars::SchemaGenerator::default();
    let schema = generator.root_schema_for::<RawManifest>();
    let mut value = serde_json::to_value(schema).expect("a schema is plain JSON");
    crate::manifest::sql::extend_schema(&mut value, &mut generator);
    value
}
