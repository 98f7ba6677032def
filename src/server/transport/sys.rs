//! The transport's one platform seam. Everything else in the transport is portable: stdin and
//! stdout are plain `Read` / `Write` on threads of their own, so on every platform a client
//! that does not read blocks only the writer thread, memory is bounded by the queues' caps, and
//! the end of the input ends the session.
//!
//! What differs:
//! - the reader's short watch of its input after it answered (`Watch`, used by
//!   `reader::Spin`): `poll(2)` with a zero timeout on Unix (Linux, macOS); on Windows no watch
//!   (the reader goes straight back to `ReadFile`), as a watch buys only microseconds;
//! - how a stdio server is told to stop besides the end of its input (`terminated`): SIGTERM
//!   on Unix; on Windows the console's Ctrl+C, Ctrl+Break and close events (a server killed
//!   with `TerminateProcess` gets no event: its tools' processes go with their Job Object).

/// The input, watched without blocking: whether a line (or the end) is waiting.
pub struct Watch {
    #[cfg(unix)]
    fd: std::os::fd::OwnedFd,
}

impl Watch {
    /// A watch of this process's stdin, if the platform has one.
    pub fn stdin() -> Option<Watch> {
        #[cfg(unix)]
        {
            use std::os::fd::AsFd as _;
            Watch::of(std::io::stdin().as_fd())
        }
        #[cfg(not(unix))]
        {
            None
        }
    }

    /// A watch of the read end of a pipe (tests), if the platform has one.
    #[cfg(test)]
    pub fn pipe(read: &std::io::PipeReader) -> Option<Watch> {
        #[cfg(unix)]
        {
            use std::os::fd::AsFd as _;
            Watch::of(read.as_fd())
        }
        #[cfg(not(unix))]
        {
            let _ = read;
            None
        }
    }

    /// A copy of `fd` (the same open pipe or file): the reader keeps its own.
    #[cfg(unix)]
    fn of(fd: std::os::fd::BorrowedFd<'_>) -> Option<Watch> {
        rustix::io::fcntl_dupfd_cloexec(fd, 0)
            .ok()
            .map(|fd| Watch { fd })
    }

    /// Whether reading would not wait now: data, the end, or an error (that `read` reports).
    pub fn readable(&self) -> bool {
        #[cfg(unix)]
        {
            use rustix::event::{PollFd, PollFlags, Timespec, poll};
            let zero = Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
            !matches!(poll(&mut fds, Some(&zero)), Ok(0))
        }
        #[cfg(not(unix))]
        {
            true
        }
    }
}

/// Completes when the process is asked to stop (see the module docs); never where it cannot be.
pub async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    }
    #[cfg(windows)]
    {
        use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close};
        let (Ok(mut c), Ok(mut b), Ok(mut close)) = (ctrl_c(), ctrl_break(), ctrl_close()) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = c.recv() => {}
            _ = b.recv() => {}
            _ = close.recv() => {}
        }
    }
    #[cfg(not(any(unix, windows)))]
    {
        std::future::pending().await
    }
}
