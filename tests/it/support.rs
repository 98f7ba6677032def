//! Test support: fixtures in temp dirs, the binary as an MCP server over pipes, CLI runs.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub const BIN: &str = env!("CARGO_BIN_EXE_mcp-manifest");

/// The test helper program (tests/helper/proc_helper.rs: echoes, sleeps, starts grandchildren,
/// exits with a code), so that process tests need no `sh`, `echo` or `printf`. Built once per
/// test run with `rustc` next to the test binary, or named by `MCP_MANIFEST_TEST_HELPER` (a
/// cross-built one, for tests run under Wine).
pub fn helper() -> &'static Path {
    static HELPER: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    HELPER.get_or_init(|| {
        if let Some(path) = std::env::var_os("MCP_MANIFEST_TEST_HELPER") {
            return PathBuf::from(path);
        }
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/helper/proc_helper.rs");
        let me = std::env::current_exe().expect("the test binary");
        let dir = me.parent().and_then(Path::parent).expect("target/debug");
        let out = dir.join(format!("proc-helper{}", std::env::consts::EXE_SUFFIX));
        let fresh = |out: &Path| {
            let built = std::fs::metadata(out).and_then(|m| m.modified());
            let written = std::fs::metadata(&source).and_then(|m| m.modified());
            matches!((built, written), (Ok(b), Ok(w)) if b >= w)
        };
        if !fresh(&out) {
            // Built under a name of its own, then renamed: test binaries running at once never
            // see half a file.
            let partial = dir.join(format!(
                "proc-helper-{}{}",
                std::process::id(),
                std::env::consts::EXE_SUFFIX
            ));
            let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
            let status = Command::new(rustc)
                .args(["--edition", "2021", "-C", "opt-level=1", "-o"])
                .arg(&partial)
                .arg(&source)
                .status()
                .expect("rustc (to build the test helper)");
            assert!(status.success(), "building {} failed", source.display());
            std::fs::rename(&partial, &out).expect("rename the test helper");
        }
        out
    })
}

/// `helper()` as manifests write it: forward slashes (a TOML string needs no escapes, and
/// Windows takes them too).
pub fn helper_path() -> String {
    helper().display().to_string().replace('\\', "/")
}

/// Commits every file of the work tree at `dir` (what `git add -A` stages: `.gitignore`d files
/// left out, changed and deleted ones included) on top of `HEAD`, with git2: made repositories
/// need no `git` program (Windows and Wine have none). The first call makes the repository,
/// its branch `main`. Returns the commit's id.
pub fn git_commit_all(dir: &Path, message: &str) -> git2::Oid {
    let repo = git2::Repository::open(dir).unwrap_or_else(|_| {
        git2::Repository::init_opts(dir, git2::RepositoryInitOptions::new().initial_head("main"))
            .expect("git init")
    });
    let mut index = repo.index().expect("the index");
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .expect("git add");
    index.update_all(["*"], None).expect("git add (deletions)");
    commit_index(&repo, &mut index, message)
}

/// Commits `files` (`/`-separated path, contents) on top of `HEAD` of the repository at `dir`
/// (made when missing, its branch `main`), straight into git's object store with git2: the
/// work tree is not written, so a name Windows refuses (`?`, `:`) can be committed there too.
/// Files of earlier commits stay unless given again. Returns the commit's id.
pub fn git_commit_files(dir: &Path, files: &[(&str, &str)], message: &str) -> git2::Oid {
    let repo = git2::Repository::open(dir).unwrap_or_else(|_| {
        git2::Repository::init_opts(dir, git2::RepositoryInitOptions::new().initial_head("main"))
            .expect("git init")
    });
    let mut index = repo.index().expect("the index");
    for (path, contents) in files {
        let entry = git2::IndexEntry {
            ctime: git2::IndexTime::new(0, 0),
            mtime: git2::IndexTime::new(0, 0),
            dev: 0,
            ino: 0,
            mode: 0o100644,
            uid: 0,
            gid: 0,
            file_size: 0,
            id: git2::Oid::ZERO_SHA1,
            flags: 0,
            flags_extended: 0,
            path: path.as_bytes().to_vec(),
        };
        index
            .add_frombuffer(&entry, contents.as_bytes())
            .expect("git add");
    }
    commit_index(&repo, &mut index, message)
}

fn commit_index(repo: &git2::Repository, index: &mut git2::Index, message: &str) -> git2::Oid {
    index.write().expect("write the index");
    let tree = repo
        .find_tree(index.write_tree().expect("write the tree"))
        .expect("the tree");
    let who = git2::Signature::now("A", "a@example.com").expect("a signature");
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let parents: Vec<&git2::Commit> = parent.iter().collect();
    repo.commit(Some("HEAD"), &who, &who, message, &tree, &parents)
        .expect("git commit")
}

/// How long to wait for an answer before a test fails.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// A temp folder holding a manifest and the files it serves.
pub struct Fixture {
    pub dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Fixture {
        // In-process servers start their tools' supervisors from the real binary.
        mcp_manifest::processes::use_supervisor(Path::new(BIN));
        Fixture {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// The canonical path of the fixture folder (temp dirs may sit behind symlinks), as a user
    /// writes it (on Windows without the `\\?\` prefix `canonicalize` adds).
    pub fn root(&self) -> PathBuf {
        plain(self.dir.path().canonicalize().expect("canonical temp dir"))
    }

    /// `rel` (`/`-separated) below the root, in the platform's separators (as messages show
    /// paths).
    pub fn path(&self, rel: &str) -> PathBuf {
        rel.split('/')
            .filter(|part| !part.is_empty())
            .fold(self.root(), |p, part| p.join(part))
    }

    /// Writes a file (making its folders).
    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("create dirs");
        }
        std::fs::write(&p, contents).expect("write file");
        p
    }

    pub fn mkdir(&self, rel: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(&p).expect("create dir");
        p
    }

    /// Writes `mcp-server.toml` and returns its path.
    pub fn manifest(&self, text: &str) -> PathBuf {
        self.write("mcp-server.toml", text)
    }

    /// The `file://` URI of a file in the fixture.
    pub fn uri(&self, rel: &str) -> String {
        file_uri(&self.path(rel))
    }

    /// Runs the CLI in the fixture folder.
    pub fn run(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .current_dir(self.root())
            .stdin(Stdio::null())
            .output()
            .expect("run mcp-manifest")
    }

    /// What `check` reports for `text` (written as `bad.toml` in the fixture), which must fail:
    /// its diagnostics, the fixture's folder cut from the file names. Checked in-process (the same
    /// code `check` runs); `diagnose_with_binary` goes through the real binary.
    pub fn diagnose(&self, text: &str) -> Vec<String> {
        let path = self.write("bad.toml", text);
        let lines = runtime().block_on(mcp_manifest::cli::diagnostics(&path));
        assert!(!lines.is_empty(), "check should fail");
        let prefix = self.root().join("").display().to_string();
        lines
            .into_iter()
            .map(|l| l.strip_prefix(&prefix).map(str::to_owned).unwrap_or(l))
            .collect()
    }

    /// Every error and warning `check` reports for `text` (written as `bad.toml`), passing or
    /// not, in file order, the fixture's folder cut from the file names. In-process, without
    /// connecting to databases.
    pub fn check_lines(&self, text: &str) -> Vec<String> {
        let path = self.write("bad.toml", text);
        let lines = runtime().block_on(mcp_manifest::cli::check_lines(&path));
        let prefix = self.root().join("").display().to_string();
        lines
            .into_iter()
            .map(|l| l.strip_prefix(&prefix).map(str::to_owned).unwrap_or(l))
            .collect()
    }

    /// `diagnose` through the real binary: `check bad.toml` must exit 1, print nothing on stdout,
    /// and end stderr with a summary line.
    pub fn diagnose_with_binary(&self, text: &str) -> Vec<String> {
        self.write("bad.toml", text);
        let out = self.run(&["check", "bad.toml"]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "check should fail: {}",
            stdout(&out)
        );
        assert!(stdout(&out).is_empty(), "errors go to stderr only");
        let mut lines: Vec<String> = stderr(&out).lines().map(str::to_owned).collect();
        let summary = lines.pop().expect("a summary line");
        assert!(
            summary.starts_with("bad.toml: ") && summary.ends_with("found"),
            "{summary}"
        );
        lines
    }

    /// Runs `serve` with `input` written to its stdin, which is then closed (as `echo … |`
    /// would), and returns its output (stdout and stderr) and how long it ran after the input
    /// was closed.
    pub fn serve_input(&self, input: &str) -> (Output, Duration) {
        let mut child = Command::new(BIN)
            .arg("serve")
            .current_dir(self.root())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mcp-manifest serve");
        let mut stdin = child.stdin.take().expect("stdin");
        let input = input.to_owned();
        // Written from a thread: the answers fill stdout while the input is still going in.
        let writer = std::thread::spawn(move || {
            stdin.write_all(input.as_bytes()).expect("write");
            Instant::now()
        });
        let out = child.wait_with_output().expect("output");
        let closed = writer.join().expect("writer");
        (out, closed.elapsed())
    }

    /// Serves the fixture's manifest in-process (the library's `serve` on pipes, on a thread of
    /// its own), as the binary would.
    pub fn serve(&self) -> Server {
        Server::in_process(&self.path("mcp-server.toml"))
    }

    /// Starts the real binary (`mcp-manifest serve`) on the fixture's manifest: for what only a
    /// process shows (exit status, signals, stderr).
    pub fn serve_process(&self) -> Server {
        Server::start(&self.path("mcp-server.toml"), &self.root())
    }
}

/// `path` without Windows' verbatim prefix (`\\?\C:\x` → `C:\x`), as users and clients write
/// paths; unchanged elsewhere.
pub fn plain(path: PathBuf) -> PathBuf {
    let drive = path
        .to_str()
        .and_then(|p| p.strip_prefix(r"\\?\"))
        .filter(|p| p.as_bytes().get(1) == Some(&b':'))
        .map(PathBuf::from);
    drive.unwrap_or(path)
}

/// The `file://` URI of an absolute path as the server writes it: `file:///home/a/x.md` on Unix,
/// `file:///C:/a/x.md` on Windows (RFC 8089). Written here, not taken from the library, so that
/// the tests check the server's URIs against an independent spelling.
pub fn file_uri(path: &Path) -> String {
    let text = path.display().to_string();
    if cfg!(windows) {
        format!("file:///{}", text.replace('\\', "/"))
    } else {
        format!("file://{text}")
    }
}

/// Makes the symlink `link` to `target` where the platform lets a test make one, and says
/// whether it did: always on Unix; on Windows only with the privilege (or developer mode);
/// never under Wine. Tests assert what a link changes only when
/// it was made (the Windows walk's own links and junctions are tested in the library:
/// `platform::windows::tests`).
pub fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) -> bool {
    let (target, link) = (target.as_ref(), link.as_ref());
    // Wine 8 makes a link a Unix symlink whose target reads back as a `Z:\…` path: the same
    // file by another name, which a Windows link never is. Not made there.
    if std::env::var_os("MCP_MANIFEST_TEST_WINE").is_some() {
        return false;
    }
    #[cfg(unix)]
    let made = std::os::unix::fs::symlink(target, link);
    #[cfg(windows)]
    let made = {
        let dir = link
            .parent()
            .map_or_else(|| target.to_path_buf(), |p| p.join(target));
        if dir.is_dir() {
            std::os::windows::fs::symlink_dir(target, link)
        } else {
            std::os::windows::fs::symlink_file(target, link)
        }
    };
    match made {
        Ok(()) => true,
        Err(e) if cfg!(unix) => panic!("symlink {}: {e}", link.display()),
        Err(_) => false,
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// [`proc_memory`] on Linux; `None` elsewhere (no /proc: a test measures memory bounds there
/// only on Linux, and checks the answers everywhere).
pub fn memory(pid: u32, key: &str) -> Option<u64> {
    cfg!(target_os = "linux").then(|| proc_memory(pid, key))
}

/// A memory figure of process `pid` from `/proc/PID/status` (`VmRSS`, `VmHWM`, …), in bytes.
pub fn proc_memory(pid: u32, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map(|kib| kib * 1024)
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"))
}

/// The binary serving MCP over pipes. Lines it writes are parsed as JSON; anything that is not
/// JSON on stdout fails the test (stdout must carry only protocol messages).
pub struct Server {
    /// The process, when it is one (`Fixture::serve_process`).
    pub child: Option<Child>,
    /// Ends an in-process server (dropping it stops `serve`).
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    stdin: Option<Box<dyn Write + Send>>,
    lines: Receiver<Value>,
    /// Messages received while waiting for something else.
    pending: Vec<Value>,
    next_id: i64,
}

impl Server {
    pub fn start(manifest: &Path, cwd: &Path) -> Server {
        Server::start_logging(manifest, cwd, Stdio::null())
    }

    /// `start`, with the server's stderr (its log) going to `stderr`, at the default log level
    /// (neither `MCP_MANIFEST_LOG` nor `RUST_LOG` passed on).
    pub fn start_logging(manifest: &Path, cwd: &Path, stderr: impl Into<Stdio>) -> Server {
        let mut child = Command::new(BIN)
            .arg("serve")
            .arg(manifest)
            .current_dir(cwd)
            .env_remove("MCP_MANIFEST_LOG")
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn mcp-manifest serve");
        let stdout = child.stdout.take().expect("stdout");
        let stdin = child.stdin.take().expect("stdin");
        Server {
            stdin: Some(Box::new(stdin)),
            child: Some(child),
            stop: None,
            lines: read_lines(stdout),
            pending: Vec::new(),
            next_id: 1,
        }
    }

    /// `serve` in this process, on pipes, on a thread with its own runtime (as `main` runs it).
    pub fn in_process(manifest: &Path) -> Server {
        Server::in_process_group(manifest, None)
    }

    /// `serve --group GROUP` in this process (`in_process` for one `[groups.NAME]`).
    pub fn in_process_group(manifest: &Path, group: Option<&str>) -> Server {
        let group = group.map(str::to_owned);
        let (input, to_server) = std::io::pipe().expect("pipe");
        let (from_server, output) = std::io::pipe().expect("pipe");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let manifest = manifest.to_path_buf();
        std::thread::spawn(move || {
            let shutdown = async {
                let _ = stopped.await;
            };
            let code = runtime().block_on(mcp_manifest::cli::serve_group_streams(
                &manifest,
                group.as_deref(),
                input,
                output,
                shutdown,
            ));
            assert_eq!(code, 0, "serve failed");
        });
        Server {
            stdin: Some(Box::new(to_server)),
            child: None,
            stop: Some(stop),
            lines: read_lines(from_server),
            pending: Vec::new(),
            next_id: 1,
        }
    }

    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write newline");
        stdin.flush().expect("flush");
    }

    pub fn send(&mut self, msg: &Value) {
        self.send_raw(&msg.to_string());
    }

    /// Closes stdin (EOF).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next message matching `pred`, keeping the others for later.
    pub fn wait_for(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.pending.iter().position(&pred) {
            return self.pending.remove(i);
        }
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) if pred(&v) => return v,
                Ok(v) => self.pending.push(v),
                Err(RecvTimeoutError::Timeout) => panic!(
                    "no matching message within {TIMEOUT:?}; got meanwhile: {:?}",
                    self.pending
                ),
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "the server closed stdout; got meanwhile: {:?}",
                        self.pending
                    )
                }
            }
        }
    }

    /// The response (result or error) to request `id`.
    pub fn response(&mut self, id: &Value) -> Value {
        let id = id.clone();
        self.wait_for(move |v| v.get("id") == Some(&id) && v.get("method").is_none())
    }

    /// Messages received while waiting for others, not taken yet.
    pub fn pending(&self) -> &[Value] {
        &self.pending
    }

    /// Sends a `resources/read` of each URI at once (they run concurrently), then waits for
    /// their responses, in the same order.
    pub fn read_all(&mut self, uris: &[String]) -> Vec<Value> {
        let ids: Vec<i64> = uris
            .iter()
            .map(|uri| {
                let id = self.fresh_id();
                self.send(
                    &json!({"jsonrpc": "2.0", "id": id, "method": "resources/read",
                                  "params": {"uri": uri}}),
                );
                id
            })
            .collect();
        ids.into_iter()
            .map(|id| self.response(&json!(id)))
            .collect()
    }

    /// Sends `n` calls of the tool `name` (no arguments) at once, without waiting: their ids.
    #[cfg(target_os = "linux")] // only the supervisor tests, which watch /proc, use it
    pub fn start_calls(&mut self, name: &str, n: usize) -> Vec<i64> {
        (0..n)
            .map(|_| {
                let id = self.fresh_id();
                self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                  "params": {"name": name, "arguments": {}}}));
                id
            })
            .collect()
    }

    pub fn fresh_id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    /// Sends a request and returns its whole response message.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.fresh_id();
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response(&json!(id))
    }

    /// Sends a request and returns its `result`, failing the test on an error.
    pub fn ok(&mut self, method: &str, params: Value) -> Value {
        let r = self.call(method, params);
        match r.get("result") {
            Some(v) => v.clone(),
            None => panic!("{method} failed: {r}"),
        }
    }

    /// Sends a request and returns its `error`, failing the test on a result.
    pub fn err(&mut self, method: &str, params: Value) -> Value {
        let r = self.call(method, params);
        match r.get("error") {
            Some(v) => v.clone(),
            None => panic!("{method} should have failed: {r}"),
        }
    }

    /// The handshake era: `initialize` with `version`, then `notifications/initialized`.
    pub fn initialize(&mut self, version: &str) -> Value {
        let r = self.ok(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        r
    }

    /// A started handshake-era session on 2025-11-25.
    pub fn started(mut self) -> Server {
        self.initialize("2025-11-25");
        self
    }

    /// A stateless-era (2026-07-28) request: `_meta` carries the version and capabilities.
    pub fn modern(&mut self, method: &str, mut params: Value) -> Value {
        params["_meta"] = modern_meta();
        self.call(method, params)
    }

    /// Waits for the process to exit and returns how long that took.
    pub fn wait_exit(&mut self, limit: Duration) -> Duration {
        let child = self
            .child
            .as_mut()
            .expect("a server process (Fixture::serve_process)");
        let start = Instant::now();
        loop {
            if let Some(_status) = child.try_wait().expect("try_wait") {
                return start.elapsed();
            }
            if start.elapsed() > limit {
                let _ = child.kill();
                panic!("the server did not exit within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A runtime like the binary's: one thread, IO and timers.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// The server's output, line by line, each parsed as JSON: anything that is not JSON on the
/// protocol stream fails the test.
fn read_lines(out: impl std::io::Read + Send + 'static) -> Receiver<Value> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line:?}"));
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    rx
}

pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"}
    })
}

/// Reads every page of a `*/list` method and returns the concatenated items and page count.
pub fn list_all(server: &mut Server, method: &str, key: &str) -> (Vec<Value>, usize) {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let r = server.ok(method, params);
        pages += 1;
        items.extend(r[key].as_array().expect("items").iter().cloned());
        match r.get("nextCursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.to_owned()),
            None => return (items, pages),
        }
        assert!(pages < 10_000, "pagination does not end");
    }
}

/// Percent-encodes all but RFC 3986's unreserved characters (how a client puts a value in one URI
/// segment or query value).
pub fn encode_component(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
