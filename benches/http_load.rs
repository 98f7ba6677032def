//! Load benchmark of `serve --http` (a benchmark, not a test): requests/s and p50/p99 latency of
//! `tools/call` (a tool running `true`) and `resources/read` (a 1 KiB file) with 1, 10 and 100
//! concurrent clients — on one instance, through nginx in front of two instances (when nginx is
//! installed), and over stdio (one session with that many requests in flight) in the same run —
//! and the server's peak RSS with 100 handshake-era sessions open.
//!
//!   cargo build --release && cargo bench --bench http_load -- [--bin target/release/mcp-manifest] [--secs 3]
//!
//! HTTP clients are threads with one keep-alive connection each, sending 2026-07-28 requests (no
//! session). The server runs as it ships: access lines on (read and dropped here). The load
//! client shares the machine, so the last column, the server's own CPU time per request (from
//! /proc, nginx's not included), is the figure to compare across transports.

// A benchmark prints its figures, stops at the first surprise, and starts the binary and nginx.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::disallowed_methods
)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::channel;
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CONCURRENCY: [usize; 3] = [1, 10, 100];

fn main() {
    let mut bin = PathBuf::from("target/release/mcp-manifest");
    let mut secs = 3.0;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--bin" => bin = PathBuf::from(args.next().expect("--bin PATH")),
            "--secs" => secs = args.next().expect("--secs N").parse().expect("a number"),
            // `cargo bench` passes --bench.
            _ => {}
        }
    }
    let bin = std::fs::canonicalize(&bin).unwrap_or_else(|_| panic!("no binary at {bin:?}"));
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("docs")).unwrap();
    std::fs::write(root.join("docs/one-kib.txt"), "0123456789abcdef".repeat(64)).unwrap();
    std::fs::write(
        root.join("mcp-server.toml"),
        "[files.docs]\nroot = \"docs\"\n\n[tools.t]\ndescription = \"runs true\"\ncommand = [\"true\"]\n",
    )
    .unwrap();
    let uri = format!("file://{}", root.join("docs/one-kib.txt").display());
    let run = Duration::from_secs_f64(secs);
    let ops = [
        (
            "tools/call",
            json!({"name": "t", "arguments": {}}),
            "t".to_owned(),
        ),
        ("resources/read", json!({"uri": uri}), uri.clone()),
    ];
    println!(
        "mcp-manifest {} — {secs} s per cell, {} cores",
        bin.display(),
        cores()
    );
    println!(
        "{:<28} {:>4} {:>10} {:>9} {:>9} {:>10}",
        "", "c", "req/s", "p50 ms", "p99 ms", "srv µs/req"
    );

    // stdio: one session, c requests in flight.
    for (method, params, _) in &ops {
        for c in CONCURRENCY {
            let r = stdio_cell(&bin, &root, method, params, c, run);
            r.print(&format!("stdio {method}"), c);
        }
    }

    // One instance.
    let one = Server::start(&bin, &root);
    for (method, params, name) in &ops {
        for c in CONCURRENCY {
            let r = http_cell(
                &format!("http://{}/mcp", one.addr),
                &[one.child.id()],
                method,
                params,
                name,
                c,
                run,
            );
            r.print(&format!("http {method}"), c);
        }
    }
    println!(
        "http one instance: peak RSS {} MiB after the runs above",
        one.peak_rss_kib() / 1024
    );
    let before = one.rss_kib();
    let sessions = open_sessions(&format!("http://{}/mcp", one.addr), 100);
    println!(
        "http one instance: RSS {} MiB with 100 sessions open (each initialized, one call, a GET stream) — {} MiB before them; peak {} MiB",
        one.rss_kib() / 1024,
        before / 1024,
        one.peak_rss_kib() / 1024
    );
    drop(sessions);
    drop(one);

    // Two instances behind nginx.
    match Nginx::start(&bin, &root, 2) {
        None => println!("nginx: not installed, skipped"),
        Some(ng) => {
            for (method, params, name) in &ops {
                for c in CONCURRENCY {
                    let pids: Vec<u32> = ng.servers.iter().map(|s| s.child.id()).collect();
                    let r = http_cell(&ng.url, &pids, method, params, name, c, run);
                    r.print(&format!("nginx+2 {method}"), c);
                }
            }
            let rss: Vec<u64> = ng.servers.iter().map(|s| s.peak_rss_kib() / 1024).collect();
            println!("nginx+2: peak RSS of the instances {rss:?} MiB");
        }
    }
}

/// User + system CPU time of these processes (all their threads).
fn cpu(pids: &[u32]) -> Duration {
    let hz = clock_ticks_per_second();
    let ticks: u64 = pids
        .iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).ok())
        .filter_map(|stat| {
            let rest = stat.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            // utime and stime, fields 14 and 15 of stat: 12th and 13th after the name.
            Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
        })
        .sum();
    Duration::from_secs_f64(ticks as f64 / hz)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The outcome of one cell: every request's latency over the wall time.
struct Cell {
    latencies: Vec<Duration>,
    wall: Duration,
    errors: usize,
    /// CPU time the server process(es) used during the cell.
    server_cpu: Duration,
}

impl Cell {
    fn print(&self, what: &str, c: usize) {
        let mut l = self.latencies.clone();
        l.sort();
        let p = |q: f64| {
            l.get(((l.len() as f64 * q) as usize).min(l.len().saturating_sub(1)))
                .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
        };
        println!(
            "{what:<28} {c:>4} {:>10.0} {:>9.3} {:>9.3} {:>10.0}{}",
            l.len() as f64 / self.wall.as_secs_f64(),
            p(0.5),
            p(0.99),
            self.server_cpu.as_secs_f64() * 1e6 / l.len().max(1) as f64,
            if self.errors > 0 {
                format!("  ({} errors)", self.errors)
            } else {
                String::new()
            }
        );
    }
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}
    })
}

/// `c` threads, each with one keep-alive connection, sending requests back to back for `run`.
fn http_cell(
    url: &str,
    pids: &[u32],
    method: &str,
    params: &Value,
    name: &str,
    c: usize,
    run: Duration,
) -> Cell {
    let mut p = params.clone();
    p["_meta"] = meta();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": p}).to_string();
    let barrier = Arc::new(Barrier::new(c + 1));
    let threads: Vec<_> = (0..c)
        .map(|_| {
            let (url, body, method, name) = (
                url.to_owned(),
                body.clone(),
                method.to_owned(),
                name.to_owned(),
            );
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .timeout_global(Some(Duration::from_secs(30)))
                    .build()
                    .into();
                let send = || {
                    let mut r = agent
                        .post(&url)
                        .header("content-type", "application/json")
                        .header("accept", "application/json, text/event-stream")
                        .header("mcp-protocol-version", "2026-07-28")
                        .header("mcp-method", &method)
                        .header("mcp-name", &name)
                        .send(body.as_bytes())
                        .ok()?;
                    let ok = r.status() == 200;
                    let text = r.body_mut().read_to_string().ok()?;
                    (ok && text.contains("\"result\"") && !text.contains("\"isError\":true"))
                        .then_some(())
                };
                send(); // connect and warm up
                barrier.wait();
                let start = Instant::now();
                let mut lat = Vec::new();
                let mut errors = 0;
                while start.elapsed() < run {
                    let t0 = Instant::now();
                    match send() {
                        Some(()) => lat.push(t0.elapsed()),
                        None => errors += 1,
                    }
                }
                (lat, errors)
            })
        })
        .collect();
    barrier.wait();
    let cpu0 = cpu(pids);
    let start = Instant::now();
    let mut cell = Cell {
        latencies: Vec::new(),
        wall: Duration::ZERO,
        errors: 0,
        server_cpu: Duration::ZERO,
    };
    for t in threads {
        let (l, e) = t.join().unwrap();
        cell.latencies.extend(l);
        cell.errors += e;
    }
    cell.wall = start.elapsed();
    cell.server_cpu = cpu(pids).saturating_sub(cpu0);
    cell
}

/// stdio: one session; `c` requests kept in flight for `run`.
fn stdio_cell(
    bin: &Path,
    root: &Path,
    method: &str,
    params: &Value,
    c: usize,
    run: Duration,
) -> Cell {
    let mut child = Command::new(bin)
        .args(["serve", "mcp-server.toml"])
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = std::io::BufWriter::new(child.stdin.take().unwrap());
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = channel::<(i64, Instant, bool)>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if let Some(id) = v.get("id").and_then(Value::as_i64) {
                let ok = v.get("result").is_some() && v["result"]["isError"] != true;
                if tx.send((id, Instant::now(), ok)).is_err() {
                    break;
                }
            }
        }
    });
    let mut send = |id: i64, method: &str, params: &Value| {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    };
    send(
        0,
        "initialize",
        &json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
    );
    rx.recv().unwrap();
    let mut sent = std::collections::HashMap::new();
    let mut next = 1;
    let mut cell = Cell {
        latencies: Vec::new(),
        wall: Duration::ZERO,
        errors: 0,
        server_cpu: Duration::ZERO,
    };
    let pid = [child.id()];
    let cpu0 = cpu(&pid);
    let start = Instant::now();
    while start.elapsed() < run || !sent.is_empty() {
        while sent.len() < c && start.elapsed() < run {
            sent.insert(next, Instant::now());
            send(next, method, params);
            next += 1;
        }
        let (id, at, ok) = rx.recv().unwrap();
        if let Some(t0) = sent.remove(&id) {
            if ok {
                cell.latencies.push(at - t0);
            } else {
                cell.errors += 1;
            }
        }
    }
    cell.wall = start.elapsed();
    cell.server_cpu = cpu(&pid).saturating_sub(cpu0);
    drop(stdin);
    let _ = child.wait();
    cell
}

/// `serve --http` on a free port, stderr read and dropped.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(bin: &Path, root: &Path) -> Server {
        let mut child = Command::new(bin)
            .args(["serve", "--http", "127.0.0.1:0", "mcp-server.toml"])
            .current_dir(root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let err = child.stderr.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.split("at http://").nth(1) {
                    let _ = tx.send(rest.split('/').next().unwrap_or_default().to_owned());
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("server start");
        Server { child, addr }
    }

    fn status_kib(&self, key: &str) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    }

    fn rss_kib(&self) -> u64 {
        self.status_kib("VmRSS:")
    }

    fn peak_rss_kib(&self) -> u64 {
        self.status_kib("VmHWM:")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Opens `n` handshake-era sessions (initialize, initialized, one tool call, a GET stream each)
/// and keeps them open while the returned value lives.
fn open_sessions(url: &str, n: usize) -> Vec<ureq::Body> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let held = Arc::new(Mutex::new(Vec::new()));
    for _ in 0..n {
        let r = agent
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .send(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"}}})
                .to_string()
                .as_bytes(),
            )
            .unwrap();
        let id = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let _ = r.into_body().read_to_string();
        let post = |body: Value| {
            let mut r = agent
                .post(url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-session-id", &id)
                .header("mcp-protocol-version", "2025-11-25")
                .send(body.to_string().as_bytes())
                .unwrap();
            let _ = r.body_mut().read_to_string();
        };
        post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {}}}),
        );
        let stream = agent
            .get(url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &id)
            .header("mcp-protocol-version", "2025-11-25")
            .call()
            .unwrap();
        held.lock().unwrap().push(stream.into_body());
    }
    Arc::try_unwrap(held).ok().unwrap().into_inner().unwrap()
}

/// nginx in front of `n` instances (round robin for 2026-07-28 requests, as in deploy/nginx).
struct Nginx {
    url: String,
    servers: Vec<Server>,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Nginx {
    fn start(bin: &Path, root: &Path, n: usize) -> Option<Nginx> {
        let nginx = ["nginx", "/usr/sbin/nginx"]
            .into_iter()
            .find(|p| Command::new(p).arg("-v").output().is_ok())?;
        let servers: Vec<Server> = (0..n).map(|_| Server::start(bin, root)).collect();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let upstreams: String = servers
            .iter()
            .map(|s| format!("    server {};\n", s.addr))
            .collect();
        let user = if is_root() { "user root;" } else { "" };
        let conf = format!(
            "{user}\nworker_processes auto;\ndaemon off;\npid {d}/pid;\nerror_log {d}/error.log;\n\
             events {{ worker_connections 4096; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/b; proxy_temp_path {d}/p; fastcgi_temp_path {d}/f; uwsgi_temp_path {d}/u; scgi_temp_path {d}/s;\n\
             map $http_mcp_method $mcp_affinity {{ \"\" $remote_addr; default \"\"; }}\n\
             upstream mcp {{\n    hash $mcp_affinity consistent;\n{upstreams}    keepalive 128;\n  }}\n\
             server {{\n    listen 127.0.0.1:{port};\n    location / {{\n      proxy_pass http://mcp;\n      proxy_http_version 1.1;\n      proxy_set_header Connection \"\";\n      proxy_set_header Host $host;\n      proxy_buffering off;\n    }}\n  }}\n}}\n"
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let child = Command::new(nginx)
            .arg("-c")
            .arg(dir.path().join("nginx.conf"))
            .arg("-p")
            .arg(dir.path())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Nginx {
            url: format!("http://127.0.0.1:{port}/mcp"),
            servers,
            child,
            _dir: dir,
        })
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        stop_gracefully(&mut self.child);
        let _ = self.child.wait();
    }
}

// What differs per platform. CPU time is read from /proc (Linux: elsewhere the CPU figures are 0);
// nginx runs as root's `user root` and stops on SIGQUIT (Unix; elsewhere it is killed).

#[cfg(unix)]
fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64
}

#[cfg(not(unix))]
fn clock_ticks_per_second() -> f64 {
    100.0
}

#[cfg(unix)]
fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[cfg(not(unix))]
fn is_root() -> bool {
    false
}

#[cfg(unix)]
fn stop_gracefully(child: &mut Child) {
    // SAFETY: kill(2) on our own child (SIGQUIT: nginx's graceful stop).
    unsafe {
        libc::kill(child.id() as i32, libc::SIGQUIT);
    }
}

#[cfg(not(unix))]
fn stop_gracefully(child: &mut Child) {
    let _ = child.kill();
}
