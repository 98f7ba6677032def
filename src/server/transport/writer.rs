//! The output side: the one thread that writes stdout. It takes whatever is queued in one go,
//! writes it through a 64 KiB buffer, flushes when nothing more waits, and releases each answer
//! (its work slot and bytes) once written. The routing thread never writes stdout, so a client
//! that does not read never blocks it (test
//! `a_client_that_does_not_read_stops_the_reading_not_the_memory`); the reader thread writes
//! its own answers when this thread sleeps (`write_held`).

use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::direct::Hook;
use super::session::Session;
use super::state::{Out, State};

/// The writer thread, and a way to wait until all is written.
pub struct Output {
    pub(super) session: Arc<Session>,
    done: tokio::sync::oneshot::Receiver<()>,
}

impl Output {
    /// Starts the writer thread on `write`.
    pub fn start<W: Write + Send + 'static>(write: W) -> Output {
        let session = Arc::new(Session::new(Mutex::new(Sink {
            w: std::io::BufWriter::with_capacity(64 * 1024, Box::new(write)),
            failed: false,
        })));
        let (done_tx, done) = tokio::sync::oneshot::channel();
        let s = session.clone();
        std::thread::Builder::new()
            .name("stdout".into())
            .spawn(move || {
                write_messages(&s);
                let _ = done_tx.send(());
            })
            .expect("spawning the stdout thread");
        Output { session, done }
    }

    /// Sets what the reader may answer itself besides `ping` (`direct::hook`), finishing on
    /// `runtime` what it cannot answer at once. Call it before `LineTransport::new`.
    pub fn direct(&self, hook: Hook, runtime: tokio::runtime::Handle) {
        let _ = self.session.direct.set((hook, runtime));
    }

    /// Waits (at most `limit`) until everything queued is written.
    pub async fn finish(self, limit: Duration) {
        let Output { session, done } = self;
        session.lock().finishing = true;
        session.writable.notify_all();
        let _ = tokio::time::timeout(limit, done).await;
    }
}

/// Where answers go: stdout, buffered. Its lock is held while a burst is written, by the writer
/// thread or, when that sleeps, by the reader thread (`write_held`).
pub(super) struct Sink {
    w: std::io::BufWriter<Box<dyn Write + Send>>,
    failed: bool,
}

/// The writer thread: writes queued lines, flushing when the queue is empty, and releases each
/// answer once written.
fn write_messages(session: &Session) {
    let mut burst: Vec<Out> = Vec::new();
    loop {
        {
            let mut st = session.lock();
            while st.out.is_empty() {
                if st.finishing {
                    drop(st);
                    // After the reader's last burst, if it is writing one (`write_held`).
                    let _ = lock_sink(session).w.flush();
                    return;
                }
                st.writer_waiting = true;
                st = session.writable.wait(st).unwrap_or_else(|p| p.into_inner());
                st.writer_waiting = false;
            }
            burst.extend(st.out.drain(..));
        }
        write_burst(session, &mut lock_sink(session), &mut burst);
    }
}

/// Writes what the reader queued itself on the reader's thread, when the writer sleeps (`st`
/// locked, `held` answers in the queue): waking the writer costs a `futex` call and, on an
/// idle machine, the wake-up of a halted CPU, more than the write. Buys the sequential p50 of
/// what the reader answers (`ping`, small reads, cached pages): 19 → 7 µs and 27 → 14 µs in
/// alternated runs of the suite on a 2-vCPU machine at load 16 (BENCHMARKS.md, issue 30);
/// no figure a person feels, kept for the suite's 1.5× bound. The reader then waits for a
/// client that does not read, as it would anyway once the output cap is reached: it is not the
/// thread that routes requests. `Err`: the writer is awake or busy (wake it).
pub(super) fn write_held<'a>(
    session: &'a Session,
    st: MutexGuard<'a, State>,
) -> Result<(), MutexGuard<'a, State>> {
    if !st.writer_waiting || st.out.is_empty() {
        return Err(st);
    }
    let Ok(mut sink) = session.sink.try_lock() else {
        return Err(st);
    };
    let mut st = st;
    let mut burst: Vec<Out> = st.out.drain(..).collect();
    drop(st);
    write_burst(session, &mut sink, &mut burst);
    Ok(())
}

fn lock_sink(session: &Session) -> MutexGuard<'_, Sink> {
    session.sink.lock().unwrap_or_else(|p| p.into_inner())
}

/// Writes `burst` (taken from the queue) in one go, releases each answer once written (a large
/// one as soon as it is, small ones together at the end), and flushes if nothing more waits.
fn write_burst(session: &Session, sink: &mut Sink, burst: &mut Vec<Out>) {
    let mut done: Vec<(usize, Option<u64>)> = Vec::new();
    let count = burst.len();
    for (i, out) in burst.drain(..).enumerate() {
        if !sink.failed && out.write_to(&mut sink.w).is_err() {
            sink.failed = true;
        }
        let len = out.len();
        done.push((len, out.release));
        drop(out);
        if len >= 64 * 1024 || i + 1 == count {
            let mut st = session.lock();
            for (len, release) in done.drain(..) {
                st.written(len, release);
            }
            st.grant();
            session.wake(&st);
        }
    }
    let mut st = session.lock();
    if !sink.failed && st.out.is_empty() {
        drop(st);
        sink.failed = sink.w.flush().is_err();
        st = session.lock();
    }
    if sink.failed && !st.out_closed {
        tracing::error!("writing stdout failed: answers are dropped from now on");
        st.out_closed = true;
        while let Some(out) = st.out.pop_front() {
            st.written(out.len(), out.release);
        }
        st.grant();
        session.wake(&st);
    }
}
