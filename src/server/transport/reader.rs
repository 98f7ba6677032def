//! The input side: the one thread that reads stdin. It splits the input into lines (at most
//! [`MAX_LINE`] bytes; a longer one is answered with `-32600` and skipped), reading one more only
//! when the input and output queues have room, and takes each line: answered here (`direct`),
//! or parsed (`parse`) and queued for rmcp (`State::apply`), a batch as a whole. At the end of
//! the input it tells everyone (the `eof` token, then `State::eof`).

use std::io::{BufRead, Read};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::parse::{self, ClientId, Parsed, error_line};
use super::session::Session;
use super::state::Batch;
use super::sys::Watch;
use super::{MAX_LINE, MESSAGE_COST, MIB, direct};

/// Starts the reader thread on `read`.
pub(super) fn start<R: Read + Send + 'static>(
    session: Arc<Session>,
    read: R,
    watch: Option<Watch>,
    eof: CancellationToken,
) {
    std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            // What the reader starts and cannot finish at once is finished on the runtime.
            let _runtime = session.direct.get().map(|(_, rt)| rt.enter());
            read_lines(&session, read, watch);
            session.flush_held();
            // Before `receive` can see the end: whoever learns of it from rmcp finds the token
            // cancelled.
            eof.cancel();
            let mut st = session.lock();
            st.eof = true;
            session.wake(&st);
        })
        .expect("spawning the stdin thread");
}

fn read_lines<R: Read>(session: &Arc<Session>, read: R, watch: Option<Watch>) {
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, direct::Arrivals(read));
    let mut line = Vec::new();
    let mut spin = Spin::default();
    loop {
        session.wait_for_room();
        // The next read may wait for the client: what was answered here goes out first. Then,
        // if anything was, a moment's watch for the client's next line saves the wake-up of a
        // sleeping thread (`SPIN`).
        if !reader.buffer().contains(&b'\n')
            && session.flush_held()
            && let Some(watch) = &watch
        {
            spin.watch(watch);
        }
        match read_line(&mut reader, &mut line) {
            Ok(Line::Complete) => take_line(session, &line),
            Ok(Line::TooLong) => {
                let id = parse::id_from_prefix(parse::trim(&line)).unwrap_or_else(ClientId::null);
                tracing::error!("refused an incoming message longer than {MAX_LINE} bytes");
                let text = error_line(
                    &id,
                    -32600,
                    &format!(
                        "Invalid Request: the message is longer than {} MiB",
                        MAX_LINE / MIB
                    ),
                );
                session.lock().reply(text, &session.writable);
            }
            Ok(Line::End) => {
                take_line(session, &line);
                return;
            }
            Err(e) => {
                tracing::error!("reading stdin failed: {e}");
                return;
            }
        }
        // A huge line leaves no huge buffer behind.
        if line.capacity() > MIB {
            line = Vec::new();
        } else {
            line.clear();
        }
    }
}

/// One line: answered here (`direct`), or parsed (outside the lock) and queued.
pub(super) fn take_line(session: &Arc<Session>, line: &[u8]) {
    let text = parse::trim(line);
    if text.is_empty() {
        return;
    }
    // Only once the answer to `initialize` is queued, so nothing goes out before it.
    if session.direct_ok.load(Ordering::Relaxed) && direct::answer(session, text) {
        return;
    }
    let mut next = || session.next_id.fetch_add(1, Ordering::Relaxed);
    if !parse::is_batch(text) {
        let parsed = parse::message(text, false, &mut next);
        let mut st = session.lock();
        st.apply(parsed, None, text.len() + MESSAGE_COST, &session.writable);
        drop(st);
        session.ready.notify_one();
        return;
    }
    let items = match parse::batch_items(text) {
        Ok(items) => items,
        Err(reply) => {
            session.lock().reply(reply, &session.writable);
            return;
        }
    };
    let parsed: Vec<(Parsed, usize)> = items
        .iter()
        .map(|item| {
            let text = parse::trim(item.get().as_bytes());
            (
                parse::message(text, true, &mut next),
                text.len() + MESSAGE_COST,
            )
        })
        .collect();
    let mut st = session.lock();
    let batch = st.next_batch;
    st.next_batch += 1;
    // Every request is counted before any answer is added: the batch goes out once the last
    // one is done.
    let pending = parsed
        .iter()
        .filter(|(p, _)| matches!(p, Parsed::Request { .. }))
        .count();
    st.batches.insert(
        batch,
        Batch {
            pending,
            filling: true,
            ..Batch::default()
        },
    );
    for (p, cost) in parsed {
        st.apply(p, Some(batch), cost, &session.writable);
    }
    // Every member is in: the batch may go out (now, if none of them waits for rmcp).
    if let Some(b) = st.batches.get_mut(&batch) {
        b.filling = false;
    }
    st.batch_progress(batch, &session.writable);
    drop(st);
    session.ready.notify_one();
}

/// How long the reader watches the input for the client's next line after it answered one
/// itself, before it sleeps in `read`. A sequential client (one request, wait for its answer,
/// the next) sends the next line within tens of microseconds; a thread asleep in `read` is
/// woken by it only after the kernel wakes its CPU, which on a virtual machine with idle CPUs
/// halted costs 20–40 µs per line. Buys the sequential p50 of `ping` and of small reads on an
/// idle 2-vCPU machine: 51 → 18 µs and 68 → 21 µs (BENCHMARKS.md, issue 14's seventh pass);
/// nothing on a busy one, and no figure a person feels. Kept because the suite's figures must
/// stay within 1.5× (issue 30).
pub(super) const SPIN: Duration = Duration::from_micros(50);
/// Watches that saw nothing in a row before the reader stops watching (a client that does not
/// send at once, as an assistant between requests): then only one chance in `SPIN_RETRY` is
/// watched, so an idle session costs at most `SPIN` per `SPIN_RETRY` answers.
pub(super) const SPIN_MISSES: u32 = 4;
pub(super) const SPIN_RETRY: u32 = 64;

/// What one `Spin::watch` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Watched {
    /// The input became readable (or closed, or failed: `read` will say) within `SPIN`.
    Caught,
    /// Nothing came within `SPIN`.
    Missed,
    /// Not watched (backing off after misses).
    Skipped,
}

/// The reader's short watch of its input (see `SPIN`).
#[derive(Default)]
pub(super) struct Spin {
    misses: u32,
    skipped: u32,
}

impl Spin {
    /// Asks `watch` without blocking until the input is readable or `SPIN` has passed.
    pub fn watch(&mut self, watch: &Watch) -> Watched {
        if self.misses >= SPIN_MISSES {
            self.skipped += 1;
            if self.skipped < SPIN_RETRY {
                return Watched::Skipped;
            }
            self.skipped = 0;
        }
        let start = std::time::Instant::now();
        loop {
            if watch.readable() {
                self.misses = 0;
                return Watched::Caught;
            }
            if start.elapsed() >= SPIN {
                self.misses += 1;
                return Watched::Missed;
            }
            std::hint::spin_loop();
        }
    }
}

enum Line {
    /// `line` holds one line (with its newline).
    Complete,
    /// The line was longer than `MAX_LINE`: `line` holds its beginning, the rest was skipped.
    TooLong,
    /// The input ended; `line` holds what came after the last newline.
    End,
}

fn read_line<R: BufRead>(reader: &mut R, line: &mut Vec<u8>) -> std::io::Result<Line> {
    let mut too_long = false;
    loop {
        let (used, found) = {
            let buf = match reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok(if too_long { Line::TooLong } else { Line::End });
            }
            let nl = buf.iter().position(|b| *b == b'\n');
            let take = nl.map_or(buf.len(), |i| i + 1);
            if !too_long {
                if line.len() + take > MAX_LINE {
                    too_long = true;
                } else {
                    line.extend_from_slice(&buf[..take]);
                }
            }
            (take, nl.is_some())
        };
        reader.consume(used);
        if found {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Complete
            });
        }
    }
}
