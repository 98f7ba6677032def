//! Memory and liveness under hostile loads (a benchmark, not a test): the loads of issue 9 item 3,
//! each against a fresh release server on raw pipes.
//!
//! - `pipelined`: N `resources/read` of a 1 MiB binary file written at once, answers read as they
//!   come: how long, and the peak RSS (VmHWM);
//! - `small`: N `resources/read` of a 16 KiB binary file (answered by the transport's reader
//!   thread), the same way;
//! - `stalled`: the 1 MiB reads and a `ping`, but the client reads nothing for a while: the RSS
//!   over that time, then it reads everything and the `ping` must come;
//! - `cancel`: 260 slow `tools/call`, then `notifications/cancelled` for each, then a `ping`: how
//!   long the ping takes, and how many tool processes are left 0.5 s later;
//! - `same-id`: 2 000 slow `tools/call` with the same id: the most tool processes at once (3 s);
//! - `listens`: 300 `subscriptions/listen` (2026-07-28), then a `resources/list`: its latency;
//! - `search-line`: 8 `search_files` at once over a one-line file of 10 MiB (the default
//!   `max_size`), and `search-line-256`: the same over a one-line file of 256 MiB in a source
//!   with `max_size = "256MiB"`: peak RSS (issue 35: 228 MiB and 3.3 GiB);
//! - `default-reads`: 8 reads at once of a 10 MiB binary file (default settings), and
//!   `big-reads`: 8 reads at once of a 256 MiB one (`max_size = "256MiB"`): peak RSS (issue 35:
//!   1.9 GiB for the latter);
//! - `http-…`: the loads of `serve --http` (`memory/http.rs`): answers never read, slow bodies,
//!   bodies in 1-byte chunks, a hanging JWKS, tokens without `kid`, a connection flood, SIGTERM
//!   with a backlog, 1 000 sessions with full resume buffers.
//!
//!   cargo bench --bench memory -- [--bin PATH] [--reads N] [--stall SECONDS] [pipelined small stalled cancel same-id listens search-line search-line-256 default-reads big-reads http-…]
//!
//! `cargo bench` builds the release binary first and this finds it; the machine's load average is
//! printed at the start and the end (figures move with it).

// A benchmark prints its figures, stops at the first surprise, and starts the binary.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::disallowed_methods
)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "memory/http.rs"]
mod http;

const MIB: u64 = 1024 * 1024;
const ALL: [&str; 10] = [
    "pipelined",
    "small",
    "stalled",
    "cancel",
    "same-id",
    "listens",
    "search-line",
    "search-line-256",
    "default-reads",
    "big-reads",
];

fn main() {
    let mut bin = PathBuf::from(env!("CARGO_BIN_EXE_mcp-manifest"));
    let mut reads = 3000;
    let mut stall = 4.0;
    let mut only: Vec<String> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--bin" => bin = PathBuf::from(args.next().expect("--bin PATH")),
            "--reads" => reads = args.next().and_then(|n| n.parse().ok()).expect("--reads N"),
            "--stall" => stall = args.next().and_then(|n| n.parse().ok()).expect("--stall S"),
            "--bench" => {}
            name if ALL.contains(&name) || http::LOADS.contains(&name) => {
                only.push(name.to_owned())
            }
            other => panic!(
                "unknown argument {other} (loads: {} {})",
                ALL.join(" "),
                http::LOADS.join(" ")
            ),
        }
    }
    if only.is_empty() {
        only = ALL
            .iter()
            .chain(&http::LOADS)
            .map(|s| (*s).to_owned())
            .collect();
    }
    let bin = std::fs::canonicalize(&bin).expect("build the release binary first");
    let dir = tempfile::tempdir().expect("temp dir");
    fixture(dir.path());
    println!(
        "{} ({}), load average {}",
        bin.display(),
        version(&bin),
        load()
    );
    for load_name in &only {
        let d = dir.path();
        match load_name.as_str() {
            "pipelined" => pipelined(&bin, d, "big.bin", reads),
            "small" => pipelined(&bin, d, "small.bin", reads * 10),
            "stalled" => stalled(&bin, d, reads, stall),
            "cancel" => cancel(&bin, d, 260),
            "same-id" => same_id(&bin, d, 2000),
            "listens" => listens(&bin, d, 300),
            "search-line" => search_line(&bin, d, "docs", 10 * MIB - 1024),
            "search-line-256" => search_line(&bin, d, "big", 256 * MIB - 1024),
            "default-reads" => big_reads(&bin, d, "docs", 10 * MIB - 1024),
            "big-reads" => big_reads(&bin, d, "big", 256 * MIB - 1024),
            http if http.starts_with("http-") => http::run(&bin, http),
            _ => unreachable!(),
        }
    }
    println!("load average {}", load());
}

fn fixture(d: &Path) {
    std::fs::create_dir_all(d.join("docs")).unwrap();
    std::fs::create_dir_all(d.join("big")).unwrap();
    // Bytes that are not UTF-8: read as a blob (base64), the heaviest answer per byte.
    let mut x: u32 = 7;
    let mut bytes = |n: u64| -> Vec<u8> {
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                (x >> 16) as u8 | 0x80
            })
            .collect()
    };
    std::fs::write(d.join("docs/big.bin"), bytes(MIB)).unwrap();
    std::fs::write(d.join("docs/small.bin"), bytes(16 * 1024)).unwrap();
    std::fs::write(
        d.join("mcp-server.toml"),
        "[files.docs]\nroot = \"docs\"\n\n\
         [files.big]\nroot = \"big\"\nmax_size = \"256MiB\"\n\n\
         [tools.slow]\ndescription = \"sleeps\"\ncommand = [\"sleep\", \"60\"]\n",
    )
    .unwrap();
}

fn version(bin: &Path) -> String {
    Command::new(bin)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn line(v: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec(v).unwrap();
    out.push(b'\n');
    out
}

fn request(id: Value, method: &str, params: Value) -> Vec<u8> {
    line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

/// The server on raw pipes: writes from a thread, reads whole chunks and counts lines.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
    /// What was read after the last whole line.
    rest: Vec<u8>,
}

impl Raw {
    fn start(bin: &Path, d: &Path) -> Raw {
        let mut child = Command::new(bin)
            .arg("serve")
            .arg(d.join("mcp-server.toml"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the server");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        Raw {
            child,
            stdin,
            stdout,
            rest: Vec::new(),
        }
    }

    fn initialize(&mut self) {
        let params = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        });
        self.write(&request(json!("init"), "initialize", params));
        self.lines_until(|l| contains(l, br#""init""#));
        self.write(&line(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ));
    }

    fn write(&mut self, data: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(data).expect("write to the server");
    }

    /// Writes `data` from a thread (the server may stop reading until its answers are read).
    fn write_in_background(&mut self, data: Vec<u8>) {
        let mut stdin = self.stdin.take().expect("stdin open");
        std::thread::spawn(move || {
            let _ = stdin.write_all(&data);
            // Kept open: closing stdin would end the session.
            std::thread::sleep(Duration::from_secs(3600));
            drop(stdin);
        });
    }

    /// Reads lines until `pred` holds for one: how many were read, that one included.
    fn lines_until(&mut self, mut pred: impl FnMut(&[u8]) -> bool) -> usize {
        let mut n = 0;
        let mut chunk = vec![0u8; 4 * MIB as usize];
        loop {
            while let Some(i) = self.rest.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.rest.drain(..=i).collect();
                n += 1;
                if pred(&line) {
                    return n;
                }
            }
            let got = self.stdout.read(&mut chunk).expect("read stdout");
            assert!(got > 0, "the server closed stdout after {n} lines");
            self.rest.extend_from_slice(&chunk[..got]);
        }
    }

    /// Reads until `want` lines came (counting newlines in big chunks).
    fn count_lines(&mut self, want: usize) {
        let mut n = self.rest.iter().filter(|&&b| b == b'\n').count();
        self.rest.clear();
        let mut chunk = vec![0u8; 4 * MIB as usize];
        while n < want {
            let got = self.stdout.read(&mut chunk).expect("read stdout");
            assert!(got > 0, "the server closed stdout after {n} lines");
            n += chunk[..got].iter().filter(|&&b| b == b'\n').count();
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn status(&self, key: &str) -> u64 {
        status(self.pid(), key)
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A `/proc/PID/status` figure in bytes (`VmHWM`, `VmRSS`).
fn status(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(':').map(str::to_owned))
        })
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// The tool calls running under the server `pid`: the per-call supervisors, which its one
/// supervisor (its child) forks.
fn children(pid: u32) -> usize {
    parented_by(pid)
        .into_iter()
        .map(|supervisor| parented_by(supervisor).len())
        .sum()
}

/// Processes whose parent is `pid`.
fn parented_by(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let name = e.ok()?.file_name();
        let n: u32 = name.to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{n}/stat")).ok()?;
        let ppid: u32 = stat
            .rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        (ppid == pid).then_some(n)
    })
    .collect()
}

fn reads(d: &Path, file: &str, n: usize) -> Vec<u8> {
    let path = std::fs::canonicalize(d.join("docs").join(file)).unwrap();
    let uri = format!("file://{}", path.display());
    (1..=n)
        .flat_map(|i| request(json!(i), "resources/read", json!({"uri": uri})))
        .collect()
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB as f64
}

fn pipelined(bin: &Path, d: &Path, file: &str, n: usize) {
    let mut s = Raw::start(bin, d);
    s.initialize();
    let size = std::fs::metadata(d.join("docs").join(file)).unwrap().len();
    let start = Instant::now();
    s.write_in_background(reads(d, file, n));
    s.count_lines(n);
    let took = start.elapsed();
    println!(
        "pipelined {n} reads of {} KiB: all answered in {:.2} s ({:.0}/s), peak RSS {:.0} MiB",
        size / 1024,
        took.as_secs_f64(),
        n as f64 / took.as_secs_f64(),
        mib(s.status("VmHWM"))
    );
}

fn stalled(bin: &Path, d: &Path, n: usize, seconds: f64) {
    let mut s = Raw::start(bin, d);
    s.initialize();
    let mut input = reads(d, "big.bin", n);
    input.extend(request(json!("last-ping"), "ping", json!({})));
    s.write_in_background(input);
    let mut samples = Vec::new();
    let start = Instant::now();
    while start.elapsed().as_secs_f64() < seconds {
        std::thread::sleep(Duration::from_millis(500));
        samples.push(mib(s.status("VmRSS")));
    }
    let growth = (samples.last().unwrap() - samples[0]) / (seconds - 0.5).max(0.5);
    let t = Instant::now();
    let before = s.lines_until(|l| contains(l, br#""last-ping""#));
    let shown: Vec<String> = samples.iter().map(|x| format!("{x:.0}")).collect();
    println!(
        "stalled client ({n} reads of 1 MiB, {seconds} s without reading): RSS {} MiB \
         (growth {growth:.1} MiB/s); once it reads, the ping comes after {} lines in {:.1} s; \
         peak RSS {:.0} MiB",
        shown.join(" "),
        before,
        t.elapsed().as_secs_f64(),
        mib(s.status("VmHWM"))
    );
}

fn slow_call(id: Value) -> Vec<u8> {
    request(id, "tools/call", json!({"name": "slow", "arguments": {}}))
}

fn cancel(bin: &Path, d: &Path, n: usize) {
    let mut s = Raw::start(bin, d);
    s.initialize();
    let calls: Vec<u8> = (0..n).flat_map(|i| slow_call(json!(1000 + i))).collect();
    s.write(&calls);
    let deadline = Instant::now() + Duration::from_secs(10);
    while children(s.pid()) < n.min(16) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut cancels: Vec<u8> = (0..n)
        .flat_map(|i| {
            line(
                &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": 1000 + i}}),
            )
        })
        .collect();
    cancels.extend(request(json!("after"), "ping", json!({})));
    let start = Instant::now();
    s.write(&cancels);
    let got = s.lines_until(|l| contains(l, br#""after""#));
    let took = start.elapsed();
    std::thread::sleep(Duration::from_millis(500));
    println!(
        "{n} slow tools/call, then {n} cancellations and a ping: ping answered in {:.3} s \
         ({} other lines), tool processes left 0.5 s later: {}",
        took.as_secs_f64(),
        got - 1,
        children(s.pid())
    );
}

fn same_id(bin: &Path, d: &Path, n: usize) {
    let mut s = Raw::start(bin, d);
    s.initialize();
    let call = slow_call(json!(7));
    let calls: Vec<u8> = std::iter::repeat_n(call, n).flatten().collect();
    let pid = s.pid();
    s.write_in_background(calls);
    let mut peak = 0;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        peak = peak.max(children(pid));
        std::thread::sleep(Duration::from_millis(100));
    }
    println!("{n} slow tools/call with the same id: at most {peak} tool processes at once (3 s)");
}

fn listens(bin: &Path, d: &Path, n: usize) {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    });
    let mut s = Raw::start(bin, d);
    let subs: Vec<u8> = (0..n)
        .flat_map(|i| {
            request(
                json!(5000 + i),
                "subscriptions/listen",
                json!({"_meta": meta, "notifications": {"toolsListChanged": true}}),
            )
        })
        .collect();
    s.write(&subs);
    // A server that never answers is killed after 20 s (the read then fails and says so).
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let pid = s.pid();
    std::thread::spawn(move || {
        if wait.recv_timeout(Duration::from_secs(20)).is_err() {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
    });
    let start = Instant::now();
    s.write(&request(
        json!("list"),
        "resources/list",
        json!({"_meta": meta}),
    ));
    s.lines_until(|l| contains(l, br#""id":"list""#) && !contains(l, br#""method""#));
    let took = start.elapsed();
    let _ = done.send(());
    println!(
        "{n} subscriptions/listen, then resources/list: answered in {:.3} s",
        took.as_secs_f64()
    );
}

/// Writes `docs/NAME` (or `big/NAME`) of `size` bytes with `byte`, one `needle` every MiB, no
/// newline: made when a load needs it, removed after.
fn make(d: &Path, source: &str, name: &str, size: u64, byte: u8) -> PathBuf {
    let path = d.join(source).join(name);
    let mut f = std::fs::File::create(&path).unwrap();
    let mut chunk = vec![byte; MIB as usize];
    chunk[MIB as usize / 2..MIB as usize / 2 + 6].copy_from_slice(b"needle");
    let mut left = size;
    while left > 0 {
        let n = left.min(MIB);
        f.write_all(&chunk[..n as usize]).unwrap();
        left -= n;
    }
    path
}

/// 8 `search_files` at once over a file of `size` bytes on one line.
fn search_line(bin: &Path, d: &Path, source: &str, size: u64) {
    let path = make(d, source, "oneline.txt", size, b'x');
    let mut s = Raw::start(bin, d);
    s.initialize();
    let n = 8;
    let calls: Vec<u8> = (0..n)
        .flat_map(|i| {
            request(
                json!(i),
                "tools/call",
                json!({"name": "search_files", "arguments": {"pattern": "needle", "source": source}}),
            )
        })
        .collect();
    let start = Instant::now();
    s.write_in_background(calls);
    s.count_lines(n);
    println!(
        "{n} search_files at once over a one-line file of {} MiB: answered in {:.2} s, peak RSS {:.0} MiB",
        size.div_ceil(MIB),
        start.elapsed().as_secs_f64(),
        mib(s.status("VmHWM"))
    );
    drop(s);
    let _ = std::fs::remove_file(path);
}

/// 8 `resources/read` at once of a binary file of `size` bytes.
fn big_reads(bin: &Path, d: &Path, source: &str, size: u64) {
    let path = make(d, source, "large.bin", size, 0x80);
    let uri = format!("file://{}", std::fs::canonicalize(&path).unwrap().display());
    let mut s = Raw::start(bin, d);
    s.initialize();
    let n = 8;
    let reads: Vec<u8> = (1..=n)
        .flat_map(|i| request(json!(i), "resources/read", json!({"uri": uri})))
        .collect();
    let start = Instant::now();
    s.write_in_background(reads);
    s.count_lines(n);
    println!(
        "{n} reads at once of a {} MiB file: answered in {:.2} s, peak RSS {:.0} MiB",
        size.div_ceil(MIB),
        start.elapsed().as_secs_f64(),
        mib(s.status("VmHWM"))
    );
    drop(s);
    let _ = std::fs::remove_file(path);
}
