//! The transport driven as rmcp drives it, in process: lines in through a pipe, `receive` and
//! `send` called by hand, stdout a writer the test opens and closes. No timing: "does not come"
//! is a `receive` that would wait (`now_or_never`).

use std::io::Write as _;
use std::sync::{Arc, Condvar, Mutex};

use futures_util::FutureExt as _;
use rmcp::model::{
    ClientNotification, ClientRequest, JsonRpcMessage, NumberOrString, ReadResourceResult,
    ResourceContents, ServerResult,
};
use rmcp::transport::Transport as _;

use super::adapter::*;
use super::direct::*;
use super::reader::*;
use super::session::*;
use super::size::*;
use super::state::*;
use super::sys::Watch;
use super::*;
use rmcp::model::{GetExtensions as _, ProtocolVersion};
use std::sync::MutexGuard;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// stdout that accepts bytes only while open (a client that does or does not read).
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<GateState>, Condvar)>);

#[derive(Default)]
struct GateState {
    open: bool,
    written: Vec<u8>,
}

impl Gate {
    fn set(&self, open: bool) {
        let (m, c) = &*self.0;
        m.lock().expect("gate").open = open;
        c.notify_all();
    }

    fn lines(&self) -> Vec<String> {
        let (m, _) = &*self.0;
        String::from_utf8_lossy(&m.lock().expect("gate").written)
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl std::io::Write for Gate {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let (m, c) = &*self.0;
        let mut st = m.lock().expect("gate");
        while !st.open {
            st = c.wait(st).expect("gate");
        }
        st.written.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct Harness {
    t: LineTransport,
    output: Output,
    input: std::io::PipeWriter,
    gate: Gate,
}

impl Harness {
    /// A transport whose session has started (`initialize` handed over and answered).
    async fn started() -> Harness {
        Harness::started_with(None, ProtocolVersion::V_2025_11_25).await
    }

    /// A started transport whose reader may answer what `hook` takes, in a session of
    /// `version`.
    async fn started_with(hook: Option<Hook>, version: ProtocolVersion) -> Harness {
        let gate = Gate::default();
        gate.set(true);
        let output = Output::start(gate.clone());
        if let Some(hook) = hook {
            output.direct(hook, tokio::runtime::Handle::current());
        }
        let (r, input) = std::io::pipe().expect("pipe");
        let watch = Watch::pipe(&r);
        let t = LineTransport::new(r, watch, &output, CancellationToken::new());
        let mut h = Harness {
            t,
            output,
            input,
            gate,
        };
        h.write(r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#);
        let init = h.request().await;
        let mut info = rmcp::model::InitializeResult::default();
        info.protocol_version = version;
        h.answer(init, ServerResult::InitializeResult(info)).await;
        // Its answer written: the budget is whole.
        h.until(|st| st.out_bytes == 0 && st.records.is_empty());
        h
    }

    fn write(&mut self, line: &str) {
        self.input.write_all(line.as_bytes()).expect("write");
        self.input.write_all(b"\n").expect("write");
    }

    /// The next message, which must be a request: its internal id.
    async fn request(&mut self) -> (u64, ClientRequest) {
        match self.t.receive().await {
            Some(JsonRpcMessage::Request(r)) => match r.id {
                NumberOrString::Number(n) => (n as u64, r.request),
                other => panic!("an internal id is a number, got {other:?}"),
            },
            other => panic!("expected a request, got {other:?}"),
        }
    }

    async fn answer(&mut self, (id, _): (u64, ClientRequest), result: ServerResult) {
        let msg = JsonRpcMessage::response(result, NumberOrString::Number(id as i64));
        self.t.send(msg).await.expect("send");
    }

    fn method(r: &ClientRequest) -> &str {
        r.method()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.t.session.lock()
    }

    /// Waits until a line the writer wrote meets `cond`.
    fn until_written(&self, cond: impl Fn(&str) -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !self.gate.lines().iter().any(|l| cond(l)) {
            assert!(
                std::time::Instant::now() < deadline,
                "never written: {:?}",
                self.gate.lines()
            );
            std::thread::yield_now();
        }
    }

    /// Waits until tasks on this runtime (what the reader started) bring the state to `cond`.
    async fn settle(&self, cond: impl Fn(&State) -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !cond(&self.state()) {
            if std::time::Instant::now() >= deadline {
                let st = self.state();
                panic!(
                    "never settled: {} running here, {} work slots, {} reserved, {} records, {} bytes out",
                    st.direct_running,
                    st.work_used,
                    st.reserved,
                    st.records.len(),
                    st.out_bytes
                );
            }
            tokio::task::yield_now().await;
        }
    }

    /// Waits until the reader thread has brought the state to `cond`.
    fn until(&self, cond: impl Fn(&State) -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !cond(&self.state()) {
            if std::time::Instant::now() >= deadline {
                let st = self.state();
                panic!(
                    "the reader never got there: {} running here, {} work slots, {} reserved, {} queued, {} bytes out",
                    st.direct_running,
                    st.work_used,
                    st.reserved,
                    st.work.len(),
                    st.out_bytes
                );
            }
            std::thread::yield_now();
        }
    }
}

/// An answer of about `size` bytes.
fn result_of(size: usize) -> ServerResult {
    ServerResult::ReadResourceResult(ReadResourceResult::new(vec![ResourceContents::text(
        "x".repeat(size),
        "mem://big",
    )]))
}

/// An answer larger than the writer's buffer: it reaches stdout in the `write_all` itself.
fn big_result() -> ServerResult {
    result_of(200 * 1024)
}

#[tokio::test]
async fn work_slots_are_bounded_whatever_the_ids_and_control_passes_by() {
    let mut h = Harness::started().await;
    let list = r#"{"jsonrpc":"2.0","id":7,"method":"resources/list"}"#;
    for _ in 0..=MAX_WORK {
        h.write(list);
    }
    h.write(r#"{"jsonrpc":"2.0","id":"p","method":"logging/setLevel","params":{"level":"info"}}"#);
    h.write(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"never-seen"}}"#);
    h.write(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let mut running = Vec::new();
    for _ in 0..MAX_WORK {
        let r = h.request().await;
        assert_eq!(Harness::method(&r.1), "resources/list");
        running.push(r);
    }
    // Every slot is taken by requests with the same id; the control request still comes, then
    // the notification, and the 257th list does not.
    let control = h.request().await;
    assert_eq!(Harness::method(&control.1), "logging/setLevel");
    assert!(matches!(
        h.t.receive().await,
        Some(JsonRpcMessage::Notification(n))
            if matches!(n.notification, ClientNotification::InitializedNotification(_))
    ));
    assert!(
        h.t.receive().now_or_never().is_none(),
        "a 257th work request"
    );
    // A bare ping is answered by the reader itself, slots or not, and never reaches rmcp.
    h.write(r#"{"jsonrpc":"2.0","id":"q","method":"ping"}"#);
    h.until_written(|l| l == r#"{"jsonrpc":"2.0","id":"q","result":{}}"#);
    assert!(h.t.receive().now_or_never().is_none());

    // An answer produced but not written holds its slot.
    h.gate.set(false);
    let first = running.remove(0);
    h.answer(first, big_result()).await;
    assert!(
        h.t.receive().now_or_never().is_none(),
        "freed before written"
    );
    assert_eq!(h.state().work_used, MAX_WORK);
    // Written: the slot goes to the waiting request.
    h.gate.set(true);
    let next = h.request().await;
    assert_eq!(Harness::method(&next.1), "resources/list");
    // Every answer carries the client's id as written.
    let lines = h.gate.lines();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(r#"{"jsonrpc":"2.0","id":7,"result""#)),
        "{lines:?}"
    );
    drop(h.output);
}

/// A hook that answers `resources/read` of `file:///direct` at once (`{"contents":[]}`) and
/// declines everything else; counts what it is asked.
fn test_hook(calls: Arc<std::sync::atomic::AtomicUsize>) -> Hook {
    Box::new(move |method, params| {
        calls.fetch_add(1, Ordering::Relaxed);
        (method == "resources/read" && params?.get() == r#"{"uri":"file:///direct"}"#).then(|| {
            Job {
                reserve: READ_RESERVE,
                admits: true,
                subject: String::new(),
                answer: Box::pin(std::future::ready(Ok(Reply::Json(Arc::from(
                    r#"{"contents":[]}"#,
                ))))),
            }
        })
    })
}

/// What a test hook's slow reads wait for: each started read's sender, and whether its future
/// was dropped.
#[derive(Clone, Default)]
struct Slow {
    senders: Arc<Mutex<Vec<tokio::sync::oneshot::Sender<ServerResult>>>>,
    dropped: Arc<std::sync::atomic::AtomicUsize>,
    polled: Arc<std::sync::atomic::AtomicUsize>,
}

struct DropFlag(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

impl Slow {
    /// A hook whose `resources/read` of `file:///slow` waits until the test answers it.
    fn hook(&self) -> Hook {
        let slow = self.clone();
        Box::new(move |method, params| {
            if method != "resources/read" || params?.get() != r#"{"uri":"file:///slow"}"# {
                return None;
            }
            let slow = slow.clone();
            Some(Job {
                reserve: READ_RESERVE,
                admits: true,
                subject: "file:///slow".into(),
                answer: Box::pin(async move {
                    let _flag = DropFlag(slow.dropped.clone());
                    slow.polled.fetch_add(1, Ordering::Relaxed);
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    slow.senders.lock().expect("senders").push(tx);
                    let result = rx.await.map_err(|_| {
                        rmcp::model::ErrorData::internal_error("never answered", None)
                    })?;
                    Ok(Reply::Result(Box::new(result)))
                }),
            })
        })
    }

    fn answer(&self, result: ServerResult) {
        let tx = self.senders.lock().expect("senders").remove(0);
        assert!(tx.send(result).is_ok(), "the read is gone");
    }
}

const SLOW_READ: &str =
    r#"{"jsonrpc":"2.0","id":"s","method":"resources/read","params":{"uri":"file:///slow"}}"#;

#[tokio::test]
async fn the_reader_answers_what_the_hook_takes_and_everything_else_reaches_rmcp() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut h = Harness::started_with(
        Some(test_hook(calls.clone())),
        ProtocolVersion::V_2025_11_25,
    )
    .await;
    h.write(
        r#"{"jsonrpc":"2.0","id":"d","method":"resources/read","params":{"uri":"file:///direct"}}"#,
    );
    h.until_written(|l| l == r#"{"jsonrpc":"2.0","id":"d","result":{"contents":[]}}"#);
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    // What it answered at once holds no slot and no bytes of the budget.
    h.until(|st| st.records.is_empty() && st.work_used == 0 && st.reserved == 0);
    // What the hook declines, a method it is never asked about, a read with `_meta`-like params
    // and a read in a batch go to rmcp, in order.
    h.write(
        r#"{"jsonrpc":"2.0","id":"o","method":"resources/read","params":{"uri":"file:///other"}}"#,
    );
    h.write(r#"{"jsonrpc":"2.0","id":"t","method":"prompts/list"}"#);
    h.write(r#"[{"jsonrpc":"2.0","id":"b","method":"resources/read","params":{"uri":"file:///direct"}}]"#);
    let mut methods = Vec::new();
    for _ in 0..3 {
        let r = h.request().await;
        methods.push(Harness::method(&r.1).to_owned());
    }
    assert_eq!(
        methods,
        ["resources/read", "prompts/list", "resources/read"]
    );
    assert_eq!(
        calls.load(Ordering::Relaxed),
        2,
        "asked about the two plain reads only"
    );
    drop(h.output);
}

/// A result the hook shares (`Reply::Json`, a `tools/list` page) goes out whole in every answer
/// that gives it, each with its own id, and every byte of them counts in the output queue until
/// written; the queue holds the page once.
#[tokio::test]
async fn a_shared_result_is_written_whole_for_each_request_that_gets_it() {
    let page: Arc<str> = Arc::from(format!(
        r#"{{"tools":[{}]}}"#,
        "\"x\",".repeat(20_000) + "1"
    ));
    let given = page.clone();
    let hook: Hook = Box::new(move |method, params| {
        (method == "tools/list" && params.is_none()).then(|| Job {
            reserve: LIST_RESERVE,
            admits: false,
            subject: String::new(),
            answer: Box::pin(std::future::ready(Ok(Reply::Json(given.clone())))),
        })
    });
    let mut h = Harness::started_with(Some(hook), ProtocolVersion::V_2025_11_25).await;
    let n = 200;
    let mut burst = String::new();
    for i in 0..n {
        burst.push_str(&format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/list"}}"#
        ));
        burst.push('\n');
    }
    h.gate.set(false);
    h.write(burst.trim_end());
    // Held while the client does not read: each answer counts whole, the page is there once
    // per answer as a reference.
    h.until(|st| st.out_bytes >= 10 * page.len());
    assert!(Arc::strong_count(&page) > 10);
    h.gate.set(true);
    let answers = || -> Vec<String> {
        h.gate
            .lines()
            .into_iter()
            .filter(|l| l.contains(r#""tools""#))
            .collect()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while answers().len() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "{} answers",
            answers().len()
        );
        std::thread::yield_now();
    }
    let mut ids = std::collections::BTreeSet::new();
    for l in answers() {
        let rest = l
            .strip_prefix(r#"{"jsonrpc":"2.0","id":"#)
            .expect("a result line");
        let (id, result) = rest.split_once(',').expect("an id");
        assert!(result == format!(r#""result":{page}}}"#), "answer {id}");
        ids.insert(id.parse::<usize>().expect("a number"));
    }
    assert_eq!(ids, (0..n).collect(), "each request answered once");
    h.until(|st| st.out_bytes == 0);
    // Let go once written: the hook's and this test's are left.
    assert_eq!(Arc::strong_count(&page), 2);
    drop(h.output);
}

/// A read the reader starts and cannot finish at once is finished on the runtime: it holds a
/// work slot and its reservation until its answer is written, never reaches rmcp, and is
/// answered with the client's id.
#[tokio::test]
async fn what_the_reader_cannot_answer_at_once_is_finished_on_the_runtime() {
    let slow = Slow::default();
    let mut h = Harness::started_with(Some(slow.hook()), ProtocolVersion::V_2025_11_25).await;
    h.write(SLOW_READ);
    h.until(|st| st.direct_running == 1 && st.work_used == 1 && st.reserved == READ_RESERVE);
    assert!(h.t.receive().now_or_never().is_none(), "reached rmcp");
    // A ping passes by.
    h.write(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#);
    h.until_written(|l| l == r#"{"jsonrpc":"2.0","id":"p","result":{}}"#);
    // Answered: written with the client's id, its slot and bytes free once written.
    h.gate.set(false);
    while slow.senders.lock().expect("senders").is_empty() {
        tokio::task::yield_now().await;
    }
    // (Larger than the writer's buffer: it stays counted until the client reads.)
    slow.answer(big_result());
    h.settle(|st| st.direct_running == 0 && st.out_bytes > 0)
        .await;
    assert_eq!(h.state().work_used, 1, "freed before written");
    h.gate.set(true);
    h.until_written(|l| {
        l.starts_with(r#"{"jsonrpc":"2.0","id":"s","result":{"#) && l.contains("mem://big")
    });
    h.settle(|st| st.records.is_empty() && st.work_used == 0 && st.reserved == 0)
        .await;
    assert_eq!(slow.polled.load(Ordering::Relaxed), 1);
    drop(h.output);
}

/// `notifications/cancelled` stops a read the reader started: its future is dropped at once,
/// its slot and bytes are free, and nothing is ever written for it.
#[tokio::test]
async fn a_read_the_reader_started_is_cancelled_and_never_answered() {
    let slow = Slow::default();
    let mut h = Harness::started_with(Some(slow.hook()), ProtocolVersion::V_2025_11_25).await;
    h.write(SLOW_READ);
    h.until(|st| st.direct_running == 1);
    h.write(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s"}}"#);
    h.until(|st| {
        st.direct_running == 0 && st.records.is_empty() && st.work_used == 0 && st.reserved == 0
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while slow.dropped.load(Ordering::Relaxed) == 0 {
        assert!(std::time::Instant::now() < deadline, "the read goes on");
        tokio::task::yield_now().await;
    }
    // Nothing reached rmcp, not even the cancellation.
    assert!(h.t.receive().now_or_never().is_none());
    h.write(r#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#);
    h.until_written(|l| l.contains(r#""id":"after""#));
    h.output.finish(Duration::from_secs(5)).await;
    let lines = h.gate.lines();
    assert_eq!(
        lines.len(),
        2,
        "the initialize and ping answers only: {lines:?}"
    );
}

/// The reader starts nothing while every work slot is taken or the budget is spent: such a
/// read goes to rmcp's queue like any request, behind what waits.
#[tokio::test]
async fn the_reader_starts_nothing_without_a_slot_and_room_in_the_budget() {
    let slow = Slow::default();
    let mut h = Harness::started_with(Some(slow.hook()), ProtocolVersion::V_2025_11_25).await;
    let call = r#"{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"t"}}"#;
    for _ in 0..=MAX_WORK {
        h.write(call);
    }
    let mut running = Vec::new();
    for _ in 0..MAX_WORK {
        running.push(h.request().await);
    }
    h.until(|st| st.work.len() == 1);
    h.write(SLOW_READ);
    h.until(|st| st.work.len() == 2);
    assert_eq!(slow.polled.load(Ordering::Relaxed), 0, "started");
    // Once slots free, rmcp gets the call, then the read.
    for r in running {
        h.answer(r, ServerResult::empty(())).await;
    }
    let call = h.request().await;
    assert_eq!(Harness::method(&call.1), "tools/call");
    let read = h.request().await;
    assert_eq!(Harness::method(&read.1), "resources/read");
    // The budget spent by rmcp's requests: the next read goes to rmcp as well.
    let ticket = read
        .1
        .extensions()
        .get::<Ticket>()
        .cloned()
        .expect("a ticket");
    h.until(|st| st.out_bytes == 0);
    reserve_with(ticket, BUDGET)
        .now_or_never()
        .expect("the whole budget");
    h.write(SLOW_READ);
    let again = h.request().await;
    assert_eq!(Harness::method(&again.1), "resources/read");
    assert_eq!(slow.polled.load(Ordering::Relaxed), 0, "started");
    drop(h.output);
}

/// The end of the input ends the session only once what the reader started is answered.
#[tokio::test]
async fn the_end_of_input_waits_for_what_the_reader_started() {
    let slow = Slow::default();
    let mut h = Harness::started_with(Some(slow.hook()), ProtocolVersion::V_2025_11_25).await;
    h.write(SLOW_READ);
    h.until(|st| st.direct_running == 1);
    let (_unused, other) = std::io::pipe().expect("pipe");
    drop(std::mem::replace(&mut h.input, other));
    h.until(|st| st.eof);
    assert!(h.t.receive().now_or_never().is_none(), "ended too soon");
    while slow.senders.lock().expect("senders").is_empty() {
        tokio::task::yield_now().await;
    }
    slow.answer(result_of(10));
    assert!(h.t.receive().await.is_none());
    h.until_written(|l| l.contains(r#""id":"s""#));
    drop(h.output);
}

/// A burst of pipelined lines, the end of the input right after: every read is answered once,
/// by the reader or (what it declines, and what comes while that waits) through rmcp.
#[tokio::test]
async fn pipelined_reads_are_each_answered_once() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut h = Harness::started_with(
        Some(test_hook(calls.clone())),
        ProtocolVersion::V_2025_11_25,
    )
    .await;
    let n = 3000;
    let mut burst = String::new();
    for i in 0..n {
        burst.push_str(&format!(
            r#"{{"jsonrpc":"2.0","id":"d{i}","method":"resources/read","params":{{"uri":"file:///direct"}}}}"#
        ));
        burst.push('\n');
        if i % 1000 == 500 {
            burst.push_str(&format!(
                r#"{{"jsonrpc":"2.0","id":"o{i}","method":"resources/read","params":{{"uri":"file:///other"}}}}"#
            ));
            burst.push('\n');
        }
    }
    let mut input = h.input.try_clone().expect("pipe");
    let writer = std::thread::spawn(move || input.write_all(burst.as_bytes()));
    let (_unused, other) = std::io::pipe().expect("pipe");
    drop(std::mem::replace(&mut h.input, other));
    // What reaches rmcp (the declined reads, and those behind them while they wait) gets the
    // same answer, until the end.
    let mut through_rmcp = 0;
    while let Some(msg) = h.t.receive().await {
        let JsonRpcMessage::Request(r) = msg else {
            continue;
        };
        assert_eq!(r.request.method(), "resources/read");
        let mut empty = ReadResourceResult::new(vec![]);
        empty.result_type = None;
        h.t.send(JsonRpcMessage::response(
            ServerResult::ReadResourceResult(empty),
            r.id,
        ))
        .await
        .expect("send");
        through_rmcp += 1;
    }
    writer.join().expect("writer").expect("write");
    assert!(through_rmcp >= 3, "{through_rmcp}");
    h.output.finish(Duration::from_secs(10)).await;
    let answered: Vec<String> = h
        .gate
        .lines()
        .into_iter()
        .filter(|l| l.ends_with(r#","result":{"contents":[]}}"#))
        .collect();
    assert_eq!(answered.len(), n + 3);
    let mut ids: Vec<String> = answered
        .iter()
        .map(|l| l.split('"').nth(7).unwrap_or_default().to_owned())
        .collect();
    ids.sort();
    let mut expected: Vec<String> = (0..n)
        .map(|i| format!("d{i}"))
        .chain([500, 1500, 2500].map(|i| format!("o{i}")))
        .collect();
    expected.sort();
    // (Not `assert_eq!`: thousands of ids are no message.)
    assert!(ids == expected, "not every read answered exactly once");
    assert!(calls.load(Ordering::Relaxed) >= n - through_rmcp);
}

#[tokio::test]
async fn nothing_is_answered_on_the_reader_in_a_2026_session() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut h = Harness::started_with(
        Some(test_hook(calls.clone())),
        ProtocolVersion::V_2026_07_28,
    )
    .await;
    h.write(
        r#"{"jsonrpc":"2.0","id":"d","method":"resources/read","params":{"uri":"file:///direct"}}"#,
    );
    h.write(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#);
    for method in ["resources/read", "ping"] {
        let r = h.request().await;
        assert_eq!(Harness::method(&r.1), method);
    }
    assert_eq!(calls.load(Ordering::Relaxed), 0);
    drop(h.output);
}

#[tokio::test]
async fn a_cancelled_request_is_dropped_if_queued_and_cancelled_in_rmcp_if_running() {
    let mut h = Harness::started().await;
    let call = |id: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"t"}}}}"#)
    };
    for _ in 0..MAX_WORK {
        h.write(&call("\"run\""));
    }
    h.write(&call("99999999999999999999999"));
    let mut running = Vec::new();
    for _ in 0..MAX_WORK {
        running.push(h.request().await);
    }
    h.until(|st| st.work.len() == 1);
    // The queued one (an id beyond 64 bits) is dropped: never handed to rmcp.
    h.write(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99999999999999999999999}}"#);
    // The running ones are cancelled in rmcp, each by its internal id, and their slots are free.
    h.write(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"run","reason":"bored"}}"#);
    let mut cancelled = Vec::new();
    for _ in 0..MAX_WORK {
        match h.t.receive().await {
            Some(JsonRpcMessage::Notification(n)) => match n.notification {
                ClientNotification::CancelledNotification(c) => {
                    assert_eq!(c.params.reason.as_deref(), Some("bored"));
                    match c.params.request_id {
                        Some(NumberOrString::Number(n)) => cancelled.push(n as u64),
                        other => panic!("{other:?}"),
                    }
                }
                other => panic!("{other:?}"),
            },
            other => panic!("expected a cancellation, got {other:?}"),
        }
    }
    let mut ids: Vec<u64> = running.iter().map(|r| r.0).collect();
    ids.sort_unstable();
    cancelled.sort_unstable();
    assert_eq!(ids, cancelled);
    assert!(h.t.receive().now_or_never().is_none());
    {
        let st = h.state();
        assert_eq!((st.work_used, st.work.len(), st.input_bytes), (0, 0, 0));
    }
    // An answer rmcp still sends for a cancelled request is not written.
    let late = running.remove(0);
    h.answer(late, ServerResult::empty(())).await;
    h.write(r#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#);
    h.until_written(|l| l.contains(r#""id":"after""#));
    h.output.finish(Duration::from_secs(5)).await;
    let lines = h.gate.lines();
    assert_eq!(
        lines.len(),
        2,
        "the initialize and ping answers only: {lines:?}"
    );
}

#[tokio::test]
async fn reservations_wait_in_order_until_answers_are_written() {
    let mut h = Harness::started().await;
    let n = BUDGET / READ_RESERVE + 2;
    for i in 0..n {
        h.write(&format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"resources/read","params":{{"uri":"mem://x"}}}}"#
        ));
    }
    let mut reqs = Vec::new();
    for _ in 0..n {
        reqs.push(h.request().await);
    }
    let ticket =
        |r: &(u64, ClientRequest)| r.1.extensions().get::<Ticket>().cloned().expect("a ticket");
    let fits = BUDGET / READ_RESERVE;
    for r in &reqs[..fits] {
        reserve_with(ticket(r), READ_RESERVE)
            .now_or_never()
            .expect("room in the budget");
    }
    let mut late = Box::pin(reserve_with(ticket(&reqs[fits]), READ_RESERVE));
    let mut later = Box::pin(reserve_with(ticket(&reqs[fits + 1]), 1));
    assert!((&mut late).now_or_never().is_none(), "the budget is spent");
    assert!(
        (&mut later).now_or_never().is_none(),
        "a small reservation does not pass a waiting one"
    );
    // The first answer is produced (its reservation becomes its size, larger) but not written.
    h.gate.set(false);
    let mut reqs = reqs.into_iter();
    let first = reqs.next().expect("a request");
    h.answer(first, result_of(READ_RESERVE + 512 * 1024)).await;
    assert!((&mut late).now_or_never().is_none());
    // Written: the budget frees and the waiting reservation goes; a second answer (small)
    // frees room for the next one too.
    h.gate.set(true);
    late.await;
    let second = reqs.next().expect("a request");
    h.answer(second, ServerResult::empty(())).await;
    later.await;
    assert_eq!(h.state().reserved, (fits - 1) * READ_RESERVE + 1);
}

#[tokio::test]
async fn before_the_session_starts_only_requests_reach_rmcp() {
    let gate = Gate::default();
    gate.set(true);
    let output = Output::start(gate.clone());
    let (r, mut input) = std::io::pipe().expect("pipe");
    let mut t = LineTransport::new(r, None, &output, CancellationToken::new());
    let ping = |id| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
    for line in [
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","method":"notifications/whatever"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":5,"result":{}}"#.to_owned(),
        ping(1),
    ] {
        writeln!(input, "{line}").expect("write");
    }
    for id in [1, 2] {
        let Some(JsonRpcMessage::Request(r)) = t.receive().await else {
            panic!("a request")
        };
        assert_eq!(r.request.method(), "ping");
        // rmcp answers a ping before the session inline.
        t.send(JsonRpcMessage::response(ServerResult::empty(()), r.id))
            .await
            .expect("send");
        assert_eq!(
            t.session.lock().lifecycle,
            Lifecycle::Before { pending: None }
        );
        // A late cancellation of the ping just answered.
        writeln!(
            input,
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#
        )
        .expect("write");
        if id == 1 {
            writeln!(input, "{}", ping(2)).expect("write");
        }
    }
    // A stateless-era request rmcp runs inside the session: the session has started once rmcp
    // asks for more without answering it.
    writeln!(
        input,
        r#"{{"jsonrpc":"2.0","id":3,"method":"resources/list","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    )
    .expect("write");
    writeln!(input, r#"{{"jsonrpc":"2.0","method":"notifications/x"}}"#).expect("write");
    assert!(matches!(
        t.receive().await,
        Some(JsonRpcMessage::Request(_))
    ));
    assert!(matches!(
        t.receive().await,
        Some(JsonRpcMessage::Notification(_))
    ));
    assert_eq!(t.session.lock().lifecycle, Lifecycle::Started);
    output.finish(Duration::from_secs(5)).await;
    assert_eq!(gate.lines().len(), 2, "{:?}", gate.lines());
}

#[tokio::test]
async fn a_client_that_does_not_read_stops_the_reading_not_the_memory() {
    let mut h = Harness::started().await;
    h.gate.set(false);
    // Answers pile up until the output cap: no more work is handed to rmcp, and the reader
    // stops taking lines (they stay in the pipe).
    let read = r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"mem://x"}}"#;
    let writer = {
        let mut input = h.input.try_clone().expect("clone");
        std::thread::spawn(move || {
            for _ in 0..100_000 {
                if writeln!(input, "{read}").is_err() {
                    return;
                }
            }
        })
    };
    let mut produced = 0;
    loop {
        let r = h.request().await;
        h.answer(r, big_result()).await;
        produced += 1;
        if h.state().out_bytes >= OUTPUT_CAP {
            break;
        }
    }
    assert!(h.t.receive().now_or_never().is_none(), "work goes on");
    let (queued, in_input) = {
        let st = h.state();
        (st.out_bytes, st.input_bytes)
    };
    assert!(queued < OUTPUT_CAP + 300 * 1024, "{queued}");
    // The reader may take one line past the cap.
    assert!(in_input <= INPUT_CAP + MESSAGE_COST + 200, "{in_input}");
    assert!(!writer.is_finished(), "the client is held on the pipe");
    // Once the client reads, work resumes.
    h.gate.set(true);
    let r = h.request().await;
    h.answer(r, ServerResult::empty(())).await;
    assert!(produced > 0);
    drop(h.input);
}

#[test]
fn small_tool_results_are_serialized_in_place_and_large_ones_are_not() {
    use rmcp::model::{CallToolResult, ContentBlock};
    let text = |n: usize| CallToolResult::success(vec![ContentBlock::text("x".repeat(n))]);
    assert_eq!(tool_result_len(&text(0)), 0);
    assert!(tool_result_len(&text(100)) <= INLINE_SERIALIZE);
    assert!(tool_result_len(&text(INLINE_SERIALIZE + 1)) > INLINE_SERIALIZE);
    // Many small blocks add up.
    let blocks = CallToolResult::success(vec![ContentBlock::text("y".repeat(1024)); 17]);
    assert!(tool_result_len(&blocks) > INLINE_SERIALIZE);
    // Structured content counts, and a huge one is not walked to its end.
    let mut with_value = text(10);
    with_value.structured_content = Some(serde_json::json!({"matches": vec!["z".repeat(100); 3]}));
    let small = tool_result_len(&with_value);
    assert!((300..INLINE_SERIALIZE).contains(&small), "{small}");
    let many: Vec<serde_json::Value> = (0..200_000)
        .map(|i| serde_json::json!({"line": i}))
        .collect();
    with_value.structured_content = Some(serde_json::Value::Array(many));
    let big = tool_result_len(&with_value);
    assert!(
        big > INLINE_SERIALIZE && big < 2 * INLINE_SERIALIZE,
        "{big}"
    );
    // Content the estimate does not know is large.
    let image = CallToolResult::success(vec![ContentBlock::image("AAAA", "image/png")]);
    assert!(tool_result_len(&image) > INLINE_SERIALIZE);
}

/// The reader's watch for the next line (`Spin`): caught when a line is there, missed after
/// `SPIN` when none comes, and after `SPIN_MISSES` misses in a row watched only once in
/// `SPIN_RETRY` chances, so a client that sends nothing soon costs almost no spinning.
#[test]
fn the_reader_watches_its_input_a_moment_and_backs_off_when_nothing_comes() {
    use std::io::{Read as _, Write as _};
    let (mut r, mut w) = std::io::pipe().expect("pipe");
    let Some(watch) = Watch::pipe(&r) else {
        // No watch on this platform: the reader never spins.
        return;
    };
    let mut spin = Spin::default();
    let start = std::time::Instant::now();
    assert_eq!(spin.watch(&watch), Watched::Missed);
    assert!(start.elapsed() >= SPIN);
    for _ in 1..SPIN_MISSES {
        assert_eq!(spin.watch(&watch), Watched::Missed);
    }
    for _ in 1..SPIN_RETRY {
        assert_eq!(spin.watch(&watch), Watched::Skipped);
    }
    // The retry watches again: a line waiting is caught, and the misses start over.
    w.write_all(b"{}\n").expect("write");
    assert_eq!(spin.watch(&watch), Watched::Caught);
    let mut line = [0u8; 3];
    r.read_exact(&mut line).expect("read");
    for _ in 0..SPIN_MISSES - 1 {
        assert_eq!(spin.watch(&watch), Watched::Missed);
    }
    w.write_all(b"{}\n").expect("write");
    assert_eq!(spin.watch(&watch), Watched::Caught);
    r.read_exact(&mut line).expect("read");
    // A closed input is caught at once (`read` then sees the end).
    drop(w);
    assert_eq!(spin.watch(&watch), Watched::Caught);
}

/// A test hook's reads of `file:///big`: each waits for the test's go, then says its answer will
/// be `expect` bytes (`providers::admit::expect`, as a files source does once it has opened a
/// large file), counts itself admitted, and waits for the test's finish.
#[derive(Clone)]
struct Admits {
    expect: usize,
    gates: Arc<Mutex<Vec<tokio::sync::oneshot::Sender<()>>>>,
    finishes: Arc<Mutex<Vec<tokio::sync::oneshot::Sender<()>>>>,
    admitted: Arc<std::sync::atomic::AtomicUsize>,
}

impl Admits {
    fn new(expect: usize) -> Admits {
        Admits {
            expect,
            gates: Arc::default(),
            finishes: Arc::default(),
            admitted: Arc::default(),
        }
    }

    fn hook(&self) -> Hook {
        let a = self.clone();
        Box::new(move |method, params| {
            if method != "resources/read" || params?.get() != r#"{"uri":"file:///big"}"# {
                return None;
            }
            let a = a.clone();
            Some(Job {
                reserve: READ_RESERVE,
                admits: true,
                subject: "file:///big".into(),
                answer: Box::pin(async move {
                    let (go, gate) = tokio::sync::oneshot::channel();
                    a.gates.lock().expect("gates").push(go);
                    let _ = gate.await;
                    crate::providers::admit::expect(a.expect).await;
                    a.admitted.fetch_add(1, Ordering::SeqCst);
                    let (done, finish) = tokio::sync::oneshot::channel();
                    a.finishes.lock().expect("finishes").push(done);
                    let _ = finish.await;
                    Ok(Reply::Json(Arc::from(r#"{"contents":[]}"#)))
                }),
            })
        })
    }

    /// Lets the oldest read still waiting for its go on.
    async fn go(&self) {
        loop {
            let next = {
                let mut gates = self.gates.lock().expect("gates");
                (!gates.is_empty()).then(|| gates.remove(0))
            };
            if let Some(tx) = next {
                assert!(tx.send(()).is_ok(), "the read is gone");
                return;
            }
            tokio::task::yield_now().await;
        }
    }

    /// Finishes the oldest admitted read.
    async fn finish(&self) {
        loop {
            let next = {
                let mut f = self.finishes.lock().expect("finishes");
                (!f.is_empty()).then(|| f.remove(0))
            };
            if let Some(tx) = next {
                assert!(tx.send(()).is_ok(), "the read is gone");
                return;
            }
            tokio::task::yield_now().await;
        }
    }

    fn admitted(&self) -> usize {
        self.admitted.load(Ordering::SeqCst)
    }
}

fn big_read(id: u32) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{{"uri":"file:///big"}}}}"#
    )
}

/// A read the reader started that finds its answer large waits for room in the session's budget
/// before it makes it (issue 35: 8 reads of a 256 MiB file on this path were read at once,
/// 1.9 GiB), holding nothing of the budget while it waits.
#[tokio::test]
async fn a_large_answer_the_reader_started_waits_for_room_before_it_is_made() {
    let a = Admits::new(4 * MIB);
    let mut h = Harness::started_with(Some(a.hook()), ProtocolVersion::V_2025_11_25).await;
    h.write(&big_read(1));
    h.write(&big_read(2));
    h.until(|st| st.direct_running == 2 && st.reserved == 2 * READ_RESERVE);
    // The first grows to 3 + 4 MiB at once: there is room.
    a.go().await;
    h.settle(|st| st.reserved == 2 * READ_RESERVE + 4 * MIB)
        .await;
    assert_eq!(a.admitted(), 1);
    // The second would take the budget past 12 MiB: it gives back its 3 MiB and waits.
    a.go().await;
    h.settle(|st| st.waiters.len() == 1 && st.reserved == READ_RESERVE + 4 * MIB)
        .await;
    assert_eq!(a.admitted(), 1, "admitted past the budget");
    // Once the first's answer is written, the second is admitted.
    a.finish().await;
    h.settle(|_| a.admitted() == 2).await;
    a.finish().await;
    h.settle(|st| st.direct_running == 0).await;
    h.until_written(|l| l.starts_with(r#"{"jsonrpc":"2.0","id":2,"result""#));
    h.until_written(|l| l.starts_with(r#"{"jsonrpc":"2.0","id":1,"result""#));
    h.until(|st| st.records.is_empty() && st.reserved == 0 && st.waiters.is_empty());
    drop(h.output);
}

/// Two reads that each hold their first reservation and then need most of the budget are both
/// answered, one after the other: neither holds room while it waits for more (each waiting for
/// the other's 3 MiB would be a deadlock).
#[tokio::test]
async fn reads_that_each_need_most_of_the_budget_take_turns() {
    let a = Admits::new(9 * MIB);
    let mut h = Harness::started_with(Some(a.hook()), ProtocolVersion::V_2025_11_25).await;
    h.write(&big_read(1));
    h.write(&big_read(2));
    h.until(|st| st.direct_running == 2 && st.reserved == 2 * READ_RESERVE);
    a.go().await;
    a.go().await;
    h.settle(|st| a.admitted() == 1 && st.waiters.len() == 1 && st.reserved == BUDGET)
        .await;
    a.finish().await;
    h.settle(|_| a.admitted() == 2).await;
    a.finish().await;
    h.settle(|st| st.direct_running == 0).await;
    for id in [1, 2] {
        h.until_written(|l| l.starts_with(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result""#)));
    }
    h.until(|st| st.records.is_empty() && st.reserved == 0);
    drop(h.output);
}
