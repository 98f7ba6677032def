//! The HTTP loads of `cargo bench --bench memory` (issues 34 and 35), each against a fresh
//! server (`serve --http`), attackers on 127.0.0.2 and the client that must still be served on
//! 127.0.0.1; each prints what the victim saw and the server's peak RSS (VmHWM):
//!
//! - `http-unread`: 200 clients ask for a 5 MiB file and never read; then a 1-byte read;
//! - `http-reads`: 16 clients at once read a 10 MiB binary file (the default `max_size`) and
//!   take their answers: the time they all took and the peak;
//! - `http-slow-bodies`: 8 clients announce 4 MiB bodies and send a byte every 300 ms, while
//!   another client sends a request every 100 ms for 12 s: its slowest answer, and the time it
//!   spent waiting;
//! - `http-chunks`: 9 clients each send a 1 MiB body as 1-byte chunks (all but its end; a
//!   larger one takes longer than its time limit to arrive, 5 s + 1 s a MiB, and gets 408 first);
//! - `http-jwks-hang`: the JWKS endpoint hangs and 50 tokens with made-up key ids arrive; then
//!   requests with a good token;
//! - `http-kidless`: 20 tokens without `kid` against a JWKS of 2 399 keys, and meanwhile
//!   requests with a good token;
//! - `http-conn-flood`: one address opens 1 024 connections and sends nothing; then another
//!   client's request;
//! - `http-sigterm`: two calls hold both connection slots (`max_connections = 2`), 33 clients
//!   wait in the backlog with their requests sent, then SIGTERM: how many were answered;
//! - `http-sessions`: 1 000 handshake-era sessions (`max_sessions = 1000`), each asking for
//!   8 MiB of answers it never reads (its resume buffer full), then a new session's call.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{MIB, mib, status};

pub(crate) const LOADS: [&str; 9] = [
    "http-unread",
    "http-reads",
    "http-slow-bodies",
    "http-chunks",
    "http-jwks-hang",
    "http-kidless",
    "http-conn-flood",
    "http-sigterm",
    "http-sessions",
];

const ATTACKER: &str = "127.0.0.2";
const VICTIM: &str = "127.0.0.1";

pub(crate) fn run(bin: &Path, name: &str) {
    match name {
        "http-unread" => unread(bin),
        "http-reads" => reads(bin),
        "http-slow-bodies" => slow_bodies(bin),
        "http-chunks" => chunks(bin),
        "http-jwks-hang" => jwks_hang(bin),
        "http-kidless" => kidless(bin),
        "http-conn-flood" => conn_flood(bin),
        "http-sigterm" => sigterm(bin),
        "http-sessions" => sessions(bin),
        _ => unreachable!(),
    }
}

/// A server on a fresh folder: `docs/` with `files` (name, bytes), the manifest's `extra`.
struct Server {
    child: Child,
    addr: String,
    dir: tempfile::TempDir,
    log: Arc<Mutex<String>>,
}

impl Server {
    fn start(bin: &Path, files: &[(&str, usize)], extra: &str) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("docs")).unwrap();
        for (name, size) in files {
            let line = "0123456789abcdef0123456789abcde\n";
            let text = line.repeat(size / line.len() + 1);
            std::fs::write(d.join("docs").join(name), &text[..*size]).unwrap();
        }
        std::fs::write(
            d.join("mcp-server.toml"),
            format!(
                "[files.docs]\nroot = \"docs\"\n\n[tools.slow]\ndescription = \"sleeps\"\nrun = 'sleep \"$secs\"'\nparams.secs = {{ type = \"string\" }}\n\n{extra}"
            ),
        )
        .unwrap();
        let mut child = Command::new(bin)
            .args(["serve", "--http", "127.0.0.1:0", "mcp-server.toml"])
            .current_dir(d)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the server");
        let err = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let l = log.clone();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.split("at http://").nth(1) {
                    let _ = tx.send(rest.split('/').next().unwrap_or_default().to_owned());
                }
                let mut l = l.lock().unwrap();
                if l.len() < 4 * MIB as usize {
                    l.push_str(&line);
                    l.push('\n');
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the server started");
        Server {
            child,
            addr,
            dir,
            log,
        }
    }

    fn uri(&self, name: &str) -> String {
        let p = std::fs::canonicalize(self.dir.path().join("docs").join(name)).unwrap();
        format!("file://{}", p.display())
    }

    fn peak(&self) -> u64 {
        status(self.child.id(), "VmHWM")
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A connection to `addr` from `source`, with a receive buffer of `rcvbuf` bytes when given
/// (bound before it connects: tokio's `TcpSocket` does that on every platform; handed back as a
/// blocking std stream).
fn connect_from(source: &str, addr: &str, rcvbuf: Option<i32>) -> std::io::Result<TcpStream> {
    let target: std::net::SocketAddr = addr.parse().expect("an IPv4 address");
    let source: std::net::Ipv4Addr = source.parse().expect("an IPv4 address");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4()?;
        if let Some(size) = rcvbuf {
            socket.set_recv_buffer_size(u32::try_from(size).unwrap_or(0))?;
        }
        socket.bind((source, 0).into())?;
        let stream = socket.connect(target).await?.into_std()?;
        stream.set_nonblocking(false)?;
        Ok(stream)
    })
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {}})
}

/// A 2026-07-28 POST (with extra headers).
fn modern(addr: &str, method: &str, mut params: Value, extra: &str) -> String {
    let name = params
        .get("uri")
        .or_else(|| params.get("name"))
        .and_then(Value::as_str)
        .map(|n| format!("Mcp-Name: {n}\r\n"))
        .unwrap_or_default();
    params["_meta"] = meta();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n{name}{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Sends `request` from `source` on a connection of its own and reads the whole answer: its
/// status and how long it took (`None` when it failed).
fn exchange(source: &str, addr: &str, request: &str, limit: Duration) -> (Option<u16>, Duration) {
    let start = Instant::now();
    let status = (|| {
        let mut s = connect_from(source, addr, None).ok()?;
        s.set_read_timeout(Some(limit)).ok()?;
        let mut request = request.to_owned();
        request = request.replacen("\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1);
        s.write_all(request.as_bytes()).ok()?;
        let mut out = Vec::new();
        s.read_to_end(&mut out).ok()?;
        let text = String::from_utf8_lossy(&out[..out.len().min(64)]).into_owned();
        text.split_whitespace().nth(1)?.parse().ok()
    })();
    (status, start.elapsed())
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn unread(bin: &Path) {
    let server = Server::start(bin, &[("big.txt", 5 * MIB as usize), ("one.txt", 1)], "");
    let request = modern(
        &server.addr,
        "resources/read",
        json!({"uri": server.uri("big.txt")}),
        "",
    );
    let stalled: Vec<TcpStream> = (0..200)
        .filter_map(|_| {
            let mut s = connect_from(ATTACKER, &server.addr, Some(4096)).ok()?;
            s.write_all(request.as_bytes()).ok()?;
            Some(s)
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let one = modern(
        &server.addr,
        "resources/read",
        json!({"uri": server.uri("one.txt")}),
        "",
    );
    let (status, took) = exchange(VICTIM, &server.addr, &one, Duration::from_secs(120));
    println!(
        "http-unread: {} clients never reading a 5 MiB answer; another client's 1-byte read: {status:?} in {}, peak RSS {:.0} MiB",
        stalled.len(),
        secs(took),
        mib(server.peak())
    );
}

fn reads(bin: &Path) {
    let server = Server::start(bin, &[], "");
    // Bytes that are not UTF-8: read as a blob (base64), the heaviest answer per byte.
    let mut x: u32 = 7;
    let bytes: Vec<u8> = (0..10 * MIB - 1024)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (x >> 16) as u8 | 0x80
        })
        .collect();
    std::fs::write(server.dir.path().join("docs/large.bin"), bytes).unwrap();
    let request = modern(
        &server.addr,
        "resources/read",
        json!({"uri": server.uri("large.bin")}),
        "",
    );
    let n = 16;
    let start = Instant::now();
    let clients: Vec<_> = (0..n)
        .map(|_| {
            let (addr, request) = (server.addr.clone(), request.clone());
            std::thread::spawn(move || {
                exchange(VICTIM, &addr, &request, Duration::from_secs(300)).0
            })
        })
        .collect();
    let answered = clients
        .into_iter()
        .map(|c| c.join().ok().flatten())
        .filter(|status| *status == Some(200))
        .count();
    println!(
        "http-reads: {n} clients at once read a 10 MiB binary file: {answered} answered in {}, peak RSS {:.0} MiB",
        secs(start.elapsed()),
        mib(server.peak())
    );
}

fn slow_bodies(bin: &Path) {
    let server = Server::start(bin, &[], "");
    let stop = Arc::new(AtomicBool::new(false));
    let slow: Vec<_> = (0..8)
        .map(|_| {
            let addr = server.addr.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let Ok(mut s) = connect_from(ATTACKER, &addr, None) else {
                    return;
                };
                let head = format!(
                    "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
                    4 * MIB
                );
                let _ = s.write_all(head.as_bytes());
                while !stop.load(Ordering::SeqCst) && s.write_all(b" ").is_ok() {
                    std::thread::sleep(Duration::from_millis(300));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let list = modern(&server.addr, "tools/list", json!({}), "");
    let (mut worst, mut waited, mut n) = (Duration::ZERO, Duration::ZERO, 0);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(12) {
        let (_, took) = exchange(VICTIM, &server.addr, &list, Duration::from_secs(120));
        worst = worst.max(took);
        if took > Duration::from_millis(500) {
            waited += took;
        }
        n += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::SeqCst);
    for t in slow {
        let _ = t.join();
    }
    println!(
        "http-slow-bodies: 8 slow 4 MiB bodies; another client's {n} requests over {}: slowest {}, {} spent waiting over 0.5 s, peak RSS {:.0} MiB",
        secs(start.elapsed()),
        secs(worst),
        secs(waited),
        mib(server.peak())
    );
}

fn chunks(bin: &Path) {
    let server = Server::start(bin, &[], "");
    const SIZE: usize = 1024 * 1024;
    let before = status(server.child.id(), "VmRSS");
    let writers: Vec<_> = (0..9)
        .map(|_| {
            let addr = server.addr.clone();
            std::thread::spawn(move || -> Option<TcpStream> {
                let mut s = connect_from(ATTACKER, &addr, None).ok()?;
                let head = format!(
                    "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                );
                s.write_all(head.as_bytes()).ok()?;
                let piece = b"1\r\n \r\n".repeat(64 * 1024);
                for _ in 0..SIZE / (64 * 1024) {
                    s.write_all(&piece).ok()?;
                }
                Some(s)
            })
        })
        .collect();
    let start = Instant::now();
    let held: Vec<_> = writers
        .into_iter()
        .filter_map(|w| w.join().ok().flatten())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    println!(
        "http-chunks: {} bodies of 1 MiB as 1-byte chunks sent in {}: RSS {:.0} MiB (from {:.0}), peak {:.0} MiB",
        held.len(),
        secs(start.elapsed()),
        mib(status(server.child.id(), "VmRSS")),
        mib(before),
        mib(server.peak())
    );
}

/// Ed25519 signing keys (ring), for tokens signed by hand and a JWKS.
struct Key {
    kid: String,
    pair: ring::signature::Ed25519KeyPair,
    jwk: Value,
}

fn b64url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl Key {
    fn new(kid: &str, seed: u8) -> Key {
        use ring::signature::KeyPair as _;
        let pair = ring::signature::Ed25519KeyPair::from_seed_unchecked(&[seed; 32]).unwrap();
        let x = b64url(pair.public_key().as_ref());
        Key {
            kid: kid.to_owned(),
            pair,
            jwk: json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "alg": "EdDSA", "use": "sig"}),
        }
    }

    fn token(&self, with_kid: bool) -> String {
        let mut header = json!({"alg": "EdDSA", "typ": "JWT"});
        if with_kid {
            header["kid"] = json!(self.kid);
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let claims = json!({"iss": "https://issuer.example", "aud": "mcp", "sub": "bench",
                            "exp": now + 3600, "scope": "mcp"});
        let message = format!(
            "{}.{}",
            b64url(header.to_string().as_bytes()),
            b64url(claims.to_string().as_bytes())
        );
        let signature = self.pair.sign(message.as_bytes());
        format!("{message}.{}", b64url(signature.as_ref()))
    }
}

/// A JWKS served on 127.0.0.1 that hangs every answer once `hang` is set.
fn jwks_server(doc: String, hang: Arc<AtomicBool>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { break };
            let (doc, hang) = (doc.clone(), hang.clone());
            std::thread::spawn(move || {
                let mut head = [0u8; 4096];
                let _ = conn.read(&mut head);
                if hang.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_secs(300));
                }
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{doc}",
                    doc.len()
                );
            });
        }
    });
    url
}

fn oauth(url: &str) -> String {
    format!(
        "[server.http]\nauth = \"oauth\"\n[server.http.oauth]\nissuer = \"https://issuer.example\"\naudience = \"mcp\"\njwks = \"{url}\"\n"
    )
}

/// Requests with `token` every 100 ms for `for_`: the slowest, and how many were 200.
fn good_requests(server: &Server, token: &str, for_: Duration) -> (Duration, usize, usize) {
    let list = modern(
        &server.addr,
        "tools/list",
        json!({}),
        &format!("Authorization: Bearer {token}\r\n"),
    );
    let (mut worst, mut ok, mut n) = (Duration::ZERO, 0, 0);
    let start = Instant::now();
    while start.elapsed() < for_ {
        let (status, took) = exchange(VICTIM, &server.addr, &list, Duration::from_secs(120));
        worst = worst.max(took);
        ok += usize::from(status == Some(200));
        n += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    (worst, ok, n)
}

fn jwks_hang(bin: &Path) {
    let key = Key::new("good", 1);
    let hang = Arc::new(AtomicBool::new(false));
    let url = jwks_server(json!({"keys": [key.jwk]}).to_string(), hang.clone());
    let server = Server::start(bin, &[], &oauth(&url));
    let good = key.token(true);
    hang.store(true, Ordering::SeqCst);
    let strangers: Vec<_> = (0..50)
        .map(|i| {
            let request = modern(
                &server.addr,
                "tools/list",
                json!({}),
                &format!(
                    "Authorization: Bearer {}\r\n",
                    Key::new(&format!("made-up-{i}"), 2).token(true)
                ),
            );
            let addr = server.addr.clone();
            std::thread::spawn(move || {
                exchange(ATTACKER, &addr, &request, Duration::from_secs(120))
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let (worst, ok, n) = good_requests(&server, &good, Duration::from_secs(8));
    for s in strangers {
        let _ = s.join();
    }
    println!(
        "http-jwks-hang: JWKS hanging, 50 tokens with unknown key ids; good tokens: {ok}/{n} answered 200, slowest {}, peak RSS {:.0} MiB",
        secs(worst),
        mib(server.peak())
    );
}

fn kidless(bin: &Path) {
    let good = Key::new("good", 1);
    let mut keys: Vec<Value> = vec![good.jwk.clone()];
    for i in 0..2398u32 {
        let k = Key::new(&format!("k{i}"), (i % 250) as u8 + 3);
        let mut jwk = k.jwk;
        jwk["kid"] = json!(format!("k{i}"));
        keys.push(jwk);
    }
    let url = jwks_server(
        json!({"keys": keys}).to_string(),
        Arc::new(AtomicBool::new(false)),
    );
    let server = Server::start(bin, &[], &oauth(&url));
    // Signed by a key the server does not have, and naming none: every key of the algorithm is
    // tried.
    let stranger = Key::new("elsewhere", 255).token(false);
    let start = Instant::now();
    let attackers: Vec<_> = (0..20)
        .map(|_| {
            let request = modern(
                &server.addr,
                "tools/list",
                json!({}),
                &format!("Authorization: Bearer {stranger}\r\n"),
            );
            let addr = server.addr.clone();
            std::thread::spawn(move || {
                exchange(ATTACKER, &addr, &request, Duration::from_secs(300))
            })
        })
        .collect();
    let (worst, ok, n) = good_requests(&server, &good.token(true), Duration::from_secs(4));
    let mut slowest_attack = Duration::ZERO;
    for a in attackers {
        if let Ok((_, took)) = a.join() {
            slowest_attack = slowest_attack.max(took);
        }
    }
    println!(
        "http-kidless: 20 tokens without kid against 2 399 keys (all refused within {}; {} from the start); good tokens meanwhile: {ok}/{n} answered 200, slowest {}, peak RSS {:.0} MiB",
        secs(slowest_attack),
        secs(start.elapsed()),
        secs(worst),
        mib(server.peak())
    );
}

fn conn_flood(bin: &Path) {
    let server = Server::start(bin, &[], "");
    let flood: Vec<TcpStream> = (0..1024)
        .filter_map(|_| connect_from(ATTACKER, &server.addr, None).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let list = modern(&server.addr, "tools/list", json!({}), "");
    let (status, took) = exchange(VICTIM, &server.addr, &list, Duration::from_secs(120));
    println!(
        "http-conn-flood: one address holds {} silent connections; another client's request: {status:?} in {}, peak RSS {:.0} MiB",
        flood.len(),
        secs(took),
        mib(server.peak())
    );
}

fn sigterm(bin: &Path) {
    let mut server = Server::start(bin, &[], "[server.http]\nmax_connections = 2\n");
    let call = modern(
        &server.addr,
        "tools/call",
        json!({"name": "slow", "arguments": {"secs": "2"}}),
        "",
    );
    let calls: Vec<_> = (0..2)
        .map(|_| {
            let (addr, call) = (server.addr.clone(), call.clone());
            std::thread::spawn(move || exchange(VICTIM, &addr, &call, Duration::from_secs(60)))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(700));
    let healthz = format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr);
    let waiting: Vec<TcpStream> = (0..33)
        .filter_map(|_| {
            let mut s = TcpStream::connect(&server.addr).ok()?;
            s.write_all(healthz.as_bytes()).ok()?;
            Some(s)
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    terminate(&mut server.child);
    let (mut answered, mut reset) = (0, 0);
    for mut s in waiting {
        let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
        let mut out = String::new();
        match s.read_to_string(&mut out) {
            Ok(_) if out.starts_with("HTTP/1.1") => answered += 1,
            _ => reset += 1,
        }
    }
    let finished = calls
        .into_iter()
        .map(|c| c.join())
        .filter(|r| matches!(r, Ok((Some(200), _))))
        .count();
    println!(
        "http-sigterm: 33 connections in the backlog at SIGTERM: {answered} answered, {reset} reset or unanswered; calls in flight finished: {finished}/2"
    );
}

fn sessions(bin: &Path) {
    const N: usize = 1000;
    let server = Server::start(
        bin,
        &[("four.txt", 4 * MIB as usize)],
        "[server.http]\nmax_sessions = 1000\nmax_connections = 4096\nmax_connections_per_client = 4096\n",
    );
    let uri = server.uri("four.txt");
    let before = status(server.child.id(), "VmRSS");
    let start = Instant::now();
    let legacy = |id: Option<&str>, body: &Value| {
        let session = id.map_or(String::new(), |s| {
            format!("Mcp-Session-Id: {s}\r\nMcp-Protocol-Version: 2025-11-25\r\n")
        });
        let body = body.to_string();
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{session}Content-Length: {}\r\n\r\n{body}",
            server.addr,
            body.len()
        )
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
    let read =
        json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}});
    let mut made = 0;
    for _ in 0..N {
        let Ok(mut s) = TcpStream::connect(&server.addr) else {
            continue;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
        if s.write_all(legacy(None, &init).as_bytes()).is_err() {
            continue;
        }
        let mut head = vec![0u8; 2048];
        let n = s.read(&mut head).unwrap_or(0);
        let head = String::from_utf8_lossy(&head[..n]).to_lowercase();
        let Some(id) = head
            .split("mcp-session-id: ")
            .nth(1)
            .and_then(|r| r.split("\r\n").next())
            .map(str::to_owned)
        else {
            continue;
        };
        made += 1;
        // Two 4 MiB reads whose answers are never read: the session's 8 MiB.
        for _ in 0..2 {
            if let Ok(mut c) = TcpStream::connect(&server.addr) {
                let _ = c.write_all(legacy(Some(&id), &read).as_bytes());
                // Cut once the stream began.
                let mut first = [0u8; 256];
                let _ = c.set_read_timeout(Some(Duration::from_secs(60)));
                let _ = c.read(&mut first);
            }
        }
    }
    let made_in = start.elapsed();
    std::thread::sleep(Duration::from_secs(2));
    let list = modern(&server.addr, "tools/list", json!({}), "");
    let (status_after, took) = exchange(VICTIM, &server.addr, &list, Duration::from_secs(60));
    println!(
        "http-sessions: {made} sessions each asking for 8 MiB it never reads (made in {}): RSS {:.0} MiB (from {:.0}), peak {:.0} MiB; a request after: {status_after:?} in {}",
        secs(made_in),
        mib(status(server.child.id(), "VmRSS")),
        mib(before),
        mib(server.peak()),
        secs(took)
    );
    if server.log().contains("panicked") {
        println!("  the server panicked: see its log");
    }
}

/// SIGTERM to the server (the bench reads /proc: it runs on Linux).
#[cfg(unix)]
fn terminate(child: &mut Child) {
    // SAFETY: a signal to the child this bench started.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
}

/// Windows has no SIGTERM (and no /proc: the bench's figures are Linux's).
#[cfg(not(unix))]
fn terminate(child: &mut Child) {
    let _ = child.kill();
}
