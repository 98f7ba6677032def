//! Is the runtime ever blocked while watches are set up or a manifest reloads? (a benchmark, not
//! a test): for trees of 10 000, 20 000 and 40 000 folders served by one watched files source, a
//! `ping` every 2 ms from the moment the session starts until the watcher watches every folder
//! (a subscription is answered then), and again while an edited manifest is reloaded (until its
//! `notifications/tools/list_changed` arrives, and 200 ms beyond). Prints the setup time (linear
//! in the folders?), the number of pings and their worst and p99 round trips — issue 8's target is
//! a worst ping ≤ 10 ms — beside the same pings to an idle server in the same run.
//!
//!   cargo build --release && cargo bench --bench watch_setup -- [--bin target/release/mcp-manifest] [--folders 10000,20000,40000]

// A benchmark prints its figures, stops at the first surprise, and starts the binary.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::disallowed_methods
)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const PING_EVERY: Duration = Duration::from_millis(2);

fn main() {
    let mut bin = PathBuf::from("target/release/mcp-manifest");
    let mut sizes = vec![10_000, 20_000, 40_000];
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--bin" => bin = PathBuf::from(args.next().expect("--bin PATH")),
            "--folders" => {
                sizes = args
                    .next()
                    .expect("--folders N,M")
                    .split(',')
                    .map(|n| n.parse().expect("a number"))
                    .collect()
            }
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    let bin = std::fs::canonicalize(&bin).expect("build the release binary first");
    println!(
        "{:>8} {:>10} | {:>28} | {:>28} | {:>28}",
        "folders",
        "setup ms",
        "pings during setup: n worst p99",
        "during reload: n worst p99",
        "idle: n worst p99"
    );
    for n in sizes {
        let dir = tempfile::tempdir().expect("temp dir");
        make_tree(dir.path(), n);
        let manifest = dir.path().join("mcp-server.toml");
        let mut s = Server::start(&bin, &manifest);
        s.initialize();
        // Setup: subscribe (answered once every folder is watched) while pinging.
        let sentinel = format!("file://{}/tree/g0/d0/f.txt", dir.path().display());
        let t0 = Instant::now();
        s.send(json!({"jsonrpc": "2.0", "id": "sub", "method": "resources/subscribe", "params": {"uri": sentinel}}));
        let setup = s.ping_until(|v, _| v["id"] == "sub", Duration::ZERO);
        let setup_ms = setup.done.duration_since(t0).as_secs_f64() * 1e3;
        // Reload: add a tool, so the reload ends with tools/list_changed.
        let mut text = std::fs::read_to_string(&manifest).expect("manifest");
        text.push_str("\n[tools.added]\ndescription = \"added\"\ncommand = [\"true\"]\n");
        std::fs::write(&manifest, text).expect("edit");
        let reload = s.ping_until(
            |v, _| v["method"] == "notifications/tools/list_changed",
            Duration::from_millis(200),
        );
        // Idle: the same pings with nothing else going on.
        let idle_until = Instant::now() + Duration::from_millis(500);
        let idle = s.ping_until(|_, now| now >= idle_until, Duration::ZERO);
        println!(
            "{n:>8} {setup_ms:>10.0} | {} | {} | {}",
            setup.summary(),
            reload.summary(),
            idle.summary()
        );
        s.stop();
    }
}

/// `tree/gG/dI/f.txt` for I in 0..n, 100 folders per group.
fn make_tree(root: &Path, n: usize) {
    for i in 0..n {
        let d = root.join(format!("tree/g{}/d{i}", i / 100));
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(d.join("f.txt"), b"x").expect("write");
    }
    std::fs::write(
        root.join("mcp-server.toml"),
        "[server]\nname = \"watch-setup\"\n\n[files.tree]\nroot = \"tree\"\n",
    )
    .expect("manifest");
}

struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<(Instant, Value)>,
    next: u64,
}

struct Pings {
    rtts: Vec<Duration>,
    done: Instant,
}

impl Pings {
    fn summary(&self) -> String {
        let mut r = self.rtts.clone();
        r.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let worst = r.last().copied().unwrap_or_default();
        let p99 = r.get(r.len() * 99 / 100).copied().unwrap_or(worst);
        format!("{:>6} {:>8.2}ms {:>7.2}ms", r.len(), ms(worst), ms(p99))
    }
}

impl Server {
    fn start(bin: &Path, manifest: &Path) -> Server {
        let mut child = Command::new(bin)
            .arg("serve")
            .arg(manifest)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the server");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let v: Value = serde_json::from_str(&line).expect("a JSON line");
                if tx.send((Instant::now(), v)).is_err() {
                    return;
                }
            }
        });
        Server {
            child,
            stdin,
            lines,
            next: 0,
        }
    }

    fn send(&mut self, v: Value) {
        let mut line = serde_json::to_vec(&v).expect("json");
        line.push(b'\n');
        self.stdin.write_all(&line).expect("write");
        self.stdin.flush().expect("flush");
    }

    fn initialize(&mut self) {
        self.send(
            json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "watch_setup", "version": "1"}}}),
        );
        loop {
            let (_, v) = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .expect("initialize");
            if v["id"] == "init" {
                break;
            }
        }
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    /// Pings every 2 ms until `done` holds for a message (or for the time), then `linger`
    /// more; every ping sent is waited for.
    fn ping_until(&mut self, done: impl Fn(&Value, Instant) -> bool, linger: Duration) -> Pings {
        let mut sent: HashMap<u64, Instant> = HashMap::new();
        let mut rtts = Vec::new();
        let mut finished: Option<Instant> = None;
        let deadline = Instant::now() + Duration::from_secs(600);
        loop {
            let now = Instant::now();
            assert!(now < deadline, "no end after 600 s");
            if finished.is_none_or(|f| now < f + linger) {
                self.next += 1;
                sent.insert(self.next, now);
                self.send(json!({"jsonrpc": "2.0", "id": self.next, "method": "ping"}));
            } else if sent.is_empty() {
                return Pings {
                    rtts,
                    done: finished.unwrap_or(now),
                };
            }
            if finished.is_none() && done(&Value::Null, now) {
                finished = Some(now);
            }
            let until = now + PING_EVERY;
            while let Ok((at, v)) = self
                .lines
                .recv_timeout(until.saturating_duration_since(Instant::now()))
            {
                if let Some(t) = v["id"].as_u64().and_then(|id| sent.remove(&id)) {
                    rtts.push(at.duration_since(t));
                } else if finished.is_none() && done(&v, at) {
                    finished = Some(at);
                }
            }
        }
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}
