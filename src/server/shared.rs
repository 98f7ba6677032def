//! What all sessions of one server share (`Shared`: the manifest snapshot, the live sessions, the
//! watcher's readiness) and what belongs to one client session (`Session`: its peer,
//! subscriptions, listen streams, log level). stdio is one session; an HTTP server holds many
//! sessions over one `Shared`.
//!
//! The change loop lives here: watcher batches → the registry says what they mean → each session
//! hears about what it asked for. A manifest edit is read and built off the runtime, then swapped
//! in for every session at once.
//!
//! Each session has its own outbox and delivery task: the change loop only posts, so a client
//! that stops reading its stream (an HTTP session's SSE stream, a listen stream) delays nobody
//! else; when its outbox is full, what does not fit is dropped for that session alone.

// Handshake-era logging and `resources/subscribe` are deprecated by 2026-07-28 but are what
// handshake-era clients speak.
#![allow(deprecated)]

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::time::Duration;

use rmcp::model::{
    Implementation, LoggingLevel, LoggingMessageNotificationParam, MetaObject, PromptsCapability,
    ProtocolVersion, ResourceUpdatedNotificationParam, ResourcesCapability, ServerCapabilities,
    ServerConfig, ToolsCapability,
};
use rmcp::service::{Peer, RoleServer, SubscriptionSink};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::manifest::Filter;
use crate::providers::{ChangeEffect, blocking};
use crate::registry::Registry;
use crate::watch::{Change, Watcher};

/// One registry and the server info computed from it once (rmcp calls `get_info` often).
pub(super) struct Snapshot {
    pub registry: Arc<Registry>,
    pub info: ServerConfig,
    /// `_meta` with `io.modelcontextprotocol/serverInfo`, which stateless-era results carry.
    pub server_meta: MetaObject,
    /// Every tool as `tools/list` gives it, made on the first list (a tool's schemas are
    /// shared, not copied, by each answer).
    tools: OnceLock<Vec<rmcp::model::Tool>>,
    /// `tools/list` results as the transport's reader answers them (`tool_page`): each page's
    /// cursor (none for the first) and its JSON, serialized on the first such list.
    tool_pages: OnceLock<Vec<(Option<String>, Arc<str>)>>,
    /// `resources/list` results as the transport's reader answers them (`resource_page`):
    /// each page's cursor, the `Registry::listing_stamp` it was made at, and its JSON; at
    /// most [`RESOURCE_PAGES_KEPT`], the oldest dropped first.
    resource_pages: Mutex<std::collections::VecDeque<KeptPage>>,
    /// What each endpoint shows: the default one (`[server] expose`; `None` when it shows
    /// everything) and each `[groups.NAME]`.
    seen: HashMap<Option<String>, Option<Arc<Filter>>>,
}

/// What an endpoint whose group a reload removed shows: nothing.
static NOTHING: Filter = Filter {
    tools: Some(Vec::new()),
    resources: Some(Vec::new()),
    prompts: Some(Vec::new()),
    exclude: Vec::new(),
};

impl Snapshot {
    fn new(registry: Arc<Registry>) -> Snapshot {
        let m = &registry.manifest;
        let mut caps = ServerCapabilities::default();
        let mut resources = ResourcesCapability::default();
        resources.subscribe = Some(true);
        resources.list_changed = Some(true);
        caps.resources = Some(resources);
        if registry.has_tools() {
            let mut tools = ToolsCapability::default();
            tools.list_changed = Some(true);
            caps.tools = Some(tools);
        }
        if registry.has_prompts() {
            let mut prompts = PromptsCapability::default();
            prompts.list_changed = Some(true);
            caps.prompts = Some(prompts);
        }
        if registry.has_completions() {
            caps.completions = Some(serde_json::Map::new());
        }
        // The manifest is watched: an invalid edit is reported as `notifications/message`.
        caps.logging = Some(serde_json::Map::new());
        let mut extensions = rmcp::model::ExtensionCapabilities::new();
        if registry.has_skills() {
            // SEP-2640: `skills/list` and `skills/get` (no `resources/directory/read`).
            extensions.insert(
                crate::providers::skills::EXTENSION.to_owned(),
                serde_json::Map::new(),
            );
        }
        if registry.has_views() {
            // MCP Apps (SEP-1865), negotiated as the extensions of SEP-2133 are.
            extensions.insert(
                crate::views::EXTENSION_ID.to_owned(),
                crate::views::capability(),
            );
        }
        if !extensions.is_empty() {
            caps.extensions = Some(extensions);
        }
        let mut info = ServerConfig::new(caps)
            .with_server_info(Implementation::new(&m.server.name, &m.server.version))
            .with_protocol_version(ProtocolVersion::V_2025_11_25);
        if let Some(text) = &m.server.instructions {
            info = info.with_instructions(text);
        }
        let mut server_meta = MetaObject::new();
        if let Ok(value) = serde_json::to_value(&info.server_info) {
            server_meta
                .0
                .insert("io.modelcontextprotocol/serverInfo".to_owned(), value);
        }
        let mut seen = HashMap::new();
        let expose = &m.server.expose;
        seen.insert(
            None,
            (!expose.is_everything()).then(|| Arc::new(expose.clone())),
        );
        for g in &m.groups {
            seen.insert(Some(g.name.clone()), Some(Arc::new(g.filter.clone())));
        }
        Snapshot {
            registry,
            info,
            server_meta,
            tools: OnceLock::new(),
            tool_pages: OnceLock::new(),
            resource_pages: Mutex::default(),
            seen,
        }
    }

    /// What the endpoint of `group` (none: the default one) shows; `None` when everything.
    pub fn seen(&self, group: Option<&str>) -> Option<Arc<Filter>> {
        match self.seen.get(&group.map(str::to_owned)) {
            Some(f) => f.clone(),
            None => Some(Arc::new(NOTHING.clone())),
        }
    }

    /// Every tool, in `tools/list` order.
    pub fn tools(&self) -> &[rmcp::model::Tool] {
        self.tools.get_or_init(|| {
            self.registry
                .tools()
                .iter()
                .map(super::convert::tool)
                .collect()
        })
    }

    /// The `tools/list` result after `cursor` (none: the first page) exactly as rmcp answers a
    /// session before 2026-07-28 (no `resultType`, no `_meta`, only object output schemas):
    /// every page serialized once per snapshot and shared by every answer that gives it (a
    /// listing costs no copy of it, nor 200 tools' schemas serialized again). `None` for a
    /// cursor this server does not give (rmcp answers it, with its error).
    pub fn tool_page(&self, cursor: Option<&str>) -> Option<Arc<str>> {
        let pages = self
            .tool_pages
            .get_or_init(|| tool_pages(self.tools(), self.registry.page_size()));
        pages
            .iter()
            .find(|(at, _)| at.as_deref() == cursor)
            .map(|(_, json)| json.clone())
    }

    /// The `resources/list` result after `cursor` as kept at `stamp` (`Registry::listing_stamp`,
    /// now), if one was (`keep_resource_page`): a watched folder's listing answered as written
    /// while it stands, not converted and serialized again for each request. Buys pipelined
    /// `list/1` ~1.8× (570 000 → 1 040 000/s; BENCHMARKS.md, "Issue 30, the kept read's
    /// check"), a figure issue 30 bounds.
    pub fn resource_page(&self, cursor: Option<&str>, stamp: u64) -> Option<Arc<str>> {
        let pages = self.resource_pages.lock().ok()?;
        pages
            .iter()
            .find(|(at, kept, _)| *kept == stamp && at.as_deref() == cursor)
            .map(|(_, _, json)| json.clone())
    }

    /// Keeps `json`, the `resources/list` result after `cursor` made from the listings of
    /// `stamp` (read before they were listed).
    pub fn keep_resource_page(&self, cursor: Option<String>, stamp: u64, json: Arc<str>) {
        let Ok(mut pages) = self.resource_pages.lock() else {
            return;
        };
        pages.retain(|(at, kept, _)| *kept == stamp && *at != cursor);
        if pages.len() == RESOURCE_PAGES_KEPT {
            pages.pop_front();
        }
        pages.push_back((cursor, stamp, json));
    }
}

/// A `resources/list` result kept: its cursor, its `Registry::listing_stamp`, its JSON.
type KeptPage = (Option<String>, u64, Arc<str>);

/// `resources/list` pages kept per snapshot (`Snapshot::resource_page`).
const RESOURCE_PAGES_KEPT: usize = 16;

/// The pages `tools/list` answers for `all` (each with the cursor that asks for it), serialized
/// as rmcp serializes them for a session before 2026-07-28.
fn tool_pages(all: &[rmcp::model::Tool], size: usize) -> Vec<(Option<String>, Arc<str>)> {
    let mut pages = Vec::new();
    let mut at: Option<String> = None;
    while let Ok((items, next)) = crate::registry::paginate(all, at.as_deref(), size) {
        let mut result = rmcp::model::ListToolsResult::with_all_items(items.to_vec());
        result.next_cursor = next.clone();
        let mut result = rmcp::model::ServerResult::ListToolsResult(result);
        result.strip_result_type_for_legacy_peer();
        result.strip_non_object_output_for_legacy_peer();
        let Ok(json) = serde_json::to_string(&result) else {
            break;
        };
        pages.push((at, Arc::from(json)));
        match next {
            Some(next) => at = Some(next),
            None => break,
        }
    }
    pages
}

/// What `tools/list` answers on one endpoint, for `check`'s summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EndpointTools {
    /// The `[groups.NAME]` (`serve --group NAME`, `/mcp/NAME`); none: the default endpoint.
    pub group: Option<String>,
    pub tools: usize,
    /// Bytes of the `tools/list` results (every page) as a handshake-era session gets them:
    /// what each client loads into its context before any call.
    pub bytes: usize,
}

/// `tools/list` on the default endpoint (`[server] expose` applied) and on each group's, as
/// the server answers it.
pub(crate) fn tools_per_endpoint(registry: Arc<Registry>) -> Vec<EndpointTools> {
    let groups: Vec<String> = registry
        .manifest
        .groups
        .iter()
        .map(|g| g.name.clone())
        .collect();
    let snap = Snapshot::new(registry);
    std::iter::once(None)
        .chain(groups.into_iter().map(Some))
        .map(|group| {
            let seen = snap.seen(group.as_deref());
            let shown: Vec<rmcp::model::Tool> = snap
                .tools()
                .iter()
                .filter(|t| seen.as_ref().is_none_or(|f| f.tool(&t.name)))
                .cloned()
                .collect();
            let bytes = tool_pages(&shown, snap.registry.page_size())
                .iter()
                .map(|(_, json)| json.len())
                .sum();
            EndpointTools {
                group,
                tools: shown.len(),
                bytes,
            }
        })
        .collect()
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What every session of one server shares.
pub(crate) struct Shared {
    snapshot: RwLock<Arc<Snapshot>>,
    sessions: Mutex<Vec<Weak<Session>>>,
    /// True once the watcher watches what the first registry needs (or watching is off): a
    /// subscription is answered only then, so a change right after the answer is seen.
    watching: tokio::sync::watch::Sender<bool>,
    /// Cancelled when the server stops: `subscriptions/listen` streams end with their result.
    pub stopping: CancellationToken,
    /// The `subscriptions/listen` streams open, oldest first (see `Shared::listen_started`).
    listening: Mutex<Listening>,
}

/// Counts what happened since it was last said, to say it on stderr at most once a minute.
#[derive(Default)]
pub(super) struct Throttled {
    count: usize,
    said: Option<std::time::Instant>,
}

impl Throttled {
    /// Counts one more; the count to say now (since it was last said), or None within a
    /// minute of the last time.
    pub fn count(&mut self) -> Option<usize> {
        self.count += 1;
        if self
            .said
            .is_some_and(|t| t.elapsed() < std::time::Duration::from_secs(60))
        {
            return None;
        }
        let n = std::mem::take(&mut self.count);
        self.said = Some(std::time::Instant::now());
        Some(n)
    }
}

/// The open `subscriptions/listen` streams, each with what ends it, by when it started; at
/// most `max` (`[server.http] max_sessions`): a stream costs rmcp some 60 KiB, and over HTTP
/// nothing else bounds how many a client opens (each is a request without a session).
struct Listening {
    max: usize,
    next: u64,
    open: std::collections::BTreeMap<u64, CancellationToken>,
    /// Streams ended to make room.
    ended: Throttled,
}

/// One open listen stream's place in `Shared::listening`, given back when dropped.
pub(super) struct ListenTicket {
    shared: Arc<Shared>,
    id: u64,
    /// Cancelled when a newer stream needs the room.
    pub ended: CancellationToken,
}

impl Drop for ListenTicket {
    fn drop(&mut self) {
        lock(&self.shared.listening).open.remove(&self.id);
    }
}

/// Notifications a session's outbox holds at most; more are dropped for that session.
const OUTBOX: usize = 1024;

/// One notification waiting in a session's outbox.
#[derive(Debug)]
enum Notice {
    Updated(String),
    ListChanged(ListChanged),
    Error(String),
}

/// What belongs to one client session.
pub(crate) struct Session {
    /// The `[groups.NAME]` it was opened on (none: the default endpoint): it hears only of
    /// changes to what that endpoint shows.
    group: Option<Arc<str>>,
    /// The handshake-era client, once initialized: where unsolicited notifications go.
    peer: Mutex<Option<Peer<RoleServer>>>,
    /// Handshake-era subscriptions (`resources/subscribe`).
    subscriptions: Mutex<HashSet<String>>,
    /// Stateless-era notification streams (`subscriptions/listen`).
    listens: Mutex<Vec<SubscriptionSink>>,
    /// `logging/setLevel` (handshake era): messages below it are not sent.
    log_level: Mutex<LoggingLevel>,
    /// Cancelled when the session's transport closes: rmcp sends nothing after that.
    pub closing: CancellationToken,
    /// Notifications for this session, delivered in order by its own task.
    outbox: tokio::sync::mpsc::Sender<Notice>,
    /// Set once the outbox overflowed (said once on stderr).
    overflowed: AtomicBool,
}

/// Which `*/list_changed` notifications to send.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct ListChanged {
    pub resources: bool,
    pub tools: bool,
    pub prompts: bool,
}

impl ListChanged {
    fn any(self) -> bool {
        self.resources || self.tools || self.prompts
    }
}

/// What a manifest reload changed, as each endpoint shows it.
pub(super) struct Reloaded {
    /// Per endpoint (`None`: the default one) of a live session.
    seen: HashMap<Option<Arc<str>>, ListChanged>,
}

impl Shared {
    pub fn new(registry: Registry) -> Arc<Shared> {
        registry.put_in_service();
        let max = registry.manifest.server.http.max_sessions;
        Arc::new(Shared {
            listening: Mutex::new(Listening {
                max,
                next: 0,
                open: std::collections::BTreeMap::new(),
                ended: Throttled::default(),
            }),
            snapshot: RwLock::new(Arc::new(Snapshot::new(Arc::new(registry)))),
            sessions: Mutex::new(Vec::new()),
            watching: tokio::sync::watch::Sender::new(false),
            stopping: CancellationToken::new(),
        })
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        match self.snapshot.read() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub fn registry(&self) -> Arc<Registry> {
        self.snapshot().registry.clone()
    }

    fn replace(&self, snap: Snapshot) {
        snap.registry.put_in_service();
        let snap = Arc::new(snap);
        match self.snapshot.write() {
            Ok(mut s) => *s = snap,
            Err(poisoned) => *poisoned.into_inner() = snap,
        }
    }

    /// A `subscriptions/listen` stream starts: while `max` are open, the oldest ends (with its
    /// result, as when the server stops; its client may listen again), said on stderr at most
    /// once a minute.
    pub(super) fn listen_started(self: &Arc<Shared>) -> ListenTicket {
        let ended = CancellationToken::new();
        let mut l = lock(&self.listening);
        while l.open.len() >= l.max.max(1) {
            let Some((_, oldest)) = l.open.pop_first() else {
                break;
            };
            oldest.cancel();
            if let Some(n) = l.ended.count() {
                tracing::warn!(
                    "{n} subscriptions/listen streams ended to make room for new ones: {} are kept open at most (`max_sessions` in [server.http])",
                    l.max
                );
            }
        }
        let id = l.next;
        l.next += 1;
        l.open.insert(id, ended.clone());
        drop(l);
        ListenTicket {
            shared: self.clone(),
            id,
            ended,
        }
    }

    /// A new session of this server, with its delivery task (which ends with the session).
    pub fn open_session(
        &self,
        closing: CancellationToken,
        group: Option<Arc<str>>,
    ) -> Arc<Session> {
        let (outbox, mut rx) = tokio::sync::mpsc::channel(OUTBOX);
        let session = Arc::new(Session {
            group,
            peer: Mutex::new(None),
            subscriptions: Mutex::new(HashSet::new()),
            listens: Mutex::new(Vec::new()),
            log_level: Mutex::new(LoggingLevel::Info),
            closing,
            outbox,
            overflowed: AtomicBool::new(false),
        });
        let weak = Arc::downgrade(&session);
        tokio::spawn(async move {
            // Holds the session only while delivering: dropping the session closes the outbox.
            while let Some(notice) = rx.recv().await {
                let Some(s) = weak.upgrade() else { break };
                s.deliver(notice).await;
            }
        });
        let mut all = lock(&self.sessions);
        all.retain(|s| s.strong_count() > 0);
        all.push(Arc::downgrade(&session));
        session
    }

    fn sessions(&self) -> Vec<Arc<Session>> {
        lock(&self.sessions)
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// Waits until the watcher watches what the current manifest needs.
    pub async fn watching(&self) {
        let mut rx = self.watching.subscribe();
        let _ = rx.wait_for(|ready| *ready).await;
    }

    /// Posts `*/list_changed` to each session for what its endpoint shows that changed: what
    /// a reload changed there, and `resources` when one of the URIs that came or went is shown
    /// (any, when unknown). Decided once per endpoint, not per session.
    fn list_changed(&self, reloaded: Option<&Reloaded>, effect: &ChangeEffect) {
        if reloaded.is_none() && !effect.list_changed {
            return;
        }
        let snap = self.snapshot();
        let mut per: HashMap<Option<Arc<str>>, ListChanged> = HashMap::new();
        for s in self.sessions() {
            let which = *per.entry(s.group.clone()).or_insert_with(|| {
                let mut which = reloaded
                    .and_then(|r| r.seen.get(&s.group).copied())
                    .unwrap_or_default();
                if effect.list_changed && !which.resources {
                    let seen = snap.seen(s.group.as_deref());
                    which.resources = match (&seen, &effect.came_or_went) {
                        (Some(_), Some(uris)) => {
                            uris.iter().any(|uri| super::sees_resource(&seen, uri))
                        }
                        _ => true,
                    };
                }
                which
            });
            if which.any() {
                s.post(Notice::ListChanged(which));
            }
        }
    }

    fn log_error(&self, text: &str) {
        tracing::error!("{text}");
        for s in self.sessions() {
            s.post(Notice::Error(text.to_owned()));
        }
    }

    /// Watches the manifest and the sources' folders, and turns batches of changes into
    /// `notifications/resources/updated` (for subscribed URIs) and `*/list_changed`. Runs until
    /// the task is dropped.
    pub async fn watch_loop(self: Arc<Self>) {
        let window = self.registry().manifest.server.debounce;
        let (watcher, mut rx) = match Watcher::start(window) {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!("file watching is off: {e}");
                self.watching.send_replace(true);
                return;
            }
        };
        let watcher = Arc::new(watcher);
        self.rewatch(&watcher).await;
        tracing::debug!("watching {} folders", watcher.watched());
        self.watching.send_replace(true);
        while let Some(mut batch) = rx.recv().await {
            while let Ok(more) = rx.try_recv() {
                batch.extend(more);
            }
            self.apply(batch, &watcher).await;
        }
    }

    /// Sets the watched folders to what the current registry needs (folders walked and watches
    /// added on blocking threads).
    ///
    /// A folder made while the folders were walked, before its parent's watch was added, sends
    /// no event: the folders are walked again once watched, and again while a walk finds one
    /// the walk before did not (at most `WATCH_ROUNDS` walks). Then the sources hear that
    /// changes are seen from now on (`Registry::watch_ready`).
    async fn rewatch(&self, watcher: &Arc<Watcher>) {
        /// Walks of the folders at most, each after the watches of the one before are in place.
        const WATCH_ROUNDS: usize = 4;
        let registry = self.registry();
        let mut last = None;
        for _ in 0..WATCH_ROUNDS {
            let wanted = (registry.watch_dirs().await, registry.poll_dirs().await);
            if last.as_ref() == Some(&wanted) {
                break;
            }
            let (dirs, polled) = wanted.clone();
            let w = watcher.clone();
            let _ = blocking(move || w.set_dirs(dirs, polled)).await;
            last = Some(wanted);
        }
        registry.watch_ready();
    }

    async fn apply(&self, batch: Vec<Change>, watcher: &Arc<Watcher>) {
        let before = self.registry();
        let manifest_touched = batch
            .iter()
            .any(|c| c.path == before.manifest_path || c.is_rescan());
        let reloaded = match manifest_touched {
            true => self.reload(&before).await,
            false => None,
        };
        let registry = self.registry();
        let changes: Arc<[Change]> = batch.into();
        let effect = registry.apply_changes(&changes).await;
        if effect.rewatch || reloaded.is_some() {
            // New folders are watched before anyone hears of them, so a client that reacts to
            // `list_changed` by subscribing to a new file sees its next change; subscriptions
            // wait meanwhile.
            self.watching.send_replace(false);
            self.rewatch(watcher).await;
            self.watching.send_replace(true);
        }
        self.list_changed(reloaded.as_ref(), &effect);
        let snap = self.snapshot();
        let sessions: Vec<(Arc<Session>, HashSet<String>)> = self
            .sessions()
            .into_iter()
            .map(|s| {
                let uris = s.subscribed();
                (s, uris)
            })
            .collect();
        let subscribed: HashSet<&String> = sessions.iter().flat_map(|(_, u)| u).collect();
        let mut affected = Vec::new();
        for uri in subscribed {
            if registry.affected(uri, &changes) {
                affected.push(uri.clone());
            }
        }
        for (s, uris) in &sessions {
            let seen = snap.seen(s.group.as_deref());
            for uri in affected.iter().filter(|u| uris.contains(*u)) {
                if super::sees_resource(&seen, uri) {
                    s.post(Notice::Updated(uri.clone()));
                }
            }
        }
    }

    /// Asks the sources that poll (databases) which subscribed URIs changed, every
    /// `poll_interval`, and sends `notifications/resources/updated` for them. Runs until the
    /// task is dropped.
    pub async fn poll_loop(self: Arc<Self>) {
        loop {
            let every = self.registry().poll_interval();
            // A manifest without polling sources is looked at again now and then (an edit may
            // add one).
            tokio::time::sleep(every.unwrap_or(Duration::from_secs(2))).await;
            if every.is_none() {
                continue;
            }
            let registry = self.registry();
            let sessions = self.sessions();
            let mut subscribed = HashSet::new();
            for s in &sessions {
                subscribed.extend(s.subscribed());
            }
            if subscribed.is_empty() {
                continue;
            }
            let snap = self.snapshot();
            let seen: Vec<_> = sessions
                .iter()
                .map(|s| snap.seen(s.group.as_deref()))
                .collect();
            for uri in registry.poll(&subscribed).await {
                for (s, seen) in sessions.iter().zip(&seen) {
                    if super::sees_resource(seen, &uri) {
                        s.resource_updated(&uri).await;
                    }
                }
            }
        }
    }

    /// Re-reads the manifest after an edit, off the runtime. A valid one replaces the registry
    /// and says which lists changed on each endpoint with a session; an invalid one is logged
    /// and the old one stays (`None`).
    async fn reload(&self, old: &Arc<Registry>) -> Option<Reloaded> {
        let (path, file) = (old.manifest.path.clone(), old.manifest.file.clone());
        let children = old.children.clone();
        let runtime = tokio::runtime::Handle::current();
        // `manifest::load` reads a file and `Registry::build` walks, opens databases and
        // repositories: all of it on a blocking thread, driving the async parts from there.
        // The same errors as `check` and `serve` (cross-section ones included).
        let built = blocking(move || {
            runtime
                .block_on(crate::check::run(
                    &path,
                    &file,
                    children,
                    crate::check::Mode::Errors,
                ))
                .into_result()
                .map(|(registry, _)| registry)
        })
        .await;
        let new = match built {
            Ok(Ok(r)) => Arc::new(r),
            Ok(Err(d)) => {
                self.log_error(&format!(
                    "the edited manifest is invalid; still serving the previous one:\n{d}"
                ));
                return None;
            }
            Err(e) => {
                self.log_error(&format!("reloading the manifest failed: {e}"));
                return None;
            }
        };
        let (before, after) = (
            super::reload::Served::of(old).await,
            super::reload::Served::of(&new).await,
        );
        let (old_snap, new_snap) = (self.snapshot(), Snapshot::new(new.clone()));
        let mut seen = HashMap::new();
        for s in self.sessions() {
            seen.entry(s.group.clone()).or_insert_with(|| {
                let group = s.group.as_deref();
                super::reload::seen_changed(
                    (&before, &old_snap.seen(group)),
                    (&after, &new_snap.seen(group)),
                )
            });
        }
        // At the default log level (`main`'s filter lets this target's info through): a user
        // who edits the manifest sees that the edit took and what it changed.
        tracing::info!(
            target: "mcp_manifest::reload",
            "{}",
            super::reload::summary(&before, &after)
        );
        self.replace(new_snap);
        Some(Reloaded { seen })
    }
}

impl Session {
    pub fn set_peer(&self, peer: Peer<RoleServer>) {
        *lock(&self.peer) = Some(peer);
    }

    pub fn set_peer_if_none(&self, peer: Peer<RoleServer>) {
        let mut p = lock(&self.peer);
        if p.is_none() {
            *p = Some(peer);
        }
    }

    fn peer(&self) -> Option<Peer<RoleServer>> {
        lock(&self.peer).clone()
    }

    pub fn subscribe(&self, uri: String) {
        lock(&self.subscriptions).insert(uri);
    }

    pub fn unsubscribe(&self, uri: &str) {
        lock(&self.subscriptions).remove(uri);
    }

    pub fn add_listen(&self, sink: SubscriptionSink) {
        lock(&self.listens).push(sink);
    }

    pub fn remove_listen(&self, id: &rmcp::model::RequestId) {
        lock(&self.listens).retain(|s| s.id() != id);
    }

    pub fn set_log_level(&self, level: LoggingLevel) {
        *lock(&self.log_level) = level;
    }

    fn sinks(&self) -> Vec<SubscriptionSink> {
        lock(&self.listens).clone()
    }

    /// Queues a notification for this session's delivery task; never waits.
    fn post(&self, notice: Notice) {
        if self.closing.is_cancelled() {
            return;
        }
        if self.outbox.try_send(notice).is_err() && !self.overflowed.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "a client is not reading its notifications; those that do not fit its outbox ({OUTBOX}) are dropped"
            );
        }
    }

    async fn deliver(&self, notice: Notice) {
        match notice {
            Notice::Updated(uri) => self.resource_updated(&uri).await,
            Notice::ListChanged(which) => self.list_changed(which).await,
            Notice::Error(text) => self.log_error(&text).await,
        }
    }

    /// Every URI this session subscribed to, in either era.
    fn subscribed(&self) -> HashSet<String> {
        let mut all = lock(&self.subscriptions).clone();
        for sink in self.sinks() {
            if let Some(uris) = &sink.accepted().resource_subscriptions {
                all.extend(uris.iter().cloned());
            }
        }
        all
    }

    async fn resource_updated(&self, uri: &str) {
        if self.closing.is_cancelled() {
            return;
        }
        if lock(&self.subscriptions).contains(uri)
            && let Some(peer) = self.peer()
        {
            let _ = peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                .await;
        }
        for sink in self.sinks() {
            // The sink drops what its accepted filter does not name.
            let _ = sink.notify_resource_updated(uri).await;
        }
    }

    async fn list_changed(&self, which: ListChanged) {
        if self.closing.is_cancelled() {
            return;
        }
        let peer = self.peer();
        let sinks = self.sinks();
        if which.resources {
            if let Some(p) = &peer {
                let _ = p.notify_resource_list_changed().await;
            }
            for s in &sinks {
                let _ = s.notify_resource_list_changed().await;
            }
        }
        if which.tools {
            if let Some(p) = &peer {
                let _ = p.notify_tool_list_changed().await;
            }
            for s in &sinks {
                let _ = s.notify_tool_list_changed().await;
            }
        }
        if which.prompts {
            if let Some(p) = &peer {
                let _ = p.notify_prompt_list_changed().await;
            }
            for s in &sinks {
                let _ = s.notify_prompt_list_changed().await;
            }
        }
    }

    /// Sends an error to the client as `notifications/message` (handshake era), unless it asked
    /// for less.
    async fn log_error(&self, text: &str) {
        let quiet = matches!(
            *lock(&self.log_level),
            LoggingLevel::Critical | LoggingLevel::Alert | LoggingLevel::Emergency
        );
        if quiet || self.closing.is_cancelled() {
            return;
        }
        if let Some(peer) = self.peer() {
            let _ = peer
                .notify_logging_message(
                    LoggingMessageNotificationParam::new(
                        LoggingLevel::Error,
                        Value::String(text.into()),
                    )
                    .with_logger("mcp-manifest"),
                )
                .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::Children;

    async fn registry(path: &std::path::Path, children: Arc<Children>) -> Registry {
        crate::check::run(
            path,
            "mcp-server.toml",
            children,
            crate::check::Mode::Errors,
        )
        .await
        .into_result()
        .map(|(r, _)| r)
        .expect("a valid manifest")
    }

    /// A reload is all or nothing: an edit that changes `max_processes` and breaks an entry
    /// leaves the old limit (and `path`) in force; a valid edit applies them.
    #[tokio::test]
    async fn a_refused_reload_changes_nothing_live() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("mcp-server.toml");
        std::fs::write(&path, "[server]\nmax_processes = 3\npath = [\"bin-a\"]\n").expect("write");
        let children = Children::new();
        let shared = Shared::new(registry(&path, children.clone()).await);
        assert_eq!(children.max_processes(), 3);
        let old_path = children.path();

        std::fs::write(
            &path,
            "[server]\nmax_processes = 7\npath = [\"bin-b\"]\n\n[files.gone]\nroot = \"missing\"\n",
        )
        .expect("write");
        let old = shared.registry();
        assert!(
            shared.reload(&old).await.is_none(),
            "the broken edit is refused"
        );
        assert_eq!(children.max_processes(), 3, "the old limit stays in force");
        assert_eq!(children.path(), old_path, "the old path stays in force");
        assert!(
            Arc::ptr_eq(&shared.registry(), &old),
            "the old registry keeps serving"
        );

        std::fs::write(&path, "[server]\nmax_processes = 7\n").expect("write");
        assert!(
            shared.reload(&old).await.is_some(),
            "the valid edit is applied"
        );
        assert_eq!(children.max_processes(), 7);
        assert!(children.path().is_empty());
    }
}
