//! Request bodies: read into one buffer each, within a budget of bytes held by all bodies at
//! once ([`BODY_BUDGET`], a quarter of it per client address), and within a time that grows
//! with their size.
//!
//! - A body counts what its buffer holds (one buffer, grown by doubling; chunks are copied in
//!   as they come): 1-byte chunks kept as they came held ~40 times their size.
//! - A body with a `Content-Length` takes its length from the budget before it is read, all or
//!   nothing (bodies half read never wait for each other); one without takes as its buffer
//!   grows. While the budget is spent, bodies wait (their connections are not read: TCP
//!   backpressure), in order, and one client address never holds more than a quarter: the
//!   others' bodies still fit.
//! - Once a body is let in it must arrive within [`GRACE`] plus a second per MiB (and within
//!   `idle_timeout`): a client that sends slowly holds its share for seconds, not minutes.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use http_body_util::BodyExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{MAX_BODY, conns};
use crate::server::shared::lock;

/// Request bodies held at once, all connections together (bytes).
pub(super) const BODY_BUDGET: usize = 32 * 1024 * 1024;
/// What one client address may hold of it.
const PER_CLIENT: usize = BODY_BUDGET / 4;
/// How long any body may take once it is let in, beyond a second per MiB.
pub(super) const GRACE: Duration = Duration::from_secs(5);
/// The slowest a body may arrive, past `GRACE` (bytes a second).
const MIN_RATE: u64 = 1024 * 1024;
/// Client addresses remembered before those holding nothing are forgotten.
const CLIENTS_KEPT: usize = 4096;

pub(super) enum BodyError {
    TooLarge,
    Unreadable,
    /// It did not arrive in time (the time it had).
    Slow(Duration),
}

/// The budget of request bodies.
pub(super) struct Bodies {
    all: Arc<Semaphore>,
    clients: Mutex<HashMap<IpAddr, Arc<Semaphore>>>,
}

/// A body's share of the budget; given back when dropped.
pub(super) struct Held {
    all: Option<OwnedSemaphorePermit>,
    client: Option<OwnedSemaphorePermit>,
}

impl Held {
    fn bytes(&self) -> usize {
        self.all.as_ref().map_or(0, |p| p.num_permits())
    }

    fn merge(&mut self, more: Held) {
        for (mine, theirs) in [(&mut self.all, more.all), (&mut self.client, more.client)] {
            match (mine.as_mut(), theirs) {
                (Some(m), Some(t)) => m.merge(t),
                (None, t) => *mine = t,
                (Some(_), None) => {}
            }
        }
    }

    /// Gives back `n` bytes of it.
    fn shrink(&mut self, n: usize) {
        for p in [&mut self.all, &mut self.client].into_iter().flatten() {
            drop(p.split(n.min(p.num_permits())));
        }
    }
}

impl Bodies {
    pub(super) fn new() -> Bodies {
        Bodies {
            all: Arc::new(Semaphore::new(BODY_BUDGET)),
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// `n` bytes of the budget for a body of `client` (its own quarter first).
    async fn take(&self, client: Option<IpAddr>, n: usize) -> Result<Held, BodyError> {
        // Every `n` is at most MAX_BODY, well within a u32.
        let n32 = n as u32;
        let client = match client {
            Some(ip) => {
                let sem = {
                    let mut clients = lock(&self.clients);
                    if clients.len() > CLIENTS_KEPT {
                        clients.retain(|_, s| s.available_permits() < PER_CLIENT);
                    }
                    clients
                        .entry(ip)
                        .or_insert_with(|| Arc::new(Semaphore::new(PER_CLIENT)))
                        .clone()
                };
                Some(
                    sem.acquire_many_owned(n32)
                        .await
                        .map_err(|_| BodyError::Unreadable)?,
                )
            }
            None => None,
        };
        let all = self
            .all
            .clone()
            .acquire_many_owned(n32)
            .await
            .map_err(|_| BodyError::Unreadable)?;
        Ok(Held {
            all: Some(all),
            client,
        })
    }

    /// Reads a body of at most `MAX_BODY` bytes (see the module doc); `idle` is
    /// `idle_timeout`, the most any body may take.
    pub(super) async fn read(
        &self,
        body: Body,
        declared: Option<u64>,
        client: Option<IpAddr>,
        idle: Duration,
    ) -> Result<(Bytes, Held), BodyError> {
        // The caller refused declared lengths over MAX_BODY.
        let declared = declared.map(|n| n as usize);
        let mut held = self.take(client, declared.unwrap_or(0)).await?;
        let expected = declared.unwrap_or(MAX_BODY) as u64;
        let allowed = (GRACE + Duration::from_secs(expected / MIN_RATE)).min(idle);
        match tokio::time::timeout(allowed, self.fill(body, declared, client, &mut held)).await {
            Ok(r) => r.map(|bytes| (bytes, held)),
            Err(_) => Err(BodyError::Slow(allowed)),
        }
    }

    async fn fill(
        &self,
        body: Body,
        declared: Option<usize>,
        client: Option<IpAddr>,
        held: &mut Held,
    ) -> Result<Bytes, BodyError> {
        // A declared length is taken whole; the buffer starts at one read's worth and grows.
        let mut buf: Vec<u8> = Vec::with_capacity(declared.unwrap_or(0).min(conns::READ_AHEAD));
        let mut body = std::pin::pin!(body);
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame.map_err(|_| BodyError::Unreadable)?.into_data() else {
                continue;
            };
            let need = buf.len() + data.len();
            if need > MAX_BODY || declared.is_some_and(|d| need > d) {
                return Err(BodyError::TooLarge);
            }
            if need > buf.capacity() {
                let cap = need.max(buf.capacity() * 2).min(MAX_BODY);
                if cap > held.bytes() {
                    let more = self.take(client, cap - held.bytes()).await?;
                    held.merge(more);
                }
                buf.reserve_exact(cap - buf.len());
            }
            buf.extend_from_slice(&data);
        }
        buf.shrink_to_fit();
        let extra = held.bytes().saturating_sub(buf.capacity());
        held.shrink(extra);
        Ok(Bytes::from(buf))
    }
}
