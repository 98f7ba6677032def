//! The per-call supervisor (Unix): `mcp-manifest __supervise PROGRAM ARG0 ARGS…`, a fresh process
//! of our own binary that the server starts (with the tool's working directory, environment and
//! output pipes) instead of the tool, and that starts the tool itself. It exists so that nothing
//! a tool starts outlives its call or the server, even when the server is killed with `kill -9`.
//!
//! Its standard input is one end of a socket pair whose other end only the server holds. The
//! server shuts its end down to stop the call (timeout, cancellation, output cap, shutdown),
//! and the kernel closes it when the server dies however it dies: either way a read here ends,
//! and the supervisor kills the tool's process group and everything below it. It writes back on
//! the same socket, one line each: `pid N` once the tool runs (or `error ERRNO` when it could not
//! start), then `exit CODE` or `signal N`, the tool's own ending, once nothing it started is left.
//!
//! On Linux the supervisor is a child subreaper: a process below the tool whose parent dies
//! (one that left the group with `setsid`, a double fork) becomes its child, so the cleanup —
//! kill the tool's group, then every child of the supervisor, again until none is left — reaches
//! them all. Elsewhere it kills the tool's process group only.
//!
//! Nothing here runs between a `fork` and an `exec`: the supervisor is a process of its own,
//! started and starting the tool with the standard library's `Command`.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use rustix::process::{Pid, Signal, WaitOptions, kill_process, kill_process_group, wait};

/// The first argument that makes `mcp-manifest` a supervisor.
pub const SUPERVISE: &str = "__supervise";

/// Cleanup passes before the supervisor gives up (a fork bomb faster than SIGKILL).
const MAX_PASSES: u32 = 10_000;

/// The shell that runs a file the kernel cannot execute (as `execvp` does).
const SH: &str = "/bin/sh";

/// Runs a supervisor: `args` are what follows `__supervise`.
pub fn main(args: Vec<OsString>) -> ExitCode {
    let Ok(control) = std::io::stdin().as_fd().try_clone_to_owned() else {
        return ExitCode::from(125);
    };
    let mut control = UnixStream::from(control);
    let mut args = args.into_iter();
    let (Some(program), Some(arg0)) = (args.next(), args.next()) else {
        return ExitCode::from(125);
    };
    let rest: Vec<OsString> = args.collect();
    #[cfg(target_os = "linux")]
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    close_inherited();

    let start = |program: &OsString, arg0: &OsString, rest: &[OsString]| {
        #[expect(
            clippy::disallowed_methods,
            reason = "the supervisor starts the program"
        )]
        Command::new(program)
            .arg0(arg0)
            .args(rest)
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
    };
    let child = match start(&program, &arg0, &rest) {
        // A file the kernel cannot execute (a script without `#!`) runs in the shell, with the
        // arguments, as `execvp` runs it.
        Err(e) if e.raw_os_error() == Some(libc::ENOEXEC) => {
            let with_program: Vec<OsString> = std::iter::once(program.clone())
                .chain(rest.iter().cloned())
                .collect();
            start(&SH.into(), &"sh".into(), &with_program)
        }
        r => r,
    };
    let child = match child {
        Ok(c) => c,
        Err(e) => {
            report(
                &mut control,
                &format!("error {}", e.raw_os_error().unwrap_or(0)),
            );
            return ExitCode::SUCCESS;
        }
    };
    let tool = Pid::from_child(&child);
    drop(child);
    if !report(&mut control, &format!("pid {}", tool.as_raw_nonzero())) {
        // The server is gone already.
        kill_tree(tool);
    }

    // The server's end shut down (stop) or closed (the server died): kill the tool's tree now;
    // the main thread then reaps it and cleans up.
    if let Ok(mut reader) = control.try_clone() {
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
            // An orphan below the tool, reparented here: reaped.
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => break None,
        }
    };
    cleanup(tool);
    let line = match status {
        Some(s) => match (s.exit_status(), s.terminating_signal()) {
            (Some(code), _) => format!("exit {code}"),
            (None, Some(sig)) => format!("signal {sig}"),
            (None, None) => format!("signal {}", libc::SIGKILL),
        },
        None => format!("signal {}", libc::SIGKILL),
    };
    report(&mut control, &line);
    ExitCode::SUCCESS
}

/// Writes one report line in one write (the server reads whole lines); false when the server is
/// gone.
fn report(control: &mut UnixStream, line: &str) -> bool {
    control.write_all(format!("{line}\n").as_bytes()).is_ok()
}

/// SIGKILL to the tool's process group and to the tool.
fn kill_tree(tool: Pid) {
    let _ = kill_process_group(tool, Signal::KILL);
    let _ = kill_process(tool, Signal::KILL);
}

/// Kills the tool's group and every process left below the supervisor, until none is left.
/// Nothing left (the usual case: the tool reaped, no child at all) costs one group `kill` and
/// one `wait`.
fn cleanup(tool: Pid) {
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
                Err(_) => return,
            }
        }
        for pid in children() {
            let _ = kill_process(pid, Signal::KILL);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The supervisor's children (every thread's: an orphan is handed to any of them).
#[cfg(target_os = "linux")]
fn children() -> Vec<Pid> {
    super::os::own_children()
}

/// Elsewhere no orphan comes back to the supervisor: its only child is the tool.
#[cfg(not(target_os = "linux"))]
fn children() -> Vec<Pid> {
    Vec::new()
}

/// Descriptors the server inherited without close-on-exec (a client's, a jobserver's) are not
/// the tool's: every descriptor from 3 up gets close-on-exec, so the tool starts with 0, 1 and 2.
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
