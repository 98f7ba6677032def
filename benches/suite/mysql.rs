//! MySQL / MariaDB: the throwaway server the `mysql/…` workloads read (a fixture, started only
//! when one of them is selected), the long-lived `mariadb` client session they are compared with
//! (on the same connection type: TCP to 127.0.0.1 with a password), and a remark with `mariadb
//! -e` per run.
//!
//! The server: `mariadb-install-db` in a temp dir, `mariadbd` on a free 127.0.0.1 port, run as
//! `nobody` when the suite runs as root; the binaries from `$MARIADB_BIN`, else Debian's places,
//! else `PATH` (as `tests/it/mysql/server.rs` finds them). Without them, or without the `mariadb`
//! client, the workloads are "not available". `mariadbd` gets a parent-death signal and is
//! stopped when the fixtures are dropped.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use serde_json::{Value, json};

use crate::fixtures::{QUERY_SQL, ROWS};
use crate::peer;
use crate::postgres::{as_owner, die_with_parent, free_port, hand_to, run_as, terminate};
use crate::report::{self, Round};
use crate::workloads::{
    Beside, BesideSpec, Entry, MIB, Target, Unavailable, entry, json_text, request,
};

pub const USER: &str = "bench";
pub const PASSWORD: &str = "bench-pw";
pub const DATABASE: &str = "bench";

/// What the client prints after each answer (the value of `SELECT 'END-OF-ANSWER'`).
const END: &[u8] = b"END-OF-ANSWER\n";

fn table_sql() -> String {
    format!("SELECT * FROM items LIMIT {}", ROWS + 1)
}

/// How to reach the server: the `mariadb` client, the port, the socket.
#[derive(Debug, Clone)]
pub struct Access {
    client: PathBuf,
    pub port: u16,
    socket: PathBuf,
}

pub struct Server {
    pub access: Access,
    mariadbd: Option<Child>,
    dir: tempfile::TempDir,
}

impl Server {
    /// `mariadb-install-db`, `mariadbd`, then the `bench` database, its table `items` (`ROWS`
    /// rows, the values of the SQLite fixture, price `DECIMAL(10,2)`) and the `bench` account
    /// that may read it. `Unavailable` when MariaDB or its client is not installed.
    pub fn start() -> Result<Server> {
        let (mariadbd, install) = find_bins()?;
        let client = find_client()
            .ok_or_else(|| Unavailable("no `mariadb` client (install mariadb-client)".into()))?;
        let owner = run_as()?;
        eprintln!(
            "  starting a MariaDB server ({}{})…",
            mariadbd.display(),
            if owner.is_some() { ", as nobody" } else { "" }
        );
        let mut builder = tempfile::Builder::new();
        builder.prefix("mcp-bench-my-");
        let dir = match owner {
            Some(_) => builder.tempdir_in("/tmp"),
            None => builder.tempdir(),
        }
        .context("creating the server's folder")?;
        if let Some(owner) = owner {
            hand_to(dir.path(), owner)?;
        }
        let mut init = Command::new(install);
        init.arg("--no-defaults")
            .arg(format!("--datadir={}", dir.path().join("data").display()))
            .args([
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                "--skip-name-resolve",
            ])
            .stdin(Stdio::null());
        as_owner(&mut init, owner);
        let out = init.output().context("running mariadb-install-db")?;
        ensure!(
            out.status.success(),
            "mariadb-install-db failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let port = free_port()?;
        let socket = dir.path().join("sock");
        let mut cmd = Command::new(mariadbd);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", dir.path().join("data").display()))
            .arg(format!("--port={port}"))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}", dir.path().join("pid").display()))
            .arg(format!("--log-error={}", dir.path().join("log").display()))
            .args([
                "--bind-address=127.0.0.1",
                "--skip-name-resolve",
                "--skip-log-bin",
                "--innodb-buffer-pool-size=32M",
                "--innodb-flush-log-at-trx-commit=0",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        as_owner(&mut cmd, owner);
        die_with_parent(&mut cmd, true);
        let child = cmd.spawn().context("starting mariadbd")?;
        let mut server = Server {
            access: Access {
                client,
                port,
                socket,
            },
            mariadbd: Some(child),
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while server.access.admin("SELECT 1").is_err() {
            if let Some(child) = server.mariadbd.as_mut()
                && let Some(status) = child.try_wait()?
            {
                bail!("mariadbd exited ({status})");
            }
            ensure!(
                Instant::now() < deadline,
                "mariadbd did not start within 60 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server.access.admin(&format!(
            "CREATE DATABASE {DATABASE}; \
             CREATE USER '{USER}'@'%' IDENTIFIED BY '{PASSWORD}'; \
             GRANT SELECT ON {DATABASE}.* TO '{USER}'@'%'; \
             CREATE TABLE {DATABASE}.items (id INT PRIMARY KEY, name TEXT, price DECIMAL(10,2), qty INT, note TEXT); \
             INSERT INTO {DATABASE}.items SELECT seq, CONCAT('item ', seq), seq * 1.25, seq % 7, \
               IF(seq % 3 = 0, 'sale', NULL) FROM {DATABASE}.seq_1_to_{ROWS};"
        ))?;
        Ok(server)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let Some(mut child) = self.mariadbd.take() else {
            return;
        };
        eprintln!("stopping the MariaDB server");
        terminate(&mut child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while let Ok(None) = child.try_wait() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = &self.dir;
    }
}

impl Access {
    /// The URL the manifest holds: TCP to 127.0.0.1, with the password.
    pub fn url(&self) -> String {
        format!(
            "mysql://{USER}:{PASSWORD}@127.0.0.1:{}/{DATABASE}",
            self.port
        )
    }

    /// Runs SQL over the socket as root.
    fn admin(&self, sql: &str) -> Result<()> {
        let out = Command::new(&self.client)
            .arg("--no-defaults")
            .arg(format!("--socket={}", self.socket.display()))
            .args(["-u", "root", "-e", sql])
            .stdin(Stdio::null())
            .output()
            .context("running mariadb")?;
        ensure!(
            out.status.success(),
            "mariadb: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Ok(())
    }

    /// The client over TCP with the password, as the server connects: tab-separated rows
    /// without column names (`--batch -N`), NULL as `NULL`.
    fn tcp(&self, extra: &[&str]) -> Command {
        let mut cmd = Command::new(&self.client);
        cmd.args(["--no-defaults", "--batch", "-N", "-h", "127.0.0.1"])
            .arg(format!("--port={}", self.port))
            .args(["-u", USER, "-D", DATABASE])
            .env("MYSQL_PWD", PASSWORD)
            .args(extra);
        cmd
    }

    /// What one client run fed `script` prints: the reference answer.
    fn answer(&self, script: &str) -> Result<Vec<u8>> {
        let mut child = self
            .tcp(&[])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("running mariadb")?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(script.as_bytes())?;
        }
        let out = child.wait_with_output()?;
        ensure!(
            out.status.success(),
            "mariadb: {script}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Ok(out.stdout)
    }
}

/// The comparison: one `mariadb` client on one connection, fed `script(i)` and `SELECT
/// 'END-OF-ANSWER'` per operation on its stdin; its first answer must be `expected`.
pub struct Session {
    access: Access,
    script: Box<dyn Fn(u64) -> String>,
    expected: Vec<u8>,
    /// `mariadb -e` runs per run of the suite, for the remark.
    runs: usize,
    /// The SQL and the rows `mariadb -e` runs and must print.
    once: (String, usize),
}

impl Session {
    /// One round: `warm + n` operations, the last `n` timed; returns the client's peak RSS.
    pub fn round(&self, warm: usize, n: usize, times: &mut Vec<Duration>) -> Result<Option<u64>> {
        // `--unbuffered`: each answer is flushed as it is made (piped, the client holds its
        // output until it exits otherwise, and the round would wait for ever).
        let mut child = self
            .access
            .tcp(&["--unbuffered"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("running mariadb (is it installed?)")?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            bail!("mariadb: no pipes");
        };
        let mut out = BufReader::with_capacity(1 << 16, stdout);
        let (mut answer, mut line) = (Vec::new(), Vec::new());
        for i in 0..warm + n {
            let text = format!("{}\nSELECT 'END-OF-ANSWER';\n", (self.script)(i as u64));
            answer.clear();
            let t0 = Instant::now();
            stdin.write_all(text.as_bytes())?;
            stdin.flush()?;
            loop {
                line.clear();
                ensure!(out.read_until(b'\n', &mut line)? > 0, "mariadb exited");
                if line == END {
                    break;
                }
                answer.extend_from_slice(&line);
            }
            let took = t0.elapsed();
            if i == 0 {
                ensure!(
                    answer == self.expected,
                    "the mariadb session answered {:?}, not {:?}",
                    String::from_utf8_lossy(&answer),
                    String::from_utf8_lossy(&self.expected)
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

    /// `mariadb -e SQL` run `runs` times (a process, a TCP connection and authentication each
    /// time, as a script calling the client pays): a remark with its p50.
    pub fn extra(&self) -> Result<Vec<String>> {
        let (sql, rows) = &self.once;
        eprintln!("  `mariadb -e` × {}…", self.runs);
        let mut times = Vec::with_capacity(self.runs);
        for i in 0..=self.runs {
            let t0 = Instant::now();
            let out = self
                .access
                .tcp(&["-e", sql])
                .stdin(Stdio::null())
                .output()
                .context("running mariadb")?;
            let took = t0.elapsed();
            ensure!(
                out.status.success(),
                "mariadb -e {sql}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            let lines = out.stdout.iter().filter(|&&b| b == b'\n').count();
            ensure!(
                lines == *rows,
                "mariadb -e {sql}: {lines} lines, not {rows}"
            );
            if i > 0 {
                times.push(took);
            }
        }
        let mut round = Round::default();
        report::sequential(&mut round, times);
        let [p50, p90, p99] = round.seq.ok_or_else(|| anyhow!("no `mariadb -e` runs"))?;
        Ok(vec![format!(
            "`mariadb -e '{sql}'` per run (a process, a TCP connection and authentication each time, as a script pays; {} runs): p50 {} (p90 {}, p99 {})",
            self.runs,
            report::dur(p50),
            report::dur(p90),
            report::dur(p99)
        )])
    }
}

pub fn entries() -> Vec<Entry> {
    vec![
        entry(
            "mysql/table-100",
            "`resources/read` of a 100-row MariaDB table, beside one `mariadb` client session answering the same SELECT on a pipe",
            |fx, s| {
                let (dir, access) = fx.mysql()?;
                let script = |_| format!("{};", table_sql());
                let expected = access.answer(&script(0))?;
                let rows = parse(&expected);
                ensure!(rows.len() == ROWS, "mariadb answered {} rows", rows.len());
                let mut w = request(
                    dir,
                    "resources/read",
                    |_| json!({ "uri": "mysql://bench/tables/items" }),
                    move |r| check(r, &rows),
                    s,
                );
                (w.seq, w.warm, w.pipe) = (s.n(1000), s.n(50), s.n(2000));
                w.beside = Some(session(access, script, expected, (table_sql(), ROWS), s));
                w.targets = vec![(Target::RssAtMost(32 * MIB), "issue 14")];
                Ok(w)
            },
        ),
        entry(
            "mysql/query-1",
            "`resources/read` of a MariaDB named query with one bound parameter (one row), beside the same `mariadb` session",
            |fx, s| {
                let (dir, access) = fx.mysql()?;
                let id = |i: u64| i % ROWS as u64 + 1;
                let script = move |i| format!("{};", QUERY_SQL.replace(":id", &id(i).to_string()));
                let expected = access.answer(&script(0))?;
                let rows = parse(&expected);
                ensure!(rows.len() == 1, "mariadb answered {} rows", rows.len());
                let mut w = request(
                    dir,
                    "resources/read",
                    move |i| json!({ "uri": format!("mysql://bench/queries/by_id?id={}", id(i)) }),
                    move |r| check(r, &rows),
                    s,
                );
                (w.seq, w.warm, w.pipe) = (s.n(2000), s.n(100), s.n(10_000));
                w.beside = Some(session(
                    access,
                    script,
                    expected,
                    (QUERY_SQL.replace(":id", "42"), 1),
                    s,
                ));
                w.targets = vec![(Target::RssAtMost(32 * MIB), "issue 14")];
                Ok(w)
            },
        ),
    ]
}

fn session(
    access: Access,
    script: impl Fn(u64) -> String + 'static,
    expected: Vec<u8>,
    once: (String, usize),
    s: crate::workloads::Scale,
) -> BesideSpec {
    BesideSpec {
        label: "mariadb session".into(),
        kind: Beside::Mariadb(Session {
            access,
            script: Box::new(script),
            expected,
            runs: s.n(100),
            once,
        }),
        n: s.n(1000),
    }
}

/// The client's rows: tab-separated fields, `NULL` for null.
fn parse(out: &[u8]) -> Vec<Vec<Option<String>>> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| {
            l.split('\t')
                .map(|c| (c != "NULL").then(|| c.to_owned()))
                .collect()
        })
        .collect()
}

/// The server's read answer holds exactly these rows, in order, cell for cell.
fn check(r: &Value, want: &[Vec<Option<String>>]) -> Result<()> {
    let v = json_text(r)?;
    ensure!(v["truncated"] == false, "the read says truncated");
    let rows = v["rows"]
        .as_array()
        .ok_or_else(|| anyhow!("the read has no rows: {v}"))?;
    ensure!(
        rows.len() == want.len(),
        "{} rows, where mariadb answers {}",
        rows.len(),
        want.len()
    );
    let columns = v["columns"].as_array().cloned().unwrap_or_default();
    for (k, (row, want)) in rows.iter().zip(want).enumerate() {
        ensure!(
            columns.len() == want.len(),
            "row {k}: {} columns",
            columns.len()
        );
        for (col, cell) in columns.iter().zip(want) {
            let got = &row[col.as_str().unwrap_or_default()];
            let same = match (got, cell) {
                (Value::Null, None) => true,
                (Value::String(s), Some(t)) => s == t,
                (Value::Number(n), Some(t)) => n.to_string() == *t,
                _ => false,
            };
            ensure!(
                same,
                "row {k}, column {col}: mcp-manifest answered {got}, mariadb {cell:?}"
            );
        }
    }
    Ok(())
}

/// `mariadbd` and `mariadb-install-db`, or `Unavailable`.
fn find_bins() -> Result<(PathBuf, PathBuf)> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("MARIADB_BIN")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    dirs.extend([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")]);
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let find = |name: &str| dirs.iter().map(|d| d.join(name)).find(|p| p.is_file());
    match (find("mariadbd"), find("mariadb-install-db")) {
        (Some(d), Some(i)) => Ok((d, i)),
        _ => Err(Unavailable(
            "no MariaDB server binaries (mariadbd, mariadb-install-db): install mariadb-server (Debian) or set MARIADB_BIN".into(),
        )
        .into()),
    }
}

fn find_client() -> Option<PathBuf> {
    ["/usr/bin/mariadb"]
        .iter()
        .map(PathBuf::from)
        .chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                .map(|d| d.join("mariadb")),
        )
        .find(|p: &PathBuf| p.is_file())
}

/// The manifest of the `mysql` fixture: the `bench` database (`row_limit` = its rows) and the
/// one-row named query `by_id`.
pub fn manifest(access: &Access) -> String {
    format!(
        "[mysql.bench]\nurl = \"{}\"\nrow_limit = {ROWS}\nmax_connections = 4\n\n\
         [mysql.bench.queries.by_id]\nsql = \"{QUERY_SQL}\"\nparams.id = {{ type = \"integer\" }}\n",
        access.url()
    )
}
