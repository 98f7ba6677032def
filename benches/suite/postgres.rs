//! PostgreSQL: the throwaway cluster the `postgres/…` workloads read (a fixture, started only
//! when one of them is selected), the long-lived `psql` session they are compared with, and the
//! figures they add as remarks (`psql -c` per run; the connections the server holds).
//!
//! The cluster: `initdb` in a temp dir, `postgres` on a free 127.0.0.1 port and a socket folder
//! of its own, `fsync` off, password (scram-sha-256) over TCP and trust on the socket. PostgreSQL
//! refuses to run as root: run as root, the cluster runs as `nobody`. The server binaries come
//! from `$PG_BIN`, else the newest `/usr/lib/postgresql/*/bin` (Debian), else `pg_config
//! --bindir`, else `PATH` (as `tests/it/postgres/cluster.rs` finds them). Without them, or
//! without `psql`, the workloads are "not available". `postgres` gets a parent-death signal, so
//! a suite killed by SIGKILL takes it along; otherwise it is stopped (and its folder removed)
//! when the fixtures are dropped, whether the suite succeeded or not.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use serde_json::{Value, json};

pub use os::{as_owner, die_with_parent, hand_to, run_as, terminate};

use crate::fixtures::{QUERY_SQL, ROWS};
use crate::peer::{self, Peer, Program};
use crate::report::{self, Round};
use crate::workloads::{
    Beside, BesideSpec, Entry, MIB, Target, Unavailable, entry, json_text, request,
};

/// The bootstrap superuser, its password (TCP needs it; the socket trusts) and the database.
pub const SUPERUSER: &str = "postgres";
pub const PASSWORD: &str = "bench-pw";
pub const DATABASE: &str = "bench";

/// The line `\echo` writes after each answer of the `psql` session.
const END: &[u8] = b"END-OF-ANSWER\n";
/// psql's field separator and its display of NULL (neither occurs in the fixture's values).
const SEP: &str = "\u{1f}";
const NULL: &str = "<NULL>";

/// The table read of `postgres/table-100` (LIMIT one more than `row_limit`, as the server must
/// read to know whether the table is truncated; as `sqlite/table-100` asks `sqlite3`).
fn table_sql() -> String {
    format!("SELECT * FROM items LIMIT {}", ROWS + 1)
}

/// How to reach the cluster: `psql`, the port, the socket folder.
#[derive(Debug, Clone)]
pub struct Access {
    psql: PathBuf,
    pub port: u16,
    socket: PathBuf,
}

pub struct Cluster {
    pub access: Access,
    postmaster: Option<Child>,
    /// Holds `data/`, `sock/` and `log`; removed after the postmaster has stopped.
    dir: tempfile::TempDir,
}

impl Cluster {
    /// `initdb`, `postgres`, then the `bench` database and its table `items` (`ROWS` rows, the
    /// same values as the SQLite fixture, price `numeric(10,2)`). An `Unavailable` error when
    /// PostgreSQL or `psql` is not installed.
    pub fn start() -> Result<Cluster> {
        let bin = find_bin()?;
        let psql = find_psql().ok_or_else(|| {
            Unavailable(
                "no `psql` (install postgresql-client-15, or put psql in PG_BIN or on the PATH)"
                    .into(),
            )
        })?;
        let owner = os::run_as()?;
        eprintln!(
            "  starting a PostgreSQL cluster ({}{})…",
            bin.display(),
            if owner.is_some() { ", as nobody" } else { "" }
        );
        // `nobody` must reach the folder: under /tmp, whatever TMPDIR says, when run as root.
        let mut builder = tempfile::Builder::new();
        builder.prefix("mcp-bench-pg-");
        let dir = match owner {
            Some(_) => builder.tempdir_in("/tmp"),
            None => builder.tempdir(),
        }
        .context("creating the cluster's folder")?;
        let sock = dir.path().join("sock");
        std::fs::create_dir(&sock)?;
        if let Some((uid, gid)) = owner {
            for p in [dir.path(), sock.as_path()] {
                os::hand_to(p, (uid, gid))
                    .with_context(|| format!("handing {} to nobody", p.display()))?;
            }
        }
        let pwfile = dir.path().join("pw");
        std::fs::write(&pwfile, PASSWORD)?;
        os::readable_by_all(&pwfile)?;
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .arg("-D")
            .arg(dir.path().join("data"))
            .args(["-U", SUPERUSER, "--pwfile"])
            .arg(&pwfile)
            .args([
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .stdin(Stdio::null());
        os::as_owner(&mut initdb, owner);
        let out = initdb.output().context("running initdb")?;
        ensure!(
            out.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::remove_file(&pwfile)?;
        let port = free_port()?;
        let log = std::fs::File::create(dir.path().join("log"))?;
        let mut cmd = Command::new(bin.join("postgres"));
        cmd.arg("-D")
            .arg(dir.path().join("data"))
            .arg("-p")
            .arg(port.to_string())
            .arg("-k")
            .arg(&sock)
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        os::as_owner(&mut cmd, owner);
        os::die_with_parent(&mut cmd, false);
        let postmaster = cmd.spawn().context("starting postgres")?;
        let mut cluster = Cluster {
            access: Access {
                psql,
                port,
                socket: sock,
            },
            postmaster: Some(postmaster),
            dir,
        };
        cluster.wait_ready()?;
        cluster
            .access
            .sql("postgres", &format!("CREATE DATABASE {DATABASE}"))?;
        cluster.access.sql(
            DATABASE,
            &format!(
                "CREATE TABLE items (id int PRIMARY KEY, name text, price numeric(10,2), qty int, note text);\n\
                 INSERT INTO items SELECT g, 'item ' || g, g * 1.25, g % 7, \
                 CASE WHEN g % 3 = 0 THEN 'sale' END FROM generate_series(1, {ROWS}) g;\n\
                 ANALYZE items;"
            ),
        )?;
        Ok(cluster)
    }

    /// Polls until a connection over the socket works (the server writes no other signal).
    fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if self.access.sql("postgres", "SELECT 1").is_ok() {
                return Ok(());
            }
            if let Some(child) = self.postmaster.as_mut()
                && let Some(status) = child.try_wait()?
            {
                bail!("postgres exited ({status}): {}", self.log());
            }
            ensure!(
                Instant::now() < deadline,
                "postgres did not start within 60 s: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }
}

impl Drop for Cluster {
    /// Fast shutdown (clients are disconnected), at most 30 s, then SIGKILL; the folder goes
    /// with `dir`, dropped after this.
    fn drop(&mut self) {
        let Some(mut child) = self.postmaster.take() else {
            return;
        };
        eprintln!("stopping the PostgreSQL cluster");
        os::fast_shutdown(&mut child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while let Ok(None) = child.try_wait() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Access {
    /// The connection URL the manifest holds: TCP to 127.0.0.1, with the password.
    pub fn url(&self) -> String {
        format!(
            "postgres://{SUPERUSER}:{PASSWORD}@127.0.0.1:{}/{DATABASE}",
            self.port
        )
    }

    /// Runs SQL in `db` over the socket as the superuser; returns psql's unaligned output.
    fn sql(&self, db: &str, sql: &str) -> Result<String> {
        let out = Command::new(&self.psql)
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(&self.socket)
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                SUPERUSER,
                "-d",
                db,
                "-c",
                sql,
            ])
            .stdin(Stdio::null())
            .output()
            .context("running psql")?;
        ensure!(
            out.status.success(),
            "psql: {sql}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Ok(String::from_utf8(out.stdout)?)
    }

    /// `psql` over TCP with the password, as the server connects, printing unaligned rows with
    /// a header line, `SEP` between fields and `NULL` for null; `extra` before the connection
    /// options.
    fn tcp(&self, extra: &[&str]) -> Command {
        let mut cmd = Command::new(&self.psql);
        cmd.args(["-X", "-q", "-A", "-F", SEP, "-P", "footer=off", "-P"])
            .arg(format!("null={NULL}"))
            .args(extra)
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", SUPERUSER, "-d", DATABASE])
            .env("PGPASSWORD", PASSWORD)
            .env_remove("PGSERVICE")
            .env_remove("PGOPTIONS");
        cmd
    }

    /// What one `psql` run fed `script` on its stdin prints: the reference answer.
    fn answer(&self, script: &str) -> Result<Vec<u8>> {
        let mut child = self
            .tcp(&["-v", "ON_ERROR_STOP=1"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("running psql")?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(script.as_bytes())?;
        }
        let out = child.wait_with_output()?;
        ensure!(
            out.status.success(),
            "psql: {script}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Ok(out.stdout)
    }

    /// Connections the server holds (its `application_name` is `mcp-manifest`).
    fn connections(&self) -> Result<usize> {
        let n = self.sql(
            "postgres",
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'mcp-manifest'",
        )?;
        n.trim()
            .parse()
            .with_context(|| format!("pg_stat_activity counted {n:?}"))
    }
}

/// The comparison: one `psql` process on one connection (TCP, password), fed `script(i)` and
/// `\echo END-OF-ANSWER` per operation on its stdin; its first answer must be `expected`.
pub struct Psql {
    access: Access,
    script: Box<dyn Fn(u64) -> String>,
    expected: Vec<u8>,
    /// Figures measured once per run, beside the rounds, given the mcp-manifest binary.
    extra: Extra,
}

/// Figures measured once per run, given the mcp-manifest binary: remarks of the workload.
type Extra = Box<dyn Fn(&Path) -> Result<Vec<String>>>;

impl Psql {
    /// One round: `warm + n` operations, the last `n` timed; returns psql's peak RSS.
    pub fn round(&self, warm: usize, n: usize, times: &mut Vec<Duration>) -> Result<Option<u64>> {
        let mut child = self
            .access
            .tcp(&[])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("running psql (is it installed?)")?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            bail!("psql: no pipes");
        };
        let mut out = BufReader::with_capacity(1 << 16, stdout);
        let (mut answer, mut line) = (Vec::new(), Vec::new());
        for i in 0..warm + n {
            let text = format!("{}\\echo END-OF-ANSWER\n", (self.script)(i as u64));
            answer.clear();
            let t0 = Instant::now();
            stdin.write_all(text.as_bytes())?;
            loop {
                line.clear();
                ensure!(out.read_until(b'\n', &mut line)? > 0, "psql exited");
                if line == END {
                    break;
                }
                answer.extend_from_slice(&line);
            }
            let took = t0.elapsed();
            if i == 0 {
                ensure!(
                    answer == self.expected,
                    "the psql session answered {:?}, not {:?}",
                    preview(&answer),
                    preview(&self.expected)
                );
            }
            if i >= warm {
                times.push(took);
            }
        }
        let rss = peer::peak_rss(child.id());
        drop(stdin);
        child.wait()?;
        Ok(rss)
    }

    /// The figures that come once per run (remarks of the workload).
    pub fn extra(&self, bin: &Path) -> Result<Vec<String>> {
        (self.extra)(bin)
    }
}

pub fn entries() -> Vec<Entry> {
    vec![
        entry(
            "postgres/table-100",
            "`resources/read` of a 100-row PostgreSQL table, beside one `psql` session answering the same SELECT on a pipe",
            |fx, s| {
                let (dir, access) = fx.postgres()?;
                let script = |_| format!("{};\n", table_sql());
                let expected = access.answer(&script(0))?;
                let table = Table::parse(&expected)?;
                ensure!(
                    table.rows.len() == ROWS,
                    "psql answered {} rows",
                    table.rows.len()
                );
                let mut w = request(
                    dir,
                    "resources/read",
                    |_| json!({ "uri": "postgres://bench/tables/items" }),
                    move |r| table.check(r),
                    s,
                );
                (w.seq, w.warm, w.pipe) = (s.n(1000), s.n(50), s.n(2000));
                let runs = s.n(100);
                let a = access.clone();
                w.beside = Some(psql(
                    access,
                    script,
                    expected,
                    move |_| Ok(vec![psql_c(&a, &table_sql(), ROWS, runs)?]),
                    s.n(1000),
                ));
                w.targets = vec![(Target::RssAtMost(32 * MIB), "issue 14")];
                Ok(w)
            },
        ),
        entry(
            "postgres/query-1",
            "`resources/read` of a PostgreSQL named query with one bound parameter (one row), beside the same `psql` session",
            |fx, s| {
                let (dir, access) = fx.postgres()?;
                let id = |i: u64| i % ROWS as u64 + 1;
                let script = move |i| format!("\\set id {}\n{QUERY_SQL};\n", id(i));
                let expected = access.answer(&script(0))?;
                let table = Table::parse(&expected)?;
                ensure!(
                    table.rows.len() == 1,
                    "psql answered {} rows",
                    table.rows.len()
                );
                let manifest = dir.join("mcp-server.toml");
                let mut w = request(
                    dir,
                    "resources/read",
                    move |i| json!({ "uri": format!("postgres://bench/queries/by_id?id={}", id(i)) }),
                    move |r| table.check(r),
                    s,
                );
                (w.seq, w.warm, w.pipe) = (s.n(2000), s.n(100), s.n(10_000));
                let runs = s.n(100);
                let a = access.clone();
                w.beside = Some(psql(
                    access,
                    script,
                    expected,
                    move |bin| {
                        Ok(vec![
                            psql_c(&a, &QUERY_SQL.replace(":id", "42"), 1, runs)?,
                            connections(&a, bin, &manifest)?,
                        ])
                    },
                    s.n(2000),
                ));
                w.targets = vec![(Target::RssAtMost(32 * MIB), "issue 14")];
                Ok(w)
            },
        ),
    ]
}

fn psql(
    access: Access,
    script: impl Fn(u64) -> String + 'static,
    expected: Vec<u8>,
    extra: impl Fn(&Path) -> Result<Vec<String>> + 'static,
    n: usize,
) -> BesideSpec {
    BesideSpec {
        label: "psql session".into(),
        kind: Beside::Psql(Psql {
            access,
            script: Box::new(script),
            expected,
            extra: Box::new(extra),
        }),
        n,
    }
}

/// `psql -c SQL` run `runs` times (a process, a TCP connection and scram authentication each
/// time, as a script calling psql pays), to the end of its output: a remark with its p50.
fn psql_c(access: &Access, sql: &str, rows: usize, runs: usize) -> Result<String> {
    eprintln!("  `psql -c` × {runs}…");
    let mut times = Vec::with_capacity(runs);
    for i in 0..=runs {
        let t0 = Instant::now();
        let out = access
            .tcp(&["-c", sql])
            .stdin(Stdio::null())
            .output()
            .context("running psql")?;
        let took = t0.elapsed();
        ensure!(
            out.status.success(),
            "psql -c {sql}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        let lines = out.stdout.iter().filter(|&&b| b == b'\n').count();
        ensure!(
            lines == rows + 1,
            "psql -c {sql}: {lines} lines, not {}",
            rows + 1
        );
        // The first run is a warm-up.
        if i > 0 {
            times.push(took);
        }
    }
    let mut round = Round::default();
    report::sequential(&mut round, times);
    let [p50, p90, p99] = round.seq.ok_or_else(|| anyhow!("no `psql -c` runs"))?;
    Ok(format!(
        "`psql -c '{sql}'` per run (a process, a TCP connection and scram authentication each time, as a script pays; once per run of the suite, {runs} runs): p50 {} (p90 {}, p99 {})",
        report::dur(p50),
        report::dur(p90),
        report::dur(p99)
    ))
}

/// Connections a fresh server holds (`pg_stat_activity`): before any request, idle after 20
/// sequential reads, at most while 10 reads of a 300 ms query are in flight (`max_connections
/// = 4`), and idle after them.
fn connections(access: &Access, bin: &Path, manifest: &Path) -> Result<String> {
    eprintln!("  connections held…");
    let program = Program::Server {
        bin: bin.to_owned(),
        manifest: manifest.to_owned(),
    };
    let (mut peer, _) = Peer::start(&program)?;
    let _watchdog = peer.watchdog(Duration::from_secs(60));
    let before = access.connections()?;
    for i in 0..20 {
        let uri = format!("postgres://bench/queries/by_id?id={}", i % ROWS + 1);
        peer.call("resources/read", &json!({ "uri": uri }))?;
    }
    let idle = access.connections()?;
    let mut payload = Vec::new();
    for i in 0..10 {
        let uri = format!("postgres://bench/queries/slow?id={i}");
        payload.extend(peer.prepare("resources/read", &json!({ "uri": uri })).1);
    }
    // Counted from another thread while this one writes the 10 requests and reads the answers:
    // the first reads hold their connections for 300 ms, so the count runs for 250 ms.
    let counter = {
        let access = access.clone();
        std::thread::spawn(move || -> Result<usize> {
            let t0 = Instant::now();
            let mut most = 0;
            while t0.elapsed() < Duration::from_millis(250) {
                most = most.max(access.connections()?);
            }
            Ok(most)
        })
    };
    let took = peer.pipelined(payload, 10);
    let busy = counter
        .join()
        .map_err(|_| anyhow!("the counting thread panicked"))??;
    let took = took.context("10 reads of the slow query")?;
    let after = access.connections()?;
    peer.close()?;
    Ok(format!(
        "connections a fresh server holds (`pg_stat_activity`): {before} before any request, {idle} idle after 20 sequential reads, at most {busy} while 10 reads of a 300 ms query are in flight (`max_connections = 4`; the 10 answered in {}), {after} idle after them",
        report::dur(took)
    ))
}

/// psql's unaligned answer: a header line, then the rows, fields split by `SEP`.
struct Table {
    columns: Vec<String>,
    rows: Vec<Vec<Option<String>>>,
}

impl Table {
    fn parse(out: &[u8]) -> Result<Table> {
        let text = std::str::from_utf8(out)?;
        let mut lines = text.lines();
        let columns: Vec<String> = lines
            .next()
            .ok_or_else(|| anyhow!("psql printed nothing"))?
            .split(SEP)
            .map(str::to_owned)
            .collect();
        let rows = lines
            .map(|l| {
                let cells: Vec<Option<String>> = l
                    .split(SEP)
                    .map(|c| (c != NULL).then(|| c.to_owned()))
                    .collect();
                ensure!(cells.len() == columns.len(), "psql printed the row {l:?}");
                Ok(cells)
            })
            .collect::<Result<_>>()?;
        Ok(Table { columns, rows })
    }

    /// The server's read answer holds exactly these rows, in this order, cell for cell (a
    /// number equal to psql's text as a number: numeric `2.50` is the JSON number 2.5).
    fn check(&self, r: &Value) -> Result<()> {
        let v = json_text(r)?;
        ensure!(v["truncated"] == false, "the read says truncated");
        let rows = v["rows"]
            .as_array()
            .ok_or_else(|| anyhow!("the read has no rows: {v}"))?;
        ensure!(
            rows.len() == self.rows.len(),
            "{} rows, where psql answers {}",
            rows.len(),
            self.rows.len()
        );
        for (k, (row, want)) in rows.iter().zip(&self.rows).enumerate() {
            let obj = row
                .as_object()
                .ok_or_else(|| anyhow!("row {k} is not an object: {row}"))?;
            ensure!(
                obj.len() == self.columns.len(),
                "row {k} has {} columns, psql {}",
                obj.len(),
                self.columns.len()
            );
            for (col, cell) in self.columns.iter().zip(want) {
                let got = obj
                    .get(col)
                    .ok_or_else(|| anyhow!("row {k} has no column {col}"))?;
                ensure!(
                    same(got, cell.as_deref()),
                    "row {k}, column {col}: mcp-manifest answered {got}, psql {}",
                    cell.as_ref()
                        .map_or_else(|| "NULL".to_owned(), |t| format!("{t:?}"))
                );
            }
        }
        Ok(())
    }
}

fn same(got: &Value, psql: Option<&str>) -> bool {
    match (got, psql) {
        (Value::Null, None) => true,
        (Value::String(s), Some(t)) => s == t,
        (Value::Bool(b), Some(t)) => t == if *b { "t" } else { "f" },
        (Value::Number(n), Some(t)) => {
            n.to_string() == t || (n.as_f64().is_some() && n.as_f64() == t.parse::<f64>().ok())
        }
        _ => false,
    }
}

fn preview(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned()
}

/// What the cluster does differently per platform: the user it runs as (root runs it as
/// `nobody`), the parent-death signal (Linux only: elsewhere the cluster is stopped when the
/// fixtures are dropped, not when the suite is killed) and the fast-shutdown signal.
#[cfg(unix)]
mod os {
    use std::os::unix::fs::PermissionsExt as _;
    use std::os::unix::process::CommandExt as _;
    use std::path::Path;
    use std::process::{Child, Command};

    use anyhow::{Result, ensure};

    /// Root runs the cluster as `nobody`; anyone else as themselves.
    pub fn run_as() -> Result<Option<(u32, u32)>> {
        // SAFETY: plain libc calls; getpwnam's result is read before any other call.
        unsafe {
            if libc::geteuid() != 0 {
                return Ok(None);
            }
            let pw = libc::getpwnam(c"nobody".as_ptr());
            ensure!(
                !pw.is_null(),
                "running as root, and there is no user `nobody` to run PostgreSQL as"
            );
            Ok(Some(((*pw).pw_uid, (*pw).pw_gid)))
        }
    }

    pub fn hand_to(path: &Path, (uid, gid): (u32, u32)) -> std::io::Result<()> {
        std::os::unix::fs::chown(path, Some(uid), Some(gid))
    }

    pub fn readable_by_all(path: &Path) -> std::io::Result<()> {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))
    }

    pub fn as_owner(cmd: &mut Command, owner: Option<(u32, u32)>) {
        if let Some((uid, gid)) = owner {
            cmd.uid(uid).gid(gid).env("HOME", "/tmp");
        }
    }

    /// A suite killed by SIGKILL takes `postgres` along (Linux's parent-death signal, SIGQUIT:
    /// PostgreSQL's immediate shutdown; `kill`: SIGKILL instead).
    pub fn die_with_parent(cmd: &mut Command, kill: bool) {
        #[cfg(target_os = "linux")]
        let signal = if kill { libc::SIGKILL } else { libc::SIGQUIT };
        // SAFETY: `prctl` is async-signal-safe; this runs in the child between fork and exec.
        // The suite spawns from its main thread, which lives as long as the process (the signal
        // fires when the spawning thread ends).
        #[cfg(target_os = "linux")]
        unsafe {
            cmd.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, signal);
                Ok(())
            });
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (cmd, kill);
    }

    /// SIGTERM: a graceful stop.
    pub fn terminate(child: &mut Child) {
        if let Ok(pid) = i32::try_from(child.id()) {
            // SAFETY: signalling our own child, which has not been reaped yet.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
    }

    /// SIGINT: PostgreSQL's fast shutdown (clients are disconnected).
    pub fn fast_shutdown(child: &mut Child) {
        if let Ok(pid) = i32::try_from(child.id()) {
            // SAFETY: signalling our own child, which has not been reaped yet.
            unsafe {
                libc::kill(pid, libc::SIGINT);
            }
        }
    }
}

/// Windows: the cluster runs as the user, and stops by being killed (no signals).
#[cfg(not(unix))]
mod os {
    use std::path::Path;
    use std::process::{Child, Command};

    use anyhow::Result;

    pub fn run_as() -> Result<Option<(u32, u32)>> {
        Ok(None)
    }

    pub fn hand_to(_: &Path, _: (u32, u32)) -> std::io::Result<()> {
        Ok(())
    }

    pub fn readable_by_all(_: &Path) -> std::io::Result<()> {
        Ok(())
    }

    pub fn as_owner(_: &mut Command, _: Option<(u32, u32)>) {}

    pub fn die_with_parent(_: &mut Command, _: bool) {}

    pub fn fast_shutdown(child: &mut Child) {
        let _ = child.kill();
    }

    pub fn terminate(child: &mut Child) {
        let _ = child.kill();
    }
}

pub fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .context("finding a free port")?
        .port())
}

/// The folder holding `initdb` and `postgres`, or `Unavailable`.
fn find_bin() -> Result<PathBuf> {
    let has = |dir: &Path| dir.join("initdb").is_file() && dir.join("postgres").is_file();
    if let Some(dir) = std::env::var_os("PG_BIN").map(PathBuf::from) {
        ensure!(
            has(&dir),
            "PG_BIN={} has no initdb and postgres",
            dir.display()
        );
        return Ok(dir);
    }
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            Some((version, e.path().join("bin")))
        })
        .filter(|(_, dir)| has(dir))
        .collect();
    debian.sort();
    if let Some((_, dir)) = debian.pop() {
        return Ok(dir);
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if has(&dir) {
            return Ok(dir);
        }
    }
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        if has(&dir) {
            return Ok(dir);
        }
    }
    Err(Unavailable(
        "no PostgreSQL server binaries (initdb, postgres): install postgresql-15 (Debian) or set PG_BIN to their folder"
            .into(),
    )
    .into())
}

/// `psql` beside the server binaries (`PG_BIN` or Debian's folder), else on the PATH.
fn find_psql() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    find_bin()
        .ok()
        .into_iter()
        .chain(std::env::split_paths(&path))
        .map(|d| d.join("psql"))
        .find(|p| p.is_file())
}

/// The manifest of the `postgres` fixture: the `bench` database (`row_limit` = its rows,
/// `max_connections = 4`), the one-row named query `by_id` and `slow` (300 ms, for the count of
/// connections under load).
pub fn manifest(access: &Access) -> String {
    format!(
        "[postgres.bench]\nurl = \"{}\"\nrow_limit = {ROWS}\nmax_connections = 4\n\n\
         [postgres.bench.queries.by_id]\nsql = \"{QUERY_SQL}\"\nparams.id = {{ type = \"integer\" }}\n\n\
         [postgres.bench.queries.slow]\nsql = \"SELECT pg_sleep(0.3), :id AS id\"\nparams.id = {{ type = \"integer\" }}\n",
        access.url()
    )
}
