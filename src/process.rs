//! The one place in the crate that starts processes. A process gets argv (never a shell string
//! built from values), an explicit working directory and environment, stdin from `/dev/null`,
//! stdout and stderr captured (never inherited: our stdout is the protocol), and its own process
//! group, so a timeout, a cancellation, an output cap or the server's shutdown kills everything
//! it started, grandchildren included.
//!
//! Every program runs under a small supervisor: the server's child, which starts the program and,
//! when it ends, is stopped or the server dies (even by `kill -9`), kills everything the program
//! started (on Linux also what escaped with `setsid`) before it reports the program's status.
//! It is cloned in the server's memory where it can be (`launch.rs`) and forked elsewhere
//! (`supervisor.rs`). The process group the server registers is the supervisor's; "killing a
//! group" from here means asking its supervisor (`Stopper`: a byte in its stop pipe, or
//! `STOP_SIGNAL`), then SIGKILL if it does not go.
//!
//! Live groups are kept in the `Children` of the server that started them (a spec names it):
//! `Children::kill_all` (called when the server stops) kills them all and refuses new ones, so no
//! child outlives the server. Several servers in one process (tests, HTTP sessions later) each
//! have their own. `Children` also holds what `[server]` says about processes: the folders put
//! before `PATH` and `max_processes`, the slots calls wait for in order (FIFO).

mod inherited;
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod launch;
mod supervisor;
mod sys;

pub(crate) use inherited::{arg_size, inherited};

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::Semaphore;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// What to run and within which limits.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// A program name (looked up in the process's `PATH`: `[server] path`, then the `PATH` in
    /// `env` or else the inherited one) or a path (relative to `cwd`).
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// Added to the inherited environment. `PATH` here replaces the inherited one (the
    /// `[server] path` folders still come first).
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    /// Bytes of stdout kept; more stops the process.
    pub max_output: u64,
    /// Where the process group is registered while it runs.
    pub children: Arc<Children>,
}

/// How the process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this code.
    Exited(i32),
    /// A signal it did not get from us killed it.
    Signaled(i32),
    /// It ran past `timeout`; its group was killed.
    TimedOut,
    /// The caller cancelled; its group was killed.
    Cancelled,
    /// It wrote more than `max_output` bytes to stdout; its group was killed.
    OutputCut,
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
/// How long a supervisor asked to stop gets before it is killed with SIGKILL (it needs
/// milliseconds).
const STOP_GRACE: Duration = Duration::from_secs(2);
/// How long to wait for the pipes to close once the group was killed (a process that left the
/// group may still hold them).
const DRAIN: Duration = Duration::from_millis(500);

/// Runs `spec` to its end, the timeout, the output cap or `cancel`, whichever comes first, and
/// sends `Progress` on `progress` (when given) while it runs. When the program exits, whatever
/// it left running in its process group is killed too.
pub async fn run(
    spec: ProcessSpec,
    cancel: CancellationToken,
    progress: Option<UnboundedSender<Progress>>,
) -> Result<ProcessOutcome, SpawnError> {
    // A slot first, in order of arrival; a call cancelled (or dropped) while waiting leaves the
    // queue. The timeout counts from the start of the process.
    let Some(_slot) = wait_for_slot(&spec.children, &cancel, progress.as_ref()).await? else {
        return Ok(ProcessOutcome {
            ending: Ending::Cancelled,
            stdout: Vec::new(),
            stderr_tail: Vec::new(),
        });
    };
    let start = Instant::now();
    let path = process_path(&spec.children.path(), &spec.env);
    let program = find_program(&spec.program, &path, &spec.cwd)?;
    #[expect(clippy::disallowed_methods, reason = "this is the one spawner")]
    let mut cmd = tokio::process::Command::new(&program);
    cmd.arg0(&spec.program)
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env("PATH", &path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        // Never SIGKILL the supervisor on a drop: it must live to kill what is below it
        // (`Group`'s drop asks it to stop; `Reaped` waits for it).
        .kill_on_drop(false);
    let (child, stdout, stderr) = start_supervised(&spec, cmd)?;
    let mut child = Reaped(Some(child));
    let Some(pid) = child.id() else {
        return Err(SpawnError::Other(
            spec.program.clone(),
            "it has no process id".into(),
        ));
    };
    let mut group = Group::register(&spec.children, pid, child.stopper())?;

    let cap = usize::try_from(spec.max_output).unwrap_or(usize::MAX);
    let mut out = Vec::new();
    let tail = Arc::new(Mutex::new(Vec::new()));
    let deadline = tokio::time::Instant::from_std(start)
        .checked_add(spec.timeout)
        .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86400 * 365));
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::from_std(start) + TICK, TICK);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);

    let (ending, status) = {
        let mut out_read = std::pin::pin!(read_capped(stdout, cap, &mut out));
        let mut err_read = std::pin::pin!(read_tail(stderr, tail.clone()));
        let mut out_done = false;
        let mut err_done = false;
        let mut status: Option<ExitStatus> = None;
        let ending = loop {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => break Ending::Cancelled,
                r = child.wait(), if status.is_none() => match r {
                    Ok(s) => {
                        status = Some(s);
                        break ending_of(s);
                    }
                    Err(e) => {
                        tracing::warn!("waiting for `{}` failed: {e}", spec.program);
                        break Ending::Signaled(0);
                    }
                },
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
        // The supervisor killed what the program left behind before it exited; one still
        // running (timeout, cancel, cap) is asked to stop everything now.
        if status.is_none() {
            group.kill();
            status = match tokio::time::timeout(STOP_GRACE, child.wait()).await {
                Ok(s) => s.ok(),
                Err(_) => {
                    tracing::warn!(
                        "the supervisor of `{}` did not stop within {STOP_GRACE:?}; killing it",
                        spec.program
                    );
                    group.kill_hard();
                    child.wait().await.ok()
                }
            };
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
                "`{}`: a process outside its group kept the output pipes open",
                spec.program
            );
        }
        let ending = match ending {
            Ending::Exited(_) | Ending::Signaled(_) if cut_late => Ending::OutputCut,
            e => e,
        };
        (ending, status)
    };
    if let Some(failure) = child.failure() {
        return Err(start_error(&spec, failure));
    }
    if status.is_none() {
        tracing::warn!("`{}` could not be waited for", spec.program);
    }
    // Killed by `kill_all`: the server is stopping, which cancels every call.
    let ending = match ending {
        Ending::Signaled(libc::SIGKILL) if spec.children.closed.load(Ordering::SeqCst) => {
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

/// A started supervisor: forked by the standard library (`supervisor.rs`), or cloned in the
/// server's memory (`launch.rs`, Linux on x86_64 and aarch64).
enum Supervised {
    Forked(tokio::process::Child),
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    Cloned(launch::Cloned),
}

/// A pipe from the tool (stdout or stderr).
type Output = std::pin::Pin<Box<dyn AsyncRead + Send>>;

/// Starts `cmd` under a supervisor: cloned where `launch::cloned()` says it can be, forked
/// otherwise.
fn start_supervised(
    spec: &ProcessSpec,
    mut cmd: tokio::process::Command,
) -> Result<(Supervised, Output, Output), SpawnError> {
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    if launch::cloned() {
        let other = |e: std::io::Error| SpawnError::Other(spec.program.clone(), e.to_string());
        let (child, pipes) =
            launch::start(cmd.as_std(), spec.program.as_ref(), &spec.cwd).map_err(other)?;
        let child = Supervised::Cloned(child);
        let stdout =
            tokio::net::unix::pipe::Receiver::from_owned_fd(pipes.stdout).map_err(other)?;
        let stderr =
            tokio::net::unix::pipe::Receiver::from_owned_fd(pipes.stderr).map_err(other)?;
        return Ok((child, Box::pin(stdout), Box::pin(stderr)));
    }
    supervisor::install(&mut cmd, spec.program.as_ref());
    let mut child = cmd.spawn().map_err(|e| spawn_error(spec, &e))?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(SpawnError::Other(
            spec.program.clone(),
            "its output pipes are missing".into(),
        ));
    };
    Ok((
        Supervised::Forked(child),
        Box::pin(stdout),
        Box::pin(stderr),
    ))
}

/// A child (the supervisor) that is waited for even when `run` is dropped half-way (a cancelled
/// read), and killed with SIGKILL only if it does not stop within `STOP_GRACE` of being asked.
struct Reaped(Option<Supervised>);

impl Reaped {
    fn get(&mut self) -> &mut Supervised {
        self.0.as_mut().expect("the child is present until drop")
    }

    fn id(&mut self) -> Option<i32> {
        match self.get() {
            Supervised::Forked(c) => c.id().and_then(|p| i32::try_from(p).ok()),
            #[cfg(all(
                target_os = "linux",
                any(target_arch = "x86_64", target_arch = "aarch64")
            ))]
            Supervised::Cloned(c) => Some(c.pid()),
        }
    }

    /// How the group is asked to stop.
    fn stopper(&mut self) -> Stopper {
        match self.get() {
            Supervised::Forked(_) => Stopper::Signal,
            #[cfg(all(
                target_os = "linux",
                any(target_arch = "x86_64", target_arch = "aarch64")
            ))]
            Supervised::Cloned(c) => Stopper::Pipe(c.stopper()),
        }
    }

    async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        match self.get() {
            Supervised::Forked(c) => c.wait().await,
            #[cfg(all(
                target_os = "linux",
                any(target_arch = "x86_64", target_arch = "aarch64")
            ))]
            Supervised::Cloned(c) => c.wait().await,
        }
    }

    /// Why the program did not start, learnt when its supervisor ended (a cloned supervisor;
    /// a forked one fails `spawn` itself).
    fn failure(&mut self) -> Option<StartFailure> {
        match self.get() {
            Supervised::Forked(_) => None,
            #[cfg(all(
                target_os = "linux",
                any(target_arch = "x86_64", target_arch = "aarch64")
            ))]
            Supervised::Cloned(c) => c.failure(),
        }
    }
}

/// Why a cloned supervisor could not start its program (`launch.rs` writes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StartFailure {
    /// `chdir` (errno).
    Cwd(i32),
    /// `execve` (errno).
    Exec(i32),
    /// `clone` or the descriptors.
    Start,
}

fn start_error(spec: &ProcessSpec, f: StartFailure) -> SpawnError {
    match f {
        StartFailure::Cwd(libc::ENOENT | libc::ENOTDIR) => {
            SpawnError::Cwd(spec.cwd.display().to_string())
        }
        StartFailure::Cwd(e) => SpawnError::Other(
            spec.program.clone(),
            format!(
                "cannot enter its working directory `{}`: {}",
                spec.cwd.display(),
                std::io::Error::from_raw_os_error(e)
            ),
        ),
        StartFailure::Exec(e) => spawn_error(spec, &std::io::Error::from_raw_os_error(e)),
        StartFailure::Start => SpawnError::Other(
            spec.program.clone(),
            "the system refused to start a process".into(),
        ),
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        let Some(Supervised::Forked(mut child)) = self.0.take() else {
            // A cloned supervisor's own drop waits for it (or nothing is left).
            return;
        };
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        // The supervisor was asked to stop (`Group`'s drop runs first): give it the time to
        // kill what is below it, then SIGKILL.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if tokio::time::timeout(STOP_GRACE, child.wait())
                    .await
                    .is_err()
                {
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                }
            });
        }
        // Without a runtime the server is going away: the supervisor was asked to stop and
        // also stops when the server exits.
    }
}

fn ending_of(s: ExitStatus) -> Ending {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(code), _) => Ending::Exited(code),
        (None, Some(sig)) => Ending::Signaled(sig),
        (None, None) => Ending::Signaled(0),
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
        _ if parts.is_empty() => parts.push("/usr/bin:/bin".into()),
        _ => {}
    }
    parts.join(OsStr::new(":"))
}

/// Finds `program` the way the process would be started: a name without `/` in each folder of
/// `path` in turn (an empty or relative entry is relative to `cwd`), the first regular file with
/// an execute bit; a path with `/` as it is (relative to `cwd`). The error names the `PATH` that
/// was searched. Used by `run` and by `check` (a program missing from the tools' PATH).
pub(crate) fn find_program(program: &str, path: &OsStr, cwd: &Path) -> Result<PathBuf, SpawnError> {
    use std::os::unix::fs::PermissionsExt;
    if program.contains('/') {
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
        let candidate = dir.join(program);
        match std::fs::metadata(&candidate) {
            Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => return Ok(candidate),
            Ok(m) if m.is_file() => {
                not_executable.get_or_insert(candidate);
            }
            _ => {}
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

/// Reads `r` into `out` until EOF (false) or until more than `cap` bytes came (true).
/// Reads straight into `out`'s spare room (no zeroed chunk: while a tool runs, every page the
/// server writes costs a copy-on-write fault, since its supervisor is a fork of the server).
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

/// The process groups one server started and that are still running, and the `[server]`
/// settings every process of that server follows.
#[derive(Debug)]
pub(crate) struct Children {
    /// Each live group, and how its supervisor is asked to stop.
    live: Mutex<HashMap<i32, Stopper>>,
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
            closed: AtomicBool::new(false),
            path: Mutex::default(),
            slots: Arc::new(Semaphore::new(crate::manifest::DEFAULT_MAX_PROCESSES)),
            limit: Mutex::new(crate::manifest::DEFAULT_MAX_PROCESSES),
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

    /// Kills every process group still running, and refuses to start new ones.
    pub fn kill_all(&self) {
        let mut live = lock(&self.live);
        self.closed.store(true, Ordering::SeqCst);
        self.slots.close();
        for (pgid, stop) in live.drain() {
            stop.stop(pgid);
        }
    }
}

/// How a supervisor is asked to stop: a forked one by `STOP_SIGNAL` to its group, a cloned one
/// (which keeps every signal blocked) by a byte in its stop pipe.
#[derive(Debug, Clone)]
enum Stopper {
    Signal,
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    Pipe(Arc<std::os::fd::OwnedFd>),
}

impl Stopper {
    fn stop(&self, pgid: i32) {
        match self {
            Stopper::Signal => signal_group(pgid, supervisor::STOP_SIGNAL),
            #[cfg(all(
                target_os = "linux",
                any(target_arch = "x86_64", target_arch = "aarch64")
            ))]
            Stopper::Pipe(fd) => launch::stop(fd),
        }
    }
}

fn signal_group(pgid: i32, signal: i32) {
    // `kill(-1)` and `kill(0)` would reach far more than one group.
    if pgid > 1 {
        // SAFETY: kill(2) has no memory-safety preconditions; a group that is already gone
        // answers ESRCH, which is fine.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
}

/// One registered process group. Dropping it before `reaped` (a cancelled future) kills it.
struct Group {
    children: Arc<Children>,
    pgid: i32,
    stop: Stopper,
    armed: bool,
}

impl Group {
    fn register(children: &Arc<Children>, pgid: i32, stop: Stopper) -> Result<Group, SpawnError> {
        let mut live = lock(&children.live);
        let group = Group {
            children: children.clone(),
            pgid,
            stop,
            armed: true,
        };
        if children.closed.load(Ordering::SeqCst) {
            // Dropping `group` kills what was just started.
            drop(live);
            return Err(SpawnError::ShuttingDown);
        }
        live.insert(pgid, group.stop.clone());
        Ok(group)
    }

    /// Asks the group's supervisor to kill everything below it and exit.
    fn kill(&self) {
        self.stop.stop(self.pgid);
    }

    /// Kills the supervisor itself (it did not stop when asked).
    fn kill_hard(&self) {
        signal_group(self.pgid, libc::SIGKILL);
    }

    /// The leader was waited for: the group is done (its id may be reused from now on).
    fn reaped(&mut self) {
        self.armed = false;
        lock(&self.children.live).remove(&self.pgid);
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if self.armed {
            // The leader is not reaped yet (tokio reaps it after `kill_on_drop`), so the id
            // still names this group.
            self.kill();
            self.reaped();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(program: &str, args: &[&str]) -> ProcessSpec {
        ProcessSpec {
            program: program.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            cwd: std::env::temp_dir(),
            env: vec![("MCP_MANIFEST_TEST".into(), "yes".into())],
            timeout: Duration::from_secs(20),
            max_output: 1024,
            children: Children::new(),
        }
    }

    #[tokio::test]
    async fn captures_output_and_exit_code() {
        let out = run(
            spec(
                "sh",
                &[
                    "-c",
                    "echo out; echo err >&2; echo $MCP_MANIFEST_TEST; exit 3",
                ],
            ),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
        assert_eq!(out.ending, Ending::Exited(3));
        assert_eq!(out.stdout, b"out\nyes\n");
        assert_eq!(out.stderr_tail, b"err\n");
    }

    #[tokio::test]
    async fn caps_output_and_stops_the_process() {
        let out = run(spec("yes", &[]), CancellationToken::new(), None)
            .await
            .unwrap();
        assert_eq!(out.ending, Ending::OutputCut);
        assert_eq!(out.stdout.len(), 1024);
    }

    #[tokio::test]
    async fn output_over_the_cap_is_cut_even_when_the_program_exits_first() {
        // `head` writes everything into the pipe and exits before the reader reaches the cap.
        for _ in 0..20 {
            let out = run(
                spec("head", &["-c", "5000", "/dev/zero"]),
                CancellationToken::new(),
                None,
            )
            .await
            .unwrap();
            assert_eq!(out.ending, Ending::OutputCut);
            assert_eq!(out.stdout.len(), 1024);
        }
        let exact = run(
            spec("head", &["-c", "1024", "/dev/zero"]),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
        assert_eq!(
            exact.ending,
            Ending::Exited(0),
            "exactly max_output is not cut"
        );
        assert_eq!(exact.stdout.len(), 1024);
    }

    #[tokio::test]
    async fn times_out_and_reports_progress() {
        let mut s = spec("sh", &["-c", "echo working >&2; sleep 30"]);
        s.timeout = Duration::from_millis(1300);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let out = run(s, CancellationToken::new(), Some(tx)).await.unwrap();
        assert_eq!(out.ending, Ending::TimedOut);
        let mut seen = Vec::new();
        while let Some(p) = rx.recv().await {
            seen.push(p);
        }
        assert!(seen.len() >= 2, "{seen:?}");
        assert!(seen.windows(2).all(|w| w[0].elapsed < w[1].elapsed));
        assert_eq!(seen[1].message.as_deref(), Some("working"));
    }

    #[tokio::test]
    async fn missing_programs_and_folders_are_named() {
        let e = run(
            spec("no-such-program-xyz", &[]),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&e, SpawnError::NotInPath { program, .. } if program == "no-such-program-xyz"),
            "{e:?}"
        );
        let e = run(spec("/no/such/prog", &[]), CancellationToken::new(), None)
            .await
            .unwrap_err();
        assert_eq!(e, SpawnError::Missing("/no/such/prog".into()));
        let mut s = spec("true", &[]);
        s.cwd = "/no/such/folder".into();
        let e = run(s, CancellationToken::new(), None).await.unwrap_err();
        assert_eq!(e, SpawnError::Cwd("/no/such/folder".into()));
    }

    #[tokio::test]
    async fn the_supervisor_reports_the_programs_own_ending() {
        let out = run(
            spec("sh", &["-c", "kill -SEGV $$"]),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
        assert_eq!(out.ending, Ending::Signaled(libc::SIGSEGV));
        let out = run(
            spec("sh", &["-c", "exit 255"]),
            CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
        assert_eq!(out.ending, Ending::Exited(255));
    }

    #[test]
    fn path_puts_the_server_folders_first_and_counts_the_tools_own() {
        let prefix = vec![PathBuf::from("/opt/a"), PathBuf::from("/opt/b")];
        let own = vec![("PATH".to_owned(), "/x:/y".to_owned())];
        assert_eq!(process_path(&prefix, &own), "/opt/a:/opt/b:/x:/y");
        assert_eq!(process_path(&[], &own), "/x:/y");
        let inherited = std::env::var_os("PATH").unwrap_or_default();
        let mut expected = OsString::from("/opt/a:/opt/b:");
        expected.push(&inherited);
        assert_eq!(process_path(&prefix, &[]), expected);
        let e = find_program(
            "no-such-program-xyz",
            OsStr::new("/opt/a:/nowhere"),
            Path::new("/"),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "program `no-such-program-xyz` not found in PATH (`/opt/a:/nowhere`)"
        );
        assert_eq!(
            find_program("sh", OsStr::new("/nowhere:/bin:/usr/bin"), Path::new("/")).unwrap(),
            PathBuf::from("/bin/sh")
        );
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
        let mut s = spec("true", &[]);
        s.children = children.clone();
        let cancel = CancellationToken::new();
        let waiting = tokio::spawn(run(s, cancel.clone(), None));
        tokio::task::yield_now().await;
        cancel.cancel();
        let out = waiting.await.unwrap().unwrap();
        assert_eq!(out.ending, Ending::Cancelled, "cancelled while waiting");
        drop(held);
        assert_eq!(children.slots.available_permits(), 1);
    }

    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    #[test]
    fn supervisors_are_cloned_unless_told_to_fork() {
        // CI runs these tests a second time with MCP_MANIFEST_SUPERVISOR=fork.
        let fork = std::env::var_os("MCP_MANIFEST_SUPERVISOR").is_some_and(|v| v == "fork");
        // scripts/aarch64-tests.sh runs them under qemu-user, which refuses a `CLONE_VM`
        // process that is not a thread: the trial clone must see that and fork instead.
        let emulated = std::env::var_os("MCP_MANIFEST_TEST_EMULATED").is_some();
        assert_eq!(launch::cloned(), !fork && !emulated);
    }

    #[tokio::test]
    async fn a_program_starts_clean_stdin_at_eof_no_extra_descriptors_no_signal_ignored_or_blocked()
    {
        // Each checked by the program itself (a shell would block signals and hold pipes of
        // its own while it runs the next command).
        let stdout = |args: &'static [&'static str]| async move {
            let out = run(spec(args[0], &args[1..]), CancellationToken::new(), None)
                .await
                .unwrap();
            assert_eq!(out.ending, Ending::Exited(0), "{args:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        // stdin is /dev/null.
        assert_eq!(stdout(&["cat"]).await, "");
        // Only 0, 1 and 2 (3 is `ls`'s own listing): not the server's, not the supervisor's
        // stop pipe, not what the server inherited without close-on-exec.
        assert_eq!(stdout(&["ls", "/proc/self/fd"]).await, "0\n1\n2\n3\n");
        // SIGPIPE back to its default action (Rust ignores it), no signal blocked.
        let text = stdout(&["grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status"]).await;
        let mask = |name: &str| {
            let line = text
                .lines()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("{name} in {text}"));
            u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
        };
        assert_eq!(mask("SigBlk:"), 0, "{text}");
        assert_eq!(mask("SigIgn:") & (1 << (libc::SIGPIPE - 1)), 0, "{text}");
    }

    #[tokio::test]
    async fn scripts_without_an_interpreter_line_run_in_sh_and_a_missing_interpreter_is_named() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("mcp-manifest-exec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = |name: &str, text: &str| {
            let file = dir.join(name);
            std::fs::write(&file, text).unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
            file.to_str().unwrap().to_owned()
        };
        // ENOEXEC: the shell runs it, with the arguments (as `execvp` does).
        let plain = script("plain", "echo \"ran by sh: $0 $1\"\n");
        let out = run(spec(&plain, &["one"]), CancellationToken::new(), None)
            .await
            .unwrap();
        assert_eq!(out.ending, Ending::Exited(0));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("ran by sh: {plain} one\n")
        );
        // The kernel's own ENOENT (the interpreter is missing) is a spawn error.
        let broken = script("broken", "#!/no/such/interpreter\n");
        let e = run(spec(&broken, &[]), CancellationToken::new(), None)
            .await
            .unwrap_err();
        assert_eq!(e, SpawnError::Missing(broken.clone()));
        // A working directory below a file: ENOTDIR from chdir.
        let mut s = spec("true", &[]);
        s.cwd = PathBuf::from(&broken).join("below-a-file");
        let e = run(s, CancellationToken::new(), None).await.unwrap_err();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(matches!(e, SpawnError::Cwd(_)), "{e:?}");
    }

    #[test]
    fn last_line_skips_blank_lines() {
        assert_eq!(last_line(b"a\nb\n\n  \n").as_deref(), Some("b"));
        assert_eq!(last_line(b""), None);
    }
}
