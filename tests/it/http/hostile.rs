//! `serve --http` under hostile clients: slow bodies, answers never read, too many connections
//! from one address, a hanging JWKS endpoint, bodies in 1-byte chunks, a stop with connections
//! waiting in the backlog. Clients that attack come from 127.0.0.2 (all of 127/8 is this
//! machine), the one that must still be served from 127.0.0.1.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::*;

/// A TCP connection to `addr` from `source` (an IPv4 address of this machine), with a receive
/// buffer of `rcvbuf` bytes when given. (Bound before it connects: tokio's `TcpSocket` does
/// that on every platform; the stream is handed back as a blocking std one.)
pub(super) fn connect_from(source: &str, addr: &str, rcvbuf: Option<i32>) -> TcpStream {
    let target: std::net::SocketAddr = addr.parse().expect("an IPv4 address");
    let source: std::net::Ipv4Addr = source.parse().expect("an IPv4 address");
    crate::support::runtime().block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        if let Some(size) = rcvbuf {
            let size = u32::try_from(size).expect("a size");
            socket.set_recv_buffer_size(size).expect("SO_RCVBUF");
        }
        socket.bind((source, 0).into()).expect("bind");
        let stream = socket.connect(target).await.expect("connect");
        let stream = stream.into_std().expect("a std stream");
        stream.set_nonblocking(false).expect("blocking");
        stream
    })
}

const ATTACKER: &str = "127.0.0.2";

#[test]
fn slow_bodies_do_not_lock_out_other_clients_posts() {
    let f = fixture("");
    let web = Web::start(&f, &[]);
    // Eight clients announce 4 MiB bodies (the whole budget of bodies, 32 MiB) and send a byte
    // now and then.
    let stop = Arc::new(AtomicBool::new(false));
    let slow: Vec<_> = (0..8)
        .map(|_| {
            let mut s = connect_from(ATTACKER, &web.addr, None);
            let head = format!(
                "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
                web.addr,
                4 * 1024 * 1024
            );
            s.write_all(head.as_bytes()).unwrap();
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) && s.write_all(b" ").is_ok() {
                    std::thread::sleep(Duration::from_millis(300));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    // Another client's requests are served meanwhile, at once.
    for _ in 0..3 {
        let start = Instant::now();
        web.ok("tools/list", json!({}));
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "a request waited {:?} behind slow bodies",
            start.elapsed()
        );
    }
    // And the slow bodies are cut off within seconds (5 s and a second per MiB), not minutes.
    web.wait_log("status=408");
    stop.store(true, Ordering::SeqCst);
    for t in slow {
        let _ = t.join();
    }
}

#[test]
fn one_clients_unread_answers_delay_only_its_own() {
    // An hour of `idle_timeout`: only the squeeze frees the room unread answers hold.
    let f = fixture("[server.http]\nidle_timeout = \"1h\"\n");
    let big = "0123456789abcde\n".repeat(256 * 1024);
    f.write("docs/big.txt", &big);
    let uri = f.uri("docs/big.txt");
    let web = Web::start(&f, &[]);
    // One address asks for the 4 MiB file 48 times (six budgets' worth) and reads nothing.
    let request = raw_read(&web.addr, &uri);
    let stalled: Vec<TcpStream> = (0..48)
        .map(|_| {
            let mut s = connect_from(ATTACKER, &web.addr, Some(4096));
            s.write_all(request.as_bytes()).expect("write");
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1000));
    // Another address's read gets the next room that comes back: it does not wait for the
    // attacker's 40 queued answers to be made and cut off first.
    let r = web.ok("resources/read", json!({"uri": f.uri("docs/a.md")}));
    assert_eq!(r["contents"][0]["text"], "# A\n");
    let cut_before = web.log().matches("(not all sent)").count();
    assert!(
        cut_before < 24,
        "{cut_before} unread answers were cut off before another client's read was answered"
    );
    drop(stalled);
}

#[test]
fn one_client_address_has_at_most_its_share_of_connections() {
    let f = fixture("[server.http]\nmax_connections_per_client = 4\n");
    let web = Web::start(&f, &[]);
    let held: Vec<TcpStream> = (0..4)
        .map(|_| connect_from(ATTACKER, &web.addr, None))
        .collect();
    // Accepted (they wait for a request): the fifth is answered 503 and closed.
    std::thread::sleep(Duration::from_millis(300));
    let mut fifth = connect_from(ATTACKER, &web.addr, None);
    fifth.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut answer = String::new();
    let _ = fifth.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer:?}");
    web.wait_log("their client address had 4 open already");
    // Another address is served.
    web.ok("tools/list", json!({}));
    // One closes: the address may open another.
    drop(held);
    std::thread::sleep(Duration::from_millis(300));
    let mut again = connect_from(ATTACKER, &web.addr, None);
    again.set_read_timeout(Some(TIMEOUT)).unwrap();
    again
        .write_all(
            format!(
                "GET /healthz HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                web.addr
            )
            .as_bytes(),
        )
        .unwrap();
    let mut answer = String::new();
    let _ = again.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:?}");
}

// Unix only: SIGTERM (see `Web::terminate`).
#[cfg(unix)]
#[test]
fn sigterm_answers_connections_waiting_in_the_backlog_and_never_resets_them() {
    let f = fixture("[server.http]\nmax_connections = 2\n");
    let mut web = Web::start(&f, &[]);
    // Two calls hold both connection slots…
    let calls: Vec<_> = (0..2)
        .map(|i| {
            let url = web.url("/mcp");
            let pf = f.path(&format!("slow{i}.pid"));
            std::thread::spawn(move || {
                post(
                    &url,
                    &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                        "name": "slow", "arguments": {"pidfile": pf, "secs": "2"},
                        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                  "io.modelcontextprotocol/clientCapabilities": {}}}}),
                    &[
                        ("mcp-protocol-version", "2026-07-28"),
                        ("mcp-method", "tools/call"),
                        ("mcp-name", "slow"),
                    ],
                )
            })
        })
        .collect();
    wait_pid(&f.path("slow0.pid"));
    wait_pid(&f.path("slow1.pid"));
    // …so these wait in the kernel's backlog, their requests sent.
    let waiting: Vec<TcpStream> = (0..10)
        .map(|_| {
            let mut s = TcpStream::connect(&web.addr).unwrap();
            s.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", web.addr).as_bytes())
                .unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    web.terminate();
    // Each is answered (503) and closed, not reset.
    for mut s in waiting {
        s.set_read_timeout(Some(TIMEOUT)).unwrap();
        let mut answer = String::new();
        let r = s.read_to_string(&mut answer);
        assert!(r.is_ok(), "reset: {r:?}");
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer:?}");
    }
    // The calls in flight finish with their answers.
    for c in calls {
        assert_eq!(c.join().unwrap().status, 200);
    }
    let (code, _) = web.wait_exit(TIMEOUT);
    assert_eq!(code, Some(0), "{}", web.log());
}

#[test]
fn bodies_in_one_byte_chunks_hold_what_they_are() {
    let f = fixture("");
    let web = Web::start(&f, &[]);
    web.ok("tools/list", json!({}));
    let before = web.rss();
    // Nine clients send a 256 KiB body as 1-byte chunks and stop short of its end.
    const SIZE: usize = 256 * 1024;
    let sent = Arc::new(AtomicUsize::new(0));
    let clients: Vec<TcpStream> = (0..9)
        .map(|_| {
            let mut s = TcpStream::connect(&web.addr).unwrap();
            let head = format!(
                "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
                web.addr
            );
            s.write_all(head.as_bytes()).unwrap();
            s
        })
        .collect();
    let writers: Vec<_> = clients
        .iter()
        .map(|s| {
            let mut w = s.try_clone().unwrap();
            let sent = sent.clone();
            std::thread::spawn(move || {
                let chunk = b"1\r\n \r\n".repeat(4096);
                for _ in 0..SIZE / 4096 {
                    if w.write_all(&chunk).is_err() {
                        return;
                    }
                    sent.fetch_add(4096, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for w in writers {
        let _ = w.join();
    }
    std::thread::sleep(Duration::from_millis(500));
    let grown = grown(before, web.rss());
    // 2.3 MiB of bodies: kept as they came (a buffer per chunk) they held ~40 times that.
    assert!(
        grown < 32 << 20,
        "9 bodies of 256 KiB in 1-byte chunks grew the server by {} MiB",
        grown >> 20
    );
    drop(clients);
    web.ok("tools/list", json!({}));
}

/// A JWKS endpoint that can be made to hang.
struct HangingJwks {
    url: String,
    hang: Arc<AtomicBool>,
    hits: Arc<AtomicUsize>,
}

impl HangingJwks {
    fn start(keys: &[&TestKey]) -> HangingJwks {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/jwks.json", listener.local_addr().expect("bound"));
        let body = json!({"keys": keys.iter().map(|k| k.jwk()).collect::<Vec<_>>()}).to_string();
        let hang = Arc::new(AtomicBool::new(false));
        let hits = Arc::new(AtomicUsize::new(0));
        let (h, n) = (hang.clone(), hits.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { break };
                n.fetch_add(1, Ordering::SeqCst);
                let (h, body) = (h.clone(), body.clone());
                std::thread::spawn(move || {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") && conn.read_exact(&mut byte).is_ok() {
                        head.push(byte[0]);
                    }
                    if h.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_secs(60));
                    }
                    let _ = write!(
                        conn,
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                });
            }
        });
        HangingJwks { url, hang, hits }
    }
}

#[test]
fn cached_keys_keep_working_while_a_jwks_refresh_hangs() {
    let key = TestKey::new("k1");
    let jwks = HangingJwks::start(&[&key]);
    let f = fixture(&format!(
        "[server.http]\nauth = \"oauth\"\n[server.http.oauth]\nissuer = \"{ISSUER}\"\naudience = \"{AUDIENCE}\"\njwks = \"{}\"\n",
        jwks.url
    ));
    let web = Web::start(&f, &[]);
    let good = format!("Bearer {}", key.sign(&claims()));
    assert_eq!(
        web.modern_with("tools/list", json!({}), &[("authorization", &good)])
            .status,
        200
    );
    // The endpoint hangs; tokens with made-up key ids keep coming (each would fetch).
    jwks.hang.store(true, Ordering::SeqCst);
    let strangers: Vec<_> = (0..8)
        .map(|i| {
            let url = web.url("/mcp");
            let token = TestKey::new(&format!("made-up-{i}")).sign(&claims());
            std::thread::spawn(move || {
                let r = agent()
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .header("authorization", &format!("Bearer {token}"))
                    .send(b"{}")
                    .map(|r| r.status().as_u16());
                r.unwrap_or(0)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // A token whose key is cached is answered at once meanwhile.
    for _ in 0..5 {
        let start = Instant::now();
        let r = web.modern_with("tools/list", json!({}), &[("authorization", &good)]);
        assert_eq!(r.status, 200);
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "a good token waited {:?} for a hanging JWKS fetch",
            start.elapsed()
        );
    }
    // The made-up ones are refused (after the one fetch they may wait for), and fetched for
    // once: unknown key ids are rate-limited.
    for s in strangers {
        assert_eq!(s.join().unwrap(), 401);
    }
    assert_eq!(
        jwks.hits.load(Ordering::SeqCst),
        2,
        "one at start, one for the unknown ids"
    );
}
