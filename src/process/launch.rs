//! Supervisors started without copying the server (Linux, x86_64 and aarch64).
//!
//! `fork` of the server for every supervisor cost about 0.4 ms of a tool call: the kernel copies
//! the page tables of a multi-threaded process with tens of MiB mapped, tears the copy down when
//! the supervisor exits, and the server takes a copy-on-write fault on every page it writes
//! meanwhile. Here the supervisor is started with `clone(CLONE_VM)` instead: a process of its
//! own (own pid, process group, file descriptors, signal mask, working directory) that runs on
//! its own small stack in the server's memory, like a thread that is not one. It then starts the
//! tool exactly as the forked supervisor does (`clone(CLONE_VM | CLONE_VFORK)` + `execve`).
//!
//! What it may do follows from sharing the server's memory:
//! - only raw system calls (`sys.rs`): it runs with the thread pointer of the server thread that
//!   started it, so nothing may touch thread-local storage (libc's `errno`), allocate, lock or
//!   panic;
//! - everything it reads (`Launch`: argv, environment, stacks) stays allocated until the server
//!   has reaped it (`Cloned` owns it, and a dropped `Cloned` leaves it to a task that waits);
//! - all signals stay blocked in it (the server's handlers must never run there): it is woken
//!   by file descriptors instead. The tool's end is a pidfd; "stop" is the server writing a
//!   byte into a pipe whose write end only the server holds, and the server's death (even by
//!   SIGKILL) closes that pipe, which wakes it the same way. Either way it then runs the same
//!   cleanup as the forked supervisor (`supervisor::cleanup`: the tool's group, then every
//!   process left below it, as a subreaper) and writes the tool's wait status into `Launch`
//!   before it exits.
//!
//! A failed `chdir` or `execve` is written into `Launch` too, and `run` reports it as the
//! spawn error it is. `cloned()` falls back to the forked supervisor when a trial clone fails
//! (Linux before 5.4, an emulator such as qemu-user, a sandbox that refuses `CLONE_VM`
//! processes) or when `MCP_MANIFEST_SUPERVISOR=fork` asks for it.

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use libc::{c_int, c_void, pid_t};
use tokio::io::unix::AsyncFd;

use super::StartFailure;
use super::supervisor::{self, Exec};
use super::sys;

/// The wait status recorded when the supervisor ended without writing the tool's (it was
/// killed with SIGKILL): the tool is reported killed by SIGKILL, as a forked supervisor would.
const NO_STATUS: i32 = -1;

const FAILED_NONE: i32 = 0;
const FAILED_CWD: i32 = 1;
const FAILED_EXEC: i32 = 2;
const FAILED_START: i32 = 3;

/// Everything the supervisor reads, and what it writes back, in memory it shares with the server.
struct Launch {
    exec: Exec,
    cwd: CString,
    /// The child ends, as numbered in the server when it cloned: stdin, stdout, stderr, stop.
    fds: [c_int; 4],
    /// The supervisor's stack: a guard page, then `STACK` bytes (from `Stacks`, given back on
    /// drop).
    stack: *mut c_void,
    /// The tool's wait status (`NO_STATUS` until written).
    status: AtomicI32,
    /// `FAILED_*`, and its errno.
    failed: AtomicI32,
    errno: AtomicI32,
}

// SAFETY: the raw pointers are owned by the value (an `mmap`ed stack, `Exec`'s strings) and not
// shared otherwise; the supervisor only writes the atomics.
unsafe impl Send for Launch {}
// SAFETY: as above.
unsafe impl Sync for Launch {}

const STACK: usize = 64 * 1024;
const GUARD: usize = 4096;

impl Drop for Launch {
    fn drop(&mut self) {
        // The supervisor was reaped before a `Launch` is dropped: its stack is free again.
        Stacks::put(self.stack);
    }
}

/// Supervisor stacks kept for the next starts (at most `Stacks::KEPT`): a stack mapped, guarded
/// and unmapped per call cost three system calls, page faults on first touch, and on `munmap`
/// a TLB flush on every CPU running one of the server's threads.
struct Stacks;

impl Stacks {
    const KEPT: usize = 16;

    fn kept() -> std::sync::MutexGuard<'static, Vec<usize>> {
        static KEPT: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());
        KEPT.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A stack region (`GUARD` bytes of guard page, then `STACK` bytes): a kept one, or a
    /// fresh mapping.
    fn take() -> io::Result<*mut c_void> {
        if let Some(p) = Self::kept().pop() {
            return Ok(p as *mut c_void);
        }
        // SAFETY: a fresh anonymous mapping; the low page becomes the guard below the stack.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                STACK + GUARD,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            if libc::mprotect(p, GUARD, libc::PROT_NONE) != 0 {
                let e = io::Error::last_os_error();
                libc::munmap(p, STACK + GUARD);
                return Err(e);
            }
            Ok(p)
        }
    }

    /// Gives back a region `take` returned, no longer used by any process.
    fn put(p: *mut c_void) {
        let mut kept = Self::kept();
        if kept.len() < Self::KEPT {
            kept.push(p as usize);
            return;
        }
        drop(kept);
        // SAFETY: mapped by `take` with this size, and no longer used.
        unsafe {
            libc::munmap(p, STACK + GUARD);
        }
    }
}

/// `/dev/null`, opened once (close-on-exec): every supervisor dups it to the tool's stdin.
fn dev_null() -> io::Result<c_int> {
    static NULL: std::sync::OnceLock<OwnedFd> = std::sync::OnceLock::new();
    if let Some(fd) = NULL.get() {
        return Ok(fd.as_raw_fd());
    }
    let fd = OwnedFd::from(std::fs::File::open("/dev/null")?);
    Ok(NULL.get_or_init(|| fd).as_raw_fd())
}

/// Whether supervisors are cloned (`true`) or forked, decided once per process.
pub(super) fn cloned() -> bool {
    static CLONED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CLONED.get_or_init(|| {
        if std::env::var_os("MCP_MANIFEST_SUPERVISOR").is_some_and(|v| v == "fork") {
            return false;
        }
        clone_works()
    })
}

/// The trial supervisor: ends at once (a raw system call: it runs in the server's memory).
extern "C" fn trial(_: *mut c_void) -> c_int {
    // SAFETY: ends this process only.
    unsafe {
        sys::sys(libc::SYS_exit, 0, 0, 0, 0);
    }
    0
}

/// Starts and reaps one trial supervisor the way `start` does (`clone_supervisor`: refused
/// with `EINVAL` by emulators such as qemu-user, which run a `CLONE_VM` child only as a thread,
/// and by sandboxes whose filters refuse it; `CLONE_PIDFD` is Linux 5.2+), then
/// `waitid(P_PIDFD)` (`EINVAL` before Linux 5.4). Anything short of that, and supervisors are
/// forked. Costs one short-lived process, once; its stack is kept for the first real one.
fn clone_works() -> bool {
    let Ok(stack) = Stacks::take() else {
        return false;
    };
    // SAFETY: `trial` touches nothing; the stack is given back only once the trial is reaped.
    let Ok((pid, pidfd)) = (unsafe { clone_supervisor(trial, stack, std::ptr::null_mut()) }) else {
        Stacks::put(stack);
        return false;
    };
    // SAFETY: plain system calls on a zeroed out value and on descriptors owned here.
    let waited = unsafe {
        let waited = loop {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let r = libc::waitid(libc::P_PIDFD, pidfd as libc::id_t, &mut info, libc::WEXITED);
            if r == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break r == 0;
            }
        };
        if !waited {
            // No P_PIDFD (or no pidfd at all: a kernel before 5.2 ignores the flag): reap it
            // by pid before its stack goes.
            let mut status = 0;
            while libc::waitpid(pid, &mut status, libc::__WALL) < 0
                && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
            {}
        }
        if pidfd >= 0 {
            libc::close(pidfd);
        }
        waited
    };
    Stacks::put(stack);
    waited
}

/// `clone(CLONE_VM | CLONE_PIDFD)` of `f(arg)` on `stack` (a `Stacks` region), every signal
/// blocked around it so that none of the server's handlers can run in the new process before it
/// has its own mask: its pid and pidfd (-1 where the kernel gave none).
///
/// # Safety
/// `f` must make raw system calls only (it runs in the server's memory, with the calling
/// thread's thread pointer), and `stack` and what `arg` points to must outlive the process.
unsafe fn clone_supervisor(
    f: extern "C" fn(*mut c_void) -> c_int,
    stack: *mut c_void,
    arg: *mut c_void,
) -> io::Result<(libc::pid_t, c_int)> {
    let mut pidfd: c_int = -1;
    // SAFETY: the caller's promises; the masks are plain values.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let top = (stack as usize + GUARD + STACK) & !15;
        let pid = libc::clone(
            f,
            top as *mut c_void,
            libc::CLONE_VM | libc::CLONE_PIDFD | libc::SIGCHLD,
            arg,
            &raw mut pidfd,
        );
        let err = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if pid < 0 {
            return Err(err);
        }
        Ok((pid, pidfd))
    }
}

/// A started supervisor, as the server sees it.
pub(super) struct Cloned {
    launch: Option<Box<Launch>>,
    pid: pid_t,
    pidfd: Option<AsyncFd<OwnedFd>>,
    /// The write end of the stop pipe (a byte asks the supervisor to stop).
    stop: Arc<OwnedFd>,
    status: Option<ExitStatus>,
    /// Set in the task that waits for a dropped `Cloned`: if that task is dropped too (the
    /// runtime shuts down), what the supervisor reads is leaked, never freed under it.
    detached: bool,
}

/// The server's ends of a started supervisor's pipes.
pub(super) struct Pipes {
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

fn pipe(flags: c_int) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as c_int; 2];
    // SAFETY: `fds` has room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | flags) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both were just opened and are owned here.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Starts `cmd` (program, arguments, environment; `arg0` as its name) in `cwd` under a cloned
/// supervisor. Called within a tokio runtime (the pidfd is registered with its reactor).
pub(super) fn start(
    cmd: &std::process::Command,
    arg0: &OsStr,
    cwd: &std::path::Path,
) -> io::Result<(Cloned, Pipes)> {
    use std::os::unix::ffi::OsStrExt as _;
    let cwd = CString::new(cwd.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the folder"))?;
    let null = dev_null()?;
    let (out_r, out_w) = pipe(0)?;
    let (err_r, err_w) = pipe(0)?;
    // Non-blocking: asking to stop never waits (the supervisor only polls its end).
    let (stop_r, stop_w) = pipe(libc::O_NONBLOCK)?;
    let stack = Stacks::take()?;
    let launch = Box::new(Launch {
        exec: Exec::new(cmd, arg0),
        cwd,
        fds: [
            null,
            out_w.as_raw_fd(),
            err_w.as_raw_fd(),
            stop_r.as_raw_fd(),
        ],
        stack,
        status: AtomicI32::new(NO_STATUS),
        failed: AtomicI32::new(FAILED_NONE),
        errno: AtomicI32::new(0),
    });
    // SAFETY: `supervise` makes raw system calls only; `launch` (and the stack inside it)
    // outlives the supervisor: it is owned by the returned `Cloned` until the supervisor is
    // reaped.
    let (pid, pidfd) = unsafe {
        clone_supervisor(
            supervise,
            stack,
            std::ptr::from_ref::<Launch>(&launch).cast_mut().cast(),
        )?
    };
    // Both sides set the group, so it exists whichever runs first.
    // SAFETY: a plain system call on our child.
    unsafe {
        libc::setpgid(pid, pid);
    }
    // The child ends are the supervisor's now (it has copies); the server's go.
    drop((out_w, err_w, stop_r));
    // SAFETY: CLONE_PIDFD stored a new descriptor (close-on-exec) owned here.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    // SAFETY: an `OwnedFd` stays open, and the same descriptor, for as long as it is owned.
    let registered =
        unsafe { AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE) };
    let pidfd = match registered {
        Ok(fd) => fd,
        Err(e) => {
            let (_, e) = e.into_parts();
            // Not waitable without the runtime: stop it and wait here (rare: no runtime).
            let stop = Arc::new(stop_w);
            // SAFETY: a one-byte write from a live buffer.
            unsafe {
                libc::write(stop.as_raw_fd(), b"x".as_ptr().cast(), 1);
                let mut st = 0;
                libc::waitpid(pid, &mut st, 0);
            }
            return Err(e);
        }
    };
    Ok((
        Cloned {
            launch: Some(launch),
            pid,
            pidfd: Some(pidfd),
            stop: Arc::new(stop_w),
            status: None,
            detached: false,
        },
        Pipes {
            stdout: out_r,
            stderr: err_r,
        },
    ))
}

impl Cloned {
    pub(super) fn pid(&self) -> pid_t {
        self.pid
    }

    /// What stops the supervisor: a byte written here.
    pub(super) fn stopper(&self) -> Arc<OwnedFd> {
        self.stop.clone()
    }

    /// Reaps the supervisor if it has ended.
    pub(super) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.status.is_some() {
            return Ok(self.status);
        }
        let Some(fd) = &self.pidfd else {
            return Ok(None);
        };
        // SAFETY: a zeroed siginfo is a valid out value; the pidfd is ours.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::waitid(
                libc::P_PIDFD,
                fd.get_ref().as_raw_fd() as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: waitid filled `info` (si_pid 0: nothing has ended yet).
        if unsafe { info.si_pid() } == 0 {
            return Ok(None);
        }
        let launch = self.launch.as_ref().expect("present until drop");
        let raw = launch.status.load(Ordering::Acquire);
        let status = ExitStatus::from_raw(if raw == NO_STATUS { libc::SIGKILL } else { raw });
        self.status = Some(status);
        Ok(Some(status))
    }

    /// Waits for the supervisor to end and reaps it.
    pub(super) async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(s) = self.try_wait()? {
                return Ok(s);
            }
            let Some(fd) = &self.pidfd else {
                return Err(io::Error::other("the supervisor is not waitable"));
            };
            let mut ready = fd.readable().await?;
            ready.clear_ready();
        }
    }

    /// Why the tool did not start, once the supervisor was reaped.
    pub(super) fn failure(&self) -> Option<StartFailure> {
        self.status?;
        let launch = self.launch.as_ref()?;
        let errno = launch.errno.load(Ordering::Acquire);
        match launch.failed.load(Ordering::Acquire) {
            FAILED_CWD => Some(StartFailure::Cwd(errno)),
            FAILED_EXEC => Some(StartFailure::Exec(errno)),
            FAILED_START => Some(StartFailure::Start),
            _ => None,
        }
    }

    /// SIGKILL to the supervisor itself (it did not stop when asked).
    pub(super) fn kill(&self) {
        // SAFETY: the supervisor is not reaped while `self` holds it, so the pid is its own.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
        }
    }
}

/// Asks a cloned supervisor to stop: a byte in its stop pipe. The pipe never blocks; a full one
/// (EAGAIN) has been asked already, a gone reader (EPIPE; SIGPIPE is ignored) has stopped.
pub(super) fn stop(fd: &OwnedFd) {
    // SAFETY: a one-byte write from a live buffer.
    unsafe {
        libc::write(fd.as_raw_fd(), b"x".as_ptr().cast(), 1);
    }
}

impl Drop for Cloned {
    fn drop(&mut self) {
        if self.status.is_some() || matches!(self.try_wait(), Ok(Some(_))) {
            return;
        }
        // Still running: it was asked to stop (`Group`'s drop runs first). Whoever reaps it
        // frees what it reads; until then it stays allocated.
        let (Some(launch), Some(pidfd)) = (self.launch.take(), self.pidfd.take()) else {
            return;
        };
        let runtime = match tokio::runtime::Handle::try_current() {
            Ok(runtime) if !self.detached => runtime,
            _ => {
                // No runtime, or the waiting task itself was dropped: the server is going
                // away, and the supervisor with it (the stop pipe closes). What it reads must
                // stay allocated until then.
                std::mem::forget(launch);
                return;
            }
        };
        // Built before the task: a task the runtime drops before its first poll (it is shutting
        // down) drops this `Cloned` too, which leaks what a running supervisor reads. Captured
        // as loose fields, the `Launch` would be freed (and its stack handed to the next
        // supervisor) under a supervisor that still writes the tool's status into it.
        let mut c = Cloned {
            launch: Some(launch),
            pid: self.pid,
            pidfd: Some(pidfd),
            stop: self.stop.clone(),
            status: None,
            detached: true,
        };
        runtime.spawn(async move {
            if tokio::time::timeout(super::STOP_GRACE, c.wait())
                .await
                .is_err()
            {
                c.kill();
                let _ = c.wait().await;
            }
        });
    }
}

/// The supervisor: sets itself up, starts the tool, waits for it or for "stop", cleans up.
/// Runs on the `Launch` stack in the server's memory: raw system calls only.
extern "C" fn supervise(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Launch` the server keeps alive until this process is reaped.
    let launch = unsafe { &*arg.cast::<Launch>() };
    // SAFETY: raw system calls on values owned here or in `launch`.
    unsafe {
        let fail = |how: i32, r: isize| -> c_int {
            launch.errno.store(sys::errno(r), Ordering::Relaxed);
            launch.failed.store(how, Ordering::Release);
            0
        };
        sys::sys(libc::SYS_setpgid, 0, 0, 0, 0);
        sys::sys(
            libc::SYS_prctl,
            libc::PR_SET_CHILD_SUBREAPER as usize,
            1,
            0,
            0,
        );
        // The four descriptors to 0..=3 (moved above 3 first, so none overwrites another),
        // then everything else of the server's table closed.
        let mut high = [0 as c_int; 4];
        for (i, fd) in launch.fds.iter().enumerate() {
            let r = sys::sys(
                libc::SYS_fcntl,
                *fd as usize,
                libc::F_DUPFD_CLOEXEC as usize,
                4,
                0,
            );
            if r < 0 {
                return fail(FAILED_START, r);
            }
            high[i] = r as c_int;
        }
        for (i, fd) in high.iter().enumerate() {
            // 0..=2 are inherited by the tool; the stop pipe (3) is not.
            let flags = if i == 3 { libc::O_CLOEXEC } else { 0 };
            let r = sys::sys(libc::SYS_dup3, *fd as usize, i, flags as usize, 0);
            if r < 0 {
                return fail(FAILED_START, r);
            }
        }
        close_from(4);
        let r = sys::sys(libc::SYS_chdir, launch.cwd.as_ptr() as usize, 0, 0, 0);
        if r < 0 {
            return fail(FAILED_CWD, r);
        }
        let me = sys::getpid();
        let mut start = ToolStart {
            exec: &launch.exec,
            supervisor: me,
            failed: 0,
        };
        let mut stack = supervisor::ToolStack::new();
        let tool = libc::clone(
            start_tool,
            stack.top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&raw mut start).cast(),
        );
        if tool < 0 {
            return fail(FAILED_START, -(libc::EAGAIN as isize));
        }
        if start.failed != 0 {
            let mut st: c_int = 0;
            sys::wait4(tool, &mut st, 0);
            return fail(FAILED_EXEC, -(start.failed as isize));
        }
        sys::sys(libc::SYS_setpgid, tool as usize, tool as usize, 0, 0);
        let pidfd = sys::sys(libc::SYS_pidfd_open, tool as usize, 0, 0, 0);
        let mut status: Option<c_int> = None;
        let mut none_left;
        loop {
            none_left = supervisor::reap(tool, &mut status);
            if status.is_some() {
                break;
            }
            let mut fds = [
                libc::pollfd {
                    fd: 3,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: if pidfd >= 0 { pidfd as c_int } else { -1 },
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // Woken by the tool's end (pidfd), "stop" or the server's death (the pipe); also
            // once a second to reap what was left to it meanwhile (without a pidfd, often).
            let wait = libc::timespec {
                tv_sec: if pidfd >= 0 { 1 } else { 0 },
                tv_nsec: if pidfd >= 0 { 0 } else { 10_000_000 },
            };
            sys::sys(
                libc::SYS_ppoll,
                fds.as_mut_ptr() as usize,
                2,
                std::ptr::from_ref(&wait) as usize,
                0,
            );
            if fds[0].revents != 0 {
                break;
            }
        }
        if !supervisor::nothing_left(status, none_left) {
            supervisor::cleanup(tool, &mut status);
        }
        launch
            .status
            .store(status.unwrap_or(NO_STATUS), Ordering::Release);
        0
    }
}

/// What `start_tool` reads, and writes back, on the supervisor's stack.
#[repr(C)]
struct ToolStart {
    exec: *const Exec,
    supervisor: pid_t,
    /// The `errno` of a failed `execve` (0: it did not fail).
    failed: c_int,
}

/// The tool, started by the supervisor with `clone(CLONE_VM | CLONE_VFORK)`: runs on its own
/// stack until it execs (or fails to and exits). Raw system calls only.
extern "C" fn start_tool(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the supervisor's `ToolStart`, alive while the supervisor waits
    // (CLONE_VFORK); raw system calls only.
    unsafe {
        let start = &mut *arg.cast::<ToolStart>();
        let exec = &*start.exec;
        // A process group of its own, gone when the supervisor goes.
        sys::sys(libc::SYS_setpgid, 0, 0, 0, 0);
        sys::sys(
            libc::SYS_prctl,
            libc::PR_SET_PDEATHSIG as usize,
            libc::SIGKILL as usize,
            0,
            0,
        );
        if sys::getppid() != start.supervisor {
            sys::sys(libc::SYS_exit, 126, 0, 0, 0);
        }
        // As the standard library starts a program: SIGPIPE back to its default action (Rust
        // ignores it), no signal blocked. (Handlers the server installed reset on exec.)
        let default = [0u64; 4];
        sys::sys(
            libc::SYS_rt_sigaction,
            libc::SIGPIPE as usize,
            default.as_ptr() as usize,
            0,
            8,
        );
        let none = 0u64;
        sys::sys(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK as usize,
            std::ptr::from_ref(&none) as usize,
            0,
            8,
        );
        let r = sys::sys(
            libc::SYS_execve,
            exec.program_ptr() as usize,
            exec.argv_ptr() as usize,
            exec.envp_ptr() as usize,
            0,
        );
        if sys::errno(r) == libc::ENOEXEC {
            // A file the kernel cannot run (a script without `#!`): the shell runs it, as
            // `execvp` (and so the standard library) does.
            sys::sys(
                libc::SYS_execve,
                supervisor::SH.as_ptr() as usize,
                exec.sh_argv_ptr() as usize,
                exec.envp_ptr() as usize,
                0,
            );
        }
        start.failed = sys::errno(r);
        sys::sys(libc::SYS_exit, 127, 0, 0, 0);
        127
    }
}

/// Closes every descriptor from `low` up.
unsafe fn close_from(low: c_int) {
    // SAFETY: closing descriptors of this process's own table.
    unsafe {
        if sys::sys(libc::SYS_close_range, low as usize, u32::MAX as usize, 0, 0) == 0 {
            return;
        }
        for fd in low..65_536 {
            sys::close(fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `Cloned` dropped while its supervisor runs hands what the supervisor reads to a task
    /// that waits for it. A runtime shut down before that task first runs drops it unpolled:
    /// the supervisor must still find its stack and `Launch` where they were (it writes the
    /// tool's status there when it ends), never freed nor handed to another supervisor.
    #[test]
    fn a_supervisor_outliving_the_runtime_keeps_its_stack_and_launch() {
        if !cloned() {
            return;
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // Only handed to `start` (what `process.rs` does with the commands it builds).
        #[allow(clippy::disallowed_methods)]
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("30");
        let (c, pipes) = {
            let _in = rt.enter();
            start(&cmd, OsStr::new("sleep"), std::path::Path::new("/")).unwrap()
        };
        let stack = c.launch.as_ref().expect("present").stack as usize;
        let pid = c.pid();
        // Keeps the stop pipe open: the supervisor runs until this goes.
        let stop = c.stopper();
        {
            let _in = rt.enter();
            // Still running: handed to a waiting task, queued and not yet polled.
            drop(c);
        }
        drop(rt);
        // The supervisor still runs on its stack: it is not among those kept for the next.
        let kept: Vec<usize> = std::mem::take(&mut *Stacks::kept());
        let handed_out = kept.contains(&stack);
        Stacks::kept().extend(kept);
        assert!(!handed_out, "a running supervisor's stack was given back");
        // Let it end: it stops the tool, writes the status and exits on its own stack (an
        // unmapped one would end it with SIGSEGV).
        drop(stop);
        drop(pipes);
        let mut st: c_int = 0;
        // SAFETY: waits for our own child into a local.
        let r = unsafe { libc::waitpid(pid, &mut st, 0) };
        assert_eq!(r, pid);
        assert!(
            libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
            "the supervisor ended with wait status {st:#x}"
        );
    }
}
