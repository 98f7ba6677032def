//! Process trees on Unix: every program runs under a per-call supervisor, a process forked by
//! the server's supervisor, our own binary started again once as `mcp-manifest __supervise`
//! (`supervisor.rs`, which says why this shape and the figure it buys). The per-call supervisor
//! starts the program in a process group of its own and kills everything below it when the
//! program ends, when the server asks (a shut-down socket) and when the server dies (the same
//! socket, closed by the kernel).
//!
//! The server side here starts the supervisor (the standard library's `Command`: nothing of
//! ours runs between fork and exec), hands it each call's socket and output pipes, writes the
//! call on the socket and reads the per-call supervisor's report (`pid TOOL SUPERVISOR`, then
//! the program's `exit CODE` / `signal N`).
//!
//! A program that kills its own per-call supervisor: the server sees the socket end without an
//! ending and kills the program's group; the supervisor (a child subreaper on Linux) kills what
//! came back to it. A program that kills the supervisor: a thread of the server waiting for it
//! reaps it and forgets it (the next call starts another); on Linux the server binary is a
//! child subreaper too (`adopt_orphans`, called by `main`), and `sweep` kills and reaps every
//! child of the server that is not a live supervisor (the per-call supervisors that came back
//! to it, then what was below them), again until none is left.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::io::{self, IoSlice};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream as StdStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
use rustix::process::{Pid, Signal, kill_process, kill_process_group};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use super::supervisor::{CALL_FDS, Request};
use super::{Exit, Output, ProcessSpec, SpawnError, spawn_error};

pub use super::supervisor::{SUPERVISE, main as supervise};

/// The executable started as supervisor (`use_supervisor`; by default this process's own).
static SUPERVISOR: OnceLock<PathBuf> = OnceLock::new();

/// Names the `mcp-manifest` binary that supervises programs, for a process that is not one
/// (the integration tests' in-process servers). The first call wins.
pub fn use_supervisor(path: &Path) {
    let _ = SUPERVISOR.set(path.to_owned());
}

fn supervisor_exe() -> PathBuf {
    SUPERVISOR
        .get_or_init(|| {
            // `/proc/self/exe` is the running binary even after an upgrade replaced or removed
            // the file it was started from.
            if cfg!(target_os = "linux") {
                PathBuf::from("/proc/self/exe")
            } else {
                std::env::current_exe().unwrap_or_else(|_| PathBuf::from("mcp-manifest"))
            }
        })
        .clone()
}

/// The long-lived supervisor. `None` until the first call, and again once it is seen dead.
static SUPERVISOR_SOCKET: Mutex<Option<Arc<Supervisor>>> = Mutex::new(None);

/// The long-lived supervisor, seen from the server.
struct Supervisor {
    /// The server's end of its socket (non-blocking: a call never blocks the runtime on it).
    socket: StdStream,
    pid: u32,
    /// Since when its socket has been full (no call handed over since): a supervisor that
    /// takes no call for `UNRESPONSIVE` is replaced.
    full_since: Mutex<Option<Instant>>,
}

/// How long the supervisor's socket may stay full, no call taken, before the supervisor is
/// killed and another started. A burst of calls (up to `max_processes` at once) fills it for
/// as long as the supervisor takes to fork a per-call supervisor for each, milliseconds each;
/// a supervisor stopped for good (a tool can `kill -STOP` it) would hold calls for ever.
const UNRESPONSIVE: Duration = Duration::from_secs(5);
/// How often a call retries while the socket is full.
const FULL_RETRY: Duration = Duration::from_millis(5);

/// What `hand_over` did.
enum Handed {
    Done,
    /// The socket is full: try again in a moment.
    Full,
}

/// Hands a call's descriptors to the long-lived supervisor, starting it first when there is
/// none (or it died, or takes no calls: then once more). Never blocks: this runs on the
/// runtime, under the lock every call takes. A supervisor whose socket has stayed full for
/// `UNRESPONSIVE` is killed, and its watcher reaps it and sweeps what it left.
fn hand_over(fds: &[std::os::fd::BorrowedFd<'_>; CALL_FDS]) -> Result<Handed, String> {
    let mut slot = lock(&SUPERVISOR_SOCKET);
    let mut last = String::new();
    for _ in 0..2 {
        let socket = match &*slot {
            Some(s) => s.clone(),
            None => {
                let s = start_supervisor()?;
                *slot = Some(s.clone());
                s
            }
        };
        let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(CALL_FDS))];
        let mut ancillary = SendAncillaryBuffer::new(&mut space);
        ancillary.push(SendAncillaryMessage::ScmRights(fds));
        loop {
            match sendmsg(
                socket.socket.as_fd(),
                &[IoSlice::new(b"c")],
                &mut ancillary,
                // A dead supervisor is EPIPE, not SIGPIPE: Rust programs ignore SIGPIPE (and
                // macOS has no MSG_NOSIGNAL).
                SendFlags::empty(),
            ) {
                Ok(_) => {
                    *lock(&socket.full_since) = None;
                    return Ok(Handed::Done);
                }
                Err(rustix::io::Errno::INTR) => {}
                // Its socket full, or too many descriptors in flight to it: the same.
                Err(rustix::io::Errno::AGAIN | rustix::io::Errno::TOOMANYREFS) => {
                    let since = *lock(&socket.full_since).get_or_insert_with(Instant::now);
                    if since.elapsed() < UNRESPONSIVE {
                        return Ok(Handed::Full);
                    }
                    last = "its supervisor takes no calls (stopped?); it was killed".to_owned();
                    tracing::warn!(
                        "the tools' supervisor (pid {}) took no calls for long: killed, another one started",
                        socket.pid
                    );
                    // Not reaped while it is in `SUPERVISOR_SOCKET` (held here): its watcher
                    // forgets it there before reaping it. Its pid is still its own.
                    if let Some(pid) = Pid::from_raw(socket.pid.cast_signed()) {
                        let _ = kill_process(pid, Signal::KILL);
                    }
                    break;
                }
                Err(e) => {
                    last = io::Error::from(e).to_string();
                    break;
                }
            }
        }
        // Dead (its watcher reaps it): another one.
        *slot = None;
    }
    Err(last)
}

/// Starts the long-lived supervisor, and a thread that waits for its end: the thread reaps it,
/// forgets it, and sweeps what it left (its per-call supervisors come back to the server).
fn start_supervisor() -> Result<Arc<Supervisor>, String> {
    let exe = supervisor_exe();
    let failed =
        |e: io::Error| format!("its supervisor `{}` cannot be started: {e}", exe.display());
    let (ours, theirs) = StdStream::pair().map_err(failed)?;
    #[expect(clippy::disallowed_methods, reason = "this is the one spawner")]
    let mut cmd = std::process::Command::new(&exe);
    cmd.arg0("mcp-manifest-supervisor")
        .arg(SUPERVISE)
        .current_dir("/")
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Out of the server's group: a Ctrl-C at the server's terminal is the server's to
        // handle (it stops its calls), not the supervisor's.
        .process_group(0);
    let mut child = {
        let _gate = adopted().gate.read().unwrap_or_else(|p| p.into_inner());
        let child = cmd.spawn().map_err(failed)?;
        lock(&adopted().supervisors).insert(child.id());
        child
    };
    // The supervisor's end of the socket (in `cmd`) must not stay open here: its death would
    // not close the socket.
    drop(cmd);
    ours.set_nonblocking(true).map_err(failed)?;
    let ours = Arc::new(Supervisor {
        socket: ours,
        pid: child.id(),
        full_since: Mutex::new(None),
    });
    let handed = Arc::downgrade(&ours);
    let watcher = std::thread::Builder::new()
        .name("mcp-supervisor-watch".into())
        .spawn(move || {
            // Its end, not reaped yet: until it is forgotten here (under `SUPERVISOR_SOCKET`)
            // its pid is its own, so `hand_over` may kill it.
            if let Some(pid) = Pid::from_raw(child.id().cast_signed()) {
                let ended =
                    rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOWAIT;
                while let Err(rustix::io::Errno::INTR) =
                    rustix::process::waitid(rustix::process::WaitId::Pid(pid), ended)
                {
                }
            }
            // Forgotten, so that the next call starts another one; once no call holds it the
            // socket closes, and the spare of this one (waiting on it) ends.
            {
                let mut slot = lock(&SUPERVISOR_SOCKET);
                if slot
                    .as_ref()
                    .is_some_and(|s| handed.upgrade().is_some_and(|h| Arc::ptr_eq(s, &h)))
                {
                    *slot = None;
                }
            }
            lock(&adopted().supervisors).remove(&child.id());
            let _ = child.wait();
            if adopted().on.load(Ordering::SeqCst) {
                sweep();
            }
        });
    watcher.map_err(failed)?;
    Ok(ours)
}

/// A running program and its per-call supervisor.
pub(super) struct Tree {
    /// The per-call supervisor's socket (taken by `Drop`).
    reports: Option<tokio::io::BufReader<tokio::net::UnixStream>>,
    /// A report line read in part (kept across cancelled reads).
    line: Vec<u8>,
    /// The program's ending once reported (`Some(None)`: the reports ended without one).
    ending: Option<Option<Exit>>,
    stop: Stopper,
    /// The program's pid (also its process group's id).
    tool: Pid,
    /// The per-call supervisor's pid.
    supervisor: Pid,
}

/// How a tree is asked to stop: the server's end of the per-call supervisor's socket, shut
/// down.
#[derive(Debug, Clone)]
pub(super) struct Stopper(Arc<StdStream>);

impl Stopper {
    pub(super) fn stop(&self) {
        let _ = self.0.shutdown(std::net::Shutdown::Write);
    }
}

impl Tree {
    /// Starts `program` (found already) for `spec` under a supervisor, with `path` as `PATH`.
    pub(super) async fn start(
        spec: &ProcessSpec,
        program: &Path,
        path: &OsStr,
    ) -> Result<(Tree, Output, Output), SpawnError> {
        let other = |e: io::Error| SpawnError::Other(spec.program.clone(), e.to_string());
        let (ours, theirs) = StdStream::pair().map_err(other)?;
        let (out_read, out_write) = io::pipe().map_err(other)?;
        let (err_read, err_write) = io::pipe().map_err(other)?;
        // Within the call's timeout (its caller's): a call dropped meanwhile hands nothing.
        while let Handed::Full = hand_over(&[theirs.as_fd(), out_write.as_fd(), err_write.as_fd()])
            .map_err(|why| SpawnError::Other(spec.program.clone(), why))?
        {
            tokio::time::sleep(FULL_RETRY).await;
        }
        // Only the per-call supervisor (then the program) holds these now: its end closes the
        // socket and the pipes.
        drop((theirs, out_write, err_write));

        let args: Vec<&OsStr> = spec.args.iter().map(OsStr::new).collect();
        let env: Vec<(&OsStr, &OsStr)> = spec
            .env
            .iter()
            .map(|(k, v)| (OsStr::new(k), OsStr::new(v)))
            .chain(std::iter::once((OsStr::new("PATH"), path)))
            .collect();
        // Absolute, as the server found them: the per-call supervisor runs in `/` until it
        // changes to the working directory.
        let program = std::path::absolute(program).map_err(other)?;
        let cwd = std::path::absolute(&spec.cwd).map_err(other)?;
        let call = Request::encode(
            program.as_os_str(),
            OsStr::new(&spec.program),
            cwd.as_os_str(),
            &args,
            &env,
        );
        let stop = Stopper(Arc::new(ours.try_clone().map_err(other)?));
        ours.set_nonblocking(true).map_err(other)?;
        let mut socket = tokio::net::UnixStream::from_std(ours).map_err(other)?;
        let stdout =
            tokio::net::unix::pipe::Receiver::from_owned_fd(out_read.into()).map_err(other)?;
        let stderr =
            tokio::net::unix::pipe::Receiver::from_owned_fd(err_read.into()).map_err(other)?;
        // A per-call supervisor that died first (killed at once) leaves the write failing: its
        // report, none, says so below.
        let _ = socket.write_all(&call).await;
        let mut tree = Tree {
            reports: Some(tokio::io::BufReader::new(socket)),
            line: Vec::new(),
            ending: None,
            stop,
            tool: Pid::INIT,
            supervisor: Pid::INIT,
        };
        // Until `pid N`: a dropped `start` drops the socket, which stops the supervisor.
        match tree.report().await {
            Some(Report::Pid(tool, supervisor)) => {
                tree.tool = tool;
                tree.supervisor = supervisor;
            }
            Some(Report::Error(errno)) => {
                return Err(spawn_error(spec, &io::Error::from_raw_os_error(errno)));
            }
            _ => {
                return Err(SpawnError::Other(
                    spec.program.clone(),
                    format!(
                        "its supervisor `{}` ended before starting it (is it mcp-manifest?)",
                        supervisor_exe().display()
                    ),
                ));
            }
        }
        Ok((tree, Box::pin(stdout), Box::pin(stderr)))
    }

    pub(super) fn stopper(&self) -> Stopper {
        self.stop.clone()
    }

    /// Waits for the program's ending, which the per-call supervisor reports once nothing the
    /// program started is left. Cancel-safe: what was read is kept in `self`.
    pub(super) async fn wait(&mut self) -> io::Result<Exit> {
        while self.ending.is_none() {
            self.ending = match self.report().await {
                Some(Report::Exit(code)) => Some(Some(Exit::Code(code))),
                Some(Report::Signal(sig)) => Some(Some(Exit::Signal(sig))),
                Some(_) => None,
                None => Some(None),
            };
        }
        match self.ending.flatten() {
            Some(e) => Ok(e),
            None => {
                // The per-call supervisor ended without reporting: it was killed (by the
                // program, or by `kill_hard`). The program's group goes now; what came back to
                // the long-lived supervisor, that one kills.
                let _ = kill_process_group(self.tool, Signal::KILL);
                Ok(Exit::Signal(libc::SIGKILL))
            }
        }
    }

    /// Kills the per-call supervisor and the program's group (the supervisor did not stop when
    /// asked).
    pub(super) fn kill_hard(&mut self) {
        kill_hard(self.supervisor, self.tool);
    }

    /// The next report line; `None` at the end. Cancel-safe: what was read of a line stays in
    /// `self.line` (`read_until` appends as it goes).
    async fn report(&mut self) -> Option<Report> {
        let read = self
            .reports
            .as_mut()?
            .read_until(b'\n', &mut self.line)
            .await;
        let line = std::mem::take(&mut self.line);
        match read {
            Ok(0) | Err(_) => None,
            Ok(_) => Report::parse(std::str::from_utf8(&line).ok()?.trim_end()),
        }
    }
}

/// SIGKILL to a per-call supervisor (still running: it is its own supervisor's child until it
/// ends, so its pid is not reused) and its program's group.
fn kill_hard(supervisor: Pid, tool: Pid) {
    if supervisor != Pid::INIT {
        let _ = kill_process(supervisor, Signal::KILL);
    }
    if tool != Pid::INIT {
        let _ = kill_process_group(tool, Signal::KILL);
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        // A call dropped half-way (a cancelled read): the supervisor was asked to stop (the
        // group's drop runs first) and gets the time to kill what is below it, then SIGKILL.
        // Without a runtime the server is going away: the supervisor sees its socket close.
        let (Some(mut reports), None) = (self.reports.take(), self.ending) else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (supervisor, tool) = (self.supervisor, self.tool);
        runtime.spawn(async move {
            let mut line = Vec::new();
            let ended = async {
                while matches!(reports.read_until(b'\n', &mut line).await, Ok(n) if n > 0) {
                    line.clear();
                }
            };
            if tokio::time::timeout(super::STOP_GRACE, ended)
                .await
                .is_err()
            {
                kill_hard(supervisor, tool);
            }
        });
    }
}

/// A line from the supervisor.
enum Report {
    /// The program's pid and its per-call supervisor's.
    Pid(Pid, Pid),
    Error(i32),
    Exit(i32),
    Signal(i32),
}

impl Report {
    fn parse(line: &str) -> Option<Report> {
        let (word, rest) = line.split_once(' ')?;
        if word == "pid" {
            let (tool, supervisor) = rest.split_once(' ')?;
            return Some(Report::Pid(
                Pid::from_raw(tool.parse().ok()?)?,
                Pid::from_raw(supervisor.parse().ok()?)?,
            ));
        }
        let n: i32 = rest.parse().ok()?;
        Some(match word {
            "error" => Report::Error(n),
            "exit" => Report::Exit(n),
            "signal" => Report::Signal(n),
            _ => return None,
        })
    }
}

/// The server as a child subreaper (Linux).
struct Adopted {
    /// Set by `adopt_orphans`.
    on: AtomicBool,
    /// The live supervisors: the server's only children of its own.
    supervisors: Mutex<HashSet<u32>>,
    /// Held (shared) from before a supervisor is started until it is in `supervisors`, and
    /// (exclusive) by `sweep`: a supervisor being started is never taken for an orphan.
    gate: RwLock<()>,
}

fn adopted() -> &'static Adopted {
    static ADOPTED: OnceLock<Adopted> = OnceLock::new();
    ADOPTED.get_or_init(|| Adopted {
        on: AtomicBool::new(false),
        supervisors: Mutex::default(),
        gate: RwLock::new(()),
    })
}

/// Makes this process (the server binary) a child subreaper on Linux: a process left behind by
/// a supervisor that was killed becomes its child, and is killed when that supervisor's death is
/// seen. Only for a process whose every child is a supervisor (never a test harness).
pub fn adopt_orphans() {
    #[cfg(target_os = "linux")]
    if rustix::process::set_child_subreaper(Some(rustix::process::getpid())).is_ok() {
        adopted().on.store(true, Ordering::SeqCst);
    }
}

/// Kills and reaps every child of this process that is not a live supervisor, until none is left.
fn sweep() {
    let state = adopted();
    let _gate = state.gate.write().unwrap_or_else(|p| p.into_inner());
    // Children that are not supervisors are not tokio's, so their statuses are ours to take.
    kill_children_except(|p| {
        lock(&state.supervisors).contains(&p.as_raw_nonzero().get().unsigned_abs())
    });
}

/// Kills and reaps every child of this process that `keep` does not claim, pass after pass (a
/// killed child's own orphans may come back), until none is left or `MAX_PASSES` passes. The
/// server's sweep and the long-lived supervisor's share it.
pub(super) fn kill_children_except(keep: impl Fn(Pid) -> bool) {
    for _ in 0..super::supervisor::MAX_PASSES {
        let orphans: Vec<Pid> = own_children().into_iter().filter(|&p| !keep(p)).collect();
        if orphans.is_empty() {
            return;
        }
        for &pid in &orphans {
            let _ = kill_process(pid, Signal::KILL);
        }
        for pid in orphans {
            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// This process's children, every thread's (Linux; elsewhere, without `/proc/self/task`, none:
/// no orphan comes back to a process there).
pub(super) fn own_children() -> Vec<Pid> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    tasks
        .flatten()
        .flat_map(|t| {
            let text = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            text.split_whitespace()
                .filter_map(|p| p.parse().ok().and_then(Pid::from_raw))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The exit code of a program killed by a signal, as a shell reports it, and the signal's name.
pub(super) fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGINT => "SIGINT",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGBUS => "SIGBUS",
        libc::SIGHUP => "SIGHUP",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        _ => return None,
    })
}

/// A description of an exit code, where the system gives codes meanings (Windows).
pub(super) fn exit_name(_code: i32) -> Option<&'static str> {
    None
}

/// What a program killed by `kill_all` ends as: SIGKILL (and no exit code means it).
pub(super) const KILLED: i32 = libc::SIGKILL;
pub(super) const KILLED_CODE: i32 = -1;

/// Whether `meta` is a file this system would run (an execute bit).
pub(super) fn runnable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.is_file() && meta.permissions().mode() & 0o111 != 0
}

/// The names `program` is looked for under in each `PATH` folder.
pub(super) fn candidates(program: &str) -> Vec<String> {
    vec![program.to_owned()]
}

/// Whether `program` names a path rather than a name to look up in `PATH`.
pub(super) fn is_path(program: &str) -> bool {
    program.contains('/')
}

/// A program `command` may not run, and why (none on Unix).
pub(super) fn refused(_program: &Path) -> Option<String> {
    None
}

/// `PATH` when there is none at all: what `execvp` falls back to.
pub(super) const DEFAULT_PATH: &str = "/usr/bin:/bin";
pub(super) const PATH_SEPARATOR: &str = ":";

/// The shell of a `run` script that names none.
pub(super) const DEFAULT_SHELL: Option<super::Shell> = Some(super::Shell::Sh);

/// What begins an option where a value would begin an argument: `-`.
pub(crate) const OPTION_PREFIXES: &[char] = &['-'];

/// The longest one argument or environment string may be (Linux: `MAX_ARG_STRLEN`, with its
/// NUL); `None` where only the total counts.
#[cfg(target_os = "linux")]
pub(crate) const MAX_ARG_LEN: Option<usize> = Some(32 * 4096);
#[cfg(not(target_os = "linux"))]
pub(crate) const MAX_ARG_LEN: Option<usize> = None;

/// Whether the environment counts against `arg_max` (it does: one area holds both).
pub(crate) const ENV_IN_ARG_MAX: bool = true;

/// The system's limit on argv plus environment (`ARG_MAX`), less a page of headroom. Linux:
/// a quarter of the stack limit, at least 128 KiB and at most 6 MiB (as the kernel counts it);
/// macOS and the BSDs: `kern.argmax`, 1 MiB (256 KiB on some), taken as 256 KiB when unsure.
pub(crate) fn arg_max() -> usize {
    static ARG_MAX: OnceLock<usize> = OnceLock::new();
    *ARG_MAX.get_or_init(|| {
        let total = if cfg!(target_os = "linux") {
            let stack = rustix::process::getrlimit(rustix::process::Resource::Stack)
                .current
                .unwrap_or(u64::MAX);
            usize::try_from(stack / 4)
                .unwrap_or(usize::MAX)
                .clamp(128 * 1024, 6 * 1024 * 1024)
        } else if cfg!(target_os = "macos") {
            1024 * 1024
        } else {
            256 * 1024
        };
        total.saturating_sub(4096)
    })
}
