//! What the HTTP server asks of the operating system beyond the standard library and tokio, one
//! function per question, each platform's answer here (callers never look at the platform):
//!
//! - [`descriptor_limit`]: how many descriptors the process may open (`getrlimit` on Unix; none
//!   on Windows, whose sockets are handles without such a limit);
//! - [`unsent`]: the bytes of a socket the peer has not acknowledged yet (`SIOCOUTQ` on Linux,
//!   `SO_NWRITE` on macOS; unknown on Windows, where a stalled client is then judged by writes
//!   alone);
//! - [`set_send_buffer`]: a socket's send buffer size (tests make it large to see `unsent`);
//! - [`stop_asked`]: how a service manager or a terminal stops the server: SIGTERM or SIGINT on
//!   Unix; on Windows the console's Ctrl+C, Ctrl+Break, close and shutdown events (a service
//!   killed with `TerminateProcess` gets no event: its tools go with their Job Objects).

use tokio::net::TcpStream;

/// The soft limit on open descriptors, when there is one.
#[cfg(unix)]
pub(super) fn descriptor_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct it is given.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
    #[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux, not on every Unix
    (ok && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur as u64)
}

#[cfg(not(unix))]
pub(super) fn descriptor_limit() -> Option<u64> {
    None
}

/// Bytes the kernel holds for `io` that the client has not acknowledged.
#[cfg(target_os = "linux")]
pub(super) fn unsent(io: &TcpStream) -> Option<u32> {
    use std::os::fd::AsRawFd;
    let mut n: libc::c_int = 0;
    // SAFETY: SIOCOUTQ (= TIOCOUTQ) writes one int for a socket we own.
    let ok = unsafe { libc::ioctl(io.as_raw_fd(), libc::TIOCOUTQ, &mut n) } == 0;
    (ok && n >= 0).then(|| n.unsigned_abs())
}

/// Bytes the kernel holds for `io` that the client has not acknowledged.
#[cfg(target_vendor = "apple")]
pub(super) fn unsent(io: &TcpStream) -> Option<u32> {
    use std::os::fd::AsRawFd;
    let mut n: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: SO_NWRITE writes one int for a socket we own; `len` says how much room it has.
    let ok = unsafe {
        libc::getsockopt(
            io.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_NWRITE,
            (&mut n as *mut libc::c_int).cast(),
            &mut len,
        )
    } == 0;
    (ok && n >= 0).then(|| n.unsigned_abs())
}

#[cfg(not(any(target_os = "linux", target_vendor = "apple")))]
pub(super) fn unsent(_io: &TcpStream) -> Option<u32> {
    None
}

/// Sets the send buffer of `io` to `bytes` (the kernel may round it).
#[cfg(all(test, unix))]
pub(super) fn set_send_buffer(io: &TcpStream, bytes: usize) {
    use std::os::fd::AsRawFd;
    let bytes = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: setsockopt with an int for a socket the caller owns.
    let r = unsafe {
        libc::setsockopt(
            io.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0, "setsockopt: {}", std::io::Error::last_os_error());
}

#[cfg(all(test, not(unix)))]
pub(super) fn set_send_buffer(_io: &TcpStream, _bytes: usize) {}

/// Completes when the server is asked to stop (see the module docs).
pub(super) async fn stop_asked() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    }
    #[cfg(windows)]
    {
        use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close, ctrl_shutdown};
        let (Ok(mut c), Ok(mut b), Ok(mut close), Ok(mut shutdown)) =
            (ctrl_c(), ctrl_break(), ctrl_close(), ctrl_shutdown())
        else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = c.recv() => {}
            _ = b.recv() => {}
            _ = close.recv() => {}
            _ = shutdown.recv() => {}
        }
    }
}
