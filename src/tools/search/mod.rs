//! The built-in `search_files` tool: a regular-expression search over the files that the
//! `[files]` sources with `search = true` serve, with ripgrep's own matcher and searcher.
//!
//! What is searched is exactly what is served: the file list is the source's listing (its walk,
//! include / exclude / ignore / hidden rules), every file is opened through the same checks as a
//! read (`FilesSource::open_served`: the visibility rules and the race-free `open_beneath`), files
//! over `max_size` are skipped, and so are binary files (a NUL byte anywhere drops the file and
//! whatever it matched before the NUL).
//!
//! The search runs on its own threads (one per core), never on the async runtime. Files are
//! claimed in listing order and the answer is always the first `max_matches` matches in that
//! order, whatever the threads' timing: a search stops once the files searched so far hold more
//! than `max_matches` matches up to one of them (every file after it would come after the cut),
//! and keeps only what the answer can reach. Cancellation (the call's token, or the call's future
//! being dropped) stops every thread at its next file or match.

use std::collections::{BTreeMap, HashSet};
use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{CallContext, Hints, Progress, ToolContent, ToolInfo, ToolResult};
use crate::manifest::SEARCH_TOOL_NAME;
use crate::providers::files::{FilesSource, PathList};
use crate::quote::{QUOTED_CHARS, Quote, quote};

/// Default and largest `max_matches`.
const DEFAULT_MAX_MATCHES: u64 = 100;
const MAX_MATCHES: u64 = 1000;
/// Largest `context`.
const MAX_CONTEXT: u64 = 5;
/// A line longer than this (in bytes) is cut, with a marker: one minified file must not fill
/// the answer.
const MAX_LINE: usize = 500;
/// The most a search thread's line buffer holds (grep-searcher's `heap_limit`): the lines a
/// match is found in, with their context. A file with a longer line is searched again in
/// windows (`search_windows`). Without it a search held whole lines: 228 MiB for one search
/// of a one-line 10 MiB file, 3.3 GiB with `max_size = "256MiB"` (issue 35).
const LINE_BUFFER: usize = 1024 * 1024;
/// The window of a file with overlong lines searched at once, and how much of its end is
/// searched again at the start of the next (so a match shorter than that is never cut in two).
const WINDOW: usize = 1024 * 1024;
const OVERLAP: usize = 64 * 1024;
/// How often a long search reports progress.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// The tool over the searchable sources, in manifest order.
#[derive(Debug)]
pub(crate) struct SearchTool {
    sources: Vec<Arc<FilesSource>>,
    info: ToolInfo,
}

/// The checked arguments of one call.
#[derive(Debug)]
struct Query {
    matcher: RegexMatcher,
    /// The same pattern for `search_windows` (`^` and `$` at line ends, as line by line).
    windows: regex::bytes::Regex,
    /// Indices into `sources`.
    sources: Vec<usize>,
    glob: Option<Glob>,
    max_matches: usize,
    context: usize,
    /// What the caller sees (`CallContext::seen`): files whose URI it leaves out are skipped.
    seen: Option<Arc<crate::manifest::Filter>>,
}

#[derive(Debug)]
struct Glob {
    matcher: GlobMatcher,
    /// A glob without `/` matches the file name (like `rg -g` and `.gitignore`).
    name_only: bool,
}

/// One line of an answer: a match or a line of context around one.
#[derive(Debug, Clone)]
struct Line {
    number: u64,
    text: String,
    is_match: bool,
    /// Not contiguous with the line before (a `--` separator goes first).
    after_break: bool,
}

/// What one file gave.
#[derive(Debug, Default)]
struct FileHits {
    lines: Vec<Line>,
    matches: usize,
}

impl SearchTool {
    /// The tool, when at least one of `files` has `search = true`.
    pub(crate) fn build(files: &[Arc<FilesSource>]) -> Option<SearchTool> {
        let sources: Vec<Arc<FilesSource>> =
            files.iter().filter(|f| f.searchable()).cloned().collect();
        if sources.is_empty() {
            return None;
        }
        let info = tool_info(&sources);
        Some(SearchTool { sources, info })
    }

    pub(crate) fn info(&self) -> &ToolInfo {
        &self.info
    }

    /// Runs one search. Bad arguments, a bad pattern and cancellation are `isError` results.
    pub(crate) async fn call(
        &self,
        args: &serde_json::Map<String, Value>,
        cx: CallContext,
    ) -> ToolResult {
        let mut query = match self.query(args) {
            Ok(q) => q,
            Err(e) => return ToolResult::error(e),
        };
        query.seen = cx.seen.clone();
        // Dropping this future (a session that ends) stops the threads too.
        let stop = cx.cancel.child_token();
        let _guard = stop.clone().drop_guard();
        let sources = self.sources.clone();
        let progress = cx.progress;
        let job = tokio::task::spawn_blocking(move || run(&sources, &query, &stop, progress));
        match job.await {
            Ok(Some(result)) => result,
            Ok(None) => ToolResult::error("search_files was cancelled"),
            Err(e) => ToolResult::error(format!("search_files failed: {e}")),
        }
    }

    fn query(&self, args: &serde_json::Map<String, Value>) -> Result<Query, String> {
        const KNOWN: [&str; 6] = [
            "pattern",
            "source",
            "glob",
            "case_insensitive",
            "max_matches",
            "context",
        ];
        if let Some(k) = args.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(format!(
                "unknown argument {}; the arguments are: {}",
                quote(k, Quote::Code),
                KNOWN.map(|k| format!("`{k}`")).join(", ")
            ));
        }
        let string = |name: &str| match args.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(format!("`{name}` must be a string")),
        };
        let pattern = string("pattern")?.ok_or("`pattern` is required (a regular expression)")?;
        let case_insensitive = match args.get("case_insensitive") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) if s == "true" || s == "false" => s == "true",
            Some(_) => return Err("`case_insensitive` must be true or false".into()),
        };
        let max_matches = integer(args, "max_matches", DEFAULT_MAX_MATCHES, 1, MAX_MATCHES)?;
        let context = integer(args, "context", 0, 0, MAX_CONTEXT)?;
        // The regex crate's own message: grep-regex reports on the pattern it rewrote.
        let windows = regex::bytes::RegexBuilder::new(pattern)
            .case_insensitive(case_insensitive)
            .multi_line(true)
            .build()
            .map_err(|e| invalid_pattern(pattern, &e.to_string()))?;
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(case_insensitive)
            .line_terminator(Some(b'\n'))
            .build(pattern)
            .map_err(|e| invalid_pattern(pattern, &e.to_string()))?;
        let sources = match string("source")? {
            None => (0..self.sources.len()).collect(),
            Some(name) => match self.sources.iter().position(|s| s.name == name) {
                Some(i) => vec![i],
                None => {
                    return Err(format!(
                        "no searchable [files] source {}; the sources are: {}",
                        quote(name, Quote::Code),
                        self.source_names()
                    ));
                }
            },
        };
        let glob = match string("glob")? {
            None => None,
            Some(g) => Some(Glob {
                matcher: GlobBuilder::new(g)
                    .literal_separator(true)
                    .build()
                    .map_err(|e| format!("invalid glob {}: {}", quote(g, Quote::Code), e.kind()))?
                    .compile_matcher(),
                name_only: !g.contains('/'),
            }),
        };
        Ok(Query {
            matcher,
            windows,
            sources,
            glob,
            max_matches: usize::try_from(max_matches).unwrap_or(usize::MAX),
            context: usize::try_from(context).unwrap_or(0),
            seen: None,
        })
    }

    fn source_names(&self) -> String {
        self.sources
            .iter()
            .map(|s| format!("`{}`", s.name))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The message for a pattern that does not compile. `regex`'s message shows the pattern with a
/// caret under the problem: kept for a pattern short enough to quote whole; for a longer one,
/// which that would repeat whole, only its `error:` lines, after the pattern quoted cut.
fn invalid_pattern(pattern: &str, why: &str) -> String {
    let quoted = quote(pattern, Quote::Code);
    if pattern.chars().nth(QUOTED_CHARS).is_none() {
        return format!("invalid pattern {quoted}: {why}");
    }
    let what: Vec<&str> = why
        .lines()
        .filter(|l| l.starts_with("error:"))
        .map(|l| l.trim_start_matches("error:").trim())
        .collect();
    if what.is_empty() {
        format!("invalid pattern {quoted}: {}", quote(why, Quote::Plain))
    } else {
        format!("invalid pattern {quoted}: {}", what.join("; "))
    }
}

/// An integer argument between `min` and `max` (a JSON number, or its text from a CLI).
fn integer(
    args: &serde_json::Map<String, Value>,
    name: &str,
    default: u64,
    min: u64,
    max: u64,
) -> Result<u64, String> {
    let n = match args.get(name) {
        None | Some(Value::Null) => return Ok(default),
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.trim().parse().ok(),
        Some(_) => None,
    };
    match n {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{name}` must be an integer from {min} to {max} (default {default})"
        )),
    }
}

/// The search itself (blocking). `None` when cancelled.
fn run(
    sources: &[Arc<FilesSource>],
    query: &Query,
    stop: &CancellationToken,
    progress: Option<tokio::sync::mpsc::UnboundedSender<Progress>>,
) -> Option<ToolResult> {
    let start = Instant::now();
    // Every file to search, in order: sources in manifest order, paths sorted. A file that two
    // overlapping sources serve is searched once, under the first.
    // Only roots that overlap can serve a file twice: the set of paths seen (a `PathBuf` per
    // file) is kept only then.
    let overlap = query.sources.iter().enumerate().any(|(n, &i)| {
        query.sources[n + 1..].iter().any(|&j| {
            let (a, b) = (sources[i].root(), sources[j].root());
            a.starts_with(b) || b.starts_with(a)
        })
    });
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut files = Files::default();
    for &i in &query.sources {
        if stop.is_cancelled() {
            return None;
        }
        let source = &sources[i];
        let served = source.served_paths();
        if query.glob.is_none() && !overlap && files.paths.is_empty() && query.seen.is_none() {
            files.paths = served;
        } else {
            for rel in served.iter() {
                // A group (or `[server] expose`) that leaves a file's URI out: not searched.
                if let Some(seen) = &query.seen
                    && !seen.resource(&source.uri_for(rel))
                {
                    continue;
                }
                if let Some(g) = &query.glob {
                    let subject = if g.name_only {
                        rel.rsplit('/').next().unwrap_or(rel)
                    } else {
                        rel
                    };
                    if !g.matcher.is_match(subject) {
                        continue;
                    }
                }
                if overlap && !seen.insert(source.path_of(rel)) {
                    continue;
                }
                files.paths.push(rel);
            }
        }
        files.spans.push((i, files.paths.len()));
    }
    drop(seen);
    let shared = Shared {
        files: &files,
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        found: AtomicUsize::new(0),
        full: AtomicBool::new(false),
        results: Mutex::new(Results {
            hits: BTreeMap::new(),
            last: None,
        }),
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.paths.len().max(1));
    let mut last_report = None;
    let mut report = |shared: &Shared| {
        let Some(tx) = &progress else { return };
        let elapsed = start.elapsed();
        // Progress values must grow: one report per millisecond at most.
        if last_report.is_some_and(|ms| elapsed.as_millis() <= ms) {
            return;
        }
        last_report = Some(elapsed.as_millis());
        let _ = tx.send(Progress {
            elapsed,
            message: Some(format!(
                "searched {} of {} files, {} matches",
                shared.done.load(Ordering::Relaxed),
                files.paths.len(),
                shared.found.load(Ordering::Relaxed)
            )),
        });
    };
    report(&shared);
    std::thread::scope(|scope| {
        let (alive, ended) = mpsc::channel::<()>();
        for _ in 0..threads {
            let alive = alive.clone();
            let shared = &shared;
            scope.spawn(move || {
                worker(sources, query, shared, stop);
                drop(alive);
            });
        }
        drop(alive);
        // Every worker holds a sender: the channel disconnects when the last one is done.
        while let Err(mpsc::RecvTimeoutError::Timeout) = ended.recv_timeout(PROGRESS_EVERY) {
            report(&shared);
        }
    });
    if stop.is_cancelled() {
        return None;
    }
    let results = shared
        .results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    Some(answer(
        sources,
        &files,
        results.hits,
        query.max_matches,
        query.context,
    ))
}

/// The files of one search, in order: every source's paths one after the other.
#[derive(Default)]
struct Files {
    paths: PathList,
    /// Per source, in order: its index in `sources` and where its paths end in `paths`.
    spans: Vec<(usize, usize)>,
}

impl Files {
    /// The `i`th file: its source (an index in `sources`) and its path below the root.
    fn get(&self, i: usize) -> Option<(usize, &str)> {
        if i >= self.paths.len() {
            return None;
        }
        let span = self.spans.partition_point(|&(_, end)| end <= i);
        Some((self.spans.get(span)?.0, self.paths.get(i)))
    }
}

/// What the threads of one search share.
struct Shared<'a> {
    files: &'a Files,
    /// The next file to claim.
    next: AtomicUsize,
    /// Files searched (for progress).
    done: AtomicUsize,
    /// Matches found (for progress).
    found: AtomicUsize,
    /// The files found so far hold more than `max_matches` matches before any file not yet
    /// claimed (`Results::record`): stop claiming.
    full: AtomicBool,
    results: Mutex<Results>,
}

/// What the files that matched gave, by their index (a file without a match takes no room),
/// never more files than the answer can reach (`record`): at most `max_matches + 1` matches and
/// the lines of the file that passed `max_matches`.
struct Results {
    hits: BTreeMap<usize, FileHits>,
    /// The last file the answer can reach, once the files found up to it hold more than
    /// `max_matches` matches (whatever the files before it not searched yet hold: theirs come
    /// first and only push later ones further past the cut).
    last: Option<usize>,
}

impl Results {
    /// Keeps what the file `index` gave. True once no file not yet claimed can be in the answer:
    /// the files found so far hold more than `max_matches` matches up to a file already
    /// searched, so every later file comes after the cut; what later files gave is dropped.
    /// (Whether a run of files is all searched does not matter: a slow early file once let the
    /// other threads keep up to `max_matches + 1` lines for every later file that matched.)
    fn record(&mut self, index: usize, hits: FileHits, max_matches: usize) -> bool {
        if hits.matches == 0 || self.last.is_some_and(|last| index > last) {
            return self.last.is_some();
        }
        self.hits.insert(index, hits);
        let mut total = 0;
        let cut = self.hits.iter().find_map(|(&i, h)| {
            total += h.matches;
            (total > max_matches).then_some(i)
        });
        if let Some(cut) = cut {
            self.hits.split_off(&(cut + 1));
            self.last = Some(cut);
        }
        self.last.is_some()
    }
}

fn worker(
    sources: &[Arc<FilesSource>],
    query: &Query,
    shared: &Shared<'_>,
    stop: &CancellationToken,
) {
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .before_context(query.context)
        .after_context(query.context)
        .heap_limit(Some(LINE_BUFFER))
        .build();
    // The folder of the last file opened, per source.
    let mut dirs: Vec<Option<(String, crate::providers::paths::Dir)>> =
        (0..sources.len()).map(|_| None).collect();
    loop {
        if stop.is_cancelled() || shared.full.load(Ordering::Relaxed) {
            return;
        }
        let index = shared.next.fetch_add(1, Ordering::Relaxed);
        let Some((source, rel)) = shared.files.get(index) else {
            return;
        };
        let hits = search_one(
            &mut searcher,
            &sources[source],
            &mut dirs[source],
            rel,
            query,
            stop,
        );
        shared.done.fetch_add(1, Ordering::Relaxed);
        shared.found.fetch_add(hits.matches, Ordering::Relaxed);
        let Ok(mut results) = shared.results.lock() else {
            return;
        };
        if results.record(index, hits, query.max_matches) {
            shared.full.store(true, Ordering::Relaxed);
        }
    }
}

/// Searches one served file: opened with every check a read makes, skipped when it is no longer
/// served, larger than `max_size`, unreadable or binary.
fn search_one(
    searcher: &mut Searcher,
    source: &FilesSource,
    dir: &mut Option<(String, crate::providers::paths::Dir)>,
    rel: &str,
    query: &Query,
    stop: &CancellationToken,
) -> FileHits {
    let Some(opened) = source.open_served_in(rel, dir) else {
        return FileHits::default();
    };
    let cap = source.max_size();
    if opened.size > cap {
        return FileHits::default();
    }
    let mut sink = Collect {
        hits: FileHits::default(),
        // One more than asked: enough to know the answer is truncated.
        limit: query.max_matches + 1,
        binary: false,
        pending_break: false,
        stop,
    };
    // The cap holds on the bytes read, whatever the file grows to meanwhile.
    let mut file = opened.file;
    let found = searcher.search_reader(&query.matcher, (&mut file).take(cap), &mut sink);
    match found {
        Ok(()) if !sink.binary => sink.hits,
        Ok(()) => FileHits::default(),
        // A line (with its context) longer than `LINE_BUFFER`: the file again, in windows.
        Err(_) if !sink.binary && !stop.is_cancelled() && rewind(&mut file) => {
            match search_windows(file.take(cap), &query.windows, sink.limit, stop) {
                Ok(Some(hits)) => hits,
                Ok(None) => FileHits::default(),
                Err(e) => {
                    tracing::debug!("[files.{}] {rel}: search failed: {e}", source.name);
                    FileHits::default()
                }
            }
        }
        Err(e) => {
            tracing::debug!("[files.{}] {rel}: search failed: {e}", source.name);
            FileHits::default()
        }
    }
}

/// Back to the start of `file`.
fn rewind(file: &mut std::fs::File) -> bool {
    use std::io::Seek as _;
    file.seek(std::io::SeekFrom::Start(0)).is_ok()
}

/// Searches a file with lines too long to hold whole: `WINDOW` bytes at a time, each window
/// beginning with the last `OVERLAP` bytes of the one before (a match starting there is taken
/// from the window where it starts furthest from the end). Each match is reported with its line
/// number and up to `MAX_LINE` bytes of its line around it; no context lines. A match that
/// would span lines is not one (as line by line). `None`: the file is binary (a NUL byte).
/// Holds `WINDOW + OVERLAP` bytes, whatever the lines.
fn search_windows(
    mut file: impl Read,
    re: &regex::bytes::Regex,
    limit: usize,
    stop: &CancellationToken,
) -> std::io::Result<Option<FileHits>> {
    let mut hits = FileHits::default();
    let mut buf: Vec<u8> = Vec::with_capacity(WINDOW + OVERLAP);
    // The line number at `buf[0]`, and whether `buf[0]` starts a line.
    let mut line = 1u64;
    let mut at_line_start = true;
    let mut eof = false;
    loop {
        while buf.len() < WINDOW + OVERLAP && !eof {
            let have = buf.len();
            buf.resize(WINDOW + OVERLAP, 0);
            match file.read(&mut buf[have..]) {
                Ok(0) => {
                    buf.truncate(have);
                    eof = true;
                }
                Ok(n) => buf.truncate(have + n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => buf.truncate(have),
                Err(e) => return Err(e),
            }
        }
        if buf.contains(&0) {
            return Ok(None);
        }
        // Matches starting from here on are left to the next window.
        let end = if eof { buf.len() } else { buf.len() - OVERLAP };
        let (mut counted, mut number) = (0, line);
        for m in re.find_iter(&buf) {
            if m.start() >= end || stop.is_cancelled() {
                break;
            }
            if buf[m.range()].contains(&b'\n') {
                continue;
            }
            number += count_lines(&buf[counted..m.start()]);
            counted = m.start();
            hits.lines.push(Line {
                number,
                text: excerpt(&buf, m.range(), at_line_start),
                is_match: true,
                after_break: false,
            });
            hits.matches += 1;
            if hits.matches >= limit {
                return Ok(Some(hits));
            }
        }
        if eof || stop.is_cancelled() {
            return Ok(Some(hits));
        }
        line += count_lines(&buf[..end]);
        at_line_start = buf[end - 1] == b'\n';
        buf.drain(..end);
    }
}

fn count_lines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|b| **b == b'\n').count() as u64
}

/// Up to `MAX_LINE` bytes of the line holding `m` in `buf`, from a little before the match, as
/// text; `[…]` where the line goes on (`at_line_start`: `buf` begins a line).
fn excerpt(buf: &[u8], m: std::ops::Range<usize>, at_line_start: bool) -> String {
    let line_start = buf[..m.start]
        .iter()
        .rposition(|b| *b == b'\n')
        .map(|i| i + 1);
    let line_end = buf[m.start..]
        .iter()
        .position(|b| *b == b'\n')
        .map(|i| m.start + i);
    let lead = (MAX_LINE / 5).min(m.start - line_start.unwrap_or(0));
    let start = m.start - lead;
    let end = line_end.unwrap_or(buf.len()).min(start + MAX_LINE);
    let mut text = String::new();
    if start > line_start.unwrap_or(0) || (line_start.is_none() && !at_line_start) {
        text.push_str("[…] ");
    }
    // Whole characters only: a cut one is dropped, not replaced.
    let piece = &buf[start..end];
    let first = piece
        .iter()
        .position(|b| (*b as i8) >= -0x40)
        .unwrap_or(piece.len());
    text.push_str(&String::from_utf8_lossy(trim_cut_char(&piece[first..])));
    if line_end.is_none_or(|e| e > end) {
        text.push_str(" […]");
    }
    text
}

/// `bytes` without a UTF-8 character cut at its end.
fn trim_cut_char(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Err(e) if e.error_len().is_none() => &bytes[..e.valid_up_to()],
        _ => bytes,
    }
}

/// Collects the lines of one file.
struct Collect<'a> {
    hits: FileHits,
    limit: usize,
    binary: bool,
    pending_break: bool,
    stop: &'a CancellationToken,
}

impl Collect<'_> {
    fn push(&mut self, number: Option<u64>, bytes: &[u8], is_match: bool) {
        self.hits.lines.push(Line {
            number: number.unwrap_or(0),
            text: line_text(bytes),
            is_match,
            after_break: std::mem::take(&mut self.pending_break),
        });
    }
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        self.push(m.line_number(), m.bytes(), true);
        self.hits.matches += 1;
        Ok(self.hits.matches < self.limit && !self.stop.is_cancelled())
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, std::io::Error> {
        self.push(c.line_number(), c.bytes(), false);
        Ok(!self.stop.is_cancelled())
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, std::io::Error> {
        self.pending_break = true;
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, std::io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// A line as text: without its line ending, invalid UTF-8 replaced, cut at `MAX_LINE` bytes.
fn line_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    if text.len() <= MAX_LINE {
        return text.into_owned();
    }
    let mut end = MAX_LINE;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} [… {} more bytes]", &text[..end], text.len() - end)
}

/// The answer: `path:line:text` lines (context lines as `path-line-text`, `--` between groups)
/// under each file's URI, and the matches as `structuredContent`.
fn answer(
    sources: &[Arc<FilesSource>],
    files: &Files,
    hits: BTreeMap<usize, FileHits>,
    max: usize,
    context: usize,
) -> ToolResult {
    let mut text = String::new();
    let mut matches = Vec::new();
    // The search stops only once the files before the cut hold more than `max` matches.
    let total: usize = hits.values().map(|h| h.matches).sum();
    let truncated = total > max;
    'files: for (index, hits) in hits {
        let Some((source, rel)) = files.get(index) else {
            continue;
        };
        if matches.len() == max {
            break;
        }
        let source = &sources[source];
        let uri = source.uri_for(rel);
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&uri);
        text.push('\n');
        let mut last_match = 0;
        for line in hits.lines {
            if matches.len() == max
                && (line.is_match || line.after_break || line.number > last_match + context as u64)
            {
                // Past the last match kept: only its own lines of context remain.
                break 'files;
            }
            if line.is_match {
                last_match = line.number;
            }
            if line.after_break {
                text.push_str("--\n");
            }
            let sep = if line.is_match { ':' } else { '-' };
            text.push_str(&format!("{rel}{sep}{}{sep}{}\n", line.number, line.text));
            if line.is_match {
                matches.push(json!({
                    "uri": uri,
                    "path": rel,
                    "line": line.number,
                    "text": line.text,
                    "source": source.name,
                }));
            }
        }
    }
    if matches.is_empty() {
        text = format!("No matches in {} files.\n", files.paths.len());
    } else if truncated {
        text.push_str(&format!(
            "\n[stopped at max_matches = {max}: there are more matches; narrow the pattern, \
             the source or the glob, or raise max_matches (at most {MAX_MATCHES})]\n"
        ));
    }
    ToolResult {
        content: vec![ToolContent::Text(text)],
        structured: Some(json!({ "matches": matches, "truncated": truncated })),
        is_error: false,
    }
}

fn tool_info(sources: &[Arc<FilesSource>]) -> ToolInfo {
    let names: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
    let object = |v: Value| match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    ToolInfo {
        name: SEARCH_TOOL_NAME.into(),
        title: Some("Search files".into()),
        description: Some(format!(
            "Search the contents of the served files with a regular expression (Rust regex \
             syntax; one line at a time). Sources: {}. Answers `path:line:text` lines under each \
             file's URI, in path order, at most max_matches of them; read a whole file with its \
             URI.",
            names.join(", ")
        )),
        input_schema: object(json!({
            "type": "object",
            "properties": {
                "pattern": { "type": "string", "description": "Regular expression (Rust regex syntax), matched against each line" },
                "source": { "type": "string", "enum": names, "description": "Search only this source (default: all)" },
                "glob": { "type": "string", "description": "Only files whose path relative to the source's root matches this glob (a glob without `/` matches the file name), e.g. `*.rs` or `src/**/*.ts`" },
                "case_insensitive": { "type": "boolean", "default": false, "description": "Ignore case" },
                "max_matches": { "type": "integer", "minimum": 1, "maximum": MAX_MATCHES, "default": DEFAULT_MAX_MATCHES, "description": "Stop after this many matches" },
                "context": { "type": "integer", "minimum": 0, "maximum": MAX_CONTEXT, "default": 0, "description": "Lines of context before and after each match" }
            },
            "required": ["pattern"],
            "additionalProperties": false
        })),
        output_schema: Some(object(json!({
            "type": "object",
            "properties": {
                "matches": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "uri": { "type": "string" },
                            "path": { "type": "string" },
                            "line": { "type": "integer" },
                            "text": { "type": "string" },
                            "source": { "type": "string" }
                        },
                        "required": ["uri", "path", "line", "text"]
                    }
                },
                "truncated": { "type": "boolean" }
            },
            "required": ["matches", "truncated"]
        }))),
        hints: Hints::READ_ONLY,
        view: None,
    }
}

#[cfg(test)]
mod tests;
