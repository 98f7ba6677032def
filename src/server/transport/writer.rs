//! The output side: the one thread that writes stdout. It takes whatever is queued in one go,
//! writes it through a 64 KiB buffer, flushes when nothing more waits, and releases each answer
//! (its work slot and bytes) once written. Only this thread ever writes to stdout, so a client
//! that does not read blocks this thread alone, never the thread that routes requests
//! (test `a_client_that_does_not_read_stops_the_reading_not_the_memory`).

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use super::direct::Hook;
use super::session::Session;
use super::state::Out;

/// The writer thread, and a way to wait until all is written.
pub struct Output {
    pub(super) session: Arc<Session>,
    done: tokio::sync::oneshot::Receiver<()>,
}

impl Output {
    /// Starts the writer thread on `write`.
    pub fn start<W: Write + Send + 'static>(write: W) -> Output {
        let session = Arc::new(Session::new());
        let (done_tx, done) = tokio::sync::oneshot::channel();
        let s = session.clone();
        let mut sink = Sink {
            w: std::io::BufWriter::with_capacity(64 * 1024, Box::new(write)),
            failed: false,
        };
        std::thread::Builder::new()
            .name("stdout".into())
            .spawn(move || {
                write_messages(&s, &mut sink);
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

/// Where answers go: stdout, buffered.
struct Sink {
    w: std::io::BufWriter<Box<dyn Write + Send>>,
    failed: bool,
}

/// The writer thread: writes queued lines, flushing when the queue is empty, and releases each
/// answer once written.
fn write_messages(session: &Session, sink: &mut Sink) {
    let mut burst: Vec<Out> = Vec::new();
    loop {
        {
            let mut st = session.lock();
            while st.out.is_empty() {
                if st.finishing {
                    drop(st);
                    let _ = sink.w.flush();
                    return;
                }
                st.writer_waiting = true;
                st = session.writable.wait(st).unwrap_or_else(|p| p.into_inner());
                st.writer_waiting = false;
            }
            burst.extend(st.out.drain(..));
        }
        write_burst(session, sink, &mut burst);
    }
}

/// Writes `burst` (taken from the queue) in one go, releases each answer once written (a large
/// one as soon as it is, small ones together at the end), and flushes if nothing more waits.
fn write_burst(session: &Session, sink: &mut Sink, burst: &mut Vec<Out>) {
    let mut done: Vec<(usize, Option<u64>)> = Vec::new();
    let count = burst.len();
    for (i, out) in burst.drain(..).enumerate() {
        if !sink.failed && sink.w.write_all(&out.bytes).is_err() {
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
