//! The benchmark suite: `cargo bench --bench suite -- [OPTIONS] [WORKLOAD…]` (BENCHMARKS.md).
//!
//! It spawns the release binary over raw pipes and measures each workload: cold start (spawn →
//! `initialize` answer), sequential p50/p90/p99, pipelined throughput and peak RSS (VmHWM), in
//! alternating rounds with its floors from the same run: the null server (this binary run with
//! `--null-server`, answering `{}` to every request line) and, where there is one, the command
//! a user would run instead (`find`, `sqlite3`, `psql`, `git`, `true`, `rg`). Figures are
//! medians of the rounds. A benchmark, not a test: `cargo test` never runs it. Linux only
//! (`/proc`, inotify).

// The suite is a command-line program: its report is its output. It starts the server and the
// comparison commands itself: `process.rs`'s rules are for the processes the product starts.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::disallowed_methods)]

mod fixtures;
mod mysql;
mod peer;
mod postgres;
mod report;
mod workloads;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::json;

use peer::{Peer, Program};
use report::{Figures, Round};
use workloads::{Beside, BesideSpec, Op, Scale, Workload};

const USAGE: &str = "\
usage: cargo bench --bench suite -- [OPTIONS] [WORKLOAD…]

Runs the workloads whose name contains one of the WORKLOAD words (all when none is given).

options:
  --bin PATH     the mcp-manifest binary (default: the one cargo built for this bench)
  --rounds N     alternating rounds per workload (default 3); figures are medians of rounds
  --scale X      multiply every request count by X (default 1; 0.1 for a quick look)
  --list         print the workloads and exit
";

struct Config {
    bin: PathBuf,
    rounds: usize,
    scale: Scale,
    filters: Vec<String>,
    list: bool,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(peer::NULL_FLAG) {
        return peer::null_server();
    }
    if args.first().map(String::as_str) == Some(peer::STAT_WALK_FLAG) {
        return peer::stat_walk(args.get(1).map_or(".", String::as_str));
    }
    match parse_args(args).and_then(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn parse_args(args: Vec<String>) -> Result<Config> {
    let mut config = Config {
        bin: PathBuf::from(env!("CARGO_BIN_EXE_mcp-manifest")),
        rounds: 3,
        scale: Scale(1.0),
        filters: Vec::new(),
        list: false,
    };
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| anyhow!("{name} needs a value"));
        match arg.as_str() {
            // cargo bench passes --bench to a harness = false target.
            "--bench" => {}
            "--bin" => config.bin = PathBuf::from(value("--bin")?),
            "--rounds" => {
                config.rounds = value("--rounds")?.parse().context("--rounds")?;
                ensure!(config.rounds > 0, "--rounds must be at least 1");
            }
            "--scale" => {
                let x: f64 = value("--scale")?.parse().context("--scale")?;
                ensure!(
                    x > 0.0 && x.is_finite(),
                    "--scale must be a positive number"
                );
                config.scale = Scale(x);
            }
            "--list" => config.list = true,
            "-h" | "--help" => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            flag if flag.starts_with('-') => bail!("unknown option `{flag}`\n\n{USAGE}"),
            word => config.filters.push(word.to_owned()),
        }
    }
    Ok(config)
}

fn run(config: Config) -> Result<()> {
    let catalog = workloads::catalog();
    if config.list {
        for e in &catalog {
            println!("{:<20} {}", e.name, e.about);
        }
        return Ok(());
    }
    let selected: Vec<_> = catalog
        .iter()
        .filter(|e| {
            config.filters.is_empty() || config.filters.iter().any(|f| selects(f, e.name, &catalog))
        })
        .collect();
    ensure!(
        !selected.is_empty(),
        "no workload matches {:?}; `--list` shows them",
        config.filters
    );
    let bin = config.bin.canonicalize().with_context(|| {
        format!(
            "the binary {} (build it, or pass --bin)",
            config.bin.display()
        )
    })?;
    let null = Program::Null {
        exe: std::env::current_exe()?,
    };
    println!("{}", machine(&bin));
    let fx = fixtures::Fixtures::new()?;
    let started = Instant::now();
    let mut results = Vec::new();
    let mut failed = Vec::new();
    for entry in selected {
        eprintln!("{}: building", entry.name);
        // A workload that fails (a missing command, a wrong answer) is reported and the others
        // still run; the suite then exits with an error.
        let measured = entry
            .build(&fx, config.scale)
            .and_then(|w| measure(entry.name, entry.about, &w, &bin, &null, config.rounds));
        match measured {
            Ok(r) => {
                print!("{}", r.block());
                results.push(r);
            }
            Err(e) => match e.downcast_ref::<workloads::Unavailable>() {
                Some(why) => {
                    let r = report::Result::unavailable(entry.name, entry.about, &why.0);
                    print!("{}", r.block());
                    results.push(r);
                }
                None => {
                    println!("\n== {} — FAILED: {e:#}", entry.name);
                    failed.push(entry.name);
                }
            },
        }
        let _ = std::io::stdout().flush();
    }
    println!(
        "\nAll done in {:.0} s; load average now {}.\n",
        started.elapsed().as_secs_f64(),
        loadavg()
    );
    println!("{}", report::table(&results));
    ensure!(failed.is_empty(), "failed: {}", failed.join(", "));
    Ok(())
}

/// Whether a filter word selects a workload: its exact name (`list/1`), else its group
/// (`read` → `read/…`), else any part of the name (`100B`, `binary`).
fn selects(filter: &str, name: &str, catalog: &[workloads::Entry]) -> bool {
    let group = |n: &str| {
        n.strip_prefix(filter)
            .is_some_and(|rest| rest.starts_with('/'))
    };
    if catalog.iter().any(|e| e.name == filter) {
        name == filter
    } else if catalog.iter().any(|e| group(e.name)) {
        group(name)
    } else {
        name.contains(filter)
    }
}

/// Runs one workload's rounds: null server, mcp-manifest, then the comparison, `rounds` times.
fn measure(
    name: &str,
    about: &str,
    w: &Workload,
    bin: &std::path::Path,
    null: &Program,
    rounds: usize,
) -> Result<report::Result> {
    let server = w.manifest.as_ref().map(|m| Program::Server {
        bin: bin.to_owned(),
        manifest: m.clone(),
    });
    let served = match (&server, w.needs_tool) {
        (Some(p), Some(tool)) => lists_tool(p, tool)?,
        _ => true,
    };
    let (mut n, mut s, mut b) = (Vec::new(), Vec::new(), Vec::new());
    for round in 1..=rounds {
        eprintln!("{name}: round {round}/{rounds}");
        if w.null_floor {
            n.push(serve_round(w, null, true)?);
        }
        match (&w.op, &server) {
            (Op::Cli { args, check }, _) => s.push(cli_round(w, bin, args, check)?),
            (_, Some(p)) if served => s.push(serve_round(w, p, false)?),
            _ => {}
        }
        if let Some(spec) = &w.beside {
            b.push(beside_round(spec)?);
        }
    }
    let mut remarks: Vec<String> = Vec::new();
    for r in s.iter().flat_map(|r| &r.remarks) {
        if !remarks.contains(r) {
            remarks.push(r.clone());
        }
    }
    if let Some(BesideSpec {
        kind: Beside::Psql(psql),
        ..
    }) = &w.beside
    {
        eprintln!("{name}: figures measured once");
        remarks.extend(psql.extra(bin)?);
    }
    if let Some(BesideSpec {
        kind: Beside::Mariadb(session),
        ..
    }) = &w.beside
    {
        eprintln!("{name}: figures measured once");
        remarks.extend(session.extra()?);
    }
    let server = if served {
        Figures::from_rounds("mcp-manifest", &s)
    } else {
        Figures::noted("mcp-manifest", "not served")
    };
    Ok(report::Result {
        name: name.to_owned(),
        about: about.to_owned(),
        rounds,
        null: w
            .null_floor
            .then(|| Figures::from_rounds("null server", &n)),
        server,
        beside: w
            .beside
            .as_ref()
            .map(|spec| Figures::from_rounds(&spec.label, &b)),
        pipelined: w.pipe,
        targets: w.targets.clone(),
        remarks,
    })
}

/// Whether the server lists a tool of that name.
fn lists_tool(program: &Program, tool: &str) -> Result<bool> {
    let (mut peer, _) = Peer::start(program)?;
    let (_, tools) = peer.call("tools/list", &json!({}))?;
    peer.close()?;
    Ok(tools["tools"]
        .as_array()
        .is_some_and(|ts| ts.iter().any(|t| t["name"] == tool)))
}

/// One round against a server (mcp-manifest or the null server).
fn serve_round(w: &Workload, program: &Program, is_null: bool) -> Result<Round> {
    let mut round = Round::default();
    let mut colds = Vec::with_capacity(w.cold);
    for _ in 0..w.cold {
        let (peer, took) = Peer::start(program)?;
        colds.push(took);
        peer.close()?;
    }
    round.cold = report::median_dur(colds.into_iter());
    let (mut peer, _) = Peer::start(program)?;
    // Nothing here may take ten minutes: a server that stops answering is killed.
    let _watchdog = peer.watchdog(Duration::from_secs(600));
    let mut times = Vec::with_capacity(w.seq);
    match &w.op {
        Op::Request {
            method,
            params,
            check,
        } => {
            let (_, first) = peer.call(method, &params(0))?;
            if !is_null {
                check(&first).context("the first answer")?;
            }
            for i in 0..(w.warm + w.seq) as u64 {
                let (id, line) = peer.prepare(method, &params(i));
                let took = peer.round_trip(id, &line)?;
                if !peer.is_result() {
                    peer.result()?;
                }
                if i >= w.warm as u64 {
                    times.push(took);
                }
            }
            if w.pipe > 0 {
                let mut payload = Vec::new();
                for i in 0..w.pipe as u64 {
                    payload.extend(peer.prepare(method, &params(i)).1);
                }
                let took = peer.pipelined(payload, w.pipe)?;
                round.rate = Some(w.pipe as f64 / took.as_secs_f64());
            }
        }
        Op::ListAll { expect, pages } => {
            for _ in 0..w.seq {
                times.push(if is_null {
                    list_pages(&mut peer, *pages)?
                } else {
                    list_to_the_end(&mut peer, *expect)?
                });
            }
        }
        Op::Updated { file, uri } => {
            peer.call("resources/subscribe", &json!({ "uri": uri }))?;
            // The contract: a write made right after the subscribe answer is announced. If it
            // is not, a second write (after a second) gets the suite going, and it is said.
            let nudger = Nudger::start(file.clone(), Duration::from_secs(1));
            {
                let _limit = peer.watchdog(Duration::from_secs(30));
                std::fs::write(file, "version 0\n")?;
                peer.wait_notification("notifications/resources/updated", uri)?;
            }
            if nudger.stop() > 0 {
                round.remarks.push(
                    "the first write after the `resources/subscribe` answer was not announced \
                     (the contract says it must be); a second write one second later was"
                        .into(),
                );
            }
            std::thread::sleep(Duration::from_millis(150));
            for i in 0..w.warm + w.seq {
                let _limit = peer.watchdog(Duration::from_secs(10));
                let t0 = Instant::now();
                std::fs::write(file, format!("version {}\n", i + 1))?;
                let at = peer.wait_notification("notifications/resources/updated", uri)?;
                if i >= w.warm {
                    times.push(at - t0);
                }
                // Past the debounce window, so that every write starts a fresh one.
                std::thread::sleep(Duration::from_millis(150));
            }
        }
        Op::Cli { .. } => bail!("a CLI workload has no server"),
    }
    report::sequential(&mut round, times);
    round.rss = peer.peak_rss();
    peer.close()?;
    Ok(round)
}

/// Rewrites a file every `period` until stopped; says how many times it did.
struct Nudger {
    stop: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<usize>,
}

impl Nudger {
    fn start(file: PathBuf, period: Duration) -> Nudger {
        let (stop, rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let mut writes = 0;
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(period) {
                writes += 1;
                let _ = std::fs::write(&file, format!("nudge {writes}\n"));
            }
            writes
        });
        Nudger { stop, thread }
    }

    fn stop(self) -> usize {
        let _ = self.stop.send(());
        self.thread.join().unwrap_or(0)
    }
}

/// `resources/list` from the first page to the last: the sum of the pages' round trips (the
/// client's parsing of a page, to find the next cursor, is not counted).
fn list_to_the_end(peer: &mut Peer, expect: usize) -> Result<Duration> {
    #[derive(Deserialize)]
    struct Answer {
        result: Page,
    }
    #[derive(Deserialize)]
    struct Page {
        resources: Vec<IgnoredAny>,
        #[serde(rename = "nextCursor")]
        next_cursor: Option<String>,
    }
    let (mut total, mut listed, mut pages) = (Duration::ZERO, 0, 0);
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let (id, line) = peer.prepare("resources/list", &params);
        total += peer.round_trip(id, &line)?;
        if !peer.is_result() {
            peer.result()?;
        }
        let page: Answer = peer.parse()?;
        listed += page.result.resources.len();
        pages += 1;
        ensure!(pages <= expect + 1, "the pages never end");
        match page.result.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    ensure!(listed == expect, "listed {listed} resources, not {expect}");
    Ok(total)
}

/// The null server's floor for paging: as many `resources/list` round trips as there are pages.
fn list_pages(peer: &mut Peer, pages: usize) -> Result<Duration> {
    let mut total = Duration::ZERO;
    for _ in 0..pages {
        let (id, line) = peer.prepare("resources/list", &json!({}));
        total += peer.round_trip(id, &line)?;
    }
    Ok(total)
}

/// One round of a CLI workload: the binary run to the end of its output, `warm + seq` times.
fn cli_round(
    w: &Workload,
    bin: &std::path::Path,
    args: &[std::ffi::OsString],
    check: &workloads::OutputCheck,
) -> Result<Round> {
    let mut times = Vec::new();
    for i in 0..w.warm + w.seq {
        let t0 = Instant::now();
        let out = Command::new(bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()?;
        let took = t0.elapsed();
        ensure!(
            out.status.success(),
            "mcp-manifest failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if i == 0 {
            check(&out.stdout)?;
        }
        if i >= w.warm {
            times.push(took);
        }
    }
    let mut round = Round::default();
    report::sequential(&mut round, times);
    Ok(round)
}

/// One round of the comparison.
fn beside_round(spec: &BesideSpec) -> Result<Round> {
    let warm = (spec.n / 20).max(1);
    let mut times = Vec::with_capacity(spec.n);
    let mut rss = None;
    match &spec.kind {
        Beside::Spawn { argv, cwd, check } => {
            let (program, args) = argv.split_first().ok_or_else(|| anyhow!("empty argv"))?;
            for i in 0..warm + spec.n {
                let t0 = Instant::now();
                let out = Command::new(program)
                    .args(args)
                    .current_dir(cwd)
                    .envs(fixtures::GIT_ENV.iter().copied())
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .output()
                    .with_context(|| format!("running {program:?} (is it installed?)"))?;
                let took = t0.elapsed();
                ensure!(
                    out.status.success(),
                    "{program:?} failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                if i == 0 {
                    check(&out.stdout)?;
                }
                if i >= warm {
                    times.push(took);
                }
            }
        }
        Beside::Sqlite3 { db, script, check } => {
            let mut child = Command::new("sqlite3")
                .arg("-readonly")
                .arg(db)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .context("running sqlite3 (is it installed?)")?;
            let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                bail!("sqlite3: no pipes");
            };
            let mut out = BufReader::with_capacity(1 << 16, stdout);
            stdin.write_all(b".mode json\n")?;
            let (mut answer, mut line) = (Vec::new(), Vec::new());
            for i in 0..warm + spec.n {
                let text = format!("{}\nSELECT 'END-OF-ANSWER' AS end;\n", script(i as u64));
                answer.clear();
                let t0 = Instant::now();
                stdin.write_all(text.as_bytes())?;
                loop {
                    line.clear();
                    ensure!(out.read_until(b'\n', &mut line)? > 0, "sqlite3 exited");
                    if line.windows(13).any(|w| w == b"END-OF-ANSWER") {
                        break;
                    }
                    answer.extend_from_slice(&line);
                }
                let took = t0.elapsed();
                if i == 0 {
                    check(&answer)?;
                }
                if i >= warm {
                    times.push(took);
                }
            }
            rss = peer::peak_rss(child.id());
            drop(stdin);
            child.wait()?;
        }
        Beside::Inotify { file } => inotify_round(file, warm, spec.n, &mut times)?,
        Beside::Psql(psql) => rss = psql.round(warm, spec.n, &mut times)?,
        Beside::Mariadb(session) => rss = session.round(warm, spec.n, &mut times)?,
    }
    let mut round = Round {
        rss,
        ..Round::default()
    };
    report::sequential(&mut round, times);
    Ok(round)
}

/// The floor of `updated`: the kernel's close-after-write event for the file, read on this thread
/// (no watcher library, no debounce).
#[cfg(target_os = "linux")]
fn inotify_round(
    file: &std::path::Path,
    warm: usize,
    n: usize,
    times: &mut Vec<Duration>,
) -> Result<()> {
    let mut inotify = inotify::Inotify::init().context("inotify")?;
    let dir = file.parent().ok_or_else(|| anyhow!("no folder"))?;
    let name = file.file_name().ok_or_else(|| anyhow!("no file name"))?;
    inotify
        .watches()
        .add(dir, inotify::WatchMask::CLOSE_WRITE)
        .context("watching the folder")?;
    let mut buf = [0u8; 4096];
    for i in 0..warm + n {
        let t0 = Instant::now();
        std::fs::write(file, format!("version {}\n", i + 1))?;
        'wait: loop {
            for event in inotify.read_events_blocking(&mut buf)? {
                if event.name == Some(name) {
                    break 'wait;
                }
            }
        }
        let took = t0.elapsed();
        if i >= warm {
            times.push(took);
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn inotify_round(_: &std::path::Path, _: usize, _: usize, _: &mut Vec<Duration>) -> Result<()> {
    bail!("the suite runs on Linux only")
}

/// The machine, the binary and the load, for the report's header.
fn machine(bin: &std::path::Path) -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map_or_else(|| "unknown CPU".to_owned(), |s| s.trim().to_owned());
    let cores = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let version = Command::new(bin)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    // `taskset -c 0 cargo bench …` pins the suite and everything it starts to one CPU.
    let allowed = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|l| l.trim().to_owned())
        })
        .unwrap_or_default();
    format!(
        "machine: {cpu}, {cores} cores (this run on CPUs {allowed}), Linux {}; load average {}\nbinary: {} ({version})",
        kernel.trim(),
        loadavg(),
        bin.display()
    )
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
