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

use super::*;

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

    /// A started transport with a shortcut, in a session of `version`.
    async fn started_with(shortcut: Option<Shortcut>, version: ProtocolVersion) -> Harness {
        let gate = Gate::default();
        gate.set(true);
        let output = Output::start(gate.clone());
        if let Some(shortcut) = shortcut {
            output.shortcut(shortcut);
        }
        let (r, input) = std::io::pipe().expect("pipe");
        let t = LineTransport::new(r, &output, CancellationToken::new());
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

    /// Waits until the reader thread has brought the state to `cond`.
    fn until(&self, cond: impl Fn(&State) -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !cond(&self.state()) {
            assert!(
                std::time::Instant::now() < deadline,
                "the reader never got there"
            );
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

/// Answers `resources/read` of `file:///direct` with a fixed result; nothing else.
fn test_shortcut(calls: Arc<std::sync::atomic::AtomicUsize>) -> Shortcut {
    Box::new(move |method, params| {
        calls.fetch_add(1, Ordering::Relaxed);
        (method == "resources/read" && params?.get() == r#"{"uri":"file:///direct"}"#)
            .then(|| Quick::Owned(r#"{"contents":[]}"#.to_owned()))
    })
}

#[tokio::test]
async fn the_shortcut_answers_on_the_reader_and_everything_else_reaches_rmcp() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut h = Harness::started_with(
        Some(test_shortcut(calls.clone())),
        ProtocolVersion::V_2025_11_25,
    )
    .await;
    h.write(
        r#"{"jsonrpc":"2.0","id":"d","method":"resources/read","params":{"uri":"file:///direct"}}"#,
    );
    h.until_written(|l| l == r#"{"jsonrpc":"2.0","id":"d","result":{"contents":[]}}"#);
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    // What the shortcut declines, a method it is never asked about, and a read in a batch go
    // to rmcp.
    h.write(
        r#"{"jsonrpc":"2.0","id":"o","method":"resources/read","params":{"uri":"file:///other"}}"#,
    );
    h.write(r#"{"jsonrpc":"2.0","id":"t","method":"prompts/list"}"#);
    h.write(r#"[{"jsonrpc":"2.0","id":"b","method":"resources/read","params":{"uri":"file:///direct"}}]"#);
    // (In any order: a pipelined read may be taken by the second reader thread.)
    let mut methods = Vec::new();
    for _ in 0..3 {
        let r = h.request().await;
        methods.push(Harness::method(&r.1).to_owned());
    }
    methods.sort();
    assert_eq!(
        methods,
        ["prompts/list", "resources/read", "resources/read"]
    );
    assert_eq!(
        calls.load(Ordering::Relaxed),
        2,
        "asked about the two plain reads only"
    );
    drop(h.output);
}

/// A result the shortcut shares (`Quick::Shared`) goes out whole in every answer that gives it,
/// each with its own id, and every byte of them counts in the output queue until written.
#[tokio::test]
async fn a_shared_result_is_written_whole_for_each_request_that_gets_it() {
    let page: Arc<str> = Arc::from(format!(
        r#"{{"tools":[{}]}}"#,
        "\"x\",".repeat(20_000) + "1"
    ));
    let given = page.clone();
    let shortcut: Shortcut = Box::new(move |method, params| {
        (method == "tools/list" && params.is_none()).then(|| Quick::Shared(given.clone()))
    });
    let mut h = Harness::started_with(Some(shortcut), ProtocolVersion::V_2025_11_25).await;
    let n = 200;
    let mut burst = String::new();
    for i in 0..n {
        burst.push_str(&format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/list"}}"#
        ));
        burst.push('\n');
    }
    h.write(burst.trim_end());
    let answers = || -> Vec<String> {
        h.gate
            .lines()
            .into_iter()
            .filter(|l| !l.contains(r#""id":0,"result":{"protocolVersion""#))
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
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while h.output.session.lock().out_bytes > 0 {
        assert!(std::time::Instant::now() < deadline, "bytes still counted");
        std::thread::yield_now();
    }
    // The answers held the page, not copies of it, and let it go once written.
    assert_eq!(Arc::strong_count(&page), 2);
    drop(h.output);
}

#[tokio::test]
async fn pipelined_reads_are_shared_by_two_threads_and_each_is_answered_once() {
    let threads = Arc::new(Mutex::new(
        std::collections::BTreeMap::<String, usize>::new(),
    ));
    let seen = threads.clone();
    let shortcut: Shortcut = Box::new(move |method, params| {
        let name = std::thread::current().name().unwrap_or("?").to_owned();
        *seen.lock().expect("threads").entry(name).or_default() += 1;
        (method == "resources/read" && params?.get() == r#"{"uri":"file:///direct"}"#)
            .then(|| Quick::Owned(r#"{"contents":[]}"#.to_owned()))
    });
    let mut h = Harness::started_with(Some(shortcut), ProtocolVersion::V_2025_11_25).await;
    // One burst: direct reads, reads the shortcut declines, another method, and the end of the
    // input right after (what was handed to the second thread is still answered).
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
            burst.push_str(&format!(
                r#"{{"jsonrpc":"2.0","id":"t{i}","method":"tools/list"}}"#
            ));
            burst.push('\n');
        }
    }
    let mut input = h.input.try_clone().expect("pipe");
    let writer = std::thread::spawn(move || input.write_all(burst.as_bytes()));
    // The declined reads and the other method reach rmcp.
    let mut methods = Vec::new();
    for _ in 0..6 {
        let r = h.request().await;
        methods.push(Harness::method(&r.1).to_owned());
    }
    methods.sort();
    assert_eq!(methods.iter().filter(|m| *m == "tools/list").count(), 3);
    assert_eq!(methods.iter().filter(|m| *m == "resources/read").count(), 3);
    writer.join().expect("writer").expect("write");
    // The input ends (its last writer closes).
    let (_unused, other) = std::io::pipe().expect("pipe");
    drop(std::mem::replace(&mut h.input, other));
    h.until(|st| st.eof);
    let last = format!(
        r#"{{"jsonrpc":"2.0","id":"d{}","result":{{"contents":[]}}}}"#,
        n - 1
    );
    h.until_written(|l| l == last);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let answered = loop {
        let lines = h.gate.lines();
        let answered: Vec<String> = lines
            .iter()
            .filter(|l| l.ends_with(r#","result":{"contents":[]}}"#))
            .cloned()
            .collect();
        if answered.len() >= n || std::time::Instant::now() > deadline {
            break answered;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut ids: Vec<String> = answered
        .iter()
        .map(|l| l.split('"').nth(7).unwrap_or_default().to_owned())
        .collect();
    ids.sort();
    let mut expected: Vec<String> = (0..n).map(|i| format!("d{i}")).collect();
    expected.sort();
    assert_eq!(ids, expected, "every direct read answered exactly once");
    let threads = threads.lock().expect("threads").clone();
    // Asked about every read and every `tools/list` (both are methods it may answer).
    assert_eq!(threads.values().sum::<usize>(), n + 6, "{threads:?}");
    if std::thread::available_parallelism().is_ok_and(|p| p.get() >= 2) {
        assert!(
            threads.get("stdin-2").is_some_and(|&k| k > 0)
                && threads.get("stdin").is_some_and(|&k| k > 0),
            "both reader threads answered: {threads:?}"
        );
    }
    drop(h.output);
}

#[tokio::test]
async fn reads_the_shortcut_declines_are_not_shared() {
    // Large files go to rmcp: a second reader thread would not make them faster.
    let threads = Arc::new(Mutex::new(std::collections::BTreeSet::<String>::new()));
    let seen = threads.clone();
    let shortcut: Shortcut = Box::new(move |_, _| {
        let name = std::thread::current().name().unwrap_or("?").to_owned();
        seen.lock().expect("threads").insert(name);
        None
    });
    let mut h = Harness::started_with(Some(shortcut), ProtocolVersion::V_2025_11_25).await;
    let n = 200;
    let mut burst = String::new();
    for i in 0..n {
        burst.push_str(&format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"resources/read","params":{{"uri":"file:///large"}}}}"#
        ));
        burst.push('\n');
    }
    h.input.write_all(burst.as_bytes()).expect("write");
    for _ in 0..n {
        let r = h.request().await;
        assert_eq!(Harness::method(&r.1), "resources/read");
        h.answer(r, ServerResult::empty(())).await;
    }
    let threads = threads.lock().expect("threads").clone();
    assert_eq!(threads.into_iter().collect::<Vec<_>>(), ["stdin"]);
    drop(h.output);
}

#[tokio::test]
async fn nothing_is_answered_on_the_reader_in_a_2026_session() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut h = Harness::started_with(
        Some(test_shortcut(calls.clone())),
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
    let mut t = LineTransport::new(r, &output, CancellationToken::new());
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
    // Each of the two reader threads may take one line past the cap.
    assert!(
        in_input <= INPUT_CAP + 2 * (MESSAGE_COST + 200),
        "{in_input}"
    );
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

#[tokio::test]
async fn a_short_answer_is_written_by_rmcps_thread_when_the_writer_sleeps() {
    use std::io::Read as _;
    use std::os::fd::AsRawFd as _;
    let mut h = Harness::started().await;
    let (mut client, stdout) = std::io::pipe().expect("pipe");
    h.output.write_directly(stdout.as_raw_fd());
    let waiting = |st: &State| st.writer_waiting && st.out.is_empty();
    // The writer's own stdout is shut: a short answer still comes, through the pipe.
    h.gate.set(false);
    h.until(waiting);
    h.write(r#"{"jsonrpc":"2.0","id":"short","method":"tools/list"}"#);
    let r = h.request().await;
    h.answer(r, result_of(100)).await;
    if !nowait_supported() {
        // A kernel (or an emulator: qemu-user) without `RWF_NOWAIT` on pipes: the routing
        // thread's write is refused once and turned off, and the answer waits for the writer.
        h.gate.set(true);
        h.until_written(|l| l.starts_with(r#"{"jsonrpc":"2.0","id":"short","#));
        drop(stdout);
        drop(h.output);
        let mut rest = Vec::new();
        client.read_to_end(&mut rest).expect("read");
        assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
        return;
    }
    let mut pfd = libc::pollfd {
        fd: client.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid `pollfd`.
    let ready = unsafe { libc::poll(&mut pfd, 1, 10_000) };
    assert_eq!(ready, 1, "the short answer never reached the pipe");
    let mut line = vec![0u8; 4096];
    let n = client.read(&mut line).expect("read");
    let line = String::from_utf8_lossy(&line[..n]).into_owned();
    assert!(
        line.starts_with(r#"{"jsonrpc":"2.0","id":"short","#),
        "{line}"
    );
    assert!(
        line.ends_with('\n') && line.matches('\n').count() == 1,
        "{line}"
    );
    h.until(|st| st.out_bytes == 0 && st.records.is_empty());
    h.gate.set(true);

    // A client that has left no room in the pipe: the answer waits for the writer, whole.
    let filler = vec![b' '; 1000];
    while write_nowait(stdout.as_raw_fd(), &filler).is_ok() {}
    h.until(waiting);
    h.write(r#"{"jsonrpc":"2.0","id":"full","method":"tools/list"}"#);
    let r = h.request().await;
    h.answer(r, result_of(100)).await;
    h.until_written(|l| l.starts_with(r#"{"jsonrpc":"2.0","id":"full","#));

    // Longer than a pipe takes whole: the writer's.
    h.until(waiting);
    h.write(r#"{"jsonrpc":"2.0","id":"long","method":"tools/list"}"#);
    let r = h.request().await;
    h.answer(r, result_of(NOWAIT_MAX)).await;
    h.until_written(|l| l.starts_with(r#"{"jsonrpc":"2.0","id":"long","#));
    h.until(|st| st.out_bytes == 0 && st.records.is_empty());

    // Nothing else reached the pipe: only the filler.
    drop(stdout);
    drop(h.output);
    let mut rest = Vec::new();
    client.read_to_end(&mut rest).expect("read");
    assert!(
        rest.iter().all(|b| *b == b' '),
        "{}",
        String::from_utf8_lossy(&rest)
    );
    let lines = h.gate.lines();
    assert!(
        !lines.iter().any(|l| l.contains(r#""id":"short""#)),
        "{lines:?}"
    );
}

#[test]
fn only_pipes_and_unix_stream_sockets_take_writes_without_waiting() {
    use std::os::fd::AsRawFd as _;
    let (r, w) = std::io::pipe().expect("pipe");
    assert!(pipe_or_unix_stream(w.as_raw_fd()) && pipe_or_unix_stream(r.as_raw_fd()));
    let (a, _b) = std::os::unix::net::UnixStream::pair().expect("socketpair");
    assert!(pipe_or_unix_stream(a.as_raw_fd()));
    let (d, _e) = std::os::unix::net::UnixDatagram::pair().expect("socketpair");
    assert!(!pipe_or_unix_stream(d.as_raw_fd()));
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp");
    assert!(!pipe_or_unix_stream(udp.as_raw_fd()));
    let file = tempfile::tempfile().expect("file");
    assert!(!pipe_or_unix_stream(file.as_raw_fd()));
    assert!(!pipe_or_unix_stream(-1));
}

/// Whether this kernel takes `RWF_NOWAIT` writes on a pipe: Linux 5.7+ does, so a refusal
/// fails the test, except under an emulator (`MCP_MANIFEST_TEST_EMULATED`, set by
/// `scripts/aarch64-tests.sh`: qemu-user has no `pwritev2`, and its `ENOSYS` turns `write_now`
/// off).
fn nowait_supported() -> bool {
    use std::os::fd::AsRawFd as _;
    let (_r, w) = std::io::pipe().expect("pipe");
    match write_nowait(w.as_raw_fd(), b"x") {
        Ok(_) => true,
        Err(e) => {
            assert!(
                std::env::var_os("MCP_MANIFEST_TEST_EMULATED").is_some()
                    && matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EOPNOTSUPP)),
                "RWF_NOWAIT refused on a pipe: {e}"
            );
            false
        }
    }
}

/// What `Session::write_now` relies on: a pipe or a Unix stream socket that has no room takes
/// a line of up to `PIPE_BUF` bytes whole or not at all, and says so at once (`EAGAIN`).
#[test]
fn a_full_pipe_or_unix_socket_takes_a_short_line_whole_or_not_at_all() {
    use std::os::fd::AsRawFd as _;
    if !nowait_supported() {
        // Nothing to check where the kernel refuses the flag: `write_now` is off there.
        return;
    }
    let (_r, w) = std::io::pipe().expect("pipe");
    let (a, _b) = std::os::unix::net::UnixStream::pair().expect("socketpair");
    for fd in [w.as_raw_fd(), a.as_raw_fd()] {
        for len in [37, 1000, NOWAIT_MAX] {
            let line = vec![b'x'; len];
            let mut lines = 0;
            let refused = loop {
                match write_nowait(fd, &line) {
                    Ok(n) => {
                        assert_eq!(n, len, "a line cut short");
                        lines += 1;
                    }
                    Err(e) => break e,
                }
            };
            assert_eq!(refused.kind(), std::io::ErrorKind::WouldBlock);
            assert!(lines > 0 || len > 37, "fd {fd}, {len} bytes");
        }
    }
}

/// The reader's watch for the next line (`Spin`): caught when a line is there, missed after
/// `SPIN` when none comes, and after `SPIN_MISSES` misses in a row watched only once in
/// `SPIN_RETRY` chances, so a client that sends nothing soon costs almost no spinning.
#[test]
fn the_reader_watches_its_input_a_moment_and_backs_off_when_nothing_comes() {
    use std::io::{Read as _, Write as _};
    use std::os::fd::AsFd as _;
    let (mut r, mut w) = std::io::pipe().expect("pipe");
    let mut spin = Spin::default();
    let start = std::time::Instant::now();
    assert_eq!(spin.watch(r.as_fd()), Watched::Missed);
    assert!(start.elapsed() >= SPIN);
    for _ in 1..SPIN_MISSES {
        assert_eq!(spin.watch(r.as_fd()), Watched::Missed);
    }
    for _ in 1..SPIN_RETRY {
        assert_eq!(spin.watch(r.as_fd()), Watched::Skipped);
    }
    // The retry watches again: a line waiting is caught, and the misses start over.
    w.write_all(b"{}\n").expect("write");
    assert_eq!(spin.watch(r.as_fd()), Watched::Caught);
    let mut line = [0u8; 3];
    r.read_exact(&mut line).expect("read");
    for _ in 0..SPIN_MISSES - 1 {
        assert_eq!(spin.watch(r.as_fd()), Watched::Missed);
    }
    w.write_all(b"{}\n").expect("write");
    assert_eq!(spin.watch(r.as_fd()), Watched::Caught);
    r.read_exact(&mut line).expect("read");
    // A closed input is caught at once (`read` then sees the end).
    drop(w);
    assert_eq!(spin.watch(r.as_fd()), Watched::Caught);
}
