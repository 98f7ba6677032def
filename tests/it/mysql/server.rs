//! A throwaway MariaDB server for the tests: `mariadb-install-db` in a temp dir, `mariadbd` on a
//! free 127.0.0.1 port and a socket of its own, stopped when the test binary is done. Never a
//! system-wide server.
//!
//! When the tests run as root the server runs as `nobody` (its folder handed over to it); otherwise
//! as the user running the tests. The binaries come from `$MARIADB_BIN` (a folder holding
//! `mariadbd` and `mariadb-install-db`), else Debian's places (`/usr/sbin/mariadbd`,
//! `/usr/bin/mariadb-install-db`), else `PATH`. `mariadbd` is this process's child with a
//! parent-death signal, so a test binary that dies (even by SIGKILL) takes it along.
//!
//! Where a test cannot start one (Windows, under Wine), `MCP_MANIFEST_TEST_MARIADB_PORT` names a
//! server a harness started (`scripts/windows-tests.sh`), reached over TCP as `root`.
//!
//! Accounts: `root` (no password, every privilege: what `check` warns about) and `app`
//! (`APP_PASSWORD`, `SELECT` on each database `database` makes: what a manifest should use).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use sqlx::mysql::{MySqlConnectOptions, MySqlConnection};
use sqlx::{AssertSqlSafe, ConnectOptions as _, Connection as _, Executor as _};

use crate::postgres::cluster::{
    as_owner, block_on, die_with_parent, external_port, free_port, hand_to, run_as, terminate,
};

pub const APP_PASSWORD: &str = "my-Secret-d0nt-print";

pub struct Server {
    /// Holds `data/`, `sock` and `log`; removed when the server is dropped.
    dir: Option<tempfile::TempDir>,
    pub port: u16,
    /// The `mariadbd` binary and the user it runs as (`run_as`).
    bin: PathBuf,
    owner: Option<(u32, u32)>,
    mariadbd: Mutex<Option<Child>>,
}

/// The server the tests share (one `mariadb-install-db` per test binary); each test makes its
/// own database in it.
pub fn shared() -> &'static Server {
    static SHARED: OnceLock<Server> = OnceLock::new();
    SHARED.get_or_init(|| {
        let s = Server::start();
        extern "C" fn stop_shared() {
            if let Some(s) = SHARED.get() {
                s.stop();
                if let Some(dir) = &s.dir {
                    let _ = std::fs::remove_dir_all(dir.path());
                }
            }
        }
        // SAFETY: registering a plain `extern "C"` function with no arguments.
        unsafe {
            libc::atexit(stop_shared);
        }
        s
    })
}

impl Server {
    /// `mariadb-install-db`, then start. Panics with what to install when the binaries are
    /// missing.
    pub fn start() -> Server {
        if let Some(port) = external_port("MCP_MANIFEST_TEST_MARIADB_PORT") {
            let s = Server {
                dir: None,
                port,
                bin: PathBuf::new(),
                owner: None,
                mariadbd: Mutex::new(None),
            };
            s.wait_ready();
            s.admin_sql(
                "mysql",
                &format!("CREATE USER IF NOT EXISTS 'app'@'%' IDENTIFIED BY '{APP_PASSWORD}'"),
            );
            return s;
        }
        let (mariadbd, install) = find_bins();
        let owner = run_as();
        let mut builder = tempfile::Builder::new();
        builder.prefix("mcp-my-");
        let dir = match owner {
            Some(_) => builder.tempdir_in("/tmp"),
            None => builder.tempdir(),
        }
        .expect("temp dir for the server");
        if let Some(owner) = owner {
            hand_to(dir.path(), owner).expect("chown the dir");
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
        let out = init.output().expect("run mariadb-install-db");
        assert!(
            out.status.success(),
            "mariadb-install-db failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let s = Server {
            dir: Some(dir),
            port: free_port(),
            bin: mariadbd,
            owner,
            mariadbd: Mutex::new(None),
        };
        s.resume();
        s.admin_sql(
            "mysql",
            &format!("CREATE USER 'app'@'%' IDENTIFIED BY '{APP_PASSWORD}'"),
        );
        s
    }

    fn dir(&self) -> &Path {
        self.dir
            .as_ref()
            .expect("a server of the test's own (a harness's cannot be stopped or started)")
            .path()
    }

    pub fn socket(&self) -> PathBuf {
        self.dir().join("sock")
    }

    /// Starts `mariadbd` (again: same port, socket and data) and waits until it accepts
    /// connections.
    pub fn resume(&self) {
        let mut guard = self.mariadbd.lock().expect("lock");
        assert!(guard.is_none(), "already running");
        let dir = self.dir();
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", dir.join("data").display()))
            .arg(format!("--port={}", self.port))
            .arg(format!("--socket={}", dir.join("sock").display()))
            .arg(format!("--pid-file={}", dir.join("pid").display()))
            .arg(format!("--log-error={}", dir.join("log").display()))
            .args([
                "--bind-address=127.0.0.1",
                "--skip-name-resolve",
                "--skip-log-bin",
                "--innodb-buffer-pool-size=32M",
                "--innodb-log-file-size=16M",
                "--innodb-flush-log-at-trx-commit=0",
                "--max-connections=100",
                // Values up to 60 MB (`a_value_larger_than_max_size_never_leaves_the_server`).
                "--max-allowed-packet=64M",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        as_owner(&mut cmd, self.owner);
        die_with_parent(&mut cmd, true);
        // Spawned from a thread that lives as long as the process: the parent-death signal fires
        // when the spawning *thread* ends.
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
            .expect("start mariadbd");
        *guard = Some(child);
        drop(guard);
        self.wait_ready();
    }

    /// Polls until a connection as `root` works (the server writes no other signal).
    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if block_on(async { self.admin("mysql").await.map(|_| ()) }).is_ok() {
                return;
            }
            if let Some(child) = self.mariadbd.lock().expect("lock").as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!("mariadbd exited ({status}): {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "mariadbd did not start: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log(&self) -> String {
        let Some(dir) = &self.dir else {
            return "(the harness's server: its log is the harness's)".to_owned();
        };
        std::fs::read_to_string(dir.path().join("log")).unwrap_or_default()
    }

    /// Shuts the server down (SIGTERM: client connections are closed) and waits for it to exit.
    pub fn stop(&self) {
        let Ok(mut guard) = self.mariadbd.lock() else {
            return;
        };
        if let Some(mut child) = guard.take() {
            terminate(&mut child);
            let _ = child.wait();
        }
    }

    /// A URL over TCP as `app` (only `SELECT` on the database), as a manifest would hold it.
    pub fn url(&self, db: &str) -> String {
        format!("mysql://app:{APP_PASSWORD}@127.0.0.1:{}/{db}", self.port)
    }

    /// A URL over TCP as `root`, which holds every privilege.
    pub fn root_url(&self, db: &str) -> String {
        format!("mysql://root@127.0.0.1:{}/{db}", self.port)
    }

    /// A connection over the socket as `root` (over TCP to a harness's server).
    pub async fn admin(&self, db: &str) -> Result<MySqlConnection, sqlx::Error> {
        let options = MySqlConnectOptions::new();
        let options = match &self.dir {
            Some(_) => options.socket(self.socket()),
            None => options.host("127.0.0.1").port(self.port),
        };
        options.username("root").database(db).connect().await
    }

    /// Runs statements (any number) as `root` in `db`.
    pub fn admin_sql(&self, db: &str, sql: &str) {
        block_on(async {
            let mut conn = self.admin(db).await.expect("connect as root");
            conn.execute(sqlx::raw_sql(AssertSqlSafe(sql.to_owned())))
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
            conn.close().await.expect("close");
        });
    }

    /// Creates a database named `name` (dropped first if a previous run left it), runs `fixture`
    /// in it and lets `app` read it.
    pub fn database(&self, name: &str, fixture: &str) {
        self.admin_sql(
            "mysql",
            &format!(
                "DROP DATABASE IF EXISTS `{name}`; CREATE DATABASE `{name}` CHARACTER SET utf8mb4; \
                 GRANT SELECT, SHOW VIEW ON `{name}`.* TO 'app'@'%'"
            ),
        );
        if !fixture.trim().is_empty() {
            self.admin_sql(name, fixture);
        }
    }

    /// Runs SQL as `root` in `db` and returns every row's columns as text.
    pub fn query(&self, db: &str, sql: &str) -> Vec<Vec<Option<String>>> {
        block_on(async {
            use futures_util::TryStreamExt as _;
            use sqlx::Row as _;
            let mut conn = self.admin(db).await.expect("connect");
            let mut out = Vec::new();
            // The text protocol answers in text, whatever the types.
            let mut rows = conn.fetch_many(sqlx::raw_sql(AssertSqlSafe(sql.to_owned())));
            while let Some(item) = rows
                .try_next()
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
            {
                if let sqlx::Either::Right(row) = item {
                    out.push(
                        (0..row.len())
                            .map(|i| {
                                let v: Option<&[u8]> = row.try_get_unchecked(i).expect("column");
                                v.map(|b| String::from_utf8_lossy(b).into_owned())
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

    /// Statements of `app` in database `db` running now whose text contains `needle`.
    pub fn running(&self, db: &str, needle: &str) -> usize {
        self.query(
            "mysql",
            &format!(
                "SELECT INFO FROM information_schema.PROCESSLIST \
                 WHERE USER = 'app' AND DB = '{db}' AND COMMAND <> 'Sleep' AND INFO IS NOT NULL"
            ),
        )
        .iter()
        .filter(|r| r[0].as_deref().is_some_and(|i| i.contains(needle)))
        .count()
    }

    /// Connections of `app` to database `db` open now.
    pub fn connections(&self, db: &str) -> usize {
        self.query(
            "mysql",
            &format!(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'app' AND DB = '{db}'"
            ),
        )[0][0]
            .as_deref()
            .unwrap_or("0")
            .parse()
            .unwrap_or(0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `mariadbd` and `mariadb-install-db`.
fn find_bins() -> (PathBuf, PathBuf) {
    let pair = |d: &Path, e: &Path| (d.to_path_buf(), e.to_path_buf());
    if let Some(dir) = std::env::var_os("MARIADB_BIN").map(PathBuf::from) {
        let (d, i) = (dir.join("mariadbd"), dir.join("mariadb-install-db"));
        assert!(
            d.is_file() && i.is_file(),
            "MARIADB_BIN={} has no mariadbd and mariadb-install-db",
            dir.display()
        );
        return (d, i);
    }
    let (d, i) = (
        Path::new("/usr/sbin/mariadbd"),
        Path::new("/usr/bin/mariadb-install-db"),
    );
    if d.is_file() && i.is_file() {
        return pair(d, i);
    }
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        let (d, i) = (dir.join("mariadbd"), dir.join("mariadb-install-db"));
        if d.is_file() && i.is_file() {
            return (d, i);
        }
    }
    panic!(
        "the MySQL tests need MariaDB's server (mariadbd, mariadb-install-db): install it \
         (Debian: apt-get install mariadb-server) or set MARIADB_BIN to their folder"
    );
}
