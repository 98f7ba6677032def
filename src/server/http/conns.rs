//! The HTTP connections: accepted while fewer than `max_connections` are open (beyond, new
//! ones wait in the kernel's backlog until one closes), each served by hyper's HTTP/1 with what
//! it may hold bounded:
//! - a connection on which no request begins, or whose request head does not arrive, within
//!   `idle_timeout` is closed (hyper's head timer, which runs from the moment the connection is
//!   idle);
//! - a client that takes none of an answer's bytes for `idle_timeout` is disconnected
//!   ([`Watched`]): what the answer held comes back (`answers.rs`);
//! - hyper reads at most [`READ_AHEAD`] bytes ahead on a connection (and a request head larger
//!   than that is refused, 431).
//!
//! The request body's own bounds (size, all bodies at once, how long it may take) are the
//! front's (`read_body`).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Sleep;
use tokio_util::sync::CancellationToken;

use crate::server::shared::{Throttled, lock};

/// Bytes hyper reads ahead on one connection, at most: also the largest request head.
pub(super) const READ_AHEAD: usize = 64 * 1024;
/// Descriptors kept for what is not a connection (files being read, databases, the pipes of
/// tool processes, the watcher) when the descriptor limit bounds the connections.
const RESERVED_FDS: u64 = 256;

/// How many connections may be open at once: `configured`, or fewer when the descriptor
/// limit would not leave `RESERVED_FDS` for the rest of the server (said once, at start).
pub(super) fn connection_cap(configured: usize) -> usize {
    let limit = descriptor_limit();
    let cap = cap_within(configured, limit);
    if let (true, Some(limit)) = (cap < configured, limit) {
        tracing::warn!(
            "at most {cap} connections at once, not {configured} (`max_connections`): the descriptor limit is {limit} (`ulimit -n`) and {RESERVED_FDS} are kept for files, databases and tools"
        );
    }
    cap
}

/// `configured`, or what a descriptor limit of `limit` leaves once `RESERVED_FDS` are kept
/// (at least 16).
fn cap_within(configured: usize, limit: Option<u64>) -> usize {
    match limit {
        Some(limit) => {
            let room = limit.saturating_sub(RESERVED_FDS).max(16);
            usize::try_from(room).map_or(configured, |room| configured.min(room))
        }
        None => configured,
    }
}

#[cfg(unix)]
fn descriptor_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct it is given.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
    (ok && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
}

#[cfg(not(unix))]
fn descriptor_limit() -> Option<u64> {
    None
}

/// Serves `app` on the connections `listener` accepts, at most `cap` at once, until `stop`;
/// then accepts no more (the listener closes), lets each connection finish the request it
/// serves, and returns when all are closed.
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    cap: usize,
    idle: Duration,
    stop: CancellationToken,
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(cap));
    let mut full = Throttled::default();
    let mut failed = Throttled::default();
    let stalls = Arc::new(Mutex::new(Throttled::default()));
    let graceful = GracefulShutdown::new();
    let mut h1 = hyper::server::conn::http1::Builder::new();
    h1.timer(TokioTimer::new())
        .header_read_timeout(idle)
        .max_buf_size(READ_AHEAD)
        .max_header_size(READ_AHEAD);
    loop {
        if slots.available_permits() == 0 && full.count().is_some() {
            tracing::warn!(
                "{cap} connections open, the most served at once (`max_connections` in [server.http]): new connections wait until one closes"
            );
        }
        let slot = tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
        };
        let stream = tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_failed(e, &mut failed).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let io = TokioIo::new(Watched::new(stream, idle, stalls.clone()));
        let conn = graceful.watch(h1.serve_connection(io, TowerToHyperService::new(app.clone())));
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!("connection closed: {e}");
            }
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// After a failed `accept`: a connection that went away is nothing; anything else (no
/// descriptor left: EMFILE, ENFILE) waits a little so the loop does not spin, and is said at
/// most once a minute.
async fn accept_failed(e: io::Error, said: &mut Throttled) {
    if matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
    ) {
        return;
    }
    if let Some(n) = said.count() {
        tracing::warn!(
            "cannot accept connections: {e} ({n} failures since this was last said; said at most once a minute)"
        );
    }
    tokio::time::sleep(Duration::from_millis(250)).await;
}

/// A connection whose writes fail once the client has taken none of its bytes for `stall`
/// (hyper then drops the connection, and with it the answer it was sending).
pub(super) struct Watched {
    io: TcpStream,
    stall: Duration,
    /// Runs while a write waits for the client; made on the first wait.
    timer: Option<Pin<Box<Sleep>>>,
    armed: bool,
    /// Connections closed so, for the warning (at most once a minute).
    stalls: Arc<Mutex<Throttled>>,
}

impl Watched {
    pub(super) fn new(io: TcpStream, stall: Duration, stalls: Arc<Mutex<Throttled>>) -> Watched {
        Watched {
            io,
            stall,
            timer: None,
            armed: false,
            stalls,
        }
    }

    /// A write is waiting: starts the timer (or polls it); the error once it ran out.
    fn waiting(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let deadline = tokio::time::Instant::now() + self.stall;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if !self.armed {
            timer.as_mut().reset(deadline);
            self.armed = true;
        }
        ready!(timer.as_mut().poll(cx));
        if let Some(n) = lock(&self.stalls).count() {
            tracing::warn!(
                "{n} connections closed: their clients took none of an answer for {}s (`idle_timeout` in [server.http])",
                self.stall.as_secs_f64()
            );
        }
        Poll::Ready(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the client took none of the answer for {}s",
                self.stall.as_secs_f64()
            ),
        ))
    }

    fn wrote<T>(&mut self, r: Poll<io::Result<T>>, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        match r {
            Poll::Pending => self.waiting(cx).map(Err),
            done => {
                self.armed = false;
                done
            }
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write(cx, buf);
        this.wrote(r, cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.wrote(r, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_flush(cx);
        this.wrote(r, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_descriptor_limit_lowers_the_connection_cap() {
        assert_eq!(cap_within(1024, None), 1024);
        assert_eq!(cap_within(1024, Some(1_048_576)), 1024);
        assert_eq!(cap_within(1024, Some(1024)), 768, "256 kept for the rest");
        assert_eq!(cap_within(1024, Some(100)), 16, "never below 16");
        assert_eq!(cap_within(8, Some(100)), 8);
    }
}
