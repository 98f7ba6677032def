//! One server process over raw pipes (mcp-manifest or the null server): start it, time requests
//! one at a time or pipelined, read its peak RSS, close it. Also the null server itself.
//!
//! The client stays out of the way of what it measures: requests are built before the clock
//! starts, a request is one `write` on the raw pipe, answers are read through one large buffer
//! (`read_until` finds the newline with memchr), and the clock stops when the answer's last byte
//! is read, before anything parses it. Answers are matched to requests by the first `"id":` of
//! the line: a JSON string cannot hold an unescaped quote, so the key can only be structural, and
//! a JSON-RPC answer puts its id before its result.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;

/// The argument that turns the bench binary into the null server.
pub const NULL_FLAG: &str = "--null-server";
/// Run as the floor of a listing (`stat_walk`).
pub const STAT_WALK_FLAG: &str = "--stat-walk";

const INITIALIZE: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"mcp-bench\",\"version\":\"1\"}}}\n";
const INITIALIZED: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

/// What to start.
#[derive(Debug, Clone)]
pub enum Program {
    /// `mcp-manifest serve MANIFEST`.
    Server { bin: PathBuf, manifest: PathBuf },
    /// This binary with `--null-server`: answers `{}` to every request line.
    Null { exe: PathBuf },
}

impl Program {
    fn command(&self) -> Command {
        match self {
            Program::Server { bin, manifest } => {
                let mut c = Command::new(bin);
                c.arg("serve").arg(manifest);
                c
            }
            Program::Null { exe } => {
                let mut c = Command::new(exe);
                c.arg(NULL_FLAG);
                c
            }
        }
    }
}

/// A running server and the client end of its pipes.
pub struct Peer {
    /// Shared with watchdogs, which kill it when time is up.
    child: Arc<Mutex<Child>>,
    stdin: Option<ChildStdin>,
    out: BufReader<ChildStdout>,
    /// The last line read, newline included.
    line: Vec<u8>,
    next_id: u64,
}

impl Peer {
    /// Spawns the program and completes the `initialize` handshake. Returns the peer and the
    /// cold start: from just before the spawn to the last byte of the `initialize` answer.
    pub fn start(program: &Program) -> Result<(Peer, Duration)> {
        let mut cmd = program.command();
        // MCP_BENCH_STDERR=1 shows the servers' logs (MCP_MANIFEST_LOG sets their level).
        let stderr = if std::env::var_os("MCP_BENCH_STDERR").is_some() {
            Stdio::inherit()
        } else {
            Stdio::null()
        };
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr);
        let t0 = Instant::now();
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {program:?}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            bail!("{program:?}: no pipes");
        };
        let mut peer = Peer {
            child: Arc::new(Mutex::new(child)),
            stdin: Some(stdin),
            out: BufReader::with_capacity(1 << 20, stdout),
            line: Vec::with_capacity(1 << 16),
            next_id: 0,
        };
        peer.send(INITIALIZE)?;
        peer.wait_for(b"0")?;
        let took = t0.elapsed();
        peer.result().context("initialize")?;
        peer.send(INITIALIZED)?;
        Ok((peer, took))
    }

    fn child(&self) -> std::sync::MutexGuard<'_, Child> {
        self.child.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Kills the server if the returned guard still lives after `limit`: a server that stops
    /// answering ends the read that waits for it (with an error) instead of hanging the suite.
    pub fn watchdog(&self, limit: Duration) -> Watchdog {
        let (tx, rx) = mpsc::channel::<()>();
        let child = Arc::clone(&self.child);
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
                eprintln!("bench: no answer within {limit:?}; killing the server");
                let _ = child.lock().unwrap_or_else(|p| p.into_inner()).kill();
            }
        });
        Watchdog { _tx: tx }
    }

    /// The last answer read, deserialized.
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        serde_json::from_slice(&self.line)
            .with_context(|| format!("an unexpected answer: {}", preview(&self.line)))
    }

    fn send(&mut self, bytes: &[u8]) -> Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| anyhow!("stdin is closed"))?;
        stdin.write_all(bytes).context("writing to the server")
    }

    /// Reads one line into `self.line`; the end of the output is an error.
    fn read_line(&mut self) -> Result<()> {
        self.line.clear();
        let n = self
            .out
            .read_until(b'\n', &mut self.line)
            .context("reading from the server")?;
        if n == 0 || self.line.last() != Some(&b'\n') {
            bail!("the server closed its output");
        }
        Ok(())
    }

    /// Reads lines until the answer with this id (notifications are skipped).
    fn wait_for(&mut self, id: &[u8]) -> Result<()> {
        loop {
            self.read_line()?;
            if line_id(&self.line) == Some(id) {
                return Ok(());
            }
        }
    }

    /// The next request id and its line, built before any clock starts.
    pub fn prepare(&mut self, method: &str, params: &Value) -> (u64, Vec<u8>) {
        self.next_id += 1;
        (self.next_id, request_line(self.next_id, method, params))
    }

    /// Sends a prepared request and waits for its answer (left in `self.line`); returns the time
    /// from the write to the answer's last byte.
    pub fn round_trip(&mut self, id: u64, line: &[u8]) -> Result<Duration> {
        let id = id.to_string();
        let t0 = Instant::now();
        self.send(line)?;
        self.wait_for(id.as_bytes())?;
        Ok(t0.elapsed())
    }

    /// One request, answered: its time and its `result`.
    pub fn call(&mut self, method: &str, params: &Value) -> Result<(Duration, Value)> {
        let (id, line) = self.prepare(method, params);
        let took = self.round_trip(id, &line)?;
        Ok((took, self.result()?))
    }

    /// The `result` of the last answer read, or its error as an error.
    pub fn result(&self) -> Result<Value> {
        let mut v: Value = serde_json::from_slice(&self.line)
            .with_context(|| format!("an answer that is not JSON: {}", preview(&self.line)))?;
        if let Some(e) = v.get("error") {
            bail!("the server answered an error: {e}");
        }
        v.get_mut("result")
            .map(Value::take)
            .ok_or_else(|| anyhow!("an answer without a result: {}", preview(&self.line)))
    }

    /// Whether the last answer is a result (without parsing all of it).
    pub fn is_result(&self) -> bool {
        is_result(&self.line)
    }

    /// Waits for a notification with this method whose params name `uri`; returns when its
    /// last byte was read.
    pub fn wait_notification(&mut self, method: &str, uri: &str) -> Result<Instant> {
        loop {
            self.read_line()?;
            let at = Instant::now();
            if line_id(&self.line).is_some() {
                continue;
            }
            let v: Value = serde_json::from_slice(&self.line)?;
            if v["method"] == method && v["params"]["uri"] == uri {
                return Ok(at);
            }
        }
    }

    /// Writes `payload` (`n` requests) from one thread while this one reads the `n` answers;
    /// returns the time from the first write to the last answer. Every answer must be a result.
    pub fn pipelined(&mut self, payload: Vec<u8>, n: usize) -> Result<Duration> {
        let mut stdin = self
            .stdin
            .take()
            .ok_or_else(|| anyhow!("stdin is closed"))?;
        let t0 = Instant::now();
        let writer = std::thread::spawn(move || {
            let written = stdin.write_all(&payload);
            (stdin, written)
        });
        let mut got = 0;
        let mut bad = None;
        while got < n {
            self.read_line()?;
            if line_id(&self.line).is_none() {
                continue;
            }
            if bad.is_none() && !is_result(&self.line) {
                bad = Some(preview(&self.line));
            }
            got += 1;
        }
        let took = t0.elapsed();
        let (stdin, written) = writer
            .join()
            .map_err(|_| anyhow!("the writer thread panicked"))?;
        written.context("writing the pipelined requests")?;
        self.stdin = Some(stdin);
        match bad {
            Some(line) => bail!("a pipelined request was not answered with a result: {line}"),
            None => Ok(took),
        }
    }

    /// Peak resident set size (VmHWM) so far, in bytes.
    pub fn peak_rss(&self) -> Option<u64> {
        peak_rss(self.child().id())
    }

    /// Closes stdin and waits (at most 5 s) for the process to exit.
    pub fn close(mut self) -> Result<()> {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if self.child().try_wait()?.is_some() {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("the server did not exit within 5 s of the end of its input");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let mut child = self.child();
        if let Ok(None) = child.try_wait() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Dropping it calls the watchdog off.
pub struct Watchdog {
    _tx: mpsc::Sender<()>,
}

/// `{"jsonrpc":"2.0","id":ID,"method":METHOD,"params":PARAMS}` and a newline.
pub fn request_line(id: u64, method: &str, params: &Value) -> Vec<u8> {
    let mut line = Vec::with_capacity(96);
    line.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    line.extend_from_slice(id.to_string().as_bytes());
    line.extend_from_slice(b",\"method\":");
    // Writing JSON into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut line, method);
    line.extend_from_slice(b",\"params\":");
    let _ = serde_json::to_writer(&mut line, params);
    line.extend_from_slice(b"}\n");
    line
}

/// The text of the first `"id":` value of a line (a number, or a string with its quotes).
pub fn line_id(line: &[u8]) -> Option<&[u8]> {
    const KEY: &[u8] = b"\"id\":";
    let at = line.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let rest = &line[at..];
    let rest = &rest[rest.iter().position(|b| !b.is_ascii_whitespace())?..];
    let end = if rest.first() == Some(&b'"') {
        rest[1..].iter().position(|&b| b == b'"')? + 2
    } else {
        rest.iter()
            .position(|&b| matches!(b, b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n'))
            .unwrap_or(rest.len())
    };
    Some(&rest[..end])
}

/// Whether an answer line is a result: `"result":` near the start (after jsonrpc and id).
fn is_result(line: &[u8]) -> bool {
    const KEY: &[u8] = b"\"result\":";
    line[..line.len().min(128)]
        .windows(KEY.len())
        .any(|w| w == KEY)
}

fn preview(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(&line[..line.len().min(300)]);
    text.trim_end().to_owned()
}

/// VmHWM of a process, in bytes.
pub fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The null server: for every input line with an id, `{"jsonrpc":"2.0","id":ID,"result":{}}`.
/// It reads what the pipe holds (up to 64 KiB), answers every complete line in it, and writes all
/// those answers at once: the least a line-oriented server can do.
/// The floor of a listing that gives each file's size, as `resources/list` must: one thread
/// reads every folder below `root` and `stat`s each regular file by its name in its folder
/// (`DirEntry::metadata`, an `fstatat`), printing `size path` per file. Nothing else: no
/// sorting, no rules, no JSON.
pub fn stat_walk(root: &str) -> ExitCode {
    fn walk(dir: &std::path::Path, out: &mut impl Write) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                walk(&entry.path(), out)?;
            } else if kind.is_file() {
                let size = entry.metadata()?.len();
                writeln!(out, "{size} {}", entry.path().display())?;
            }
        }
        Ok(())
    }
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    match walk(std::path::Path::new(root), &mut out).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("stat walk: {e}");
            ExitCode::FAILURE
        }
    }
}

pub fn null_server() -> ExitCode {
    let mut input = std::io::stdin().lock();
    let mut output = std::io::stdout().lock();
    let mut buf = vec![0u8; 1 << 16];
    let mut partial: Vec<u8> = Vec::new();
    let mut answers: Vec<u8> = Vec::with_capacity(1 << 16);
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => return ExitCode::SUCCESS,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return ExitCode::FAILURE,
        };
        let mut chunk = &buf[..n];
        while let Some(nl) = chunk.iter().position(|&b| b == b'\n') {
            if partial.is_empty() {
                answer(&chunk[..nl], &mut answers);
            } else {
                partial.extend_from_slice(&chunk[..nl]);
                answer(&partial, &mut answers);
                partial.clear();
            }
            chunk = &chunk[nl + 1..];
        }
        partial.extend_from_slice(chunk);
        if !answers.is_empty() {
            if output
                .write_all(&answers)
                .and_then(|()| output.flush())
                .is_err()
            {
                return ExitCode::FAILURE;
            }
            answers.clear();
        }
    }
}

fn answer(line: &[u8], out: &mut Vec<u8>) {
    if let Some(id) = line_id(line) {
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        out.extend_from_slice(id);
        out.extend_from_slice(b",\"result\":{}}\n");
    }
}
