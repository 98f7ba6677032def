//! The one place in the crate that starts processes. A process gets argv (never a shell string
//! built from values), an explicit working directory and environment, stdin from `/dev/null`,
//! stdout and stderr captured (never inherited: our stdout is the protocol), and its own process
//! group, so a timeout, a cancellation, an output cap or the server's shutdown kills everything
//! it started, grandchildren included.
//!
//! Live groups are kept in the `Children` of the server that started them (a spec names it):
//! `Children::kill_all` (called when the server stops) kills them all and refuses new ones, so no
//! child outlives the server. Several servers in one process (tests, HTTP sessions later) each
//! have their own.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// What to run and within which limits.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// A program name (looked up in `PATH`) or an absolute path.
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// Added to the inherited environment.
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
/// How often progress is reported while a process runs.
const TICK: Duration = Duration::from_millis(500);
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
    let start = Instant::now();
    #[expect(clippy::disallowed_methods, reason = "this is the one spawner")]
    let mut cmd = tokio::process::Command::new(&spec.program);
    cmd.args(&spec.args)
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = Reaped(Some(cmd.spawn().map_err(|e| spawn_error(&spec, &e))?));
    let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) else {
        return Err(SpawnError::Other(
            spec.program.clone(),
            "it has no process id".into(),
        ));
    };
    let mut group = Group::register(&spec.children, pid)?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(SpawnError::Other(
            spec.program.clone(),
            "its output pipes are missing".into(),
        ));
    };

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
        // Whatever is still running in the group goes: the program itself (timeout, cancel,
        // cap) or what it left behind.
        group.kill();
        if status.is_none() {
            status = child.wait().await.ok();
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

/// A child that is waited for even when `run` is dropped half-way (a cancelled read):
/// `kill_on_drop` alone leaves the killed leader a zombie until tokio happens to reap orphans.
struct Reaped(Option<tokio::process::Child>);

impl std::ops::Deref for Reaped {
    type Target = tokio::process::Child;
    fn deref(&self) -> &Self::Target {
        self.0.as_ref().expect("the child is present until drop")
    }
}

impl std::ops::DerefMut for Reaped {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.0.as_mut().expect("the child is present until drop")
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        let Some(mut child) = self.0.take() else {
            return;
        };
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = child.start_kill();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = child.wait().await;
            });
        }
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

fn spawn_error(spec: &ProcessSpec, e: &std::io::Error) -> SpawnError {
    let program = spec.program.clone();
    match e.kind() {
        std::io::ErrorKind::NotFound if !spec.cwd.is_dir() => {
            SpawnError::Cwd(spec.cwd.display().to_string())
        }
        std::io::ErrorKind::NotFound if program.contains('/') => SpawnError::Missing(program),
        std::io::ErrorKind::NotFound => SpawnError::NotInPath {
            program,
            path: std::env::var("PATH").unwrap_or_default(),
        },
        std::io::ErrorKind::PermissionDenied => SpawnError::NotExecutable(program),
        _ => SpawnError::Other(program, e.to_string()),
    }
}

/// Reads `r` into `out` until EOF (false) or until more than `cap` bytes came (true).
async fn read_capped(mut r: impl AsyncRead + Unpin, cap: usize, out: &mut Vec<u8>) -> bool {
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match r.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => n,
        };
        let room = cap.saturating_sub(out.len());
        if n > room {
            out.extend_from_slice(&chunk[..room]);
            return true;
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

/// Reads `r` to EOF, keeping its last `STDERR_KEPT` bytes in `tail`.
async fn read_tail(mut r: impl AsyncRead + Unpin, tail: Arc<Mutex<Vec<u8>>>) {
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let n = match r.read(&mut chunk).await {
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

/// The process groups one server started and that are still running.
#[derive(Debug, Default)]
pub(crate) struct Children {
    live: Mutex<HashSet<i32>>,
    /// Set once by `kill_all`: no process starts after it.
    closed: AtomicBool,
}

impl Children {
    pub fn new() -> Arc<Children> {
        Arc::default()
    }

    /// Kills every process group still running, and refuses to start new ones.
    pub fn kill_all(&self) {
        let mut live = lock(&self.live);
        self.closed.store(true, Ordering::SeqCst);
        for pgid in live.drain() {
            signal_group(pgid);
        }
    }
}

fn signal_group(pgid: i32) {
    // `kill(-1)` and `kill(0)` would reach far more than one group.
    if pgid > 1 {
        // SAFETY: kill(2) has no memory-safety preconditions; a group that is already gone
        // answers ESRCH, which is fine.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

/// One registered process group. Dropping it before `reaped` (a cancelled future) kills it.
struct Group {
    children: Arc<Children>,
    pgid: i32,
    armed: bool,
}

impl Group {
    fn register(children: &Arc<Children>, pgid: i32) -> Result<Group, SpawnError> {
        let mut live = lock(&children.live);
        let group = Group {
            children: children.clone(),
            pgid,
            armed: true,
        };
        if children.closed.load(Ordering::SeqCst) {
            // Dropping `group` kills what was just started.
            drop(live);
            return Err(SpawnError::ShuttingDown);
        }
        live.insert(pgid);
        Ok(group)
    }

    fn kill(&self) {
        signal_group(self.pgid);
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

    #[test]
    fn last_line_skips_blank_lines() {
        assert_eq!(last_line(b"a\nb\n\n  \n").as_deref(), Some("b"));
        assert_eq!(last_line(b""), None);
    }
}
