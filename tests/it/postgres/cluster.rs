//! A throwaway PostgreSQL cluster for the tests: `initdb` in a temp dir, `postgres` on a free
//! 127.0.0.1 port and a socket folder of its own, stopped when the test (or the test binary) is
//! done. Never a system-wide cluster.
//!
//! PostgreSQL refuses to run as root: when the tests run as root the cluster runs as `nobody`
//! (its folder handed over to it); otherwise as the user running the tests. The server binaries
//! come from `$PG_BIN`, else the newest `/usr/lib/postgresql/*/bin` (Debian), else `pg_config
//! --bindir`, else `PATH`. `postgres` is this process's child with a parent-death signal, so a
//! test binary that dies (even by SIGKILL) takes its clusters with it.
//!
//! Where a test cannot start one (Windows, under Wine), `MCP_MANIFEST_TEST_PG_PORT` names a
//! cluster a harness started (`scripts/windows-tests.sh`), reached over TCP with `PASSWORD`;
//! such a cluster cannot be stopped or started by a test.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{AssertSqlSafe, ConnectOptions as _, Connection as _, Executor as _};

/// The bootstrap superuser and its password (TCP connections need it; the socket trusts).
pub const SUPERUSER: &str = "postgres";
pub const PASSWORD: &str = "pg-Secret-d0nt-print";

pub struct Cluster {
    /// Holds `data/`, `sock/` and `log`; removed when the cluster is dropped.
    dir: Option<tempfile::TempDir>,
    pub port: u16,
    bin: PathBuf,
    owner: Option<(u32, u32)>,
    postmaster: Mutex<Option<Child>>,
}

/// The cluster most tests share (one `initdb` per test binary); each test makes its own
/// database in it.
pub fn shared() -> &'static Cluster {
    static SHARED: OnceLock<Cluster> = OnceLock::new();
    SHARED.get_or_init(|| {
        let c = Cluster::start();
        // Stop it when the test binary exits normally (the parent-death signal covers the rest).
        extern "C" fn stop_shared() {
            if let Some(c) = SHARED.get() {
                c.stop();
                if let Some(dir) = &c.dir {
                    let _ = std::fs::remove_dir_all(dir.path());
                }
            }
        }
        // SAFETY: registering a plain `extern "C"` function with no arguments.
        unsafe {
            libc::atexit(stop_shared);
        }
        c
    })
}

impl Cluster {
    /// `initdb`, then start. Panics with what to install when the binaries are missing. The
    /// cluster a harness started instead, when it says where (`external_port`).
    pub fn start() -> Cluster {
        if let Some(port) = external_port("MCP_MANIFEST_TEST_PG_PORT") {
            let c = Cluster {
                dir: None,
                port,
                bin: PathBuf::new(),
                owner: None,
                postmaster: Mutex::new(None),
            };
            c.wait_ready();
            return c;
        }
        let bin = find_bin();
        let owner = run_as();
        // `nobody` must reach the folder: under /tmp, whatever TMPDIR says, when run as root.
        let mut builder = tempfile::Builder::new();
        builder.prefix("mcp-pg-");
        let dir = match owner {
            Some(_) => builder.tempdir_in("/tmp"),
            None => builder.tempdir(),
        }
        .expect("temp dir for the cluster");
        if let Some(owner) = owner {
            os::hand_to(dir.path(), owner).expect("chown the cluster dir");
        }
        let pwfile = dir.path().join("pw");
        std::fs::write(&pwfile, PASSWORD).expect("password file");
        os::readable_by_all(&pwfile).expect("chmod");
        let sock = dir.path().join("sock");
        std::fs::create_dir(&sock).expect("socket dir");
        if let Some(owner) = owner {
            os::hand_to(&sock, owner).expect("chown the socket dir");
        }
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
        as_owner(&mut initdb, owner);
        let out = initdb.output().expect("run initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let _ = std::fs::remove_file(&pwfile);
        let port = free_port();
        let c = Cluster {
            dir: Some(dir),
            port,
            bin,
            owner,
            postmaster: Mutex::new(None),
        };
        c.resume();
        c
    }

    fn dir(&self) -> &Path {
        self.dir
            .as_ref()
            .expect("a cluster of the test's own (a harness's cannot be stopped or started)")
            .path()
    }

    pub fn socket_dir(&self) -> PathBuf {
        self.dir().join("sock")
    }

    /// Starts `postgres` (again) and waits until it accepts connections.
    pub fn resume(&self) {
        let mut guard = self.postmaster.lock().expect("postmaster lock");
        assert!(guard.is_none(), "already running");
        let log = std::fs::File::create(self.dir().join("log")).expect("log file");
        let mut cmd = Command::new(self.bin.join("postgres"));
        cmd.arg("-D")
            .arg(self.dir().join("data"))
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-k")
            .arg(self.socket_dir())
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
                "-c",
                "max_connections=60",
                "-c",
                "shared_buffers=16MB",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        as_owner(&mut cmd, self.owner);
        os::die_with_parent(&mut cmd, false);
        // Spawned from a thread that lives as long as the process: the parent-death signal fires
        // when the spawning *thread* ends, and test threads end with their test.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(cmd.spawn());
            loop {
                std::thread::park();
            }
        });
        let child = rx
            .recv()
            .expect("the spawning thread answers")
            .expect("start postgres");
        *guard = Some(child);
        drop(guard);
        self.wait_ready();
    }

    /// Polls until a connection over the socket works (the server writes no other signal).
    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if block_on(async { self.admin("postgres").await.map(|_| ()) }).is_ok() {
                return;
            }
            if let Some(child) = self.postmaster.lock().expect("lock").as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!("postgres exited ({status}): {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "postgres did not start: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log(&self) -> String {
        let Some(dir) = &self.dir else {
            return "(the harness's cluster: its log is the harness's)".to_owned();
        };
        std::fs::read_to_string(dir.path().join("log")).unwrap_or_default()
    }

    /// Fast shutdown (clients are disconnected) and waits for the server to exit.
    pub fn stop(&self) {
        let Ok(mut guard) = self.postmaster.lock() else {
            return;
        };
        if let Some(mut child) = guard.take() {
            os::interrupt(&mut child);
            let _ = child.wait();
        }
    }

    /// A URL over TCP with the superuser's password, as a manifest would hold it.
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres://{SUPERUSER}:{PASSWORD}@127.0.0.1:{}/{db}",
            self.port
        )
    }

    /// A connection over the socket as the superuser (over TCP with its password to a
    /// harness's cluster).
    pub async fn admin(&self, db: &str) -> Result<PgConnection, sqlx::Error> {
        let options = PgConnectOptions::new_without_pgpass();
        let options = match &self.dir {
            Some(_) => options.socket(self.socket_dir()),
            None => options.host("127.0.0.1").password(PASSWORD),
        };
        options
            .port(self.port)
            .username(SUPERUSER)
            .database(db)
            .connect()
            .await
    }

    /// Creates a database named `name` (dropped first if a previous run left it) and runs
    /// `fixture` in it.
    pub fn database(&self, name: &str, fixture: &str) {
        block_on(async {
            let mut admin = self.admin("postgres").await.expect("connect as admin");
            admin
                .execute(AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
                )))
                .await
                .expect("drop database");
            admin
                .execute(AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
                .await
                .expect("create database");
            admin.close().await.expect("close");
            let mut conn = self.admin(name).await.expect("connect to the new database");
            conn.execute(sqlx::raw_sql(AssertSqlSafe(fixture.to_owned())))
                .await
                .unwrap_or_else(|e| panic!("fixture SQL: {e}"));
            conn.close().await.expect("close");
        });
    }

    /// Runs SQL as the superuser in `db` and returns every row's columns as text.
    pub fn query(&self, db: &str, sql: &str) -> Vec<Vec<Option<String>>> {
        block_on(async {
            use sqlx::Row as _;
            let mut conn = self.admin(db).await.expect("connect");
            // The simple protocol answers in text, whatever the types.
            let mut out = Vec::new();
            let mut rows = conn.fetch_many(sqlx::raw_sql(AssertSqlSafe(sql.to_owned())));
            use futures_util::TryStreamExt as _;
            while let Some(item) = rows
                .try_next()
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
            {
                if let sqlx::Either::Right(row) = item {
                    out.push(
                        (0..row.len())
                            .map(|i| {
                                let raw = row.try_get_raw(i).expect("column");
                                use sqlx::ValueRef as _;
                                if raw.is_null() {
                                    None
                                } else {
                                    Some(raw.as_str().expect("text").to_owned())
                                }
                            })
                            .collect(),
                    );
                }
            }
            drop(rows);
            conn.close().await.expect("close");
            out
        })
    }

    /// The one value of a one-row, one-column query.
    pub fn value(&self, db: &str, sql: &str) -> String {
        self.query(db, sql)
            .first()
            .and_then(|r| r.first().cloned())
            .flatten()
            .unwrap_or_default()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

pub fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(f)
}

pub use os::{as_owner, die_with_parent, hand_to, run_as, terminate};

/// What the servers' fixtures do differently per platform: the user they run as (root runs them
/// as `nobody`), the parent-death signal (Linux only: elsewhere a server is stopped when its
/// fixture is dropped or the test binary exits, not when the binary is killed) and the stop
/// signals. (Windows: these fixtures compile, and their tests are ignored there: no server.)
#[cfg(unix)]
mod os {
    use std::os::unix::fs::PermissionsExt as _;
    use std::os::unix::process::CommandExt as _;
    use std::path::Path;
    use std::process::{Child, Command};

    /// Root runs the cluster (and the MariaDB server of `mysql/server.rs`) as `nobody`; anyone
    /// else as themselves.
    pub fn run_as() -> Option<(u32, u32)> {
        // SAFETY: plain libc calls; getpwnam's result is read before any other call.
        unsafe {
            if libc::geteuid() != 0 {
                return None;
            }
            let pw = libc::getpwnam(c"nobody".as_ptr());
            assert!(
                !pw.is_null(),
                "running as root, and there is no user `nobody` to run PostgreSQL as"
            );
            Some(((*pw).pw_uid, (*pw).pw_gid))
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

    /// A test binary killed (even by SIGKILL) takes the server along: Linux's parent-death
    /// signal, SIGQUIT (PostgreSQL's immediate shutdown) or SIGKILL (`kill`).
    pub fn die_with_parent(cmd: &mut Command, kill: bool) {
        #[cfg(target_os = "linux")]
        {
            let signal = if kill { libc::SIGKILL } else { libc::SIGQUIT };
            // SAFETY: `prctl` is async-signal-safe; this runs in the child between fork and
            // exec.
            unsafe {
                cmd.pre_exec(move || {
                    libc::prctl(libc::PR_SET_PDEATHSIG, signal);
                    Ok(())
                });
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (cmd, kill);
    }

    fn signal(child: &Child, signal: i32) {
        if let Ok(pid) = i32::try_from(child.id()) {
            // SAFETY: signalling our own child, which has not been reaped yet.
            unsafe {
                libc::kill(pid, signal);
            }
        }
    }

    /// SIGINT: PostgreSQL's fast shutdown (clients are disconnected).
    pub fn interrupt(child: &mut Child) {
        signal(child, libc::SIGINT);
    }

    /// SIGTERM: MariaDB's shutdown.
    pub fn terminate(child: &mut Child) {
        signal(child, libc::SIGTERM);
    }
}

/// Windows: the servers run as the user and stop by being killed (no signals).
#[cfg(not(unix))]
mod os {
    use std::path::Path;
    use std::process::{Child, Command};

    pub fn run_as() -> Option<(u32, u32)> {
        None
    }

    pub fn hand_to(_: &Path, _: (u32, u32)) -> std::io::Result<()> {
        Ok(())
    }

    pub fn readable_by_all(_: &Path) -> std::io::Result<()> {
        Ok(())
    }

    pub fn as_owner(_: &mut Command, _: Option<(u32, u32)>) {}

    pub fn die_with_parent(_: &mut Command, _: bool) {}

    pub fn interrupt(child: &mut Child) {
        let _ = child.kill();
    }

    pub fn terminate(child: &mut Child) {
        let _ = child.kill();
    }
}

/// The port of a server a harness started for the tests where they cannot start one
/// themselves: Windows under Wine, whose harness (`scripts/windows-tests.sh`) starts PostgreSQL
/// (superuser `SUPERUSER`, password `PASSWORD`) and MariaDB (`root` without a password over TCP)
/// on the Linux side and names their ports in `var`.
pub fn external_port(var: &str) -> Option<u16> {
    let port = std::env::var(var).ok()?;
    Some(
        port.parse()
            .unwrap_or_else(|_| panic!("{var}={port} is not a port")),
    )
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The folder holding `initdb` and `postgres`.
fn find_bin() -> PathBuf {
    let has = |dir: &Path| dir.join("initdb").is_file() && dir.join("postgres").is_file();
    if let Some(dir) = std::env::var_os("PG_BIN").map(PathBuf::from) {
        assert!(
            has(&dir),
            "PG_BIN={} has no initdb and postgres",
            dir.display()
        );
        return dir;
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
        return dir;
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if has(&dir) {
            return dir;
        }
    }
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        if has(&dir) {
            return dir;
        }
    }
    panic!(
        "the PostgreSQL tests need the server binaries (initdb, postgres): install them \
         (Debian: apt-get install postgresql-15) or set PG_BIN to their folder"
    );
}
