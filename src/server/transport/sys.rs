//! The transport's one platform seam. Everything else in the transport is portable: stdin and
//! stdout are plain `Read` / `Write` on threads of their own, so on every platform a client
//! that does not read blocks only the writer thread, memory is bounded by the queues' caps, and
//! the end of the input ends the session.
//!
//! What differs is only the reader's short watch of its input after it answered (`Watch`,
//! used by `reader::Spin`): `poll(2)` with a zero timeout on Unix (Linux, macOS); on Windows no
//! watch (the reader goes straight back to `ReadFile`), as a watch buys only microseconds.

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
