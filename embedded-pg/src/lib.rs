//! A throwaway PostgreSQL cluster built from the PostgreSQL server binaries
//! already installed on the machine, used when `DATABASE_URL` is unset so the
//! bench runs without Docker or a shared server. [`EmbeddedPostgres::start`]
//! runs `initdb` into a fresh directory on tmpfs (`/dev/shm` when usable),
//! starts `postgres` as a direct child that listens on a private unix socket
//! only (no TCP port, so any number of parallel test processes never race for
//! ports), and waits until `postmaster.pid` reports `ready`. Durability is
//! switched off (`fsync=off` and friends) because the data is disposable.
//!
//! Stopping (explicitly with [`EmbeddedPostgres::stop`], or by `Drop`, which
//! also runs while a panic unwinds) sends SIGINT (fast shutdown), waits, and
//! escalates to SIGQUIT and finally SIGKILL only if the server hangs, then
//! removes the directory. If our process dies without running `Drop`
//! (`kill -9`, `abort`, an unhandled SIGINT), the server still goes away: it is
//! forked from a dedicated keeper thread with `PR_SET_PDEATHSIG = SIGINT`, and
//! the directory it leaves behind is swept by the next `start` on the machine.
//! Dynamic shared memory is kept inside the data directory
//! (`dynamic_shared_memory_type=mmap`) so nothing is left in `/dev/shm`.
//!
//! `initdb` is most of a start (≈ 0.4 s of CPU), and its output is the same every time but for
//! the superuser's password. So the first start on a machine keeps a pristine copy of it beside the
//! clusters, an *image* (`mcp-pattern-bench-initdb-<key>`, ≈ 40 MB; the key covers the binaries
//! and the `initdb` arguments), and later starts copy the image and give the copy a fresh password
//! in single-user mode (≈ 0.1 s together). A copy that fails to start that way removes the image
//! and falls back to `initdb`. [`Options::initdb_image`] (or `MCPBENCH_PG_IMAGE=off`) turns the
//! image off; removing the folder is always safe.
//!
//! As root, `initdb` and `postgres` run as the `postgres` system user (they
//! refuse to run as root); otherwise they run as the current user.
//!
//! Everything here blocks the calling thread; from async code call it through
//! `tokio::task::spawn_blocking` (or an equivalent).
//!
//! ```no_run
//! let pg = embedded_pg::EmbeddedPostgres::start()?;
//! let url = pg.url("postgres"); // hand to sqlx / libpq
//! # let _ = url;
//! pg.stop()?; // or just drop it
//! # Ok::<(), embedded_pg::Error>(())
//! ```

use std::fmt;
use std::fs;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::errno::Errno;
use nix::sys::signal::{self, Signal};
use nix::unistd::{Gid, Pid, Uid, User};

/// Every directory we create starts with this, so the sweep can recognise
/// (and only touch) our own leftovers. Kept short: unix socket paths are
/// limited to 107 bytes.
pub const DIR_PREFIX: &str = "mcp-pattern-bench-pg-";

/// Environment variable naming a directory that holds `initdb` and
/// `postgres`; when set, it is the only place searched.
pub const BIN_ENV: &str = "MCPBENCH_PG_BIN";

/// Environment variable that, set to `off`, makes every start run `initdb` instead of copying
/// the kept image (see the module's documentation).
pub const IMAGE_ENV: &str = "MCPBENCH_PG_IMAGE";

/// The user every cluster is initialised with (`initdb -U`). Its password is drawn fresh for each
/// cluster and lives only in this process's memory (and the URLs it hands out): another local
/// process that finds the socket — an MCP server under test, say — cannot log in, so it cannot
/// reach around the backend into the world's database.
pub const SUPERUSER: &str = "postgres";

const DEFAULT_PORT: u16 = 5432;
const DATA_SUBDIR: &str = "data";
const SOCKET_SUBDIR: &str = "sock";
const LOG_FILE: &str = "postgres.log";
/// `sun_path` is 108 bytes including the trailing NUL.
const MAX_SOCKET_PATH: usize = 107;
const LOG_TAIL_BYTES: u64 = 4096;

/// Why a cluster could not be started or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "DATABASE_URL is unset and no PostgreSQL server binaries (initdb, postgres) were found \
         on PATH or in /usr/lib/postgresql/*/bin{searched}; run `docker compose up -d` and set \
         DATABASE_URL=postgres://bench:bench@localhost:5433/bench, or install PostgreSQL \
         (e.g. `apt-get install postgresql`), or set DATABASE_URL to an existing server"
    )]
    NoBinaries {
        /// Extra detail on where we looked (e.g. the `MCPBENCH_PG_BIN` override), starting with "; ".
        searched: String,
    },

    #[error(
        "running as root, but there is no `postgres` system user to run the PostgreSQL server as \
         (initdb and postgres refuse to run as root); create it (e.g. `useradd --system postgres`), \
         run as a non-root user, or set DATABASE_URL to an existing server"
    )]
    NoPostgresUser,

    #[error(
        "the unix socket path {path:?} would be {len} bytes, over the {MAX_SOCKET_PATH}-byte limit; \
         use a shorter base directory (Options::base_dir or TMPDIR)"
    )]
    SocketPathTooLong { path: PathBuf, len: usize },

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },

    #[error("{context}: {source}")]
    Sys {
        context: String,
        #[source]
        source: nix::Error,
    },

    #[error("initdb failed ({status}) for {dir}:\n{output}")]
    InitDb { status: ExitStatus, dir: PathBuf, output: String },

    #[error("postgres exited during startup ({status}); server log {log}:\n{log_tail}")]
    ServerExited { status: ExitStatus, log: PathBuf, log_tail: String },

    #[error(
        "postgres did not become ready within {timeout:?} (slow or overloaded machine? raise \
         Options::ready_timeout); server log {log}:\n{log_tail}"
    )]
    NotReady { timeout: Duration, log: PathBuf, log_tail: String },

    #[error("the embedded-pg keeper thread {0}")]
    Keeper(&'static str),
}

impl Error {
    fn io(context: impl fmt::Display, source: io::Error) -> Self {
        Error::Io { context: context.to_string(), source }
    }

    fn sys(context: impl fmt::Display, source: nix::Error) -> Self {
        Error::Sys { context: context.to_string(), source }
    }
}

/// Settings for [`EmbeddedPostgres::start_with`]. Build from `Options::default()`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// Where to create the cluster directory. Default: `/dev/shm` when it is a
    /// writable directory, else `std::env::temp_dir()`.
    pub base_dir: Option<PathBuf>,
    /// Directory holding `initdb` and `postgres`. Default: [`binaries_available`].
    pub bin_dir: Option<PathBuf>,
    /// Extra `-c name=value` server settings, applied after (so overriding) the defaults.
    pub settings: Vec<(String, String)>,
    /// Port number; it only names the socket file (`.s.PGSQL.<port>`), no TCP listener is opened.
    pub port: u16,
    /// How long to wait for the server to accept connections.
    pub ready_timeout: Duration,
    /// How long to wait after SIGINT (and again after SIGQUIT) before escalating.
    pub stop_timeout: Duration,
    /// Start from a copy of a kept `initdb` output (the module's documentation) instead of
    /// running `initdb` every time. Default: on, unless [`IMAGE_ENV`] is `off`.
    pub initdb_image: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            base_dir: None,
            bin_dir: None,
            settings: Vec::new(),
            port: DEFAULT_PORT,
            ready_timeout: Duration::from_secs(30),
            stop_timeout: Duration::from_secs(10),
            initdb_image: std::env::var_os(IMAGE_ENV).is_none_or(|v| v != "off"),
        }
    }
}

impl Options {
    pub fn base_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.base_dir = Some(dir.into());
        self
    }

    pub fn bin_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.bin_dir = Some(dir.into());
        self
    }

    /// Adds a `-c name=value` server setting.
    pub fn setting(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.push((name.into(), value.into()));
        self
    }

    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    pub fn stop_timeout(mut self, timeout: Duration) -> Self {
        self.stop_timeout = timeout;
        self
    }

    pub fn initdb_image(mut self, on: bool) -> Self {
        self.initdb_image = on;
        self
    }
}

/// A running throwaway cluster. Stopped and deleted by [`stop`](Self::stop) or on drop.
pub struct EmbeddedPostgres {
    dir: PathBuf,
    socket_dir: PathBuf,
    port: u16,
    pid: u32,
    /// The superuser's password (hex), set at `initdb`.
    password: String,
    /// `Some` until the cluster has been stopped; taking it makes stop idempotent
    /// between `stop()` and `Drop`.
    keeper: Option<Keeper>,
}

struct Keeper {
    stop_tx: mpsc::Sender<()>,
    thread: JoinHandle<()>,
}

impl fmt::Debug for EmbeddedPostgres {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddedPostgres")
            .field("dir", &self.dir)
            .field("port", &self.port)
            .field("pid", &self.pid)
            .field("running", &self.keeper.is_some())
            .finish()
    }
}

/// Who the server processes run as.
#[derive(Clone, Copy)]
struct RunAs {
    /// `None`: ourselves.
    ids: Option<(Uid, Gid)>,
}

impl RunAs {
    fn detect() -> Result<Self, Error> {
        Self::decide(Uid::effective().is_root(), || User::from_name("postgres"))
    }

    /// As root the server runs as the `postgres` system user, which must exist; otherwise as
    /// ourselves. `lookup` finds that user (a parameter so the refusal can be tested anywhere).
    fn decide(root: bool, lookup: impl FnOnce() -> nix::Result<Option<User>>) -> Result<Self, Error> {
        if !root {
            return Ok(RunAs { ids: None });
        }
        match lookup() {
            Ok(Some(user)) => Ok(RunAs { ids: Some((user.uid, user.gid)) }),
            Ok(None) => Err(Error::NoPostgresUser),
            Err(e) => Err(Error::sys("looking up the `postgres` system user", e)),
        }
    }

    fn apply(&self, cmd: &mut Command) {
        if let Some((uid, gid)) = self.ids {
            cmd.uid(uid.as_raw()).gid(gid.as_raw());
        }
    }

    fn hand_over(&self, path: &Path) -> Result<(), Error> {
        if let Some((uid, gid)) = self.ids {
            nix::unistd::chown(path, Some(uid), Some(gid)).map_err(|e| Error::sys(format!("chown {} to postgres", path.display()), e))?;
        }
        Ok(())
    }
}

impl EmbeddedPostgres {
    /// Starts a fresh cluster with default [`Options`]. Blocks for the time
    /// `initdb` plus server startup take (well under a second on tmpfs);
    /// from async code, call it via `spawn_blocking`.
    pub fn start() -> Result<Self, Error> {
        Self::start_with(Options::default())
    }

    /// Starts a fresh cluster. Blocking, like [`start`](Self::start).
    pub fn start_with(options: Options) -> Result<Self, Error> {
        let started = Instant::now();
        let bin_dir = match &options.bin_dir {
            Some(dir) => {
                check_bin_dir(dir).ok_or_else(|| Error::NoBinaries { searched: format!("; the configured directory {} lacks them", dir.display()) })?
            }
            None => binaries_available()?,
        };
        let run_as = RunAs::detect()?;
        let base = match &options.base_dir {
            Some(dir) => dir.clone(),
            None => default_base_dir(),
        };
        sweep_stale(&base);

        let dir = create_unique_dir(&base)?;
        // From here on, a failure must not leave the directory behind.
        let guard = DirGuard(Some(dir.clone()));
        let socket_dir = dir.join(SOCKET_SUBDIR);
        let socket_file_len = socket_dir.join(format!(".s.PGSQL.{}", options.port)).as_os_str().len();
        if socket_file_len > MAX_SOCKET_PATH {
            return Err(Error::SocketPathTooLong { path: socket_dir, len: socket_file_len });
        }
        let data_dir = dir.join(DATA_SUBDIR);
        fs::DirBuilder::new().mode(0o700).create(&socket_dir).map_err(|e| Error::io(format!("creating {}", socket_dir.display()), e))?;
        run_as.hand_over(&dir)?;
        run_as.hand_over(&socket_dir)?;

        let password = fresh_password()?;
        if !options.initdb_image || !from_image(&bin_dir, &base, &dir, &data_dir, run_as, &password) {
            init_db(&bin_dir, &dir, &data_dir, run_as, &password)?;
        }

        let log_path = dir.join(LOG_FILE);
        let mut cmd = Command::new(bin_dir.join("postgres"));
        cmd.arg("-D").arg(&data_dir).arg("-k").arg(&socket_dir).arg("-p").arg(options.port.to_string());
        let defaults = [
            ("listen_addresses", ""),
            ("fsync", "off"),
            ("synchronous_commit", "off"),
            ("full_page_writes", "off"),
            ("max_connections", "300"),
            ("dynamic_shared_memory_type", "mmap"),
        ];
        let extra = options.settings.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        for (name, value) in defaults.into_iter().chain(extra) {
            cmd.arg("-c").arg(format!("{name}={value}"));
        }
        prepare_server_command(&mut cmd, &dir, run_as);
        let log = fs::File::create(&log_path).map_err(|e| Error::io(format!("creating {}", log_path.display()), e))?;
        let log_err = log.try_clone().map_err(|e| Error::io("duplicating the log file handle", e))?;
        cmd.stdin(Stdio::null()).stdout(log).stderr(log_err);
        // Ctrl-C in a terminal goes to the foreground process group; keep the
        // server out of it so only we get it and can shut down in order.
        cmd.process_group(0);
        set_parent_death_signal(&mut cmd, Signal::SIGINT);

        let (ready_tx, ready_rx) = mpsc::channel();
        let (stop_tx, stop_rx) = mpsc::channel();
        let ctx = KeeperContext {
            cmd,
            data_dir: data_dir.clone(),
            socket_file: socket_dir.join(format!(".s.PGSQL.{}", options.port)),
            log_path,
            ready_timeout: options.ready_timeout,
            stop_timeout: options.stop_timeout,
        };
        let thread = std::thread::Builder::new()
            .name("embedded-pg-keeper".into())
            .spawn(move || keeper_main(ctx, ready_tx, stop_rx))
            .map_err(|e| Error::io("spawning the embedded-pg keeper thread", e))?;
        let pid = match ready_rx.recv() {
            Ok(Ok(pid)) => pid,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                let _ = thread.join();
                return Err(Error::Keeper("died before the server was ready"));
            }
        };
        let dir = guard.disarm();
        tracing::debug!(
            dir = %dir.display(),
            pid,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "embedded postgres ready"
        );
        Ok(EmbeddedPostgres { dir, socket_dir, port: options.port, pid, password, keeper: Some(Keeper { stop_tx, thread }) })
    }

    /// A connection URL over the unix socket, with the superuser's password, e.g.
    /// `postgres://postgres:<password>@localhost:5432/bench?host=/dev/shm/mcp-pattern-bench-pg-…/sock`
    /// (the database name and any unusual path bytes are percent-encoded).
    /// libpq and sqlx take a `host` query parameter starting with `/` as the
    /// socket directory; `localhost` in the authority is never contacted.
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://{SUPERUSER}:{}@localhost:{}/{}?host={}",
            self.password,
            self.port,
            percent_encode(database.as_bytes()),
            percent_encode(self.socket_dir.as_os_str().as_encoded_bytes()),
        )
    }

    /// The directory holding the server's unix socket.
    pub fn socket_dir(&self) -> &Path {
        &self.socket_dir
    }

    /// The top directory of this cluster (holding `data/`, `sock/` and
    /// `postgres.log`); all of it is removed at stop.
    pub fn data_dir(&self) -> &Path {
        &self.dir
    }

    /// The server log (postgres stdout and stderr).
    pub fn log_file(&self) -> PathBuf {
        self.dir.join(LOG_FILE)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The postmaster's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Stops the server (fast shutdown) and removes its directory.
    /// Dropping the handle does the same but can only log failures.
    pub fn stop(mut self) -> Result<(), Error> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(), Error> {
        let Some(keeper) = self.keeper.take() else {
            return Ok(());
        };
        // A send error means the keeper already ended, which the join reports.
        let _ = keeper.stop_tx.send(());
        let joined = keeper.thread.join();
        let removed = remove_dir(&self.dir);
        if joined.is_err() {
            return Err(Error::Keeper("panicked while stopping the server"));
        }
        removed
    }
}

impl Drop for EmbeddedPostgres {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            tracing::warn!(dir = %self.dir.display(), error = %e, "stopping embedded postgres failed");
        }
    }
}

/// Finds the directory holding the PostgreSQL server binaries (`initdb` and
/// `postgres`): the `MCPBENCH_PG_BIN` directory if that variable is set (and
/// only there), else the first `PATH` entry holding both, else the highest
/// version under `/usr/lib/postgresql/*/bin`.
pub fn binaries_available() -> Result<PathBuf, Error> {
    if let Some(dir) = std::env::var_os(BIN_ENV).filter(|v| !v.is_empty()) {
        let dir = PathBuf::from(dir);
        return check_bin_dir(&dir).ok_or_else(|| Error::NoBinaries { searched: format!("; {BIN_ENV}={} lacks them", dir.display()) });
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(dir) = std::env::split_paths(&path).find_map(|d| check_bin_dir(&d)) {
        return Ok(dir);
    }
    let mut versioned: Vec<(Vec<u64>, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.split('.').map(|part| part.parse::<u64>().ok()).collect::<Option<Vec<_>>>()?;
            Some((version, entry.path().join("bin")))
        })
        .collect();
    versioned.sort();
    versioned.into_iter().rev().find_map(|(_, dir)| check_bin_dir(&dir)).ok_or_else(|| Error::NoBinaries { searched: String::new() })
}

fn check_bin_dir(dir: &Path) -> Option<PathBuf> {
    let executable = |name: &str| fs::metadata(dir.join(name)).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false);
    (executable("initdb") && executable("postgres")).then(|| dir.to_path_buf())
}

fn default_base_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() && nix::unistd::access(shm, nix::unistd::AccessFlags::W_OK).is_ok() { shm.to_path_buf() } else { std::env::temp_dir() }
}

fn create_unique_dir(base: &Path) -> Result<PathBuf, Error> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let pid = std::process::id();
    loop {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("{DIR_PREFIX}{pid}-{n}{nanos:08x}"));
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(format!("creating {}", dir.display()), e)),
        }
    }
}

/// Removes a half-built cluster directory if `start` fails.
struct DirGuard(Option<PathBuf>);

impl DirGuard {
    fn disarm(mut self) -> PathBuf {
        self.0.take().unwrap_or_default()
    }
}

impl Drop for DirGuard {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take()
            && let Err(e) = remove_dir(&dir)
        {
            tracing::warn!(error = %e, "cleaning up after a failed start");
        }
    }
}

fn remove_dir(dir: &Path) -> Result<(), Error> {
    match fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(format!("removing {}", dir.display()), e)),
    }
}

/// 32 hex digits from the kernel's random source.
fn fresh_password() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| io::Read::read_exact(&mut f, &mut bytes))
        .map_err(|e| Error::io("reading /dev/urandom for the cluster's password", e))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn init_db(bin_dir: &Path, dir: &Path, data_dir: &Path, run_as: RunAs, password: &str) -> Result<(), Error> {
    let started = Instant::now();
    // The password goes to initdb in a file only it (and we) may read, removed right after.
    let pwfile = dir.join("pwfile");
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&pwfile)
        .and_then(|mut f| io::Write::write_all(&mut f, format!("{password}\n").as_bytes()))
        .map_err(|e| Error::io(format!("writing {}", pwfile.display()), e))?;
    run_as.hand_over(&pwfile)?;
    let mut cmd = Command::new(bin_dir.join("initdb"));
    cmd.arg("-D").arg(data_dir).args(INITDB_ARGS).arg(format!("--pwfile={}", pwfile.display()));
    prepare_server_command(&mut cmd, dir, run_as);
    // If we die mid-initdb, there is no point in it finishing.
    set_parent_death_signal(&mut cmd, Signal::SIGTERM);
    let output = cmd.stdin(Stdio::null()).output();
    let _ = fs::remove_file(&pwfile);
    let output = output.map_err(|e| {
        let who = match run_as.ids {
            Some(_) => " as the `postgres` user (every directory above it must be searchable by that user)",
            None => "",
        };
        Error::io(format!("running {} in {}{who}", bin_dir.join("initdb").display(), dir.display()), e)
    })?;
    if !output.status.success() {
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        return Err(Error::InitDb { status: output.status, dir: data_dir.to_path_buf(), output: text });
    }
    tracing::debug!(elapsed_ms = started.elapsed().as_millis() as u64, "initdb done");
    Ok(())
}

/// What the kept `initdb` output's folder name starts with (not [`DIR_PREFIX`]: the sweep of
/// stale clusters leaves it alone).
pub const IMAGE_PREFIX: &str = "mcp-pattern-bench-initdb-";

/// The `initdb` arguments besides the folder and the password file; part of the image's key.
const INITDB_ARGS: &[&str] = &["-U", SUPERUSER, "-A", "scram-sha-256", "-E", "UTF8", "--locale=C", "-N"];

/// The image folder for these binaries, user and arguments under `base`: FNV-1a (stable across
/// builds, unlike std's hasher) over the binaries' paths, sizes and times, the uid the server
/// runs as, and [`INITDB_ARGS`]. A new PostgreSQL (another size or time) is another image.
fn image_dir(bin_dir: &Path, base: &Path, run_as: RunAs) -> PathBuf {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes.iter().chain([0u8].iter()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for exe in ["initdb", "postgres"] {
        let path = bin_dir.join(exe);
        eat(path.as_os_str().as_encoded_bytes());
        if let Ok(m) = fs::metadata(&path) {
            let modified = m.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
            eat(format!("{} {modified}", m.len()).as_bytes());
        }
    }
    eat(run_as.ids.map_or(Uid::effective(), |(uid, _)| uid).as_raw().to_string().as_bytes());
    for arg in INITDB_ARGS {
        eat(arg.as_bytes());
    }
    base.join(format!("{IMAGE_PREFIX}{h:016x}"))
}

/// Fills `data_dir` from the image (making the image first if there is none), with `password` as
/// the superuser's. `false` when that could not be done: the caller runs `initdb` instead, and
/// a broken image is removed so the next start makes a new one.
fn from_image(bin_dir: &Path, base: &Path, dir: &Path, data_dir: &Path, run_as: RunAs, password: &str) -> bool {
    let started = Instant::now();
    let image = image_dir(bin_dir, base, run_as);
    if !image_ready(&image)
        && let Err(e) = make_image(bin_dir, &image, run_as)
    {
        tracing::debug!(error = %e, "no initdb image; running initdb");
        return false;
    }
    let copied = copy_image(&image, data_dir, run_as).and_then(|()| set_password(bin_dir, dir, data_dir, run_as, password));
    match copied {
        Ok(()) => {
            tracing::debug!(elapsed_ms = started.elapsed().as_millis() as u64, image = %image.display(), "data directory copied from the initdb image");
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, image = %image.display(), "the initdb image could not be used; removing it and running initdb");
            let _ = fs::remove_dir_all(&image);
            let _ = fs::remove_dir_all(data_dir);
            false
        }
    }
}

/// Runs `initdb` into a private folder beside `image` and renames it into place, so that another
/// process never sees half an image; one made meanwhile by another process wins.
fn make_image(bin_dir: &Path, image: &Path, run_as: RunAs) -> Result<(), Error> {
    let base = image.parent().unwrap_or(Path::new("."));
    let name = image.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let building = base.join(format!("{name}.building-{}-{nanos:08x}", std::process::id()));
    fs::DirBuilder::new().mode(0o700).create(&building).map_err(|e| Error::io(format!("creating {}", building.display()), e))?;
    let made = run_as.hand_over(&building).and_then(|()| init_db(bin_dir, &building, &building.join(DATA_SUBDIR), run_as, &fresh_password()?));
    let placed = made.and_then(|()| match fs::rename(&building, image) {
        Ok(()) => Ok(()),
        // Another process placed its image first: use that one.
        Err(_) if image_ready(image) => Ok(()),
        Err(e) => Err(Error::io(format!("moving the initdb image into {}", image.display()), e)),
    });
    let _ = fs::remove_dir_all(&building);
    // Images of other binaries are left where they are: another process may be using them.
    placed
}

/// Whether `image` holds a whole `initdb` output (an image is placed whole, by rename).
fn image_ready(image: &Path) -> bool {
    image.join(DATA_SUBDIR).join("global/pg_control").is_file()
}

/// `cp -a` as the server's user, so the copy is the server's.
fn copy_image(image: &Path, data_dir: &Path, run_as: RunAs) -> Result<(), Error> {
    let mut cmd = Command::new("cp");
    cmd.arg("-a").arg(image.join(DATA_SUBDIR)).arg(data_dir);
    run_as.apply(&mut cmd);
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| Error::io("running cp for the initdb image", e))?;
    if !out.status.success() {
        return Err(Error::io(
            format!("copying {} to {}", image.display(), data_dir.display()),
            io::Error::other(String::from_utf8_lossy(&out.stderr).trim().to_owned()),
        ));
    }
    Ok(())
}

/// Gives the copied cluster's superuser `password`, in single-user mode before the server starts
/// (the image's own password, drawn at its `initdb`, was never kept).
fn set_password(bin_dir: &Path, dir: &Path, data_dir: &Path, run_as: RunAs, password: &str) -> Result<(), Error> {
    let mut cmd = Command::new(bin_dir.join("postgres"));
    cmd.arg("--single").arg("-D").arg(data_dir).args(["-c", "fsync=off", "-c", "log_statement=none", "postgres"]);
    prepare_server_command(&mut cmd, dir, run_as);
    set_parent_death_signal(&mut cmd, Signal::SIGTERM);
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| Error::io("running postgres --single", e))?;
    // The password is 32 hex digits: nothing in it needs quoting.
    let statement = format!("ALTER ROLE {SUPERUSER} PASSWORD '{password}'\n");
    let written = child.stdin.take().map(|mut stdin| io::Write::write_all(&mut stdin, statement.as_bytes()));
    let out = child.wait_with_output().map_err(|e| Error::io("waiting for postgres --single", e))?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if !out.status.success() || !matches!(written, Some(Ok(()))) || text.contains("ERROR") {
        return Err(Error::io("setting the copied cluster's password in single-user mode", io::Error::other(text.trim().to_owned())));
    }
    Ok(())
}

/// Settings shared by `initdb` and `postgres`.
fn prepare_server_command(cmd: &mut Command, dir: &Path, run_as: RunAs) {
    run_as.apply(cmd);
    // Our cwd may be unreadable for the `postgres` user (e.g. /root).
    cmd.current_dir(dir);
    // Stray libpq/server variables from the caller's environment must not
    // redirect or reconfigure the cluster; the command line says it all.
    for var in ["PGDATA", "PGPORT", "PGHOST", "PGOPTIONS", "PGCLIENTENCODING"] {
        cmd.env_remove(var);
    }
    cmd.env("LC_ALL", "C");
}

/// Makes the kernel send `signal` to the child when the thread that spawned
/// it ends, so the child cannot outlive us even if we are SIGKILLed.
#[allow(unsafe_code)]
fn set_parent_death_signal(cmd: &mut Command, signal: Signal) {
    let parent = nix::unistd::getpid();
    // SAFETY: the closure runs between fork and exec, where only
    // async-signal-safe operations are allowed. It performs two raw syscalls
    // (prctl, getppid) and builds an io::Error from an errno, which does not
    // allocate; it touches no locks and no heap. std runs it after
    // setgid/setuid, which matters because a credential change clears the
    // parent-death signal.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(signal).map_err(io::Error::from)?;
            // The parent may have died between fork and prctl; the signal
            // would then never come, so give up now instead.
            if nix::unistd::getppid() != parent {
                return Err(io::Error::from(Errno::ESRCH));
            }
            Ok(())
        });
    }
}

struct KeeperContext {
    cmd: Command,
    data_dir: PathBuf,
    socket_file: PathBuf,
    log_path: PathBuf,
    ready_timeout: Duration,
    stop_timeout: Duration,
}

/// Body of the keeper thread. The postgres child's parent-death signal is tied
/// to the thread that forked it, so this thread spawns the child, owns it, and
/// lives until the child has been reaped.
fn keeper_main(mut ctx: KeeperContext, ready_tx: mpsc::Sender<Result<u32, Error>>, stop_rx: mpsc::Receiver<()>) {
    let mut child = match ctx.cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            let _ = ready_tx.send(Err(Error::io(format!("starting {}", ctx.cmd.get_program().to_string_lossy()), e)));
            return;
        }
    };
    let pid = child.id();
    tracing::debug!(pid, "postgres spawned");
    match wait_ready(&mut child, &ctx) {
        Ok(()) => {
            if ready_tx.send(Ok(pid)).is_err() {
                // Nobody is waiting for this cluster any more.
                terminate(&mut child, ctx.stop_timeout);
                return;
            }
        }
        Err(e) => {
            terminate(&mut child, ctx.stop_timeout);
            // Read the log only after the server is gone so it holds the full story.
            let e = match e {
                Error::NotReady { timeout, .. } => Error::NotReady { timeout, log: ctx.log_path.clone(), log_tail: log_tail(&ctx.log_path) },
                Error::ServerExited { status, .. } => Error::ServerExited { status, log: ctx.log_path.clone(), log_tail: log_tail(&ctx.log_path) },
                other => other,
            };
            let _ = ready_tx.send(Err(e));
            return;
        }
    }
    // A message or a disconnect (handle leaked without Drop) both mean stop.
    let _ = stop_rx.recv();
    terminate(&mut child, ctx.stop_timeout);
}

fn wait_ready(child: &mut Child, ctx: &KeeperContext) -> Result<(), Error> {
    let started = Instant::now();
    let pid_file = ctx.data_dir.join("postmaster.pid");
    let mut pause = Duration::from_millis(2);
    loop {
        if let Some(status) = child.try_wait().map_err(|e| Error::io("checking on the postgres process", e))? {
            return Err(Error::ServerExited { status, log: PathBuf::new(), log_tail: String::new() });
        }
        if postmaster_ready(&pid_file, child.id()) && ctx.socket_file.exists() {
            tracing::debug!(elapsed_ms = started.elapsed().as_millis() as u64, "postgres accepting connections");
            return Ok(());
        }
        if started.elapsed() >= ctx.ready_timeout {
            return Err(Error::NotReady { timeout: ctx.ready_timeout, log: PathBuf::new(), log_tail: String::new() });
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(25));
    }
}

/// `postmaster.pid` line 1 is the pid; since PostgreSQL 10 the last line
/// (line 8) is the status, padded with spaces, and reads `ready` once the
/// server accepts connections.
fn postmaster_ready(pid_file: &Path, pid: u32) -> bool {
    let Ok(text) = fs::read_to_string(pid_file) else {
        return false;
    };
    let lines: Vec<&str> = text.lines().collect();
    lines.first().map(|l| l.trim()) == Some(pid.to_string().as_str()) && lines.get(7).map(|l| l.trim()) == Some("ready")
}

/// Fast shutdown, escalating only if the server does not exit in time.
fn terminate(child: &mut Child, timeout: Duration) {
    let pid = Pid::from_raw(child.id() as i32);
    for sig in [Signal::SIGINT, Signal::SIGQUIT] {
        match child.try_wait() {
            Ok(Some(status)) => {
                tracing::debug!(%pid, ?status, "postgres already exited");
                return;
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(%pid, error = %e, "checking on postgres");
                return;
            }
        }
        tracing::debug!(%pid, ?sig, "stopping postgres");
        if let Err(e) = signal::kill(pid, sig) {
            tracing::warn!(%pid, ?sig, error = %e, "signalling postgres");
        }
        if let Some(status) = wait_timeout(child, timeout) {
            tracing::debug!(%pid, ?status, "postgres stopped");
            return;
        }
        tracing::warn!(%pid, ?sig, ?timeout, "postgres did not exit in time, escalating");
    }
    if let Err(e) = child.kill() {
        tracing::warn!(%pid, error = %e, "SIGKILL postgres");
    }
    match child.wait() {
        Ok(status) => tracing::warn!(%pid, ?status, "postgres killed"),
        Err(e) => tracing::warn!(%pid, error = %e, "reaping postgres"),
    }
}

fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) => {}
            // ECHILD: someone else reaped it; it is gone either way.
            Err(_) => return Some(ExitStatus::from_raw(0)),
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

fn log_tail(path: &Path) -> String {
    let read = || -> io::Result<String> {
        let mut file = fs::File::open(path)?;
        let len = file.metadata()?.len();
        let start = len.saturating_sub(LOG_TAIL_BYTES);
        file.seek(SeekFrom::Start(start))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        // Drop a partial first line.
        Ok(match (start > 0, text.find('\n')) {
            (true, Some(i)) => text[i + 1..].to_string(),
            _ => text,
        })
    };
    match read() {
        Ok(text) if text.trim().is_empty() => "(empty log)".to_string(),
        Ok(text) => text,
        Err(e) => format!("(could not read the log: {e})"),
    }
}

/// Whether `pid` names a live process; a zombie counts as dead (orphans are
/// reparented to init, which may be slow to reap them in containers).
pub fn process_alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        return false;
    }
    match signal::kill(Pid::from_raw(raw), None) {
        Ok(()) | Err(Errno::EPERM) => {}
        Err(_) => return false,
    }
    // Field 3 of /proc/PID/stat is the state; the comm before it may contain
    // spaces and parentheses, so split after the last ')'.
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()).is_none_or(|state| state != "Z" && state != "X"),
        Err(_) => true,
    }
}

/// Removes cluster directories left by processes that died without cleaning
/// up (SIGKILL, abort). A directory is stale when the pid in its name is dead
/// and so is the postmaster its `postmaster.pid` names (if any). An orphaned
/// postmaster still running there is asked to shut down; its directory goes
/// on a later sweep.
fn sweep_stale(base: &Path) {
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    let me = std::process::id();
    for entry in entries.flatten() {
        let name = entry.file_name();
        // An image a process was making when it died (`<image>.building-<pid>-…`).
        if let Some(pid) = name
            .to_str()
            .filter(|n| n.starts_with(IMAGE_PREFIX))
            .and_then(|n| n.split_once(".building-"))
            .and_then(|(_, rest)| rest.split('-').next()?.parse::<u32>().ok())
        {
            if pid != me && !process_alive(pid) {
                let _ = fs::remove_dir_all(entry.path());
            }
            continue;
        }
        let Some(owner) =
            name.to_str().and_then(|n| n.strip_prefix(DIR_PREFIX)).and_then(|rest| rest.split('-').next()).and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if owner == me || process_alive(owner) {
            continue;
        }
        let dir = entry.path();
        let data_dir = dir.join(DATA_SUBDIR);
        let postmaster = fs::read_to_string(data_dir.join("postmaster.pid")).ok().and_then(|text| text.lines().next()?.trim().parse::<u32>().ok());
        if let Some(pm) = postmaster
            && process_alive(pm)
        {
            if process_serves(pm, &data_dir) {
                tracing::debug!(dir = %dir.display(), pid = pm, "stopping an orphaned postmaster");
                let _ = signal::kill(Pid::from_raw(pm as i32), Signal::SIGINT);
            }
            continue;
        }
        match fs::remove_dir_all(&dir) {
            Ok(()) => tracing::debug!(dir = %dir.display(), "removed a stale cluster directory"),
            // Another process may be sweeping the same directory.
            Err(e) => {
                tracing::debug!(dir = %dir.display(), error = %e, "could not remove a stale cluster directory")
            }
        }
    }
}

/// Whether process `pid` is a postgres serving `data_dir` (guards against pid reuse).
fn process_serves(pid: u32, data_dir: &Path) -> bool {
    let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let want = data_dir.as_os_str().as_encoded_bytes();
    cmdline.split(|&b| b == 0).any(|arg| arg == want)
}

/// Percent-encodes everything but RFC 3986 unreserved characters and `/`
/// (which is legal in a query and keeps socket paths readable).
fn percent_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn as_root_without_a_postgres_user_the_error_says_what_to_do() {
        let e = RunAs::decide(true, || Ok(None)).err().expect("refused");
        let text = e.to_string();
        assert!(matches!(e, Error::NoPostgresUser));
        assert!(text.contains("no `postgres` system user") && text.contains("useradd --system postgres") && text.contains("DATABASE_URL"), "{text}");
        assert!(RunAs::decide(false, || panic!("not looked up when not root")).unwrap().ids.is_none());
    }

    use super::*;

    #[test]
    fn percent_encoding() {
        assert_eq!(percent_encode(b"/dev/shm/a b"), "/dev/shm/a%20b");
        assert_eq!(percent_encode("bä?".as_bytes()), "b%C3%A4%3F");
    }

    #[test]
    fn ready_line_parsing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("postmaster.pid");
        fs::write(&file, "42\n/d\n1\n5432\n/s\n\n  5432001    3\nstarting\n").unwrap();
        assert!(!postmaster_ready(&file, 42));
        fs::write(&file, "42\n/d\n1\n5432\n/s\n\n  5432001    3\nready   \n").unwrap();
        assert!(postmaster_ready(&file, 42));
        assert!(!postmaster_ready(&file, 43));
    }

    #[test]
    fn no_binaries_message_is_actionable() {
        let e = Error::NoBinaries { searched: String::new() };
        let msg = e.to_string();
        assert!(msg.contains("DATABASE_URL is unset"));
        assert!(msg.contains("`docker compose up -d`"));
        assert!(msg.contains("DATABASE_URL=postgres://bench:bench@localhost:5433/bench"));
        assert!(msg.contains("apt-get install postgresql"));
    }
}
