//! Process trees on Windows: every program starts suspended, is put in a Job Object of its own
//! (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`), then resumed, so everything it starts is in the job
//! from its first instruction on and cannot leave it (breakaway is not allowed). Stopping a
//! tree terminates the job; the job's only handle is the server's, so when the server exits or
//! is killed the system closes it and kills the whole tree. No supervisor process is needed.
//!
//! Arguments go through the standard library's quoting for `CreateProcess` (each value one
//! argument as the C runtime splits the line); `cmd` scripts pass their line as it is
//! (`raw_args`). Batch files are refused as `command` programs: `cmd.exe` would parse their
//! arguments again, where a value's `&` runs a command (the "BatBadBut" class); `run` with
//! `shell = "cmd"` runs such scripts with values in the environment.

use std::ffi::{OsString, c_void};
use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::sync::Arc;

use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation,
    SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::Threading::{
    CREATE_NO_WINDOW, CREATE_SUSPENDED, OpenThread, ResumeThread, THREAD_SUSPEND_RESUME,
};

use super::{Exit, Output, ProcessSpec, SpawnError, spawn_error};

/// Never given on Windows (no supervisor is started); `main` checks for it on every platform.
pub const SUPERVISE: &str = "__supervise";

/// There is no supervisor on Windows.
pub fn supervise(_args: Vec<OsString>) -> ExitCode {
    ExitCode::FAILURE
}

/// Nothing to adopt: a job holds every process of a tree.
pub fn adopt_orphans() {}

/// No supervisor binary is needed.
pub fn use_supervisor(_path: &Path) {}

/// The exit code of every process of a job the server terminated.
const TERMINATED: u32 = 0xC000_013A;

/// A Job Object that kills its processes when terminated or when its last handle closes.
#[derive(Debug)]
struct Job(OwnedHandle);

impl Job {
    fn new() -> io::Result<Job> {
        // SAFETY: CreateJobObjectW with no attributes and no name returns a new handle (owned
        // here from now on) or null; the limit structure is a plain C struct, zeroed, with its
        // size given.
        unsafe {
            let handle = CreateJobObjectW(std::ptr::null(), std::ptr::null());
            if handle.is_null() {
                return Err(io::Error::last_os_error());
            }
            let job = Job(OwnedHandle::from_raw_handle(handle));
            let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = std::mem::zeroed();
            info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
            let ok = SetInformationJobObject(
                job.raw(),
                JobObjectExtendedLimitInformation,
                (&raw const info).cast::<c_void>(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            );
            if ok == 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(job)
        }
    }

    fn raw(&self) -> HANDLE {
        self.0.as_raw_handle()
    }

    /// Puts a (suspended) process in the job.
    fn assign(&self, process: HANDLE) -> io::Result<()> {
        // SAFETY: both handles are open (the job owned here, the process by its `Child`).
        if unsafe { AssignProcessToJobObject(self.raw(), process) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Kills every process in the job.
    fn terminate(&self) {
        // SAFETY: the job handle is open; terminating an empty job does nothing.
        unsafe {
            TerminateJobObject(self.raw(), TERMINATED);
        }
    }
}

/// Resumes the threads of process `pid` (started suspended: its one main thread).
fn resume(pid: u32) -> io::Result<()> {
    // SAFETY: the snapshot and thread handles are owned by `OwnedHandle`s as soon as they are
    // valid; THREADENTRY32 is a plain C struct with its size set as the API requires.
    unsafe {
        let snapshot = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
        if snapshot.is_null() || snapshot as isize == -1 {
            return Err(io::Error::last_os_error());
        }
        let snapshot = OwnedHandle::from_raw_handle(snapshot);
        let mut entry: THREADENTRY32 = std::mem::zeroed();
        entry.dwSize = std::mem::size_of::<THREADENTRY32>() as u32;
        let mut more = Thread32First(snapshot.as_raw_handle(), &mut entry) != 0;
        let mut resumed = false;
        while more {
            if entry.th32OwnerProcessID == pid {
                let thread = OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID);
                if !thread.is_null() {
                    let thread = OwnedHandle::from_raw_handle(thread);
                    resumed |= ResumeThread(thread.as_raw_handle()) != u32::MAX;
                }
            }
            more = Thread32Next(snapshot.as_raw_handle(), &mut entry) != 0;
        }
        if resumed {
            Ok(())
        } else {
            Err(io::Error::other("its main thread could not be resumed"))
        }
    }
}

/// A running program and its job.
pub(super) struct Tree {
    child: tokio::process::Child,
    job: Arc<Job>,
}

/// How a tree is asked to stop: its job, terminated.
#[derive(Debug, Clone)]
pub(super) struct Stopper(Arc<Job>);

impl Stopper {
    pub(super) fn stop(&self) {
        self.0.terminate();
    }
}

impl Tree {
    pub(super) async fn start(
        spec: &ProcessSpec,
        program: &Path,
        path: &std::ffi::OsStr,
    ) -> Result<(Tree, Output, Output), SpawnError> {
        let other = |e: io::Error| SpawnError::Other(spec.program.clone(), e.to_string());
        let job = Arc::new(Job::new().map_err(other)?);
        #[expect(clippy::disallowed_methods, reason = "this is the one spawner")]
        let mut cmd = tokio::process::Command::new(program);
        if spec.raw_args {
            for a in &spec.args {
                cmd.raw_arg(a);
            }
        } else {
            cmd.args(&spec.args);
        }
        cmd.current_dir(&spec.cwd)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .env("PATH", path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .creation_flags(CREATE_SUSPENDED | CREATE_NO_WINDOW)
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| spawn_error(spec, &e))?;
        let placed = match child.raw_handle() {
            Some(handle) => job.assign(handle),
            None => Err(io::Error::other("it has no process handle")),
        }
        .and_then(|()| resume(child.id().unwrap_or(0)));
        if let Err(e) = placed {
            let _ = child.start_kill();
            let _ = child.wait().await;
            return Err(other(e));
        }
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            job.terminate();
            return Err(other(io::Error::other("its output pipes are missing")));
        };
        Ok((Tree { child, job }, Box::pin(stdout), Box::pin(stderr)))
    }

    pub(super) fn stopper(&self) -> Stopper {
        Stopper(self.job.clone())
    }

    /// Waits for the program; then whatever it left running in its job is killed.
    pub(super) async fn wait(&mut self) -> io::Result<Exit> {
        let status = self.child.wait().await?;
        self.job.terminate();
        Ok(Exit::Code(status.code().unwrap_or(TERMINATED as i32)))
    }

    pub(super) fn kill_hard(&mut self) {
        self.job.terminate();
        let _ = self.child.start_kill();
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        // A call dropped half-way: the job goes (its handle closes with the last `Arc`), and
        // the job's processes with it.
        self.job.terminate();
    }
}

/// No signals on Windows.
pub(super) fn signal_name(_sig: i32) -> Option<&'static str> {
    None
}

/// What the system's own exit codes mean (NTSTATUS values a crashed program ends with).
pub(super) fn exit_name(code: i32) -> Option<&'static str> {
    Some(match code as u32 {
        0xC000_0005 => "access violation",
        0xC000_00FD => "stack overflow",
        0xC000_0409 => "stack buffer overrun",
        0xC000_0135 => "a DLL was not found",
        0xC000_0142 => "a DLL failed to initialize",
        0xC000_001D => "illegal instruction",
        0xC000_0094 => "integer division by zero",
        0xC000_013A => "terminated (Ctrl+C or killed)",
        _ => return None,
    })
}

/// No signals: nothing is killed "by a signal".
pub(super) const KILLED: i32 = i32::MIN;
/// What a program of a terminated job exits with.
pub(super) const KILLED_CODE: i32 = TERMINATED as i32;

/// Any file can be run (what runs it is its extension).
pub(super) fn runnable(meta: &std::fs::Metadata) -> bool {
    meta.is_file()
}

/// The names `program` is looked for under in each `PATH` folder: as it is when it has an
/// extension, else with each `PATHEXT` extension (`.COM;.EXE;.BAT;.CMD` when unset).
pub(super) fn candidates(program: &str) -> Vec<String> {
    if Path::new(program).extension().is_some() {
        return vec![program.to_owned()];
    }
    let pathext = std::env::var("PATHEXT").unwrap_or_else(|_| ".COM;.EXE;.BAT;.CMD".into());
    pathext
        .split(';')
        .filter(|e| e.starts_with('.') && e.len() > 1)
        .map(|e| format!("{program}{}", e.to_ascii_lowercase()))
        .collect()
}

/// Whether `program` names a path rather than a name to look up in `PATH`.
pub(super) fn is_path(program: &str) -> bool {
    program.contains(['/', '\\', ':'])
}

/// A program `command` may not run, and why: batch files, also named as Windows still opens
/// them: `x.bat.` and `x.bat ` (trailing dots and spaces are dropped) and `x.bat::$DATA` (the
/// file's main stream).
pub(super) fn refused(program: &Path) -> Option<String> {
    let name = program.file_name()?.to_string_lossy();
    let opened = name.split(':').next().unwrap_or_default();
    let opened = opened.trim_end_matches(['.', ' ']).to_ascii_lowercase();
    (opened.ends_with(".bat") || opened.ends_with(".cmd")).then(|| {
        format!(
            "`{}` is a batch file, which cmd.exe runs by parsing its arguments again (a value's `&` or `%` would run commands); use `run` with `shell = \"cmd\"`, where values arrive as environment variables",
            program.display()
        )
    })
}

/// `PATH` when there is none at all.
pub(super) const DEFAULT_PATH: &str = "";
pub(super) const PATH_SEPARATOR: &str = ";";

/// A `run` script must name its shell on Windows.
pub(super) const DEFAULT_SHELL: Option<super::Shell> = None;

/// What begins an option where a value would begin an argument: `-`, and `/` (`dir /s`).
pub(crate) const OPTION_PREFIXES: &[char] = &['-', '/'];

/// No limit on one argument but the command line's.
pub(crate) const MAX_ARG_LEN: Option<usize> = None;

/// `CreateProcess` takes a command line of at most 32 767 UTF-16 units; the environment is
/// passed apart and does not count (`ENV_IN_ARG_MAX`).
pub(crate) fn arg_max() -> usize {
    32_767 - 1024
}

/// Whether the environment counts against `arg_max`.
pub(crate) const ENV_IN_ARG_MAX: bool = false;
