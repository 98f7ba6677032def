//! The per-call supervisor: what makes sure nothing a tool started outlives its call or the
//! server, even after `kill -9` of the server.
//!
//! This file is the *forked* supervisor (and the cleanup both kinds share); on Linux x86_64 and
//! aarch64 the server starts *cloned* supervisors instead (`launch.rs`), which behave the same
//! without a copy of the server.
//!
//! `process::run` starts every program through `install`: the child the standard library forks
//! (the *supervisor*, leader of the process group the server registers) forks once more before
//! exec; the grandchild (the *tool*, in a process group of its own) execs the program, and the
//! supervisor never execs: it waits for the tool, then kills whatever is left and exits with the
//! tool's own status, which is what the server sees. It ends its call early when:
//!
//! - the server sends it `STOP_SIGNAL` (timeout, cancellation, output cap, shutdown);
//! - the server process dies (Linux: `PR_SET_PDEATHSIG` wakes it at once, and since the signal
//!   fires when the *thread* that forked dies, the supervisor checks that its parent really
//!   changed; elsewhere a 100 ms timer checks `getppid`).
//!
//! On Linux the supervisor is a child subreaper (`PR_SET_CHILD_SUBREAPER`): every descendant
//! whose parent dies is reparented to it, even one that left the group with `setsid`, so its
//! cleanup (kill the tool's group, then its own children, again until it has none) reaches them
//! all. Elsewhere it kills the tool's process group only.
//!
//! What it cannot catch: a process started outside the tree (a request to a daemon: `systemd-run`,
//! `tmux` or `docker` servers, `at`), and — if the supervisor itself is killed with SIGKILL by
//! someone else — the tool's descendants (the tool gets SIGKILL through its own parent-death
//! signal on Linux).
//!
//! Between fork and exec only async-signal-safe calls are allowed (the server has many threads):
//! everything below uses raw libc calls, fixed stack buffers and no allocation.
//!
//! On Linux the supervisor starts the tool with `clone(CLONE_VM | CLONE_VFORK)` (`start_tool`,
//! as `posix_spawn` does) instead of a second `fork`: the tool runs on its own stack in the
//! supervisor's memory until it execs, so the server's page tables are copied once per call, not
//! twice. Its argv and environment are built before the first fork (`Exec`). If its `execve`
//! fails, the supervisor lets the standard library exec the program itself, which fails the
//! same way and reports the reason to the server as for any spawn. Measured with
//! `cargo bench --bench suite -- tool/true`: 1.94 → 1.65 ms p50 (`spawn true` 0.92 ms).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use libc::{c_int, pid_t};

use super::sys;

/// The signal the server sends a supervisor to end its call now.
pub(super) const STOP_SIGNAL: c_int = libc::SIGTERM;

/// Set by the handler of `STOP_SIGNAL` (and SIGINT) in a supervisor; never set in the server.
static STOP: AtomicBool = AtomicBool::new(false);

/// Signals the supervisor waits for, blocked except while it sleeps in `sigsuspend`.
const WAKE: [c_int; 5] = [
    libc::SIGCHLD,
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGALRM,
];

/// Cleanup passes before the supervisor gives up (a fork bomb faster than SIGKILL).
const MAX_PASSES: u32 = 10_000;

/// The shell that runs a file the kernel cannot execute (as `execvp` does).
#[cfg(target_os = "linux")]
pub(super) const SH: &std::ffi::CStr = c"/bin/sh";

/// Makes `cmd` start through a supervisor. `arg0` is the program's name as the tool sees it.
pub(super) fn install(cmd: &mut tokio::process::Command, arg0: &std::ffi::OsStr) {
    // SAFETY: getpid has no preconditions.
    let server = unsafe { libc::getpid() };
    #[cfg(target_os = "linux")]
    let exec = Exec::new(cmd.as_std(), arg0);
    #[cfg(not(target_os = "linux"))]
    let _ = arg0;
    // SAFETY: the closure runs between fork and exec and only makes async-signal-safe calls
    // (see `split`); it allocates nothing and touches no lock (`exec` was built here, before).
    unsafe {
        cmd.pre_exec(move || {
            #[cfg(target_os = "linux")]
            return split(server, &exec);
            #[cfg(not(target_os = "linux"))]
            split(server)
        });
    }
}

/// What the tool is started with on Linux, built before the fork (nothing may be allocated
/// after it): the program, argv and environment as C arrays, and a stack for `start_tool`.
#[cfg(target_os = "linux")]
pub(super) struct Exec {
    program: std::ffi::CString,
    _strings: Vec<std::ffi::CString>,
    argv: Vec<*const libc::c_char>,
    /// `/bin/sh`, the program, then argv after argv[0]: what runs a file the kernel cannot
    /// (ENOEXEC: a script without `#!`), as `execvp` does.
    sh_argv: Vec<*const libc::c_char>,
    /// Into `_strings` (the changed variables) and into `process::inherited()`, which lives as
    /// long as the process.
    envp: Vec<*const libc::c_char>,
}

// SAFETY: the raw pointers point into `_strings`, owned by the same value and never changed, or
// into the inherited environment, never changed nor freed.
#[cfg(target_os = "linux")]
unsafe impl Send for Exec {}
// SAFETY: as above; nothing is mutated through a shared reference.
#[cfg(target_os = "linux")]
unsafe impl Sync for Exec {}

#[cfg(target_os = "linux")]
impl Exec {
    /// The program, arguments and environment `cmd` would exec (the inherited environment with
    /// `cmd`'s changes), as `execve` takes them. Strings with a NUL are left out (the standard
    /// library refuses such a command before forking anyway).
    pub(super) fn new(cmd: &std::process::Command, arg0: &std::ffi::OsStr) -> Exec {
        use std::os::unix::ffi::OsStrExt as _;
        let c = |s: &std::ffi::OsStr| std::ffi::CString::new(s.as_bytes()).ok();
        let changes: std::collections::BTreeMap<&std::ffi::OsStr, Option<&std::ffi::OsStr>> =
            cmd.get_envs().collect();
        let mut strings: Vec<std::ffi::CString> = std::iter::once(arg0)
            .chain(cmd.get_args())
            .filter_map(c)
            .collect();
        let argc = strings.len();
        let envp = super::inherited().envp(&changes, &mut strings);
        let argv: Vec<*const libc::c_char> = strings[..argc]
            .iter()
            .map(|s| s.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect();
        let program = c(cmd.get_program()).unwrap_or_default();
        let sh_argv = [SH.as_ptr(), program.as_ptr()]
            .into_iter()
            .chain(strings[1.min(argc)..argc].iter().map(|s| s.as_ptr()))
            .chain(std::iter::once(std::ptr::null()))
            .collect();
        Exec {
            program,
            sh_argv,
            argv,
            envp,
            _strings: strings,
        }
    }
}

#[cfg(target_os = "linux")]
impl Exec {
    pub(super) fn program_ptr(&self) -> *const libc::c_char {
        self.program.as_ptr()
    }

    pub(super) fn argv_ptr(&self) -> *const *const libc::c_char {
        self.argv.as_ptr()
    }

    pub(super) fn sh_argv_ptr(&self) -> *const *const libc::c_char {
        self.sh_argv.as_ptr()
    }

    pub(super) fn envp_ptr(&self) -> *const *const libc::c_char {
        self.envp.as_ptr()
    }
}

/// Bytes of `ToolStack`: `start_tool` makes a few system calls and nothing else.
#[cfg(target_os = "linux")]
const TOOL_STACK: usize = 16 * 1024;

/// The stack `start_tool` runs on: a local of the supervisor, which waits (`CLONE_VFORK`) while
/// the tool runs on it until `execve`. Left uninitialised: nothing is allocated, zeroed or freed
/// per start (it was a 64 KiB zeroed `Vec` in `Exec`, whose free made malloc consolidate).
#[cfg(target_os = "linux")]
#[repr(C, align(16))]
pub(super) struct ToolStack(std::mem::MaybeUninit<[u8; TOOL_STACK]>);

#[cfg(target_os = "linux")]
impl ToolStack {
    pub(super) const fn new() -> ToolStack {
        ToolStack(std::mem::MaybeUninit::uninit())
    }

    /// The top of the stack, 16-byte aligned (stacks grow down).
    pub(super) fn top(&mut self) -> *mut libc::c_void {
        self.0
            .as_mut_ptr()
            .cast::<u8>()
            .wrapping_add(TOOL_STACK)
            .cast()
    }
}

/// What `start_tool` reads, and writes back, in the memory it shares with the supervisor.
#[cfg(target_os = "linux")]
#[repr(C)]
struct ToolStart {
    program: *const libc::c_char,
    argv: *const *const libc::c_char,
    sh_argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    supervisor: pid_t,
    mask: libc::sigset_t,
    /// The `errno` of a failed `execve` (0: it did not fail).
    failed: c_int,
}

/// The tool, started with `clone(CLONE_VM | CLONE_VFORK)`: it runs on its own stack in the
/// supervisor's memory while the supervisor waits, until it execs (or fails to and exits), so
/// no copy of the server's memory is made for it. Only raw system calls.
#[cfg(target_os = "linux")]
extern "C" fn start_tool(arg: *mut libc::c_void) -> c_int {
    // SAFETY: `arg` is the `ToolStart` the supervisor passed and keeps alive while this runs
    // (CLONE_VFORK); only async-signal-safe calls.
    unsafe {
        let start = &mut *arg.cast::<ToolStart>();
        // A process group of its own, gone when the supervisor goes.
        libc::setpgid(0, 0);
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != start.supervisor {
            libc::_exit(126);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &start.mask, std::ptr::null_mut());
        // Descriptors the server inherited without close-on-exec (a client's, a jobserver's)
        // are not the tool's: only 0, 1 and 2 pass.
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC as libc::c_uint,
        );
        libc::execve(start.program, start.argv, start.envp);
        if *libc::__errno_location() == libc::ENOEXEC {
            libc::execve(SH.as_ptr(), start.sh_argv, start.envp);
            *libc::__errno_location() = libc::ENOEXEC;
        }
        start.failed = *libc::__errno_location();
        libc::_exit(127)
    }
}

/// In the child the standard library forked (Linux): starts the tool with `start_tool` and
/// becomes its supervisor (never returns). If the tool's `execve` failed, it returns instead,
/// as the tool would have: the standard library execs the same program, fails the same way and
/// reports why to the server.
#[cfg(target_os = "linux")]
fn split(server: pid_t, exec: &Exec) -> io::Result<()> {
    // SAFETY: only async-signal-safe libc calls, on values owned here or built before the fork.
    unsafe {
        let old = prepare(server)?;
        let me = libc::getpid();
        let mut start = ToolStart {
            program: exec.program.as_ptr(),
            argv: exec.argv.as_ptr(),
            sh_argv: exec.sh_argv.as_ptr(),
            envp: exec.envp.as_ptr(),
            supervisor: me,
            mask: old,
            failed: 0,
        };
        let mut stack = ToolStack::new();
        let tool = libc::clone(
            start_tool,
            stack.top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&raw mut start).cast(),
        );
        if tool < 0 {
            return Err(io::Error::last_os_error());
        }
        if start.failed != 0 {
            let mut st: c_int = 0;
            libc::waitpid(tool, &mut st, 0);
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            return Ok(());
        }
        // Both sides set the group, so it exists whichever runs first.
        libc::setpgid(tool, tool);
        close_from(3);
        supervise(server, tool)
    }
}

/// The supervisor's own set-up (parent-death signal, subreaper, wake signals blocked): the
/// signal mask from before, for the tool.
unsafe fn prepare(server: pid_t) -> io::Result<libc::sigset_t> {
    // SAFETY: async-signal-safe libc calls on values owned here.
    unsafe {
        #[cfg(target_os = "linux")]
        {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGHUP as libc::c_ulong,
                0,
                0,
                0,
            );
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0);
        }
        if libc::getppid() != server {
            // The server died before the parent-death signal was armed.
            libc::_exit(126);
        }
        let mut wake: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut wake);
        for s in WAKE {
            libc::sigaddset(&mut wake, s);
        }
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &wake, &mut old);
        Ok(old)
    }
}

/// In the child the standard library forked: returns (to exec) in the tool; the supervisor never
/// returns.
#[cfg(not(target_os = "linux"))]
fn split(server: pid_t) -> io::Result<()> {
    // SAFETY: only async-signal-safe libc calls, on values owned here.
    unsafe {
        let old = prepare(server)?;
        let me = libc::getpid();
        let tool = libc::fork();
        if tool < 0 {
            return Err(io::Error::last_os_error());
        }
        if tool == 0 {
            // The tool: a process group of its own.
            libc::setpgid(0, 0);
            if libc::getppid() != me {
                libc::_exit(126);
            }
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            return Ok(());
        }
        // Both sides set the group, so it exists whichever runs first.
        libc::setpgid(tool, tool);
        close_from(3);
        supervise(server, tool)
    }
}

extern "C" fn on_stop(_: c_int) {
    STOP.store(true, Ordering::SeqCst);
}

extern "C" fn on_wake(_: c_int) {}

/// Waits for the tool (or a reason to stop), cleans up, exits as the tool did.
unsafe fn supervise(server: pid_t, tool: pid_t) -> ! {
    // SAFETY (whole body): async-signal-safe libc calls only.
    unsafe {
        for s in WAKE {
            let handler = if s == libc::SIGTERM || s == libc::SIGINT {
                on_stop as extern "C" fn(c_int) as libc::sighandler_t
            } else {
                on_wake as extern "C" fn(c_int) as libc::sighandler_t
            };
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = 0;
            libc::sigaction(s, &sa, std::ptr::null_mut());
        }
        #[cfg(not(target_os = "linux"))]
        {
            // No parent-death signal here: look at the parent ten times a second.
            let tick = libc::timeval {
                tv_sec: 0,
                tv_usec: 100_000,
            };
            let timer = libc::itimerval {
                it_interval: tick,
                it_value: tick,
            };
            libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut());
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        let mut status: Option<c_int> = None;
        let mut none_left;
        loop {
            none_left = reap(tool, &mut status);
            if status.is_some() || STOP.load(Ordering::SeqCst) || libc::getppid() != server {
                break;
            }
            // Atomically unblocks the wake signals and sleeps until one arrives.
            libc::sigsuspend(&none);
        }
        if !nothing_left(status, none_left) {
            cleanup(tool, &mut status);
        }
        mirror(status)
    }
}

/// Reaps every child that has ended (the tool's status is kept), without blocking. True when
/// there is no child left at all. Raw calls only (also run by a `clone(CLONE_VM)` supervisor).
pub(super) unsafe fn reap(tool: pid_t, status: &mut Option<c_int>) -> bool {
    loop {
        let mut st: c_int = 0;
        // SAFETY: wait4 with a valid out pointer.
        let r = unsafe { sys::wait4(-1, &mut st, libc::WNOHANG) };
        if r > 0 {
            if r == tool as isize {
                *status = Some(st);
            }
            continue;
        }
        if r == 0 {
            return false;
        }
        if sys::errno(r) == libc::EINTR {
            continue;
        }
        return true;
    }
}

/// Whether the tool has ended and left nothing to clean up: it was reaped (`status`) and the
/// same `reap` found no child at all (`none_left`). The supervisor is a subreaper, and the
/// kernel hands a process's children to it before that process can be reaped, so every process
/// still running below the tool (in its group or escaped from it with `setsid`) is a child of
/// the supervisor or below one: no child means nothing below. Saves `cleanup`'s group `kill`
/// and `/proc` read (six system calls) on every call whose program leaves nothing running.
pub(super) fn nothing_left(status: Option<c_int>, none_left: bool) -> bool {
    status.is_some() && none_left
}

/// Kills the tool's group and every process left below the supervisor, until none is left.
/// Raw calls only (also run by a `clone(CLONE_VM)` supervisor).
pub(super) unsafe fn cleanup(tool: pid_t, status: &mut Option<c_int>) {
    let mut group = true;
    for _ in 0..MAX_PASSES {
        // SAFETY (block): kill / sleep have no memory preconditions.
        unsafe {
            if group && sys::kill(-tool, libc::SIGKILL) != 0 {
                // Empty: a group cannot be joined again, so the id is not asked again (it may
                // be reused from now on).
                group = false;
            }
            if status.is_none() {
                sys::kill(tool, libc::SIGKILL);
            }
            kill_children();
            if reap(tool, status) {
                return;
            }
            sys::pause_1ms();
        }
    }
}

/// Exits the way the tool ended: its exit code, or the signal that killed it.
unsafe fn mirror(status: Option<c_int>) -> ! {
    // SAFETY (whole body): async-signal-safe libc calls only.
    unsafe {
        let sig = match status {
            Some(st) if libc::WIFEXITED(st) => libc::_exit(libc::WEXITSTATUS(st)),
            Some(st) if libc::WIFSIGNALED(st) => libc::WTERMSIG(st),
            _ => libc::SIGKILL,
        };
        // The same death, without a core file of the supervisor.
        let nocore = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &nocore);
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(sig, &sa, std::ptr::null_mut());
        let mut only: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut only);
        libc::sigaddset(&mut only, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
        libc::kill(libc::getpid(), sig);
        libc::_exit(128 + sig)
    }
}

/// Closes every descriptor from `low` up (the standard library's exec-error pipe among them, so
/// the server learns the tool's exec result from the tool alone).
unsafe fn close_from(low: c_int) {
    // SAFETY (whole body): closing descriptors this process owns.
    unsafe {
        #[cfg(target_os = "linux")]
        if libc::syscall(
            libc::SYS_close_range,
            low as libc::c_uint,
            libc::c_uint::MAX,
            0,
        ) == 0
        {
            return;
        }
        let mut lim: libc::rlimit = std::mem::zeroed();
        let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur.min(65_536) as c_int
        } else {
            1024
        };
        for fd in low..max {
            libc::close(fd);
        }
    }
}

/// Sends SIGKILL to every child of the supervisor (Linux: its descendants come back to it as
/// their parents die, so repeated passes reach them all).
#[cfg(target_os = "linux")]
unsafe fn kill_children() {
    // SAFETY: plain syscalls on stack buffers.
    unsafe {
        let me = sys::getpid();
        let mut path = [0u8; 64];
        let mut n = put(&mut path, 0, b"/proc/self/task/");
        n = put_num(&mut path, n, me as u64);
        put(&mut path, n, b"/children\0");
        let fd = sys::open_read(path.as_ptr().cast(), 0);
        if fd >= 0 {
            let fd = fd as c_int;
            for_each_number(fd, |pid| {
                if pid > 1 {
                    sys::kill(pid as pid_t, libc::SIGKILL);
                }
            });
            sys::close(fd);
            return;
        }
        // A kernel without CONFIG_PROC_CHILDREN: every process's parent, from /proc/N/stat.
        scan_proc(me);
    }
}

#[cfg(not(target_os = "linux"))]
unsafe fn kill_children() {}

/// Kills every process whose parent is `me`, reading `/proc/N/stat` for each N.
#[cfg(target_os = "linux")]
unsafe fn scan_proc(me: pid_t) {
    // SAFETY: plain syscalls on stack buffers; getdents64 fills `buf` with records it sizes.
    unsafe {
        let dir = sys::open_read(c"/proc".as_ptr(), libc::O_DIRECTORY);
        if dir < 0 {
            return;
        }
        let dir = dir as c_int;
        let mut buf = [0u8; 4096];
        loop {
            let got = sys::getdents64(dir, buf.as_mut_ptr(), buf.len());
            if got <= 0 {
                break;
            }
            let mut at = 0usize;
            while at + 19 < got as usize {
                // struct linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, name.
                let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
                if reclen == 0 {
                    break;
                }
                let name = buf
                    .get(at + 19..(at + reclen).min(got as usize))
                    .unwrap_or(&[]);
                if let Some(pid) = number(name)
                    && pid as pid_t != me
                    && parent_of(pid) == Some(me)
                {
                    sys::kill(pid as pid_t, libc::SIGKILL);
                }
                at += reclen;
            }
        }
        sys::close(dir);
    }
}

/// The parent of `pid` from `/proc/PID/stat` ("pid (comm) state ppid …"; comm may hold spaces
/// and parentheses, so the last `)` ends it).
#[cfg(target_os = "linux")]
unsafe fn parent_of(pid: u64) -> Option<pid_t> {
    let mut path = [0u8; 48];
    let mut n = put(&mut path, 0, b"/proc/");
    n = put_num(&mut path, n, pid);
    put(&mut path, n, b"/stat\0");
    // SAFETY: plain syscalls on stack buffers.
    unsafe {
        let fd = sys::open_read(path.as_ptr().cast(), 0);
        if fd < 0 {
            return None;
        }
        let fd = fd as c_int;
        let mut buf = [0u8; 512];
        let got = sys::read(fd, buf.as_mut_ptr(), buf.len());
        sys::close(fd);
        if got <= 0 {
            return None;
        }
        let text = buf.get(..got as usize)?;
        let close = text.iter().rposition(|&b| b == b')')?;
        // ") S PPID "
        let rest = text.get(close + 4..)?;
        let end = rest.iter().position(|&b| b == b' ')?;
        number(&rest[..end]).map(|p| p as pid_t)
    }
}

/// Calls `f` with every decimal number in the file `fd` (separated by anything else).
#[cfg(target_os = "linux")]
unsafe fn for_each_number(fd: c_int, mut f: impl FnMut(u64)) {
    let mut buf = [0u8; 1024];
    let mut current: Option<u64> = None;
    loop {
        // SAFETY: reading into a stack buffer of the given length.
        let got = unsafe { sys::read(fd, buf.as_mut_ptr(), buf.len()) };
        if got <= 0 {
            break;
        }
        for &b in buf.get(..got as usize).unwrap_or(&[]) {
            if b.is_ascii_digit() {
                current = Some(
                    current
                        .unwrap_or(0)
                        .saturating_mul(10)
                        .saturating_add(u64::from(b - b'0')),
                );
            } else if let Some(n) = current.take() {
                f(n);
            }
        }
    }
    if let Some(n) = current {
        f(n);
    }
}

/// A NUL-terminated or plain run of decimal digits.
#[cfg(target_os = "linux")]
fn number(bytes: &[u8]) -> Option<u64> {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let digits = &bytes[..end];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, &b| {
        acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

#[cfg(target_os = "linux")]
fn put(buf: &mut [u8], at: usize, bytes: &[u8]) -> usize {
    let end = (at + bytes.len()).min(buf.len());
    buf[at..end].copy_from_slice(&bytes[..end - at]);
    end
}

#[cfg(target_os = "linux")]
fn put_num(buf: &mut [u8], at: usize, mut n: u64) -> usize {
    let mut digits = [0u8; 20];
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    digits[..len].reverse();
    put(buf, at, &digits[..len])
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_paths() {
        assert_eq!(number(b"123\0\0"), Some(123));
        assert_eq!(number(b"self"), None);
        assert_eq!(number(b""), None);
        let mut buf = [0u8; 32];
        let n = put(&mut buf, 0, b"/proc/");
        let n = put_num(&mut buf, n, 4096);
        assert_eq!(&buf[..n], b"/proc/4096");
        let n = put_num(&mut buf, 0, 0);
        assert_eq!(&buf[..n], b"0");
    }

    #[test]
    fn parent_from_stat() {
        // SAFETY: reads /proc.
        let parent = unsafe { parent_of(std::process::id() as u64) };
        // SAFETY: no preconditions.
        assert_eq!(parent, Some(unsafe { libc::getppid() }));
    }
}
