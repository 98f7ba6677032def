//! The one place in the crate that starts processes. A process gets argv (never a shell string
//! built from values), an explicit working directory and environment, stdin from the null
//! device, stdout and stderr captured (never inherited: our stdout is the protocol), and a
//! process tree of its own, so a timeout, a cancellation, an output cap or the server's shutdown
//! kills everything it started, grandchildren included.
//!
//! How a tree is kept is the one platform seam of the module (`os`: `unix.rs`, `windows.rs`);
//! callers never look at the platform:
//! - Unix: every program runs under a per-call supervisor, forked by the server's one
//!   supervisor (our own binary started again once, `supervisor.rs`), which kills what the
//!   program started when it ends, when the server asks and when the server dies (even by
//!   `kill -9`; Linux: also what escaped with `setsid`);
//! - Windows: every program runs in a Job Object that kills its processes when the job is
//!   terminated or its last handle (the server's) closes, even when the server is killed.
//!
//! Live trees are kept in the `Children` of the server that started them (a spec names it):
//! `Children::kill_all` (called when the server stops) kills them all and refuses new ones, so no
//! child outlives the server. Several servers in one process (tests, HTTP sessions later) each
//! have their own. `Children` also holds what `[server]` says about processes: the folders put
//! before `PATH` and `max_processes`, the slots calls wait for in order (FIFO).

mod inherited;
#[cfg_attr(unix, path = "process/unix.rs")]
#[cfg_attr(windows, path = "process/windows.rs")]
mod os;
mod shell;
#[cfg(unix)]
mod supervisor;

pub(crate) use inherited::{arg_size, inherited};
pub(crate) use os::{ENV_IN_ARG_MAX, MAX_ARG_LEN, OPTION_PREFIXES, arg_max};
/// `mcp-manifest __supervise …` runs a supervisor (`main` checks for it before anything else;
/// Windows never starts one); `adopt_orphans` and `use_supervisor` are for `main` and tests.
pub use os::{SUPERVISE, adopt_orphans, supervise, use_supervisor};
pub use shell::Shell;

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::Semaphore;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// `[server] max_processes` when not written.
pub const DEFAULT_MAX_PROCESSES: usize = 16;
/// The largest `max_processes` accepted.
pub const MAX_MAX_PROCESSES: usize = 4096;

/// What to run and within which limits.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// A program name (looked up in the process's `PATH`: `[server] path`, then the `PATH` in
    /// `env` or else the inherited one) or a path (relative to `cwd`).
    pub program: String,
    pub args: Vec<String>,
    /// The arguments are the command line as it is, not argv to quote (Windows: `cmd`, which
    /// parses its own line; elsewhere argv either way).
    #[cfg_attr(
        not(windows),
        expect(dead_code, reason = "argv either way off Windows")
    )]
    pub raw_args: bool,
    pub cwd: PathBuf,
    /// Added to the inherited environment. `PATH` here replaces the inherited one (the
    /// `[server] path` folders still come first).
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    /// Bytes of stdout kept; more stops the process.
    pub max_output: u64,
    /// Where the process tree is registered while it runs.
    pub children: Arc<Children>,
}

/// How the process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this code.
    Exited(i32),
    /// A signal it did not get from us killed it (Unix).
    Signaled(i32),
    /// It ran past `timeout`; its tree was killed.
    TimedOut,
    /// The caller cancelled; its tree was killed.
    Cancelled,
    /// It wrote more than `max_output` bytes to stdout; its tree was killed.
    OutputCut,
}

impl Ending {
    /// "exit code 3", "killed by signal 9 (SIGKILL)", "exit code 0xC0000005 (…)": how a program's
    /// own ending reads in a message.
    pub fn describe(&self) -> String {
        match *self {
            Ending::Exited(code) => match os::exit_name(code) {
                Some(name) => format!("exit code {code:#X} ({name})"),
                None => format!("exit code {code}"),
            },
            Ending::Signaled(sig) => match os::signal_name(sig) {
                Some(name) => format!("killed by signal {sig} ({name})"),
                None => format!("killed by signal {sig}"),
            },
            Ending::TimedOut => "timed out".into(),
            Ending::Cancelled => "cancelled".into(),
            Ending::OutputCut => "output cut".into(),
        }
    }
}

/// A program's own ending, as its tree reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exit {
    Code(i32),
    #[cfg_attr(windows, expect(dead_code, reason = "no signals on Windows"))]
    Signal(i32),
}

/// The result of one run. Memory is bounded: stdout by `max_output`, stderr by `STDERR_KEPT`.
#[derive(Debug, Clone)]
pub struct ProcessOutcome {
    pub ending: Ending,
    /// At most `max_output` bytes.
    pub stdout: Vec<u8>,
    /// The last `STDERR_KEPT` bytes of stderr.
    pub stderr_tail: Vec<u8>,
}

/// A running process's progress, sent about twice a second while it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub elapsed: Duration,
    /// The last non-empty line the process wrote to stderr.
    pub message: Option<String>,
}

/// Why a process could not be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpawnError {
    #[error("program `{program}` not found in PATH (`{path}`)")]
    NotInPath { program: String, path: String },
    #[error("program `{0}` does not exist")]
    Missing(String),
    #[error("program `{0}` cannot be run: permission denied (is it executable?)")]
    NotExecutable(String),
    #[error("working directory `{0}` does not exist or is not a folder")]
    Cwd(String),
    #[error("the server is shutting down")]
    ShuttingDown,
    #[error("cannot start `{0}`: {1}")]
    Other(String, String),
}

/// The stderr bytes kept for messages.
pub const STDERR_KEPT: usize = 16 * 1024;
/// How often progress is reported while a process runs (or waits for a slot).
const TICK: Duration = Duration::from_millis(500);
/// How long a tree asked to stop gets before its keeper is killed outright (it needs
/// milliseconds).
const STOP_GRACE: Duration = Duration::from_secs(2);
/// How long to wait for the pipes to close once the tree was killed (a process that left the
/// tree may still hold them).
const DRAIN: Duration = Duration::from_millis(500);

/// A pipe from the tool (stdout or stderr).
type Output = std::pin::Pin<Box<dyn AsyncRead + Send>>;

/// Runs `spec` to its end, the timeout, the output cap or `cancel`, whichever comes first, and
/// sends `Progress` on `progress` (when given) while it runs. When the program exits, whatever
/// it left running in its tree is killed too.
pub async fn run(
    spec: ProcessSpec,
    cancel: CancellationToken,
    progress: Option<UnboundedSender<Progress>>,
) -> Result<ProcessOutcome, SpawnError> {
    // A slot first, in order of arrival; a call cancelled (or dropped) while waiting leaves the
    // queue. The timeout counts from the start of the process.
    let Some(_slot) = wait_for_slot(&spec.children, &cancel, progress.as_ref()).await? else {
        return Ok(cancelled());
    };
    let start = Instant::now();
    let path = process_path(&spec.children.path(), &spec.env);
    let program = find_program(&spec.program, &path, &spec.cwd)?;
    if let Some(why) = os::refused(&program) {
        return Err(SpawnError::Other(spec.program.clone(), why));
    }
    if spec.children.closed.load(Ordering::SeqCst) {
        return Err(SpawnError::ShuttingDown);
    }
    let deadline = tokio::time::Instant::from_std(start)
        .checked_add(spec.timeout)
        .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86400 * 365));
    // Starting counts in the timeout: a supervisor that does not answer (stopped, or slow to
    // fork under a burst) ends the call at its deadline like a program that does not end.
    // Dropped, the start closes the call's socket, and whatever was started is killed.
    let (mut tree, stdout, stderr) = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Ok(ended_unstarted(Ending::Cancelled)),
        _ = tokio::time::sleep_until(deadline) => return Ok(ended_unstarted(Ending::TimedOut)),
        started = os::Tree::start(&spec, &program, &path) => started?,
    };
    let mut group = Group::register(&spec.children, tree.stopper())?;

    let cap = usize::try_from(spec.max_output).unwrap_or(usize::MAX);
    let mut out = Vec::new();
    let tail = Arc::new(Mutex::new(Vec::new()));
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::from_std(start) + TICK, TICK);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);

    let ending = {
        let mut out_read = std::pin::pin!(read_capped(stdout, cap, &mut out));
        let mut err_read = std::pin::pin!(read_tail(stderr, tail.clone()));
        let mut out_done = false;
        let mut err_done = false;
        let mut ended = false;
        let ending = loop {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => break Ending::Cancelled,
                r = tree.wait() => {
                    ended = true;
                    break match r {
                        Ok(exit) => ending_of(exit),
                        Err(e) => {
                            tracing::warn!("waiting for `{}` failed: {e}", spec.program);
                            Ending::Signaled(0)
                        }
                    };
                }
                over = &mut out_read, if !out_done => {
                    out_done = true;
                    if over {
                        break Ending::OutputCut;
                    }
                }
                _ = &mut err_read, if !err_done => err_done = true,
                _ = tokio::time::sleep_until(deadline) => break Ending::TimedOut,
                _ = ticker.tick(), if progress.is_some() => {
                    if let Some(tx) = &progress {
                        let message = last_line(&lock(&tail));
                        let _ = tx.send(Progress { elapsed: start.elapsed(), message });
                    }
                }
            }
        };
        // The tree's keeper killed what the program left behind before it reported; a program
        // still running (timeout, cancel, cap) has its whole tree killed now.
        if !ended {
            group.kill();
            if tokio::time::timeout(STOP_GRACE, tree.wait()).await.is_err() {
                tracing::warn!(
                    "the process tree of `{}` did not stop within {STOP_GRACE:?}; killing it",
                    spec.program
                );
                tree.kill_hard();
                let _ = tree.wait().await;
            }
        }
        group.reaped();
        // Output still in the pipe when the program ended counts against the cap too: a
        // program that writes more than `max_output` and exits at once was still cut.
        let mut cut_late = false;
        let drained = tokio::time::timeout(DRAIN, async {
            if !out_done {
                cut_late = (&mut out_read).await;
            }
            if !err_done {
                (&mut err_read).await;
            }
        })
        .await;
        if drained.is_err() {
            tracing::debug!(
                "`{}`: a process outside its tree kept the output pipes open",
                spec.program
            );
        }
        match ending {
            Ending::Exited(_) | Ending::Signaled(_) if cut_late => Ending::OutputCut,
            e => e,
        }
    };
    // Killed by `kill_all`: the server is stopping, which cancels every call.
    let ending = match ending {
        Ending::Signaled(os::KILLED) | Ending::Exited(os::KILLED_CODE)
            if spec.children.closed.load(Ordering::SeqCst) =>
        {
            Ending::Cancelled
        }
        e => e,
    };
    let stderr_tail = std::mem::take(&mut *lock(&tail));
    Ok(ProcessOutcome {
        ending,
        stdout: out,
        stderr_tail,
    })
}

fn cancelled() -> ProcessOutcome {
    ended_unstarted(Ending::Cancelled)
}

/// A call that ended before its program started: no output.
fn ended_unstarted(ending: Ending) -> ProcessOutcome {
    ProcessOutcome {
        ending,
        stdout: Vec::new(),
        stderr_tail: Vec::new(),
    }
}

fn ending_of(exit: Exit) -> Ending {
    match exit {
        Exit::Code(code) => Ending::Exited(code),
        Exit::Signal(sig) => Ending::Signaled(sig),
    }
}

/// The `PATH` a process is started with: the `[server] path` folders, then the process's own
/// `PATH` from `env` (a tool's `env.PATH`) or else the server's inherited one. It is both the
/// `PATH` the process sees and the one its program is looked up in.
pub(crate) fn process_path(prefix: &[PathBuf], env: &[(String, String)]) -> OsString {
    let base: Option<OsString> = match env.iter().rev().find(|(k, _)| k == "PATH") {
        Some((_, v)) => Some(v.into()),
        None => inherited().path().map(OsStr::to_os_string),
    };
    let mut parts: Vec<OsString> = prefix.iter().map(|p| p.as_os_str().to_owned()).collect();
    match base {
        Some(base) if !base.is_empty() => parts.push(base),
        // Neither a prefix nor a PATH: what `execvp` falls back to.
        _ if parts.is_empty() => parts.push(os::DEFAULT_PATH.into()),
        _ => {}
    }
    parts.join(OsStr::new(os::PATH_SEPARATOR))
}

/// Whether `program` names a file by its path (`./x`, `/usr/bin/x`; Windows also `C:\x`,
/// `dir\x`) rather than a name looked up in `PATH`. For `check`.
pub(crate) fn names_a_path(program: &str) -> bool {
    os::is_path(program)
}

/// Whether the file at `path` is one this platform can run (Unix: a file with an execute bit;
/// Windows: any file, its extension says how). For `check`.
pub(crate) fn is_runnable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| os::runnable(&m))
}

/// Finds `program` the way the process would be started: a name (no path separator) in each
/// folder of `path` in turn (an empty or relative entry is relative to `cwd`), the first file
/// this system would run (Unix: an execute bit; Windows: the name with each `PATHEXT`
/// extension); a path as it is (relative to `cwd`). The error names the `PATH` that was
/// searched. Used by `run` and by `check` (a program missing from the tools' PATH).
pub(crate) fn find_program(program: &str, path: &OsStr, cwd: &Path) -> Result<PathBuf, SpawnError> {
    if os::is_path(program) {
        return Ok(cwd.join(program));
    }
    let not_found = || SpawnError::NotInPath {
        program: program.to_owned(),
        path: path.to_string_lossy().into_owned(),
    };
    if program.is_empty() || program.contains('\0') {
        return Err(not_found());
    }
    let mut not_executable = None;
    for dir in std::env::split_paths(path) {
        let dir = if dir.is_absolute() {
            dir
        } else {
            cwd.join(dir)
        };
        for name in os::candidates(program) {
            let candidate = dir.join(name);
            match std::fs::metadata(&candidate) {
                Ok(m) if os::runnable(&m) => return Ok(candidate),
                Ok(m) if m.is_file() => {
                    not_executable.get_or_insert(candidate);
                }
                _ => {}
            }
        }
    }
    match not_executable {
        Some(p) => Err(SpawnError::NotExecutable(p.display().to_string())),
        None => Err(not_found()),
    }
}

/// Waits for a process slot of `children` (in order of arrival), reporting progress meanwhile.
/// `None` when `cancel` fired first.
async fn wait_for_slot(
    children: &Children,
    cancel: &CancellationToken,
    progress: Option<&UnboundedSender<Progress>>,
) -> Result<Option<tokio::sync::OwnedSemaphorePermit>, SpawnError> {
    let slots = children.slots.clone();
    if let Ok(permit) = slots.clone().try_acquire_owned() {
        return Ok(Some(permit));
    }
    let start = Instant::now();
    let mut acquire = std::pin::pin!(slots.acquire_owned());
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + TICK, TICK);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => return Ok(None),
            permit = &mut acquire => {
                return permit.map(Some).map_err(|_| SpawnError::ShuttingDown);
            }
            _ = ticker.tick(), if progress.is_some() => {
                if let Some(tx) = progress {
                    let limit = children.max_processes();
                    let _ = tx.send(Progress {
                        elapsed: start.elapsed(),
                        message: Some(format!(
                            "waiting for a free process slot (all {limit} in use; max_processes = {limit})"
                        )),
                    });
                }
            }
        }
    }
}

fn spawn_error(spec: &ProcessSpec, e: &std::io::Error) -> SpawnError {
    let program = spec.program.clone();
    match e.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory if !spec.cwd.is_dir() => {
            SpawnError::Cwd(spec.cwd.display().to_string())
        }
        std::io::ErrorKind::NotFound => SpawnError::Missing(program),
        std::io::ErrorKind::PermissionDenied => SpawnError::NotExecutable(program),
        _ => SpawnError::Other(program, e.to_string()),
    }
}

/// Reads `r` into `out` until EOF (false) or until more than `cap` bytes came (true), straight
/// into `out`'s spare room.
async fn read_capped(mut r: impl AsyncRead + Unpin, cap: usize, out: &mut Vec<u8>) -> bool {
    loop {
        if out.len() > cap {
            out.truncate(cap);
            return true;
        }
        if out.capacity() == out.len() {
            // At most one byte past the cap is asked for: enough to see it was passed.
            let want = (cap + 1 - out.len()).min(out.len().max(READ_STEP));
            out.reserve_exact(want);
        }
        let room = out.capacity() - out.len();
        let want = room.min(cap + 1 - out.len());
        match (&mut r).take(want as u64).read_buf(out).await {
            Ok(0) | Err(_) => return false,
            Ok(_) => {}
        }
    }
}

/// How much room a tool's output gets at a time (it doubles with what came).
const READ_STEP: usize = 4096;

/// Reads `r` to EOF, keeping its last `STDERR_KEPT` bytes in `tail`.
async fn read_tail(mut r: impl AsyncRead + Unpin, tail: Arc<Mutex<Vec<u8>>>) {
    let mut chunk = Vec::new();
    loop {
        chunk.clear();
        chunk.reserve(READ_STEP);
        let n = match (&mut r).take(READ_STEP as u64).read_buf(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let mut t = lock(&tail);
        t.extend_from_slice(&chunk[..n]);
        if t.len() > STDERR_KEPT {
            let cut = t.len() - STDERR_KEPT;
            t.drain(..cut);
        }
    }
}

/// The last non-empty line of `bytes`, at most 200 characters.
pub fn last_line(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let line = text.lines().rev().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(200).collect())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The process trees one server started and that are still running, and the `[server]`
/// settings every process of that server follows.
#[derive(Debug)]
pub(crate) struct Children {
    /// Each live tree (by a number of its own), and how it is asked to stop.
    live: Mutex<HashMap<u64, os::Stopper>>,
    next: AtomicU64,
    /// Set once by `kill_all`: no process starts after it.
    closed: AtomicBool,
    /// `[server] path`: folders put before `PATH`.
    path: Mutex<Vec<PathBuf>>,
    /// One permit per process allowed to run (`[server] max_processes`); tokio's semaphore
    /// serves waiters in order and forgets a waiter whose future is dropped.
    slots: Arc<Semaphore>,
    /// The number of permits `slots` is meant to hold.
    limit: Mutex<usize>,
}

impl Default for Children {
    fn default() -> Children {
        Children {
            live: Mutex::default(),
            next: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            path: Mutex::default(),
            slots: Arc::new(Semaphore::new(DEFAULT_MAX_PROCESSES)),
            limit: Mutex::new(DEFAULT_MAX_PROCESSES),
        }
    }
}

impl Children {
    pub fn new() -> Arc<Children> {
        Arc::default()
    }
    /// Applies `[server] path` and `max_processes` (when the registry is built, again after a
    /// manifest edit). A smaller limit takes effect as running processes end.
    pub fn configure(&self, path: &[PathBuf], max_processes: usize) {
        *lock(&self.path) = path.to_vec();
        let max = max_processes.max(1);
        let mut limit = lock(&self.limit);
        if max > *limit {
            self.slots.add_permits(max - *limit);
        } else if max < *limit {
            let fewer = u32::try_from(*limit - max).unwrap_or(u32::MAX);
            let slots = self.slots.clone();
            // Takes the surplus permits as they come free, in line with waiting calls.
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(async move {
                        if let Ok(p) = slots.acquire_many_owned(fewer).await {
                            p.forget();
                        }
                    });
                }
                Err(_) => {
                    self.slots.forget_permits(fewer as usize);
                }
            }
        }
        *limit = max;
    }

    /// `[server] max_processes` as last applied.
    pub fn max_processes(&self) -> usize {
        *lock(&self.limit)
    }

    /// `[server] path`: the folders put before `PATH` for every process.
    pub fn path(&self) -> Vec<PathBuf> {
        lock(&self.path).clone()
    }

    /// Kills every process tree still running, and refuses to start new ones.
    pub fn kill_all(&self) {
        let mut live = lock(&self.live);
        self.closed.store(true, Ordering::SeqCst);
        self.slots.close();
        for (_, stop) in live.drain() {
            stop.stop();
        }
    }
}

/// One registered process tree. Dropping it before `reaped` (a cancelled future) stops it.
struct Group {
    children: Arc<Children>,
    id: u64,
    stop: os::Stopper,
    armed: bool,
}

impl Group {
    fn register(children: &Arc<Children>, stop: os::Stopper) -> Result<Group, SpawnError> {
        let mut live = lock(&children.live);
        let group = Group {
            children: children.clone(),
            id: children.next.fetch_add(1, Ordering::Relaxed),
            stop,
            armed: true,
        };
        if children.closed.load(Ordering::SeqCst) {
            // Dropping `group` stops what was just started.
            drop(live);
            return Err(SpawnError::ShuttingDown);
        }
        live.insert(group.id, group.stop.clone());
        Ok(group)
    }

    /// Asks the tree's keeper to kill everything in it.
    fn kill(&self) {
        self.stop.stop();
    }

    /// The program was waited for: the tree is done.
    fn reaped(&mut self) {
        self.armed = false;
        lock(&self.children.live).remove(&self.id);
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if self.armed {
            self.kill();
            self.reaped();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Programs are started in the integration tests (tests/it/procs.rs, tools.rs): a unit-test
    // binary cannot be the supervisor the Unix seam starts.

    #[test]
    fn path_puts_the_server_folders_first_and_counts_the_tools_own() {
        let sep = os::PATH_SEPARATOR;
        let prefix = vec![PathBuf::from("/opt/a"), PathBuf::from("/opt/b")];
        let own = vec![("PATH".to_owned(), format!("/x{sep}/y"))];
        assert_eq!(
            process_path(&prefix, &own),
            OsString::from(format!("/opt/a{sep}/opt/b{sep}/x{sep}/y"))
        );
        assert_eq!(
            process_path(&[], &own),
            OsString::from(format!("/x{sep}/y"))
        );
        let inherited = std::env::var_os("PATH").unwrap_or_default();
        let mut expected = OsString::from(format!("/opt/a{sep}/opt/b{sep}"));
        expected.push(&inherited);
        assert_eq!(process_path(&prefix, &[]), expected);
        let searched = OsString::from(format!("/opt/a{sep}/nowhere"));
        let e = find_program("no-such-program-xyz", &searched, Path::new("/")).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("program `no-such-program-xyz` not found in PATH (`/opt/a{sep}/nowhere`)")
        );
        // The running test binary, found by its name in its own folder.
        let me = std::env::current_exe().unwrap();
        let dir = me.parent().unwrap();
        let name = me.file_stem().unwrap().to_str().unwrap();
        let mut path = OsString::from(format!("/nowhere{sep}"));
        path.push(dir);
        assert_eq!(find_program(name, &path, Path::new("/")).unwrap(), me);
        assert_eq!(
            find_program("./x", OsStr::new(""), Path::new("/tmp")).unwrap(),
            PathBuf::from("/tmp/./x")
        );
    }

    #[tokio::test]
    async fn the_process_limit_follows_the_manifest() {
        let children = Children::new();
        async fn settled(children: &Children, n: usize) {
            // A smaller limit takes the surplus as permits come free (here at once).
            tokio::time::timeout(Duration::from_secs(5), async {
                while children.slots.available_permits() != n {
                    tokio::task::yield_now().await;
                }
            })
            .await
            .unwrap();
        }
        children.configure(&[], 3);
        settled(&children, 3).await;
        children.configure(&[], 5);
        assert_eq!(children.slots.available_permits(), 5);
        children.configure(&[], 1);
        settled(&children, 1).await;
        let held = children.slots.clone().try_acquire_owned().unwrap();
        let s = ProcessSpec {
            program: "true".into(),
            args: Vec::new(),
            raw_args: false,
            cwd: std::env::temp_dir(),
            env: Vec::new(),
            timeout: Duration::from_secs(20),
            max_output: 1024,
            children: children.clone(),
        };
        let cancel = CancellationToken::new();
        let waiting = tokio::spawn(run(s, cancel.clone(), None));
        tokio::task::yield_now().await;
        cancel.cancel();
        let out = waiting.await.unwrap().unwrap();
        assert_eq!(out.ending, Ending::Cancelled, "cancelled while waiting");
        drop(held);
        assert_eq!(children.slots.available_permits(), 1);
    }

    #[test]
    fn last_line_skips_blank_lines() {
        assert_eq!(last_line(b"a\nb\n\n  \n").as_deref(), Some("b"));
        assert_eq!(last_line(b""), None);
    }
}
