//! The HTTP connections: accepted while fewer than `max_connections` are open (beyond, new
//! ones wait in the kernel's backlog until one closes), each served by hyper's HTTP/1 with what
//! it may hold bounded:
//! - a connection on which no request begins, or whose request head does not arrive, within
//!   `idle_timeout` is closed (hyper's head timer, which runs from the moment the connection is
//!   idle);
//! - a client that takes none of an answer's bytes for `idle_timeout` (or for a second while
//!   other answers wait for room) is disconnected ([`Watched`]): what the answer held comes
//!   back (`answers.rs`);
//! - hyper reads at most [`READ_AHEAD`] bytes ahead on a connection (and a request head larger
//!   than that is refused, 431).
//!
//! One client address may have `max_connections_per_client` open; beyond, its new connections
//! are answered 503 and closed. At a stop, connections still waiting to be accepted (and those
//! that come while open ones finish) are answered 503 too, never reset.
//!
//! The request body's own bounds (size, all bodies at once, how long it may take) are
//! `bodies.rs`'s.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
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
use tokio::sync::futures::OwnedNotified;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

use super::answers::{Budget, SQUEEZED};
use super::sys;
use crate::server::shared::{Throttled, lock};

/// The address of the client a request came from (a request extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Peer(pub IpAddr);

/// The client address of a request (from its extensions).
pub(super) fn peer_of(ext: &axum::http::Extensions) -> Option<IpAddr> {
    ext.get::<Peer>().map(|p| p.0)
}

/// Bytes hyper reads ahead on one connection, at most: also the largest request head.
pub(super) const READ_AHEAD: usize = 64 * 1024;
/// Descriptors kept for what is not a connection (files being read, databases, the pipes of
/// tool processes, the watcher) when the descriptor limit bounds the connections.
const RESERVED_FDS: u64 = 256;

/// How many connections may be open at once: `configured`, or fewer when the descriptor
/// limit would not leave `RESERVED_FDS` for the rest of the server (said once, at start).
pub(super) fn connection_cap(configured: usize) -> usize {
    let limit = sys::descriptor_limit();
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

/// What the connections may take: at most `cap` at once, `per_client` of them from one client
/// address.
pub(super) struct Limits {
    pub cap: usize,
    pub per_client: usize,
    /// `idle_timeout`.
    pub idle: Duration,
}

/// Serves `app` on the connections `listener` accepts (see the module doc) until `stop`; then
/// answers every connection still waiting to be accepted, and those that come meanwhile, with
/// 503 (never a reset), lets each open connection finish the request it serves, and returns
/// when all are closed.
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    answers: Arc<Budget>,
    stop: CancellationToken,
) {
    let Limits {
        cap,
        per_client,
        idle,
    } = limits;
    let slots = Arc::new(tokio::sync::Semaphore::new(cap));
    let clients: Arc<Mutex<HashMap<IpAddr, usize>>> = Arc::new(Mutex::new(HashMap::new()));
    let mut full = Throttled::default();
    let mut crowded = Throttled::default();
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
        let (stream, peer) = tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    accept_failed(e, &mut failed).await;
                    continue;
                }
            },
        };
        let ip = peer.ip();
        let Some(counted) = Counted::new(&clients, ip, per_client) else {
            if let Some(n) = crowded.count() {
                tracing::warn!(
                    "{n} connections refused (503): their client address had {per_client} open already (`max_connections_per_client` in [server.http])"
                );
            }
            tokio::spawn(refuse(
                stream,
                "Service Unavailable: this client has too many connections open",
            ));
            continue;
        };
        let _ = stream.set_nodelay(true);
        let io = TokioIo::new(Watched::new(stream, idle, answers.clone(), stalls.clone()));
        let app = app.clone();
        let service =
            tower::service_fn(move |mut req: axum::http::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(Peer(ip));
                tower::ServiceExt::oneshot(app.clone(), req)
            });
        let conn = graceful.watch(h1.serve_connection(io, TowerToHyperService::new(service)));
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!("connection closed: {e}");
            }
            drop(counted);
            drop(slot);
        });
    }
    // Stopping: connections that wait to be accepted (or come now) are told so, not reset by
    // a listener that closes under them.
    let refusing = CancellationToken::new();
    let refuser = tokio::spawn(refuse_all(listener, refusing.clone()));
    graceful.shutdown().await;
    refusing.cancel();
    let _ = refuser.await;
}

/// A connection counted against its client address's share; uncounted when dropped.
struct Counted {
    clients: Arc<Mutex<HashMap<IpAddr, usize>>>,
    ip: IpAddr,
}

impl Counted {
    /// Counts one more connection of `ip`, unless it has `most` open already.
    fn new(
        clients: &Arc<Mutex<HashMap<IpAddr, usize>>>,
        ip: IpAddr,
        most: usize,
    ) -> Option<Counted> {
        let mut all = lock(clients);
        let n = all.entry(ip).or_insert(0);
        if *n >= most {
            return None;
        }
        *n += 1;
        Some(Counted {
            clients: clients.clone(),
            ip,
        })
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        let mut all = lock(&self.clients);
        if let Some(n) = all.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                all.remove(&self.ip);
            }
        }
    }
}

/// Accepts every connection until `done` and refuses each with 503; then those still waiting.
async fn refuse_all(listener: TcpListener, done: CancellationToken) {
    let mut refusals = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            biased;
            _ = done.cancelled() => break,
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    refusals.spawn(refuse(stream, STOPPING));
                }
            }
        }
    }
    while let Some(Ok((stream, _))) = futures_util::FutureExt::now_or_never(listener.accept()) {
        refusals.spawn(refuse(stream, STOPPING));
    }
    drop(listener);
    while refusals.join_next().await.is_some() {}
}

const STOPPING: &str = "Service Unavailable: the server is stopping";

/// Answers a connection with 503 and closes it without a reset: what the client sent is read
/// (and dropped) until it closes its side, for a second at most.
async fn refuse(mut stream: TcpStream, why: &str) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{why}",
        why.len()
    );
    let refused = async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        std::io::Result::Ok(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), refused).await;
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

/// A connection whose writes fail once the client has taken none of its bytes for `stall`, or
/// for [`SQUEEZED`] while other answers wait for room (hyper then drops the connection, and
/// with it the answer it was sending). Taking counts what the kernel sends, not only what we
/// write: a slow client emptying a large send queue is taking bytes though no write is done.
pub(super) struct Watched {
    io: TcpStream,
    stall: Duration,
    /// Runs while a write waits for the client; made on the first wait.
    timer: Option<Pin<Box<Sleep>>>,
    /// Whether a write is waiting (`since` and `unsent` are about it).
    armed: bool,
    /// When the client last took something: the waiting write began, or the send queue shrank.
    since: Instant,
    /// Bytes the kernel held unsent at `since` (Linux).
    unsent: Option<u32>,
    answers: Arc<Budget>,
    /// Woken when other answers begin to wait for room.
    squeeze: Option<Pin<Box<OwnedNotified>>>,
    /// Connections closed so, for the warning (at most once a minute).
    stalls: Arc<Mutex<Throttled>>,
}

impl Watched {
    pub(super) fn new(
        io: TcpStream,
        stall: Duration,
        answers: Arc<Budget>,
        stalls: Arc<Mutex<Throttled>>,
    ) -> Watched {
        Watched {
            io,
            stall,
            timer: None,
            armed: false,
            since: Instant::now(),
            unsent: None,
            answers,
            squeeze: None,
            stalls,
        }
    }

    /// A write is waiting: starts the clock (or looks at it); the error once the client has
    /// taken nothing for too long.
    fn waiting(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        if !self.armed {
            self.armed = true;
            self.since = Instant::now();
            self.unsent = sys::unsent(&self.io);
        }
        loop {
            // Registered before the budget is asked, so a squeeze beginning between is seen.
            let answers = &self.answers;
            let squeeze = self
                .squeeze
                .get_or_insert_with(|| Box::pin(answers.squeezed()));
            if squeeze.as_mut().poll(cx).is_ready() {
                self.squeeze = None;
                continue;
            }
            let pressed = self.answers.pressed();
            let allowed = if pressed {
                self.stall.min(SQUEEZED)
            } else {
                self.stall
            };
            let deadline = self.since + allowed;
            let now = Instant::now();
            if now >= deadline {
                let unsent = sys::unsent(&self.io);
                if let (Some(before), Some(after)) = (self.unsent, unsent)
                    && after < before
                {
                    // The client is taking bytes, slowly: it starts again from now.
                    self.since = now;
                    self.unsent = unsent;
                    continue;
                }
                return Poll::Ready(self.cut(allowed, pressed));
            }
            let timer = self
                .timer
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
            if timer.deadline() != deadline {
                timer.as_mut().reset(deadline);
            }
            ready!(timer.as_mut().poll(cx));
        }
    }

    /// The error that drops the connection, said at most once a minute.
    fn cut(&self, allowed: Duration, pressed: bool) -> io::Error {
        if let Some(n) = lock(&self.stalls).count() {
            tracing::warn!(
                "{n} connections closed: their clients took none of an answer for {}s (`idle_timeout` in [server.http]), or for {}s while other answers waited for room",
                self.stall.as_secs_f64(),
                self.stall.min(SQUEEZED).as_secs_f64()
            );
        }
        let why = if pressed {
            " while other answers waited for room"
        } else {
            ""
        };
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the client took none of the answer for {}s{why}",
                allowed.as_secs_f64()
            ),
        )
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
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A connection, its server side `Watched` with `stall`, and the client side: a small
    /// receive window, and a large send buffer on the server (which the kernel says it can
    /// write to again only once half of what it holds is sent).
    async fn pair(stall: Duration, budget: &Arc<Budget>) -> (Watched, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let client = tokio::net::TcpSocket::new_v4().expect("socket");
        client.set_recv_buffer_size(4096).expect("receive buffer");
        let client = client
            .connect(listener.local_addr().expect("addr"))
            .await
            .expect("connect");
        let (server, _) = listener.accept().await.expect("accept");
        sys::set_send_buffer(&server, 1 << 20);
        let stalls = Arc::new(Mutex::new(Throttled::default()));
        (Watched::new(server, stall, budget.clone(), stalls), client)
    }

    /// An address that accepts connections (for a socket to ask the platform about).
    async fn probe() -> std::net::SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = l.local_addr().expect("addr");
        tokio::spawn(async move {
            let _kept = l.accept().await;
            std::future::pending::<()>().await;
        });
        addr
    }

    /// Writes `total` bytes through `w`: how many it wrote, and the error that ended it early.
    async fn send(mut w: Watched, total: usize) -> (usize, Option<io::Error>) {
        let chunk = vec![b'x'; 64 * 1024];
        let mut sent = 0;
        while sent < total {
            match w.write(&chunk[..chunk.len().min(total - sent)]).await {
                Ok(n) => sent += n,
                Err(e) => return (sent, Some(e)),
            }
        }
        (sent, None)
    }

    #[tokio::test]
    async fn a_client_taking_bytes_slowly_is_not_cut_off_though_no_write_is_done() {
        if sys::unsent(&TcpStream::connect(probe().await).await.expect("probe")).is_none() {
            // This platform does not say what a socket holds unsent: a slow reader is judged
            // by writes alone.
            return;
        }
        let budget = Budget::new(1 << 20);
        let (w, mut client) = pair(Duration::from_millis(300), &budget).await;
        let total = 4 << 20;
        let writer = tokio::spawn(send(w, total));
        // Slowly: 4 KiB every 50 ms for 2 s, far less than the kernel must send before the
        // server may write again, but never nothing for 300 ms.
        let mut got = 0;
        let mut buf = vec![0u8; 4096];
        for _ in 0..40 {
            got += client.read(&mut buf).await.expect("read");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            !writer.is_finished(),
            "the writer ended: cut off while the client read"
        );
        // Then quickly, to the end.
        loop {
            let n = client.read(&mut buf).await.expect("read");
            if n == 0 || got + n >= total {
                got += n;
                break;
            }
            got += n;
        }
        let (sent, err) = writer.await.expect("the writer");
        assert!(err.is_none(), "cut off after {sent} bytes: {err:?}");
        assert_eq!(got, total);
    }

    #[tokio::test]
    async fn a_client_taking_nothing_is_cut_off_after_a_second_while_others_wait() {
        let budget = Budget::new(100);
        let held = super::super::answers::Answer::new(&budget, None);
        held.reserve(100).await;
        // An hour's `idle_timeout`: only the squeeze cuts the client off.
        let (w, client) = pair(Duration::from_secs(3600), &budget).await;
        let writer = tokio::spawn(send(w, 64 << 20));
        // Nothing waits for room: the stalled client is left alone.
        tokio::time::sleep(SQUEEZED + Duration::from_millis(500)).await;
        assert!(!writer.is_finished());
        // Another answer waits for room: the client, which took nothing, goes a second later.
        let waiting = super::super::answers::Answer::new(&budget, None);
        let mut reserve = Box::pin(waiting.reserve(50));
        let deadline = tokio::time::Instant::now() + 10 * SQUEEZED;
        let (sent, err) = tokio::select! {
            done = writer => done.expect("the writer"),
            _ = &mut reserve => panic!("the reservation was granted though the room is held"),
            _ = tokio::time::sleep_until(deadline) => panic!("not cut off"),
        };
        let err = err.expect("cut off");
        assert!(sent < 64 << 20);
        assert!(
            err.to_string()
                .contains("while other answers waited for room"),
            "{err}"
        );
        drop(client);
    }

    #[test]
    fn the_descriptor_limit_lowers_the_connection_cap() {
        assert_eq!(cap_within(1024, None), 1024);
        assert_eq!(cap_within(1024, Some(1_048_576)), 1024);
        assert_eq!(cap_within(1024, Some(1024)), 768, "256 kept for the rest");
        assert_eq!(cap_within(1024, Some(100)), 16, "never below 16");
        assert_eq!(cap_within(8, Some(100)), 8);
    }
}
