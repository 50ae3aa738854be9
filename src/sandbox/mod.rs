//! Local server sandboxes: a self-describing directory (`sandbox.json`) holding one private
//! server's data, configuration, socket and log, and the lifecycle of its process — start on a
//! free loopback port in its own process group, wait until it answers, stop, restart, and find
//! and remove sandboxes left behind by a crash. Each server flavor is a `Recipe` in its own
//! file; this module knows nothing of any one server.

pub mod beneath;
pub mod binaries;
pub mod certs;
pub mod device_profile;
#[cfg(feature = "servers")]
pub mod lazyfs;
pub mod limits;
#[cfg(feature = "servers")]
pub mod power;
pub mod process;
pub mod secret;
pub mod user;

pub use user::ServiceUser;

use serde::{Deserialize, Serialize};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A Unix socket's path must be shorter than this (108 bytes with its NUL, and room for the
/// `.lock` files servers put beside it).
const SOCKET_PATH_MAX: usize = 100;

/// File name of a sandbox's self-description.
pub const MANIFEST: &str = "sandbox.json";

/// Errors of sandbox lifecycle. `Missing` means a server binary is not installed (exit 3).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("{what} is not installed ({hint})")]
    Missing { what: String, hint: String },
    #[error("{0}")]
    Io(String),
    #[error("{what} failed: {detail}")]
    Failed { what: String, detail: String },
}

pub type Result<T> = std::result::Result<T, SandboxError>;

fn io_err(what: &str, path: &Path, e: std::io::Error) -> SandboxError {
    SandboxError::Io(format!("{what} {}: {e}", path.display()))
}

/// What `sandbox.json` says about a sandbox. Written at every state change, so a crashed
/// dbduel leaves enough behind for `dbduel sandbox status` and `down` to act on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SandboxManifest {
    pub schema_version: u32,
    /// Server flavor (`mariadb`, ...).
    pub flavor: String,
    /// The contender the sandbox serves.
    pub name: String,
    /// Its part in a topology (`primary`, `replica of 127.0.0.1:3307`); `None` for a server
    /// on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    pub dir: PathBuf,
    pub datadir: PathBuf,
    pub port: u16,
    pub socket: PathBuf,
    pub config_file: PathBuf,
    pub log_file: PathBuf,
    /// The server-owned directory outside `dir` (data, socket), when there is one.
    #[serde(default)]
    pub private_dir: Option<PathBuf>,
    /// The directory dbduel made under the contender's `data_dir` for the data, when the
    /// data lives on a device the user named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_home: Option<PathBuf>,
    /// The account dbduel made for this sandbox's server (dbduel being root), removed with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<ServiceUser>,
    /// Server process id while running (it leads its own process group).
    pub pid: Option<i32>,
    /// When that process started, so that a pid reused by another process after a crash or
    /// a reboot is never taken for the server. A manifest written before this was recorded
    /// has none: its pid is never signalled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_stamp: Option<process::ProcessStamp>,
    /// The dbduel process that started it.
    pub owner_pid: i32,
    pub server_version: Option<String>,
    pub started_at: Option<String>,
    /// The configuration file's text, as the server read it.
    pub config: String,
    /// The cgroups the server runs in (memory limit, device profile), removed with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cgroups: Vec<PathBuf>,
    /// The signal for a clean, prompt shutdown (the recipe's), so that `dbduel sandbox down`
    /// stops a server left behind as its own dbduel would have. A manifest written before
    /// this was recorded says nothing: SIGTERM.
    #[serde(default = "default_stop_signal")]
    pub stop_signal: i32,
}

fn default_stop_signal() -> i32 {
    libc::SIGTERM
}

/// Where a sandbox keeps its things.
#[derive(Debug, Clone)]
pub struct Layout {
    pub dir: PathBuf,
    pub datadir: PathBuf,
    pub socket: PathBuf,
    pub config_file: PathBuf,
    pub log_file: PathBuf,
    pub pid_file: PathBuf,
    pub port: u16,
    /// The OS user the server runs as, when not dbduel's own (a server that refuses root).
    pub owner: Option<ServiceUser>,
    /// A directory outside `dir` holding what the server itself writes (data, socket), made
    /// when the server runs as another user who may not be able to reach `dir`.
    pub private: Option<PathBuf>,
    /// The directory under the contender's `data_dir` that holds the data, when it has one.
    pub data_home: Option<PathBuf>,
}

impl Layout {
    fn new(
        dir: &Path,
        port: u16,
        owner: Option<ServiceUser>,
        data_root: Option<&Path>,
    ) -> Result<Self> {
        // A server of another account gets a private directory; so does one of dbduel's own
        // whose sandbox is too deep for a socket's path (108 bytes): the socket stays in a
        // directory of its own, never at a path in /tmp anyone could take first.
        let too_deep = dir.join("server.sock").as_os_str().len() >= SOCKET_PATH_MAX;
        let private = match &owner {
            Some(u) => Some(user::private_dir(Some(u), dir)?),
            None if too_deep => Some(user::private_dir(None, dir)?),
            None => None,
        };
        let data_home = match data_root {
            Some(root) => Some(user::data_home(root, dir, owner.as_ref())?),
            None => None,
        };
        // What the server only reads is in `conf`, which it cannot change; what it writes,
        // in `base`, its own.
        let conf = private.clone().unwrap_or_else(|| dir.to_path_buf());
        let base = server_dir(owner.as_ref(), private.as_deref(), dir);
        let socket = base.join("server.sock");
        if socket.as_os_str().len() >= SOCKET_PATH_MAX {
            return Err(SandboxError::Io(format!(
                "the server's socket {} would be longer than a socket's path may be ({SOCKET_PATH_MAX} bytes): set TMPDIR to a shorter directory",
                socket.display()
            )));
        }
        Ok(Layout {
            dir: dir.to_path_buf(),
            datadir: data_home.as_deref().unwrap_or(&base).join("data"),
            socket,
            // A server running as another user reads its configuration itself (and so do the
            // tools it starts, such as Galera's state-transfer scripts): keep it where it can
            // read it and not change it.
            config_file: conf.join("server.cnf"),
            log_file: dir.join("server.log"),
            pid_file: base.join("server.pid"),
            port,
            owner,
            private,
            data_home,
        })
    }

    /// Where the data lives (under `data_dir`, the private directory, or the sandbox's):
    /// the directory a device profile throttles the disk of.
    pub fn data_home(&self) -> &Path {
        self.datadir.parent().unwrap_or(&self.dir)
    }

    /// The directory the server itself may write into: its account's own in the private
    /// directory when it runs as another user, else the private or the sandbox's directory.
    /// Root writes into it only through [`Layout::beneath`].
    pub fn server_dir(&self) -> PathBuf {
        server_dir(self.owner.as_ref(), self.private.as_deref(), &self.dir)
    }

    /// The directory of what the server only reads (its configuration, certificates, the
    /// accounts' SQL): root's when the server runs as another user, readable by the server's
    /// group, so the server cannot change what it is started with.
    pub fn conf_dir(&self) -> &Path {
        self.private.as_deref().unwrap_or(&self.dir)
    }

    /// A trusted directory to write `path` (inside what the server's account owns) beneath:
    /// the private directory, the sandbox's or the contender's `data_dir`, whichever holds
    /// it; no link the account plants below is followed ([`beneath::Beneath`]).
    pub fn beneath(&self, path: &Path) -> Result<beneath::Beneath> {
        let data_root = self.data_home.as_deref().and_then(Path::parent);
        let base = [self.private.as_deref(), data_root, Some(self.dir.as_path())]
            .into_iter()
            .flatten()
            .filter(|b| path.starts_with(b))
            .max_by_key(|b| b.as_os_str().len())
            .ok_or_else(|| {
                SandboxError::Io(format!(
                    "{} is in none of the sandbox's directories",
                    path.display()
                ))
            })?;
        beneath::Beneath::open(base)
    }

    /// A command for `program` that runs as the sandbox's owner, in the server's
    /// environment ([`Layout::plain_command`]'s).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = self.plain_command(program);
        if let Some(u) = &self.owner {
            // std drops supplementary groups when switching user from root.
            cmd.uid(u.uid).gid(u.gid);
        }
        cmd
    }

    /// A command for `program` with a cleared environment: only the variables of
    /// [`SERVER_ENV`] and the locale's `LC_*` pass, and `HOME` is the server's directory.
    /// Nothing of dbduel's environment — a target's `password_env` above all — reaches a
    /// server's `/proc/PID/environ`. Every server and init tool is started through
    /// [`Layout::command`], as its account: none is started as root to drop privileges
    /// itself, so no setting of its own can keep root.
    fn plain_command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear();
        for (k, v) in std::env::vars_os() {
            let name = k.to_string_lossy();
            if SERVER_ENV.contains(&name.as_ref()) || name.starts_with("LC_") {
                cmd.env(&k, v);
            }
        }
        cmd.env("HOME", self.server_dir());
        cmd
    }
}

/// [`Layout::server_dir`] of a sandbox in `dir` whose server runs as `owner` (None: dbduel's
/// user), with the `private` directory made for it.
fn server_dir(owner: Option<&ServiceUser>, private: Option<&Path>, dir: &Path) -> PathBuf {
    match (owner, private) {
        (Some(_), Some(p)) => p.join(user::SERVER_SUBDIR),
        (_, Some(p)) => p.to_path_buf(),
        _ => dir.to_path_buf(),
    }
}

/// The variables of dbduel's environment a server (and its init tools and helper scripts,
/// such as Galera's state transfer) is started with; every other one is left out.
pub const SERVER_ENV: &[&str] = &["PATH", "LANG", "TZ"];

/// How to provision and run one server flavor.
pub trait Recipe: Send + Sync {
    fn flavor(&self) -> &'static str;
    /// Check the server's binaries are installed.
    fn check_installed(&self) -> Result<()>;
    /// The configuration file text for this layout.
    fn config(&self, layout: &Layout) -> String;
    /// Create the data directory (after the configuration file was written).
    fn init(&self, layout: &Layout) -> Result<()>;
    /// The command that runs the server in the foreground.
    fn command(&self, layout: &Layout) -> Command;
    /// Does the server accept and answer a client now? Returns its version when it does.
    fn probe(&self, layout: &Layout) -> Option<String>;
    /// Does this log tail say the server could not bind its port (so another port may work)?
    fn port_in_use(&self, _log_tail: &str) -> bool {
        false
    }
    /// The OS user to run the server as, when it must not be dbduel's (None: dbduel's own).
    fn service_user(&self) -> Result<Option<ServiceUser>> {
        Ok(None)
    }
    /// The signal for a clean, prompt shutdown.
    fn stop_signal(&self) -> i32 {
        libc::SIGTERM
    }
    /// How long a start may take before it is a failure.
    fn start_timeout(&self) -> Duration {
        Duration::from_secs(60)
    }
    /// The memory cgroup limit the server runs under (its memory and its page cache), bytes.
    fn memory_limit_bytes(&self) -> Option<u64> {
        None
    }
    /// The device profile the server's block I/O is throttled to.
    fn device_profile(&self) -> Option<&device_profile::DeviceProfile> {
        None
    }
    /// A directory (on a device the user named) to keep the data under, instead of the
    /// sandbox directory.
    fn data_root(&self) -> Option<&Path> {
        None
    }
    /// The CA file a client checks the server's certificate against (`verify-full`), when
    /// the server speaks TLS to its clients.
    fn client_ca(&self, _layout: &Layout) -> Option<PathBuf> {
        None
    }
    /// The secret the server's data will hold when it is copied from another server (a
    /// streaming standby, a Galera joiner): the sandbox keeps that one instead of a new one.
    fn inherited_secret(&self) -> Option<secret::SandboxSecret> {
        None
    }
}

/// A running (or stopped) sandbox owned by this process.
pub struct Sandbox {
    pub layout: Layout,
    pub manifest: SandboxManifest,
    recipe: Box<dyn Recipe>,
    child: Option<Child>,
    /// The cgroups the server runs in, when the recipe limits its memory or its I/O.
    limits: Option<limits::Limits>,
    /// The filesystem that forgets unsynced writes, mounted over the data directory while
    /// a power loss is to come (see [`power`]).
    #[cfg(feature = "servers")]
    power: Option<lazyfs::LazyMount>,
}

/// Ports sandboxes listen on: below Linux's default ephemeral range (32768–60999), where the
/// kernel hands out the local ports of outgoing connections — a port picked there can be
/// taken (or held in TIME-WAIT) by one of them before the server binds it.
const SANDBOX_PORTS: std::ops::Range<u16> = 20_000..32_768;

/// A free TCP port on 127.0.0.1 below the ephemeral range, tried at random places (so
/// concurrent dbduels rarely race for one); as the kernel hands one out if none is found.
pub fn free_port() -> Result<u16> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut rng =
        crate::dataset::rng::SplitMix64::stream(u64::from(std::process::id()), u64::from(nanos));
    let span = u64::from(SANDBOX_PORTS.end - SANDBOX_PORTS.start);
    for _ in 0..64 {
        let port = SANDBOX_PORTS.start + rng.below_u64(span) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    let l = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| SandboxError::Io(format!("cannot pick a free port: {e}")))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| SandboxError::Io(format!("cannot pick a free port: {e}")))
}

impl Sandbox {
    /// Create the sandbox directory `dir` (must not exist yet), write the configuration and
    /// initialize the data directory. Does not start the server.
    pub fn create(recipe: Box<dyn Recipe>, name: &str, dir: &Path) -> Result<Sandbox> {
        recipe.check_installed()?;
        std::fs::create_dir_all(dir).map_err(|e| io_err("cannot create", dir, e))?;
        // The sandbox's files (its secret, its log, a socket) are dbduel's user's alone.
        std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .map_err(|e| io_err("cannot set permissions on", dir, e))?;
        let owner = recipe.service_user()?;
        let layout = match free_port()
            .and_then(|port| Layout::new(&absolute(dir), port, owner.clone(), recipe.data_root()))
        {
            Ok(l) => l,
            Err(e) => {
                if let Some(u) = &owner {
                    let _ = user::remove_sandbox_account(u);
                }
                return Err(e);
            }
        };
        let config = recipe.config(&layout);
        std::fs::write(&layout.config_file, &config)
            .map_err(|e| io_err("cannot write", &layout.config_file, e))?;
        let manifest = SandboxManifest {
            schema_version: crate::results::SCHEMA_VERSION,
            flavor: recipe.flavor().to_string(),
            name: name.to_string(),
            role: None,
            dir: layout.dir.clone(),
            datadir: layout.datadir.clone(),
            port: layout.port,
            socket: layout.socket.clone(),
            config_file: layout.config_file.clone(),
            log_file: layout.log_file.clone(),
            private_dir: layout.private.clone(),
            data_home: layout.data_home.clone(),
            account: layout.owner.clone(),
            pid: None,
            pid_stamp: None,
            owner_pid: std::process::id() as i32,
            server_version: None,
            started_at: None,
            config,
            cgroups: Vec::new(),
            stop_signal: recipe.stop_signal(),
        };
        let limits = match limits::Limits::for_sandbox(
            name,
            recipe.memory_limit_bytes(),
            recipe.device_profile(),
            layout.data_home(),
        ) {
            Ok(l) => l,
            Err(e) => {
                // Nothing is recorded yet for `sandbox down` to find: remove what was made.
                let _ = remove_dir(&layout);
                return Err(SandboxError::Io(e));
            }
        };
        let mut sb = Sandbox {
            layout,
            manifest,
            recipe,
            child: None,
            limits,
            #[cfg(feature = "servers")]
            power: None,
        };
        sb.manifest.cgroups = sb.limits.iter().flat_map(|l| l.paths()).collect();
        sb.save()?;
        let made = secret::create(&sb.layout.dir, sb.recipe.inherited_secret().as_ref())
            .and_then(|_| sb.recipe.init(&sb.layout));
        if let Err(e) = made {
            // Nothing ran yet: what was made (the private directory outside `dir` above all,
            // which nothing else would find) goes with the error.
            let _ = remove_dir(&sb.layout);
            return Err(e);
        }
        Ok(sb)
    }

    fn save(&self) -> Result<()> {
        let path = self.layout.dir.join(MANIFEST);
        let bytes = serde_json::to_vec_pretty(&self.manifest)
            .map_err(|e| SandboxError::Io(format!("cannot encode {}: {e}", path.display())))?;
        crate::results::write_atomic(&path, &bytes).map_err(|e| SandboxError::Io(e.to_string()))
    }

    /// Start the server and wait until it answers; on failure the log's tail is in the error.
    /// A port taken between picking and binding is retried on a new port.
    pub fn start(&mut self) -> Result<()> {
        let mut attempts = 0;
        loop {
            match self.start_once() {
                Err(SandboxError::Failed { detail, .. })
                    if attempts < 3 && self.recipe.port_in_use(&detail) =>
                {
                    attempts += 1;
                    self.layout.port = free_port()?;
                    self.manifest.port = self.layout.port;
                    self.manifest.config = self.recipe.config(&self.layout);
                    std::fs::write(&self.layout.config_file, &self.manifest.config)
                        .map_err(|e| io_err("cannot write", &self.layout.config_file, e))?;
                    self.save()?;
                }
                other => return other,
            }
        }
    }

    fn start_once(&mut self) -> Result<()> {
        if crate::stop::requested() {
            return Err(SandboxError::Failed {
                what: format!("starting {}", self.recipe.flavor()),
                detail: crate::stop::INTERRUPTED.into(),
            });
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.layout.log_file)
            .map_err(|e| io_err("cannot open", &self.layout.log_file, e))?;
        let log2 = log
            .try_clone()
            .map_err(|e| io_err("cannot open", &self.layout.log_file, e))?;
        // Where this start's lines begin: its errors are told apart from earlier starts'.
        let logged = log.metadata().map_or(0, |m| m.len());
        let mut cmd = self.recipe.command(&self.layout);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log2))
            // Its own process group: a Ctrl-C meant for dbduel does not reach the server
            // behind dbduel's back, and cleanup can signal the whole group.
            .process_group(0);
        if let Some(cg) = &self.limits {
            cg.apply(&mut cmd);
        }
        let child = cmd.spawn().map_err(|e| SandboxError::Failed {
            what: format!("starting {}", self.recipe.flavor()),
            detail: e.to_string(),
        })?;
        let pid = child.id() as i32;
        self.child = Some(child);
        self.manifest.pid = Some(pid);
        // Not reaped before `stop`, the child keeps its stamp until then.
        self.manifest.pid_stamp = process::stamp(pid);
        self.manifest.started_at = Some(crate::results::rfc3339(std::time::SystemTime::now()));
        self.save()?;
        let deadline = Instant::now() + self.recipe.start_timeout();
        loop {
            if let Some(v) = self.recipe.probe(&self.layout) {
                self.manifest.server_version = Some(v);
                self.save()?;
                return Ok(());
            }
            if let process::ChildState::Ended(status) = process::child_state(pid) {
                if let Some(mut c) = self.child.take() {
                    let _ = c.wait();
                }
                self.manifest.pid = None;
                self.manifest.pid_stamp = None;
                let _ = self.save();
                return Err(SandboxError::Failed {
                    what: format!(
                        "starting {} in {}",
                        self.recipe.flavor(),
                        self.layout.dir.display()
                    ),
                    detail: format!(
                        "server exited ({status}){}; its log ends:\n{}",
                        said(&self.layout.log_file, logged),
                        self.log_tail(20)
                    ),
                });
            }
            // A stop asked for while the server starts: it is stopped, not waited for.
            if crate::stop::requested() {
                let _ = self.stop();
                return Err(SandboxError::Failed {
                    what: format!("starting {}", self.recipe.flavor()),
                    detail: crate::stop::INTERRUPTED.into(),
                });
            }
            if Instant::now() > deadline {
                let tail = self.log_tail(20);
                let _ = self.stop();
                return Err(SandboxError::Failed {
                    what: format!("starting {}", self.recipe.flavor()),
                    detail: format!(
                        "no answer after {} s; its log ends:\n{tail}",
                        self.recipe.start_timeout().as_secs()
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stop the server: SIGTERM (a clean shutdown), then SIGKILL of its process group if it
    /// has not exited within the grace period. The server is reaped only here, after its
    /// group was signalled: until then its pid (and its group's number) cannot be another
    /// process's, and after it nothing is signalled by that pid again.
    pub fn stop(&mut self) -> Result<()> {
        let Some(pid) = self.manifest.pid else {
            return self.power_off();
        };
        match self.child.take() {
            Some(child) => self.stop_child(pid, child),
            None => {
                // Not our child (never the case for a sandbox this process started): only a
                // pid that is still the server is signalled.
                let m = &self.manifest;
                let names = [m.config_file.as_path(), m.datadir.as_path()];
                if process::identify(pid, m.pid_stamp.as_ref(), &names) == process::Identity::Server
                {
                    signal(pid, self.recipe.stop_signal());
                }
            }
        }
        self.manifest.pid = None;
        self.manifest.pid_stamp = None;
        self.save()?;
        self.power_off()
    }

    /// The server stopped, its data directory goes back to its own filesystem, keeping
    /// what the power-loss layer held (as a clean shutdown would).
    fn power_off(&mut self) -> Result<()> {
        #[cfg(feature = "servers")]
        if let Some(m) = self.power.take() {
            let at = m.path().to_path_buf();
            m.unmount()
                .map_err(|e| io_err("cannot unmount the power-loss filesystem over", &at, e))?;
        }
        Ok(())
    }

    fn stop_child(&self, pid: i32, mut child: Child) {
        use process::ChildState::{Ended, Reaped, Running};
        if process::child_state(pid) == Running {
            signal(pid, self.recipe.stop_signal());
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        while process::child_state(pid) == Running {
            if Instant::now() > deadline {
                signal(-pid, libc::SIGKILL);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // Anything the server left in its group goes too, while the unreaped leader still
        // holds the group's number.
        if matches!(process::child_state(pid), Ended(_)) {
            signal(-pid, libc::SIGKILL);
        }
        let _ = child.wait();
        debug_assert!(process::child_state(pid) == Reaped);
    }

    /// If the server process ended without being stopped, how: `killed by signal 9
    /// (SIGKILL)`, `exited with code 1`. `None` while it runs or after a deliberate stop.
    /// The ended server is not reaped here (see `stop`).
    pub fn exited(&mut self) -> Option<String> {
        let pid = self.manifest.pid?;
        let how = match &self.child {
            Some(_) => match process::child_state(pid) {
                process::ChildState::Ended(status) => Some(describe_exit(pid, status)),
                process::ChildState::Reaped => Some(format!("pid {pid} is gone")),
                process::ChildState::Running => None,
            },
            None => (!alive(pid)).then(|| format!("pid {pid} is gone")),
        }?;
        // The kernel's OOM killer leaves nothing in the server's log: say it here.
        Some(match self.limits.as_ref().and_then(|m| m.oom_note()) {
            Some(oom) => format!("{how}: {oom}"),
            None => how,
        })
    }

    /// Is the server process still there?
    pub fn is_running(&mut self) -> bool {
        match (&self.child, self.manifest.pid) {
            (Some(_), Some(pid)) => process::child_state(pid) == process::ChildState::Running,
            (_, pid) => pid.is_some_and(alive),
        }
    }

    /// Kill the server as a crash would: SIGKILL to its whole process group at once (no
    /// shutdown, nothing flushed that was not already), then reap it. Only a server this
    /// process started is killed; [`start`](Self::start) brings it back through its crash
    /// recovery.
    pub fn crash(&mut self) -> Result<()> {
        let (Some(pid), Some(mut child)) = (self.manifest.pid, self.child.take()) else {
            return Err(SandboxError::Failed {
                what: format!("crashing {}", self.recipe.flavor()),
                detail: "the server is not one this process started and runs".into(),
            });
        };
        // Its workers die with it: PostgreSQL's backends are in a session of their own, and
        // one left holding the old shared memory makes the next start refuse.
        let workers = process::children(pid);
        signal(-pid, libc::SIGKILL);
        for (w, stamp) in &workers {
            process::signal_if_same(*w, stamp, libc::SIGKILL);
        }
        let _ = child.wait();
        let deadline = Instant::now() + Duration::from_secs(10);
        while workers
            .iter()
            .any(|(w, stamp)| process::stamp(*w).as_ref() == Some(stamp))
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.manifest.pid = None;
        self.manifest.pid_stamp = None;
        self.save()
    }

    /// Stop and start again; the server process and its caches are new.
    pub fn restart(&mut self) -> Result<()> {
        self.stop()?;
        self.start()
    }

    /// Turn the device profile's throttle on or off.
    pub fn set_throttle(&self, on: bool) -> Result<bool> {
        match &self.limits {
            Some(l) => l.set_io(on).map_err(SandboxError::Io),
            None => Ok(false),
        }
    }

    /// Record the sandbox's part in a topology in its manifest.
    pub fn set_role(&mut self, role: &str) -> Result<()> {
        self.manifest.role = Some(role.to_string());
        self.save()
    }

    /// The server's pid while it runs, or has ended and is not reaped yet (so the pid is
    /// still the server's: safe to signal).
    pub fn pid(&self) -> Option<i32> {
        self.manifest.pid
    }

    /// The CA a client verifies the server's certificate with, when it speaks TLS.
    pub fn client_ca(&self) -> Option<PathBuf> {
        self.recipe.client_ca(&self.layout)
    }

    /// The password the server's accounts authenticate with (kept in [`secret::path`]).
    pub fn secret(&self) -> Result<secret::SandboxSecret> {
        secret::read(&self.layout.dir)
    }

    /// The server's pid with its start stamp, for a caller that keeps them past this borrow
    /// and signals through `process::signal_if_same`.
    pub fn process(&self) -> Option<(i32, process::ProcessStamp)> {
        Some((self.manifest.pid?, self.manifest.pid_stamp.clone()?))
    }

    /// The last `lines` lines of the server's log.
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.layout.log_file, lines)
    }

    /// Stop the server and remove the sandbox directory.
    pub fn destroy(mut self) -> Result<()> {
        self.stop()?;
        remove_dir(&self.layout)
    }

    /// Stop the server but keep the directory and leave the server running when `keep`.
    pub fn finish(mut self, keep: bool) -> Result<()> {
        if keep {
            // Forget the child: it keeps running in its own process group.
            self.child = None;
            return Ok(());
        }
        self.stop()?;
        remove_dir(&self.layout)
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        // Cleanup does not rely on Drop alone (callers stop explicitly, and `dbduel sandbox
        // down` finds leftovers), but a sandbox dropped while running (a panic unwinding) is
        // stopped here, and its private directory (data, configuration, socket) removed: no
        // one would find that once the sandbox's own directory is gone, as a test's
        // temporary one is. The sandbox's directory stays, with the server's log and the
        // manifest `dbduel sandbox down` reads.
        if self.child.is_some() {
            let _ = self.stop();
            if let Some(private) = &self.layout.private {
                let _ = user::remove_private_dir(private);
            }
            if let Some(u) = &self.layout.owner {
                let _ = user::remove_sandbox_account(u);
            }
        }
    }
}

/// Remove a sandbox: its directory, and what it made elsewhere (its private directory, its
/// data directory under a contender's `data_dir`, a socket in the temporary directory) when
/// each is one dbduel makes there. Anything else is refused, and the sandbox's directory (its
/// `sandbox.json`) is kept to say so again.
fn remove_dir(layout: &Layout) -> Result<()> {
    let mut refused = Vec::new();
    if let Err(e) = remove_socket(layout) {
        refused.push(e.to_string());
    }
    if let Some(private) = &layout.private
        && let Err(e) = user::remove_private_dir(private)
    {
        refused.push(e.to_string());
    }
    if let Some(home) = &layout.data_home
        && let Err(e) = user::remove_data_home(home, &layout.dir)
    {
        refused.push(e.to_string());
    }
    // Its account, once nothing of it is left to own.
    if refused.is_empty()
        && let Some(u) = &layout.owner
        && let Err(e) = user::remove_sandbox_account(u)
    {
        refused.push(e.to_string());
    }
    if !refused.is_empty() {
        return Err(SandboxError::Io(format!(
            "{}; {} is kept",
            refused.join("; "),
            layout.dir.display()
        )));
    }
    std::fs::remove_dir_all(&layout.dir).map_err(|e| io_err("cannot remove", &layout.dir, e))
}

/// Remove the server's socket when it sits outside the sandbox's directories: only a
/// socket named as dbduel named them (a sandbox made by an older dbduel kept a deep
/// directory's socket in the temporary directory; today's stay in a private directory).
fn remove_socket(layout: &Layout) -> Result<()> {
    let s = &layout.socket;
    let inside = |d: &Path| s.parent() == Some(d);
    if inside(&layout.dir)
        || inside(&layout.server_dir())
        || layout.private.as_deref().is_some_and(inside)
    {
        return Ok(()); // it goes with its directory
    }
    let meta = match std::fs::symlink_metadata(s) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err("cannot inspect", s, e)),
    };
    let named = s.file_name().is_some_and(|n| {
        let n = n.to_string_lossy();
        n.starts_with("dbduel-") && n.ends_with(".sock")
    }) && user::plain(s);
    use std::os::unix::fs::FileTypeExt;
    if !(named && meta.file_type().is_socket()) {
        return Err(SandboxError::Io(format!(
            "refusing to remove {}: not a socket dbduel makes",
            s.display()
        )));
    }
    std::fs::remove_file(s).map_err(|e| io_err("cannot remove", s, e))
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// How a process ended, in words.
fn describe_exit(pid: i32, status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("pid {pid} exited with code {c}"),
        (None, Some(sig)) => {
            let name = match sig {
                libc::SIGKILL => " (SIGKILL: killed outright, e.g. by `kill -9` or the OOM killer)",
                libc::SIGSEGV => " (SIGSEGV: the server crashed)",
                libc::SIGABRT => " (SIGABRT: the server aborted)",
                libc::SIGTERM => " (SIGTERM)",
                _ => "",
            };
            format!("pid {pid} was killed by signal {sig}{name}")
        }
        _ => format!("pid {pid} ended ({status})"),
    }
}

/// Send `sig` to a pid (negative: a process group). Errors (already gone) are ignored.
pub fn signal(pid: i32, sig: i32) {
    if pid == 0 || pid == -1 {
        return; // never signal our own group or every process
    }
    // SAFETY: kill(2) with a specific pid or group; no memory is involved.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// Whether a process exists (and is not a zombie).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Last `lines` lines of a text file (reads at most the last 64 KiB).
pub fn tail(path: &Path, lines: usize) -> String {
    let Ok(mut f) = std::fs::File::open(path) else {
        return format!("(no log at {})", path.display());
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// What a server logged from byte `from` of its log on (at most 1 MiB: a start's or a
/// recovery's lines are few; the cap keeps a runaway log out of memory); empty when the log
/// cannot be read.
pub fn log_since(log: &Path, from: u64) -> String {
    let mut text = String::new();
    let read = std::fs::File::open(log).and_then(|mut f| {
        f.seek(SeekFrom::Start(from))?;
        f.take(1 << 20).read_to_string(&mut text)
    });
    match read {
        Ok(_) => text,
        Err(_) => String::new(),
    }
}

/// The errors a server logged from byte `from` of its log on (MariaDB's and MySQL's
/// `[ERROR]`, PostgreSQL's `FATAL:` and `PANIC:`), the first five, as `; it said: …`: the
/// cause of a failed start is often far above the log's last lines.
fn said(log: &Path, from: u64) -> String {
    let text = log_since(log, from);
    let errors: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("[ERROR]") || l.contains("FATAL:") || l.contains("PANIC:"))
        .take(5)
        .collect();
    match errors.is_empty() {
        true => String::new(),
        false => format!("; it said:\n{}\n", errors.join("\n")),
    }
}

/// A sandbox found on disk, with whether its server still runs.
#[derive(Debug, Clone)]
pub struct Found {
    pub manifest: SandboxManifest,
    pub path: PathBuf,
    pub running: bool,
    /// The dbduel that started it is gone (a crash, or `--keep`).
    pub orphaned: bool,
}

/// Every sandbox under `root` (searched a few levels deep: out/run/work/contender/sandbox,
/// and a topology's members one level under the contender: …/contender/nodes/node-2/sandbox).
pub fn find(root: &Path) -> Vec<Found> {
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0)];
    while let Some((d, depth)) = stack.pop() {
        let m = d.join(MANIFEST);
        if ours(&d)
            && ours(&m)
            && let Ok(bytes) = std::fs::read(&m)
            && let Ok(manifest) = serde_json::from_slice::<SandboxManifest>(&bytes)
        {
            let running = manifest.pid.is_some_and(|pid| {
                matches!(
                    identify_found(&d, &manifest, pid),
                    process::Identity::Server | process::Identity::Unproven(_)
                )
            });
            let orphaned = !alive(manifest.owner_pid);
            out.push(Found {
                manifest,
                path: d.clone(),
                running,
                orphaned,
            });
            continue;
        }
        if depth >= 7 {
            continue;
        }
        if let Ok(entries) = std::fs::read_dir(&d) {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push((e.path(), depth + 1));
                }
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// What the pid a found sandbox records names now. The server's command line names its
/// configuration file or data directory, as its layout puts them (under the sandbox's
/// directory, where it was made or where it is now, or under its private directory).
fn identify_found(path: &Path, m: &SandboxManifest, pid: i32) -> process::Identity {
    let mut bases = vec![path.to_path_buf()];
    if user::plain(&m.dir) {
        bases.push(m.dir.clone());
    }
    // The stamp has to match too: a private directory named here only completes it (it may
    // sit under another TMPDIR than this dbduel's).
    if let Some(p) = m.private_dir.as_ref().filter(|p| user::plain(p)) {
        bases.push(p.clone());
    }
    if let Some(h) = m.data_home.as_ref().filter(|h| user::plain(h)) {
        bases.push(h.clone());
    }
    let names: Vec<PathBuf> = bases
        .iter()
        .flat_map(|b| {
            [
                b.join("server.cnf"),
                b.join("data"),
                b.join(user::SERVER_SUBDIR).join("data"),
            ]
        })
        .collect();
    let names: Vec<&Path> = names.iter().map(PathBuf::as_path).collect();
    match process::identify(pid, m.pid_stamp.as_ref(), &names) {
        process::Identity::Server if !process::runs_as(pid, &server_uids(m)) => {
            process::Identity::Stranger(
                "it runs as neither dbduel's user nor the sandbox's account".into(),
            )
        }
        other => other,
    }
}

/// The users a sandbox's server can run as: dbduel's own, and the sandbox's account (for a
/// sandbox an older dbduel made, the account its servers shared).
fn server_uids(m: &SandboxManifest) -> Vec<u32> {
    // SAFETY: geteuid has no preconditions.
    let mut uids = vec![unsafe { libc::geteuid() }];
    match &m.account {
        Some(a) => uids.push(a.uid),
        None => uids.extend(user::lookup(user::SERVER_ACCOUNT).map(|u| u.uid)),
    }
    uids
}

/// Is `path` (a sandbox's directory or its manifest) dbduel's own: owned by the user dbduel
/// runs as, writable by no one else? A manifest anyone else could have written or planted
/// (a results directory others can write into) is never acted on.
fn ours(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    std::fs::symlink_metadata(path)
        .is_ok_and(|m| !m.file_type().is_symlink() && m.uid() == me && m.mode() & 0o022 == 0)
}

/// Stop a found sandbox's server (its whole process group) and remove its directory. Its pid
/// is signalled only while it is still the server that sandbox started (the same start
/// stamp, a command line naming the sandbox); paths are removed only where dbduel makes
/// them. Returns notes on what was left alone.
pub fn remove_found(f: &Found) -> Result<Vec<String>> {
    let m = &f.manifest;
    let mut notes = Vec::new();
    if let Some(pid) = m.pid {
        match identify_found(&f.path, m, pid) {
            process::Identity::Gone => {}
            process::Identity::Server => stop_found(pid, m),
            process::Identity::Stranger(why) => notes.push(format!(
                "pid {pid} is not this sandbox's server any more ({why}): left alone"
            )),
            process::Identity::Unproven(why) => {
                return Err(SandboxError::Io(format!(
                    "pid {pid} may still be this sandbox's server ({why}), so dbduel neither signals it nor removes the sandbox: see what it is with `ps -o pid,lstart,args -p {pid}`; if it is the server, stop it (`kill {pid}`) and run `dbduel sandbox down` again"
                )));
            }
        }
    }
    // A power-loss filesystem its dbduel left over the data when it died.
    #[cfg(feature = "servers")]
    if lazyfs::unmount_left(&m.datadir) {
        notes.push(format!(
            "the power-loss filesystem left over {} was unmounted",
            m.datadir.display()
        ));
    }
    // Its cgroups, once the kernel has let its processes go.
    for dir in m.cgroups.iter().filter(|d| user::plain(d)) {
        limits::remove_group(dir, Duration::from_secs(5));
    }
    let layout = Layout {
        dir: f.path.clone(),
        datadir: m.datadir.clone(),
        socket: m.socket.clone(),
        config_file: m.config_file.clone(),
        log_file: m.log_file.clone(),
        pid_file: f.path.join("server.pid"),
        port: m.port,
        owner: m.account.clone(),
        private: m.private_dir.clone(),
        data_home: m.data_home.clone(),
    };
    match remove_dir(&layout) {
        Ok(()) => Ok(notes),
        Err(e) if notes.is_empty() => Err(e),
        Err(e) => Err(SandboxError::Io(format!("{}; {e}", notes.join("; ")))),
    }
}

/// Stop the server `pid` of a found sandbox (shown to be it): its clean shutdown, then
/// SIGKILL of its group — only while the group's number is still the server's (the server
/// itself, or no process at all, has the pid).
fn stop_found(pid: i32, m: &SandboxManifest) {
    let ours = || {
        let now = process::stamp(pid);
        now.is_none() || now.as_ref() == m.pid_stamp.as_ref()
    };
    // Only a shutdown signal a recipe uses, whatever the manifest says.
    let sig = [libc::SIGTERM, libc::SIGINT, libc::SIGQUIT]
        .into_iter()
        .find(|s| *s == m.stop_signal)
        .unwrap_or(libc::SIGTERM);
    if let Some(was) = &m.pid_stamp {
        process::signal_if_same(pid, was, sig);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive(pid) && process::stamp(pid).as_ref() == m.pid_stamp.as_ref() {
        if Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if ours() {
        signal(-pid, libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_start_says_the_errors_it_logged_not_an_earlier_starts() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("server.log");
        std::fs::write(&log, "x [ERROR] an earlier start's\n").unwrap();
        let from = std::fs::metadata(&log).unwrap().len();
        let mut text = String::from("x [Note] starting\n");
        text += "x [ERROR] RocksDB: Error opening instance, Status: Corruption\n";
        text += "FATAL:  could not open file\nx [Note] done\n";
        std::fs::write(&log, format!("x [ERROR] an earlier start's\n{text}")).unwrap();
        assert_eq!(
            said(&log, from),
            "; it said:\nx [ERROR] RocksDB: Error opening instance, Status: Corruption\nFATAL:  could not open file\n"
        );
        assert_eq!(said(&log, std::fs::metadata(&log).unwrap().len()), "");
    }

    /// A "server" that is a shell ending by itself soon after it starts: real processes and
    /// signals, no database.
    struct Brief;

    impl Recipe for Brief {
        fn flavor(&self) -> &'static str {
            "brief"
        }
        fn check_installed(&self) -> Result<()> {
            Ok(())
        }
        fn config(&self, _: &Layout) -> String {
            String::new()
        }
        fn init(&self, _: &Layout) -> Result<()> {
            Ok(())
        }
        fn command(&self, l: &Layout) -> Command {
            let mut c = Command::new("sh");
            c.args(["-c", "sleep 0.3", "sh"]).arg(&l.config_file);
            c
        }
        fn probe(&self, _: &Layout) -> Option<String> {
            Some("brief".into())
        }
    }

    /// A process started at `pid`, when the kernel can be made to hand that pid out now
    /// (root may set the last pid handed out; others on the machine may take it first).
    fn stranger_at(pid: i32) -> Option<std::process::Child> {
        for _ in 0..200 {
            std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).ok()?;
            let mut c = Command::new("sleep").arg("30").spawn().ok()?;
            if c.id() as i32 == pid {
                return Some(c);
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        None
    }

    #[test]
    fn a_deep_sandbox_keeps_its_socket_in_a_directory_of_its_own() {
        let tmp = tempfile::tempdir().expect("tmp");
        let deep = tmp
            .path()
            .join("a-contender-with-a-rather-long-name".repeat(3))
            .join("sandbox");
        let l = Layout::new(&deep, 3306, None, None).expect("layout");
        assert!(
            l.socket.as_os_str().len() < SOCKET_PATH_MAX,
            "{}",
            l.socket.display()
        );
        let private = l.private.clone().expect("a private directory");
        assert!(l.socket.starts_with(&private), "{}", l.socket.display());
        assert!(user::is_private_dir(&private), "{}", private.display());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&private)
            .expect("stat")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o700);
        user::remove_private_dir(&private).expect("removed");
        // A shallow one keeps it beside its files.
        let l = Layout::new(&tmp.path().join("s"), 3306, None, None).expect("layout");
        assert_eq!(l.socket, tmp.path().join("s/server.sock"));
        assert!(l.private.is_none());
    }

    #[test]
    fn a_manifest_someone_else_could_write_is_never_found() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().expect("tmp");
        let manifest = |dir: &Path| {
            std::fs::create_dir_all(dir).expect("dir");
            let m = SandboxManifest {
                schema_version: 1,
                flavor: "mariadb".into(),
                name: "planted".into(),
                role: None,
                dir: dir.to_path_buf(),
                datadir: PathBuf::from("/var/lib/postgresql/data"),
                port: 1,
                socket: PathBuf::from("/tmp/s"),
                config_file: PathBuf::from("/etc/x"),
                log_file: PathBuf::from("/tmp/l"),
                private_dir: None,
                data_home: None,
                account: None,
                pid: Some(1),
                pid_stamp: None,
                owner_pid: 1,
                server_version: None,
                started_at: None,
                config: String::new(),
                cgroups: Vec::new(),
                stop_signal: libc::SIGKILL,
            };
            let path = dir.join(MANIFEST);
            std::fs::write(&path, serde_json::to_string(&m).expect("json")).expect("write");
            path
        };
        let mine = manifest(&root.path().join("mine"));
        assert_eq!(find(root.path()).len(), 1, "dbduel's own is found");
        // Writable by others: the directory, then the file.
        let open = root.path().join("open");
        manifest(&open);
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let file = manifest(&root.path().join("file"));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        let found: Vec<PathBuf> = find(root.path()).into_iter().map(|f| f.path).collect();
        assert_eq!(found, vec![mine.parent().expect("dir").to_path_buf()]);
        if user::is_root() {
            // Another account's directory and manifest.
            let theirs = root.path().join("theirs");
            let m = manifest(&theirs);
            std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).expect("chown");
            std::os::unix::fs::chown(&m, Some(65534), Some(65534)).expect("chown");
            assert_eq!(find(root.path()).len(), 1);
        }
    }

    #[test]
    fn a_server_that_ended_keeps_its_pid_until_stop_and_stop_signals_no_one_else() {
        if !user::is_root() {
            eprintln!("skipping: setting the next pid needs root");
            return;
        }
        let tmp = tempfile::tempdir().expect("tmp");
        let mut sb =
            Sandbox::create(Box::new(Brief), "brief", &tmp.path().join("sb")).expect("create");
        sb.start().expect("start");
        let pid = sb.pid().expect("pid");
        let deadline = Instant::now() + Duration::from_secs(10);
        let how = loop {
            if let Some(how) = sb.exited() {
                break how;
            }
            assert!(Instant::now() < deadline, "the shell never ended");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(how.contains("exited with code 0"), "{how}");
        assert!(!sb.is_running());
        // The ended server's pid is not free for another process while dbduel holds it.
        let mut stranger = stranger_at(pid);
        sb.stop().expect("stop");
        if let Some(c) = stranger.as_mut() {
            let untouched = c.try_wait().expect("wait").is_none();
            let _ = c.kill();
            let _ = c.wait();
            panic!(
                "pid {pid} was handed to another process before stop (signalled: {})",
                !untouched
            );
        }
        assert_eq!(sb.pid(), None);
    }

    #[test]
    fn sandbox_ports_stay_below_the_ephemeral_range_and_are_free() {
        let ports: Vec<u16> = (0..20).map(|_| free_port().expect("a port")).collect();
        for p in &ports {
            assert!(SANDBOX_PORTS.contains(p), "{p}");
            std::net::TcpListener::bind(("127.0.0.1", *p)).expect("free when handed out");
        }
        let distinct: std::collections::BTreeSet<_> = ports.iter().collect();
        assert!(distinct.len() > 10, "{ports:?}");
    }
}
