//! The supervisor (Unix): `mcp-manifest __supervise`, our own binary started again, once per
//! server process (by `unix.rs`, at the first tool call). It exists so that nothing a tool starts
//! outlives its call or the server, even when the server is killed with `kill -9`.
//!
//! Its standard input is a socket only the server holds the other end of. For each call the
//! server sends one byte there with three descriptors: one end of a socket pair of the call's
//! own (the server keeps the other), and the write ends of the program's stdout and stderr
//! pipes. The call is taken by a per-call supervisor, a process forked from this one: an idle one
//! reads the server's socket itself; when a call waits and none is idle, the supervisor forks
//! one. A per-call supervisor done with its call waits for the next if the supervisor keeps it
//! (`KEEP_IDLE` idle at most), so sequential calls, and a few started together, fork nothing.
//! The supervisor ends when the server's end closes (the server exited or died).
//!
//! Why this shape (the figure it buys, `tool/true`, a `tools/call` of `true`, beside `spawn
//! true` on the 2-vCPU benchmark machine, load average 9–13): our 30 MB binary started for each
//! call, 2.7–4.0 ms (the loader's relocations and their page faults, 1.5 ms of CPU); a fork of
//! this small process for each call, 1.45–1.78 ms (a fork with its exit is 0.3–0.4 ms there);
//! forked ahead of the call, 1.20–1.35 ms; kept for the next call, 0.91 ms (`spawn true`
//! 0.67–0.75 ms). `BENCHMARKS.md`, "Tool calls: one supervisor per server".
//!
//! The per-call supervisor reads the call (program, argv[0], arguments, working directory,
//! environment) from its socket, starts the program in a process group of its own with the
//! standard library's `Command`, and writes back, one line each: `pid TOOL SUPERVISOR` once the
//! program runs (or `error ERRNO` when it could not start), then `exit CODE` or `signal N`, the
//! program's own ending, once nothing it started is left. The server shuts its end down to stop
//! the call (timeout, cancellation, output cap, shutdown), and the kernel closes it when the
//! server dies however it dies: either way the socket reads as ended, and the per-call
//! supervisor kills the program's process group and everything below it.
//!
//! On Linux the per-call supervisor is a child subreaper: a process below the program whose
//! parent dies (one that left the group with `setsid`, a double fork) becomes its child, so the
//! cleanup — kill the program's group, then every child, again until none is left — reaches them
//! all, and it takes another call only once none is left. The supervisor is a subreaper too, for
//! what a per-call supervisor that was killed (by its own program) leaves: it reaps each
//! per-call supervisor as it ends (its link closes) and, after one that did not end cleanly,
//! kills every child of its own that is not a per-call supervisor. Elsewhere only the program's
//! group is killed.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io::{IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, poll};
use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, recvmsg};
use rustix::process::{Pid, Signal, WaitOptions, kill_process, kill_process_group, wait, waitpid};

/// The first argument that makes `mcp-manifest` a supervisor.
pub const SUPERVISE: &str = "__supervise";

/// Cleanup passes before a supervisor gives up (a fork bomb faster than SIGKILL).
pub(super) const MAX_PASSES: u32 = 10_000;

/// Per-call supervisors kept waiting for calls, at most. One is what sequential calls need;
/// calls started together (an assistant running tools in parallel, `tool/true` pipelined in the
/// suite) would otherwise fork one each as soon as more than one runs at once. Each idle one
/// costs little memory of its own (its pages are the supervisor's, copied on write). Buys 2 000
/// `tools/call` of `true` sent at once (16 run at a time) 1 090–1 180 → 1 570–1 630/s and
/// 2.5 → 1.95 s of CPU (with one kept, one call in six forked; with 16, the idle ones all woke
/// for each call and nothing was gained). BENCHMARKS.md, issue 30's last pass.
const KEEP_IDLE: usize = 4;

/// The shell that runs a file the kernel cannot execute (as `execvp` does).
const SH: &str = "/bin/sh";

/// The descriptors that come with each call: its socket, the program's stdout and stderr.
pub(super) const CALL_FDS: usize = 3;

/// The largest call the per-call supervisor reads (arguments and environment are bounded by
/// `arg_max`, a few MiB, well before this).
const MAX_CALL: usize = 64 * 1024 * 1024;

/// Runs the supervisor: `args` are what follows `__supervise` (nothing).
pub fn main(args: Vec<OsString>) -> ExitCode {
    if !args.is_empty() {
        return ExitCode::from(125);
    }
    // The server's socket moves off descriptor 0 (to a close-on-exec one), and 0 becomes the
    // null device, which the per-call supervisors inherit.
    let Ok(control) = std::io::stdin().as_fd().try_clone_to_owned() else {
        return ExitCode::from(125);
    };
    if let Ok(null) = std::fs::File::open("/dev/null") {
        let _ = rustix::stdio::dup2_stdin(&null);
    }
    #[cfg(target_os = "linux")]
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    close_inherited();

    let mut live: HashMap<Pid, Worker> = HashMap::new();
    // One waits for the first call from the start.
    let mut wanted = true;
    loop {
        if wanted {
            match fork_worker() {
                Forked::Parent(pid, link) => {
                    live.insert(pid, Worker { link, idle: true });
                }
                Forked::Child(link) => {
                    // Nothing of the supervisor's but the server's socket and its own link.
                    drop(live);
                    std::process::exit(worker(control, link))
                }
                Forked::Failed(errno) => {
                    // The call that asked for it fails with the fork's error, here.
                    if let Received::Call([socket, _, _]) = receive(&control) {
                        report(&mut UnixStream::from(socket), &format!("error {errno}"));
                    }
                }
            }
        }
        // With an idle per-call supervisor, only the server's end closing (`HUP`) is watched
        // here: the idle one reads the calls. Without one, a call waiting is watched for, and
        // a per-call supervisor is forked for it.
        let idle = live.values().any(|w| w.idle);
        let (server, ready) = {
            let pids: Vec<Pid> = live.keys().copied().collect();
            let watch = if idle { PollFlags::HUP } else { PollFlags::IN };
            let mut fds: Vec<PollFd<'_>> = std::iter::once(PollFd::new(&control, watch))
                .chain(
                    pids.iter()
                        .filter_map(|p| live.get(p))
                        .map(|w| PollFd::new(&w.link, PollFlags::IN)),
                )
                .collect();
            match poll(&mut fds, None) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(_) => return ExitCode::FAILURE,
            }
            let ready: Vec<Pid> = pids
                .into_iter()
                .zip(&fds[1..])
                .filter(|(_, fd)| !fd.revents().is_empty())
                .map(|(pid, _)| pid)
                .collect();
            (fds[0].revents(), ready)
        };
        let mut unclean = false;
        for pid in ready {
            let others_idle = live.iter().filter(|(p, w)| **p != pid && w.idle).count();
            let ended = match live.get_mut(&pid) {
                Some(worker) => !worker.update(others_idle < KEEP_IDLE),
                None => false,
            };
            if ended {
                live.remove(&pid);
                unclean |= !reap(pid);
            }
        }
        if unclean {
            sweep(&live);
        }
        if server.intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL) {
            // The server is gone. The per-call supervisors see their own sockets close.
            return ExitCode::SUCCESS;
        }
        wanted = server.contains(PollFlags::IN) && !live.values().any(|w| w.idle);
    }
}

/// A per-call supervisor, seen from the supervisor.
struct Worker {
    /// The supervisor's end of a socket pair whose other end only the per-call supervisor
    /// holds: `t` when it took a call, `i` when it is done with it (answered `k`, keep waiting
    /// for calls, or `q`, quit), closed once it has ended.
    link: UnixStream,
    /// Waiting for a call.
    idle: bool,
}

impl Worker {
    /// Reads what the per-call supervisor said; false once it has ended. `keep`: fewer than
    /// [`KEEP_IDLE`] others wait for calls, so this one may wait too.
    fn update(&mut self, keep: bool) -> bool {
        let mut said = [0u8; 16];
        let n = match (&self.link).read(&mut said) {
            Ok(0) => return false,
            Ok(n) => n,
            Err(e) => return e.kind() == std::io::ErrorKind::Interrupted,
        };
        for &b in &said[..n] {
            match b {
                b't' => self.idle = false,
                // `KEEP_IDLE` idle per-call supervisors are enough: the others end.
                b'i' if !keep => {
                    let _ = (&self.link).write_all(b"q");
                }
                b'i' => {
                    self.idle = (&self.link).write_all(b"k").is_ok();
                }
                _ => {}
            }
        }
        true
    }
}

/// Waits for the per-call supervisor `pid` to end (it has closed its link); whether it ended
/// cleanly (exit code 0: its program's ending reported, nothing left below it).
fn reap(pid: Pid) -> bool {
    loop {
        match waitpid(Some(pid), WaitOptions::empty()) {
            Err(rustix::io::Errno::INTR) => {}
            Ok(Some((_, status))) => return status.exit_status() == Some(0),
            _ => return false,
        }
    }
}

enum Received {
    Call([OwnedFd; CALL_FDS]),
    /// A message without its descriptors (cannot come from the server), or an interrupted read.
    Nothing,
    End,
}

/// Reads one call's byte and its descriptors from the server's socket.
fn receive(control: &OwnedFd) -> Received {
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(CALL_FDS))];
    let mut ancillary = RecvAncillaryBuffer::new(&mut space);
    let got = recvmsg(
        control,
        &mut [IoSliceMut::new(&mut byte)],
        &mut ancillary,
        RecvFlags::empty(),
    );
    match got {
        Ok(msg) if msg.bytes == 0 => Received::End,
        Ok(_) => {
            let fds: Vec<OwnedFd> = ancillary
                .drain()
                .flat_map(|m| match m {
                    RecvAncillaryMessage::ScmRights(fds) => fds.collect(),
                    _ => Vec::new(),
                })
                .collect();
            for fd in &fds {
                // Close-on-exec (not asked of `recvmsg`: macOS has no flag for it): this
                // process is single-threaded, so nothing forks in between.
                if let Ok(flags) = rustix::io::fcntl_getfd(fd) {
                    let _ = rustix::io::fcntl_setfd(fd, flags | rustix::io::FdFlags::CLOEXEC);
                }
            }
            match <[OwnedFd; CALL_FDS]>::try_from(fds) {
                Ok(fds) => Received::Call(fds),
                Err(_) => Received::Nothing,
            }
        }
        Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => Received::Nothing,
        Err(_) => Received::End,
    }
}

enum Forked {
    /// In the supervisor: the per-call supervisor's pid and the supervisor's end of its link.
    Parent(Pid, UnixStream),
    /// In the per-call supervisor: its end of the link.
    Child(UnixStream),
    /// The error number of the `socketpair` or `fork` that failed (taken at once: what runs
    /// after may change `errno`).
    Failed(i32),
}

/// Forks a per-call supervisor, which waits for calls.
fn fork_worker() -> Forked {
    let (ours, theirs) = match UnixStream::pair() {
        Ok(pair) => pair,
        Err(e) => return Forked::Failed(e.raw_os_error().unwrap_or(0)),
    };
    // SAFETY: this process has one thread (the supervisor starts none; a per-call supervisor's
    // threads live in its own process), so the child is a whole copy of it and may do
    // anything: allocate, take locks, start threads.
    match unsafe { libc::fork() } {
        0 => {
            drop(ours);
            Forked::Child(theirs)
        }
        pid => match Pid::from_raw(pid) {
            // -1 is no pid: the fork failed.
            Some(pid) if pid.as_raw_nonzero().get() > 0 => Forked::Parent(pid, ours),
            _ => Forked::Failed(std::io::Error::last_os_error().raw_os_error().unwrap_or(0)),
        },
    }
}

/// A per-call supervisor: takes the next call from the server's socket (telling the supervisor,
/// which forks another if a call waits meanwhile), runs it, and waits for the next one when the
/// supervisor keeps it (kept, it saves the next call a fork: see the module's figures). Its exit
/// code: 0 once its last call's ending was reported after its tree was cleaned up.
fn worker(control: OwnedFd, mut link: UnixStream) -> i32 {
    loop {
        let fds = loop {
            match receive(&control) {
                Received::Call(fds) => break fds,
                Received::Nothing => {}
                Received::End => return 0,
            }
        };
        let _ = link.write_all(b"t");
        match run_call(fds) {
            Ran::Clean => {}
            Ran::Once => return 0,
            Ran::Failed => return 1,
        }
        // No folder held between calls.
        let _ = std::env::set_current_dir("/");
        let mut answer = [0u8; 1];
        if link.write_all(b"i").is_err() || link.read_exact(&mut answer).is_err() {
            return 0;
        }
        if answer[0] != b'k' {
            return 0;
        }
    }
}

/// How a call ended, for the per-call supervisor.
enum Ran {
    /// Reported, and nothing of it is left: the per-call supervisor can take another call.
    Clean,
    /// Reported, but the per-call supervisor may not take another one (a thread of it may still
    /// kill the program's group, whose id a later program could get; a fork bomb outran the
    /// cleanup).
    Once,
    /// The call could not be read.
    Failed,
}

/// Runs one call: reads it from its socket, starts the program, reports, cleans up.
fn run_call(fds: [OwnedFd; CALL_FDS]) -> Ran {
    let [socket, out, err] = fds;
    let mut socket = UnixStream::from(socket);
    #[cfg(target_os = "linux")]
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    let Some(req) = Request::read(&mut socket) else {
        return Ran::Failed;
    };
    if let Err(e) = std::env::set_current_dir(&req.cwd) {
        report(
            &mut socket,
            &format!("error {}", e.raw_os_error().unwrap_or(0)),
        );
        return Ran::Clean;
    }
    let start = |program: &OsStr, arg0: &OsStr, rest: &[OsString]| {
        #[expect(
            clippy::disallowed_methods,
            reason = "the supervisor starts the program"
        )]
        let mut cmd = Command::new(program);
        cmd.arg0(arg0)
            .args(rest)
            .envs(req.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::from(out.try_clone()?))
            .stderr(Stdio::from(err.try_clone()?))
            .process_group(0);
        cmd.spawn()
    };
    let child = match start(&req.program, &req.arg0, &req.args) {
        // A file the kernel cannot execute (a script without `#!`) runs in the shell, with the
        // arguments, as `execvp` runs it.
        Err(e) if e.raw_os_error() == Some(libc::ENOEXEC) => {
            let with_program: Vec<OsString> = std::iter::once(req.program.clone())
                .chain(req.args.iter().cloned())
                .collect();
            start(OsStr::new(SH), OsStr::new("sh"), &with_program)
        }
        r => r,
    };
    // The pipes stay open only in the program (and what it starts).
    drop((out, err));
    let child = match child {
        Ok(c) => c,
        Err(e) => {
            report(
                &mut socket,
                &format!("error {}", e.raw_os_error().unwrap_or(0)),
            );
            return Ran::Clean;
        }
    };
    let tool = Pid::from_child(&child);
    drop(child);
    let me = rustix::process::getpid();
    if !report(
        &mut socket,
        &format!("pid {} {}", tool.as_raw_nonzero(), me.as_raw_nonzero()),
    ) {
        // The server is gone already.
        kill_tree(tool);
    }

    let (status, watched) = wait_or_stop(&socket, tool);
    let clean = cleanup(tool);
    let line = match status {
        Some(s) => match (s.exit_status(), s.terminating_signal()) {
            (Some(code), _) => format!("exit {code}"),
            (None, Some(sig)) => format!("signal {sig}"),
            (None, None) => format!("signal {}", libc::SIGKILL),
        },
        None => format!("signal {}", libc::SIGKILL),
    };
    report(&mut socket, &line);
    if clean && !watched {
        Ran::Clean
    } else {
        Ran::Once
    }
}

/// Waits for the program to end, killing its tree as soon as the server's end of `socket` is
/// shut down (stop) or closed (the server died); the program's status, and whether a thread
/// still watches the socket.
fn wait_or_stop(socket: &UnixStream, tool: Pid) -> (Option<rustix::process::WaitStatus>, bool) {
    // Linux: one thread polls the socket and a pidfd of the program (no second thread: its
    // start and its own malloc arena cost about 0.1 ms of a 1 ms `tool/true`).
    #[cfg(target_os = "linux")]
    if let Ok(pidfd) = rustix::process::pidfd_open(tool, rustix::process::PidfdFlags::empty()) {
        let mut stopped = false;
        loop {
            let mut fds = vec![PollFd::new(&pidfd, PollFlags::IN)];
            if !stopped {
                // The server writes nothing after the call: readable is the end.
                fds.push(PollFd::new(socket, PollFlags::IN));
            }
            match poll(&mut fds, None) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(_) => break,
            }
            if fds.get(1).is_some_and(|f| !f.revents().is_empty()) {
                stopped = true;
                kill_tree(tool);
            }
            if !fds[0].revents().is_empty() {
                break;
            }
        }
        let status = loop {
            match waitpid(Some(tool), WaitOptions::empty()) {
                Ok(Some((_, status))) => break Some(status),
                Err(rustix::io::Errno::INTR) => {}
                _ => break None,
            }
        };
        return (status, false);
    }
    // Elsewhere (and on Linux before 5.3): a thread reads the socket while this one waits.
    if let Ok(mut reader) = socket.try_clone() {
        std::thread::spawn(move || {
            let mut byte = [0u8; 1];
            while let Err(e) = reader.read(&mut byte) {
                if e.kind() != std::io::ErrorKind::Interrupted {
                    break;
                }
            }
            kill_tree(tool);
        });
    }
    let status = loop {
        match wait(WaitOptions::empty()) {
            Ok(Some((pid, status))) if pid == tool => break Some(status),
            // An orphan below the program, reparented here: reaped.
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => break None,
        }
    };
    (status, true)
}

/// What the server sends a per-call supervisor on its socket: a length, then each field as a
/// length and its bytes.
#[derive(Debug, PartialEq)]
pub(super) struct Request {
    pub program: OsString,
    pub arg0: OsString,
    pub cwd: PathBuf,
    pub args: Vec<OsString>,
    /// Set on top of the inherited environment.
    pub env: Vec<(OsString, OsString)>,
}

impl Request {
    pub(super) fn encode(
        program: &OsStr,
        arg0: &OsStr,
        cwd: &OsStr,
        args: &[&OsStr],
        env: &[(&OsStr, &OsStr)],
    ) -> Vec<u8> {
        fn put(out: &mut Vec<u8>, bytes: &[u8]) {
            out.extend_from_slice(&len32(bytes.len()).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        fn len32(n: usize) -> u32 {
            u32::try_from(n).unwrap_or(u32::MAX)
        }
        let mut out = vec![0; 4];
        for s in [program, arg0, cwd] {
            put(&mut out, s.as_bytes());
        }
        out.extend_from_slice(&len32(args.len()).to_le_bytes());
        for a in args {
            put(&mut out, a.as_bytes());
        }
        out.extend_from_slice(&len32(env.len()).to_le_bytes());
        for (k, v) in env {
            put(&mut out, k.as_bytes());
            put(&mut out, v.as_bytes());
        }
        let body = len32(out.len() - 4).to_le_bytes();
        out[..4].copy_from_slice(&body);
        out
    }

    fn read(socket: &mut UnixStream) -> Option<Request> {
        let mut len = [0u8; 4];
        socket.read_exact(&mut len).ok()?;
        let len = usize::try_from(u32::from_le_bytes(len)).ok()?;
        if len > MAX_CALL {
            return None;
        }
        let mut body = vec![0; len];
        socket.read_exact(&mut body).ok()?;
        Request::decode(&body)
    }

    pub(super) fn decode(body: &[u8]) -> Option<Request> {
        let mut fields = Fields(body);
        let program = fields.string()?;
        let arg0 = fields.string()?;
        let cwd = PathBuf::from(fields.string()?);
        let args = (0..fields.number()?)
            .map(|_| fields.string())
            .collect::<Option<Vec<_>>>()?;
        let env = (0..fields.number()?)
            .map(|_| Some((fields.string()?, fields.string()?)))
            .collect::<Option<Vec<_>>>()?;
        fields.0.is_empty().then_some(Request {
            program,
            arg0,
            cwd,
            args,
            env,
        })
    }
}

/// Reads the fields of a `Request`'s body in turn.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn number(&mut self) -> Option<usize> {
        let (head, tail) = self.0.split_first_chunk::<4>()?;
        self.0 = tail;
        usize::try_from(u32::from_le_bytes(*head)).ok()
    }

    fn string(&mut self) -> Option<OsString> {
        let len = self.number()?;
        if len > self.0.len() {
            return None;
        }
        let (s, tail) = self.0.split_at(len);
        self.0 = tail;
        Some(OsString::from_vec(s.to_vec()))
    }
}

/// Writes one report line in one write (the server reads whole lines); false when the server is
/// gone.
fn report(socket: &mut UnixStream, line: &str) -> bool {
    socket.write_all(format!("{line}\n").as_bytes()).is_ok()
}

/// SIGKILL to the program's process group and to the program.
fn kill_tree(tool: Pid) {
    let _ = kill_process_group(tool, Signal::KILL);
    let _ = kill_process(tool, Signal::KILL);
}

/// Kills the program's group and every process left below this supervisor, until none is left
/// (true) or `MAX_PASSES` passes. Nothing left (the usual case: the program reaped, no child at
/// all) costs one group `kill` and one `wait`.
fn cleanup(tool: Pid) -> bool {
    let mut group = true;
    for _ in 0..MAX_PASSES {
        if group && kill_process_group(tool, Signal::KILL).is_err() {
            // Empty: a group cannot be joined again.
            group = false;
        }
        loop {
            match wait(WaitOptions::NOHANG) {
                Ok(Some(_)) | Err(rustix::io::Errno::INTR) => {}
                Ok(None) => break,
                // No child at all: as a subreaper (Linux), nothing is left below.
                Err(_) => return true,
            }
        }
        for pid in super::os::own_children() {
            let _ = kill_process(pid, Signal::KILL);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}

/// Kills and reaps every child of the long-lived supervisor that is not a per-call supervisor
/// (what a killed one left, come back here), until none is left.
fn sweep(live: &HashMap<Pid, Worker>) {
    super::os::kill_children_except(|p| live.contains_key(&p));
}

/// Descriptors the server inherited without close-on-exec (a client's, a jobserver's) are not
/// the program's: every descriptor from 3 up gets close-on-exec, so the program starts with 0, 1
/// and 2.
fn close_inherited() {
    let dir = if cfg!(target_os = "linux") {
        "/proc/self/fd"
    } else {
        "/dev/fd"
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let fds: Vec<i32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd > 2)
        .collect();
    for fd in fds {
        // SAFETY: `fd` was open when the directory was read, and this process is single-threaded
        // here (nothing else opens or closes descriptors meanwhile); the borrow lives only for
        // the `fcntl`, which changes a flag and closes nothing (a descriptor that was the
        // directory's own and is closed by now answers EBADF).
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        if let Ok(flags) = rustix::io::fcntl_getfd(fd) {
            let _ = rustix::io::fcntl_setfd(fd, flags | rustix::io::FdFlags::CLOEXEC);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_back_as_it_was_written_and_a_cut_one_does_not_read() {
        let bytes = Request::encode(
            OsStr::new("/bin/echo"),
            OsStr::new("echo"),
            OsStr::new("/tmp"),
            &[OsStr::new("a b"), OsStr::new(""), OsStr::new("-x")],
            &[
                (OsStr::new("PATH"), OsStr::new("/x:/y")),
                (OsStr::new("E"), OsStr::new("")),
            ],
        );
        let body = &bytes[4..];
        assert_eq!(
            u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize,
            body.len()
        );
        let r = Request::decode(body).unwrap();
        assert_eq!(r.program, "/bin/echo");
        assert_eq!(r.arg0, "echo");
        assert_eq!(r.cwd, PathBuf::from("/tmp"));
        assert_eq!(r.args, ["a b", "", "-x"]);
        assert_eq!(
            r.env,
            [("PATH".into(), "/x:/y".into()), ("E".into(), "".into())]
        );
        for cut in 0..body.len() {
            assert_eq!(Request::decode(&body[..cut]), None, "cut at {cut}");
        }
        let mut longer = body.to_vec();
        longer.push(0);
        assert_eq!(Request::decode(&longer), None, "a byte too many");
    }
}
