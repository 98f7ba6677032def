//! Process trees on Unix: every program runs under a supervisor, our own binary started again as
//! `mcp-manifest __supervise …` (`supervisor.rs`), which starts the program in a process group of
//! its own and kills everything below it when the program ends, when the server asks (a shut-down
//! socket) and when the server dies (the same socket, closed by the kernel).
//!
//! The server side here starts the supervisor with tokio's `Command` (the standard library's
//! `posix_spawn`: nothing of ours runs between fork and exec), reads its report (`pid N`, then the
//! program's `exit CODE` / `signal N`) and reaps it.
//!
//! A tool that kills its own supervisor: the server sees the socket end without an ending and
//! kills the program's group itself. On Linux the server binary is also a child subreaper
//! (`adopt_orphans`, called by `main`): what was below the killed supervisor becomes the
//! server's child, and `sweep` kills and reaps every child of the server that is not a live
//! supervisor, again until none is left.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream as StdStream;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use rustix::process::{Pid, Signal, kill_process, kill_process_group};
use tokio::io::AsyncBufReadExt;

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

/// A running program and its supervisor.
pub(super) struct Tree {
    /// Taken by `Drop` (which leaves its reaping to a task).
    child: Option<tokio::process::Child>,
    /// The supervisor's pid.
    pid: u32,
    reports: tokio::io::BufReader<tokio::net::UnixStream>,
    /// A report line read in part (kept across cancelled reads).
    line: Vec<u8>,
    /// The program's ending once reported (`Some(None)`: the reports ended without one).
    ending: Option<Option<Exit>>,
    stop: Stopper,
    /// The program's pid (also its process group's id).
    tool: Pid,
}

/// How a tree is asked to stop: the server's end of the supervisor's socket, shut down.
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
        let exe = supervisor_exe();
        #[expect(clippy::disallowed_methods, reason = "this is the one spawner")]
        let mut cmd = tokio::process::Command::new(&exe);
        cmd.arg0("mcp-manifest-supervisor")
            .arg(SUPERVISE)
            .arg(program)
            .arg(&spec.program)
            .args(&spec.args)
            .current_dir(&spec.cwd)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .env("PATH", path)
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Out of the server's group: a Ctrl-C at the server's terminal is the server's to
            // handle (it stops its calls), not each supervisor's.
            .process_group(0)
            // Never SIGKILL the supervisor on a drop: it must live to kill what is below it.
            .kill_on_drop(false);
        let (mut child, pid) = {
            let _gate = adopted().gate.read().unwrap_or_else(|p| p.into_inner());
            let child = cmd.spawn().map_err(|e| match e.kind() {
                io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied if spec.cwd.is_dir() => {
                    SpawnError::Other(
                        spec.program.clone(),
                        format!("its supervisor `{}` cannot be started: {e}", exe.display()),
                    )
                }
                _ => spawn_error(spec, &e),
            })?;
            let pid = child.id().unwrap_or(0);
            lock(&adopted().supervisors).insert(pid);
            (child, pid)
        };
        // The supervisor's end of the socket (in `cmd`) must not stay open here: its death would
        // not end the reports.
        drop(cmd);
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(other(io::Error::other("its output pipes are missing")));
        };
        let stop = Stopper(Arc::new(ours.try_clone().map_err(other)?));
        ours.set_nonblocking(true).map_err(other)?;
        let reports = tokio::net::UnixStream::from_std(ours).map_err(other)?;
        let mut tree = Tree {
            child: Some(child),
            pid,
            reports: tokio::io::BufReader::new(reports),
            line: Vec::new(),
            ending: None,
            stop,
            tool: Pid::INIT,
        };
        // Until `pid N`: a dropped `start` drops the socket, which stops the supervisor.
        match tree.report().await {
            Some(Report::Pid(pid)) => tree.tool = pid,
            Some(Report::Error(errno)) => {
                tree.reap().await;
                return Err(spawn_error(spec, &io::Error::from_raw_os_error(errno)));
            }
            _ => {
                // Killed before it could report the program's pid (by the program itself, at
                // once): what it started came back to this process, if anywhere.
                tree.reap().await;
                if adopted().on.load(Ordering::SeqCst) {
                    let _ = tokio::task::spawn_blocking(sweep).await;
                }
                return Err(SpawnError::Other(
                    spec.program.clone(),
                    format!(
                        "its supervisor `{}` ended before starting it (is it mcp-manifest?)",
                        exe.display()
                    ),
                ));
            }
        }
        Ok((tree, Box::pin(stdout), Box::pin(stderr)))
    }

    pub(super) fn stopper(&self) -> Stopper {
        self.stop.clone()
    }

    /// Waits for the program's ending, which the supervisor reports once nothing the program
    /// started is left; the supervisor is reaped.
    /// Cancel-safe: what was read is kept in `self`.
    pub(super) async fn wait(&mut self) -> io::Result<Exit> {
        while self.ending.is_none() {
            self.ending = match self.report().await {
                Some(Report::Exit(code)) => Some(Some(Exit::Code(code))),
                Some(Report::Signal(sig)) => Some(Some(Exit::Signal(sig))),
                Some(_) => None,
                None => Some(None),
            };
        }
        let ending = self.ending.flatten();
        let status = self.reap().await;
        match ending {
            Some(e) => Ok(e),
            None => {
                // The supervisor ended without reporting: it was killed (by the program, or by
                // `kill_hard`). What it was to clean up is cleaned up here.
                let _ = kill_process_group(self.tool, Signal::KILL);
                if adopted().on.load(Ordering::SeqCst) {
                    let _ = tokio::task::spawn_blocking(sweep).await;
                }
                use std::os::unix::process::ExitStatusExt;
                Ok(match status.and_then(|s| s.signal()) {
                    Some(sig) => Exit::Signal(sig),
                    None => Exit::Signal(libc::SIGKILL),
                })
            }
        }
    }

    /// Kills the supervisor and the program's group (the supervisor did not stop when asked).
    pub(super) fn kill_hard(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.start_kill();
        }
        if self.tool != Pid::INIT {
            let _ = kill_process_group(self.tool, Signal::KILL);
        }
    }

    async fn reap(&mut self) -> Option<std::process::ExitStatus> {
        let status = self.child.as_mut()?.wait().await.ok();
        lock(&adopted().supervisors).remove(&self.pid);
        status
    }

    /// The next report line; `None` at the end. Cancel-safe: what was read of a line stays in
    /// `self.line` (`read_until` appends as it goes).
    async fn report(&mut self) -> Option<Report> {
        let read = self.reports.read_until(b'\n', &mut self.line).await;
        let line = std::mem::take(&mut self.line);
        match read {
            Ok(0) | Err(_) => None,
            Ok(_) => Report::parse(std::str::from_utf8(&line).ok()?.trim_end()),
        }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if matches!(child.try_wait(), Ok(Some(_))) {
            lock(&adopted().supervisors).remove(&self.pid);
            return;
        }
        // A call dropped half-way (a cancelled read): the supervisor was asked to stop (the
        // group's drop runs first) and gets the time to kill what is below it, then SIGKILL.
        let (pid, tool) = (self.pid, self.tool);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if tokio::time::timeout(super::STOP_GRACE, child.wait())
                    .await
                    .is_err()
                {
                    let _ = child.start_kill();
                    if tool != Pid::INIT {
                        let _ = kill_process_group(tool, Signal::KILL);
                    }
                    let _ = child.wait().await;
                }
                lock(&adopted().supervisors).remove(&pid);
            });
        }
        // Without a runtime the server is going away: the supervisor sees its socket close.
    }
}

/// A line from the supervisor.
enum Report {
    Pid(Pid),
    Error(i32),
    Exit(i32),
    Signal(i32),
}

impl Report {
    fn parse(line: &str) -> Option<Report> {
        let (word, n) = line.split_once(' ')?;
        let n: i32 = n.parse().ok()?;
        Some(match word {
            "pid" => Report::Pid(Pid::from_raw(n)?),
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
    for _ in 0..10_000 {
        let known = lock(&state.supervisors).clone();
        let orphans: Vec<Pid> = own_children()
            .into_iter()
            .filter(|p| !known.contains(&p.as_raw_nonzero().get().unsigned_abs()))
            .collect();
        if orphans.is_empty() {
            return;
        }
        for &pid in &orphans {
            let _ = kill_process(pid, Signal::KILL);
        }
        for pid in orphans {
            // Our child (not tokio's: not a supervisor), so its status is ours to take.
            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// This process's children, every thread's (Linux).
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
