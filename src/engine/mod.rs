//! The engine boundary: what every contender's engine must do (`Engine`, `Session`), the SQL
//! dialect helpers steps use, and the capabilities some engines offer. The families that
//! implement it (`crate::engines`) depend on this module, never the other way round; steps
//! see nothing engine-specific beyond it.

pub mod cluster;
pub mod dialect;
pub mod documents;
pub mod replication;
pub mod target;

pub use dialect::Dialect;

use crate::decode::KeyPath;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A failure reported by an engine. `kind` is a short stable class used to count errors
/// (e.g. `busy`, `constraint`, `io`, `sql`); `message` is the engine's own words.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct EngineError {
    pub kind: &'static str,
    pub message: String,
}

/// Longest message an error keeps, bytes: a server's error text is the server's to choose,
/// and it goes into terminals, result files and reports.
pub const MAX_MESSAGE_BYTES: usize = 4096;

/// `message` cut to [`MAX_MESSAGE_BYTES`] (at a character boundary), with a note of how much
/// was cut.
pub fn bounded(mut message: String) -> String {
    if message.len() <= MAX_MESSAGE_BYTES {
        return message;
    }
    let mut end = MAX_MESSAGE_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    let cut = message.len() - end;
    message.truncate(end);
    message.push_str(&format!(" … [{cut} more bytes cut]"));
    message
}

impl EngineError {
    /// An error of `kind`; `message` is kept to [`MAX_MESSAGE_BYTES`].
    pub fn new(kind: &'static str, message: impl Into<String>) -> Self {
        EngineError {
            kind,
            message: bounded(message.into()),
        }
    }
}

pub type Result<T> = std::result::Result<T, EngineError>;

/// The database a study works in on a server: `dbduel_<name>` where the name is already
/// lower-case letters, digits and single `_` and short enough; otherwise the name
/// lower-cased with `-` as `_`, cut to fit, then `__` and 16 hex digits of a hash of the
/// name as written. So study names that differ (`a-b` and `a_b`, `Ab` and `ab`) never share
/// a database, no name is folded or cut by the server (PostgreSQL lower-cases an unquoted
/// name and cuts one over 63 bytes), and every name is letters, digits and `_`.
pub fn database_name(study: &str) -> String {
    const PLAIN_MAX: usize = 56; // 7 for `dbduel_`, within 63
    let plain = !study.is_empty()
        && study.len() <= PLAIN_MAX
        && !study.contains("__")
        && study
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        return format!("dbduel_{study}");
    }
    // FNV-1a, 64 bits: stable across versions and machines, as a name on a server must be.
    let hash = study.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let readable: String = study
        .chars()
        .map(|c| match c {
            'A'..='Z' => c.to_ascii_lowercase(),
            'a'..='z' | '0'..='9' => c,
            _ => '_',
        })
        .take(38)
        .collect();
    format!("dbduel_{}__{hash:016x}", readable.trim_end_matches('_'))
}

/// The table that marks a database as created by dbduel; a database without it is never
/// touched.
pub const MARKER: &str = "dbduel_marker";

/// What the marker table's one row says.
pub const MARKER_NOTE: &str =
    "created by dbduel; dbduel may drop and recreate tables in this database";

/// The error kind of an engine that speaks no SQL (a document engine) asked for a SQL
/// session: a step whose work is SQL is then skipped on it, not failed.
pub const NO_SQL: &str = "no_sql";

/// A statement parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(i64),
    Text(String),
    Null,
}

impl Value {
    /// The value as an integer: an `Int`, or text that is one (or a decimal, truncated).
    pub fn as_i64(&self) -> Result<i64> {
        match self {
            Value::Int(n) => Ok(*n),
            Value::Text(t) => t
                .parse::<i64>()
                .or_else(|_| t.parse::<f64>().map(|f| f as i64))
                .map_err(|_| EngineError::new("client", format!("not a number: {t:?}"))),
            Value::Null => Err(EngineError::new("client", "a NULL where a number was due")),
        }
    }

    /// A decimal amount (e.g. `DECIMAL(12,2)` money) in hundredths, rounded: exact for the
    /// decimal text servers send, and for the nearest double SQLite keeps.
    pub fn as_cents(&self) -> Result<i64> {
        match self {
            Value::Int(n) => Ok(n * 100),
            Value::Text(t) => t
                .parse::<f64>()
                .map(|f| (f * 100.0).round() as i64)
                .map_err(|_| EngineError::new("client", format!("not an amount: {t:?}"))),
            Value::Null => Err(EngineError::new("client", "a NULL where an amount was due")),
        }
    }

    /// An amount in hundredths as decimal text (`-12.05`), the form every engine takes for a
    /// `DECIMAL` parameter without rounding.
    pub fn cents(c: i64) -> Value {
        let sign = if c < 0 { "-" } else { "" };
        Value::Text(format!(
            "{sign}{}.{:02}",
            c.unsigned_abs() / 100,
            c.unsigned_abs() % 100
        ))
    }
}

/// Handle of a statement prepared on one session; only valid on that session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StmtId(pub usize);

/// One connection, owned by one worker thread for its whole life.
pub trait Session: Send {
    /// Run SQL text once; returns rows affected (0 for statements without a count).
    fn execute(&mut self, sql: &str) -> Result<u64>;
    /// Run a query returning one integer (e.g. `SELECT COUNT(*) ...`).
    fn query_i64(&mut self, sql: &str) -> Result<i64>;
    /// Prepare a statement for repeated use on this session.
    fn prepare(&mut self, sql: &str) -> Result<StmtId>;
    /// Run a prepared statement, reading every row it returns; returns rows returned (for a
    /// query) or rows affected (for a change).
    fn run(&mut self, stmt: StmtId, params: &[Value]) -> Result<u64>;
    /// [`run`](Self::run), keeping the values of the rows it returns: `out` is cleared, then
    /// every row's columns are appended in order (a row of n columns is n values). Integers
    /// come as `Int` where the protocol says they are integers, NULL as `Null`, everything
    /// else (decimals, text, dates) as `Text` in the engine's own text form; read them with
    /// [`Value::as_i64`] and [`Value::as_cents`]. For transactions whose next statement needs
    /// what the last one read (TPC-C).
    fn run_rows(&mut self, stmt: StmtId, params: &[Value], out: &mut Vec<Value>) -> Result<u64>;
    /// Run a statement that changes rows, as SQL text, with everything the engine says about
    /// it: rows matched and rows changed where it tells them apart, its warnings and its own
    /// summary. Off the hot path (one call a step). Without more to say than `execute`'s
    /// count, only `affected` is known.
    fn execute_counted(&mut self, sql: &str) -> Result<Changes> {
        Ok(Changes {
            affected: self.execute(sql)?,
            ..Changes::default()
        })
    }
    /// Limit how long each later statement of this session may run (`None`: no limit). A
    /// statement that runs longer is cancelled *on the server* — MariaDB's
    /// `max_statement_time`, MySQL's `max_execution_time` (SELECTs only), PostgreSQL's
    /// `statement_timeout`, SQLite's `sqlite3_interrupt` from a watchdog — and fails with an
    /// error of kind [`TIMEOUT`]. Whether the engine can: an engine that cannot answers
    /// `false` and its statements run unbounded.
    fn statement_timeout(&mut self, limit: Option<std::time::Duration>) -> Result<bool> {
        let _ = limit;
        Ok(false)
    }
    /// The session's split form, where it has one: a prepared statement sent now and its
    /// answer read later without waiting, so that one thread can keep an operation in
    /// flight on each of many sessions (pgbench's `-j`). `None`: only [`run`](Self::run).
    fn overlap(&mut self) -> Option<&mut dyn Overlap> {
        None
    }
}

/// [`Session::run`] in two halves, for a thread that serves several sessions: send, then
/// read the answer as it arrives. One statement in flight at a time, as with `run`.
pub trait Overlap {
    /// The socket the answers arrive on, to wait on beside other sessions' sockets.
    fn fd(&self) -> std::os::fd::RawFd;
    /// Send `stmt` with `params`: the whole request, in one write.
    fn send_run(&mut self, stmt: StmtId, params: &[Value]) -> Result<()>;
    /// Send one statement of SQL text, as [`Session::execute`] would run it (for a statement
    /// the engine will not prepare, such as MySQL's `BEGIN`).
    fn send_text(&mut self, sql: &str) -> Result<()>;
    /// Read what has arrived, never waiting: `run`'s (or `execute`'s) result once the whole
    /// answer is here,
    /// `None` before. The socket is read until it has nothing more, so an edge-triggered
    /// wait (epoll's `EPOLLET`) wakes again only for new bytes.
    fn try_finish(&mut self) -> Option<Result<u64>>;
}

/// The error kind of a statement cancelled because it ran past its session's
/// [`Session::statement_timeout`].
pub const TIMEOUT: &str = "timeout";

/// What an engine reported about a statement that changes rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Changes {
    /// The affected-rows count the engine returned, in its own meaning: MariaDB's counts rows
    /// whose values changed (dbduel never sets CLIENT_FOUND_ROWS), PostgreSQL's command tag
    /// and SQLite's `changes()` count every row the statement matched.
    pub affected: u64,
    /// Rows the statement's condition matched, where the engine says: MariaDB's `Rows
    /// matched` (its info string), PostgreSQL's command tag, SQLite's `changes()`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched: Option<u64>,
    /// Rows whose values actually changed, where the engine tells them apart from the matched
    /// ones (MariaDB's `Changed`: a row set to the value it had is matched, not changed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed: Option<u64>,
    /// Warnings the statement raised, where the engine counts them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<u64>,
    /// The engine's own summary, verbatim (MariaDB: `Rows matched: 3  Changed: 2  Warnings: 0`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub info: Option<String>,
}

/// Bytes a table takes on disk, from the files and as the engine itself reports it.
#[derive(Debug, Clone, Serialize)]
pub struct Footprint {
    /// Sum of the files counted, in bytes (what `ls -l` shows); `None` when the files are
    /// not readable from here (a remote server).
    pub files_bytes: Option<u64>,
    /// Blocks actually allocated for those files, in bytes (what `du` shows).
    pub allocated_bytes: Option<u64>,
    pub files: Vec<FileSize>,
    /// Which files were counted and why.
    pub files_rule: String,
    /// What the engine says the table takes, when it can say.
    pub engine_bytes: Option<u64>,
    /// How `engine_bytes` was obtained.
    pub engine_rule: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileSize {
    pub path: String,
    pub bytes: u64,
}

/// What a restart did to the caches.
#[derive(Debug, Clone, Serialize)]
pub struct RestartOutcome {
    /// `true` when the OS page cache for the data files was verified empty afterwards.
    pub cold: bool,
    /// How the cache was dropped, or why it could not be (then this is a warm restart).
    pub cache: String,
    /// Bytes of the data files still in the page cache after eviction (mincore), if measured.
    pub resident_bytes: Option<u64>,
    pub elapsed_s: f64,
}

/// How a server dies in a crash dbduel causes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Fault {
    /// The server's processes are killed; the OS, and what it holds unsynced, lives on.
    Process,
    /// The machine loses power: what the OS held unsynced is gone too. The server's data
    /// directory runs through a filesystem that forgets unsynced writes
    /// ([`Engine::power_layer`]); names made, removed or renamed are durable at the next
    /// sync of any file or directory, as on Linux's journaling filesystems (ext4, XFS).
    Power,
    /// The same, names durable only once their own directory is synced: POSIX's letter, which
    /// those filesystems exceed.
    #[serde(rename = "power-posix")]
    PowerPosix,
}

impl Fault {
    /// Does the server lose what its filesystem held unsynced?
    pub fn cuts_power(self) -> bool {
        self != Fault::Process
    }

    /// Are names durable only once their directory is synced?
    pub fn strict_names(self) -> bool {
        self == Fault::PowerPosix
    }
}

/// How a server came back from a crash dbduel caused.
#[derive(Debug, Clone, Serialize)]
pub struct CrashOutcome {
    /// Seconds from the kill until the restarted server accepted a connection: its crash
    /// recovery included (InnoDB, MyRocks and PostgreSQL replay their logs before they
    /// accept one).
    pub accepting_s: f64,
    /// What the server's log said of its recovery, as written.
    pub recovery_log: Vec<String>,
    /// A power loss: what the filesystem held unsynced and forgot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsynced_lost: Option<UnsyncedLost>,
}

/// What a power loss took from the server's files: written, never synced.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct UnsyncedLost {
    /// Bytes in unsynced pages (whole 4 KiB pages).
    pub bytes: u64,
    /// Files with unsynced writes.
    pub files: u64,
    /// Names made, removed or renamed in directories not synced since, undone.
    pub names: u64,
}

/// How a replicated contender's primary was replaced after dbduel killed it.
#[derive(Debug, Clone, Serialize)]
pub struct FailoverOutcome {
    /// The replica promoted (the one that had received the most), by its index and name.
    pub promoted: usize,
    pub promoted_name: String,
    /// What each replica had received when the primary died, by name, in the engine's
    /// words (a GTID position, an LSN).
    pub received: Vec<(String, String)>,
    /// Seconds from the kill until the promoted replica had applied all it received.
    pub caught_up_s: f64,
    /// Seconds from the kill until the promotion's last command returned.
    pub promoted_s: f64,
    /// The commands that promoted it, as a DBA would type them.
    pub commands: Vec<String>,
}

/// How a bulk load went.
#[derive(Debug, Clone, Serialize)]
pub struct LoadOutcome {
    pub rows: u64,
    /// The load path used (e.g. `INSERT, prepared, 10000 rows per transaction`).
    pub method: String,
    /// What the engine warned about during the load; `None` for an engine that reports no
    /// warnings (SQLite: a row that does not fit fails the load).
    pub warnings: Option<LoadWarnings>,
}

/// Warnings an engine raised during a bulk load, in its own words.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LoadWarnings {
    /// How many the engine counted (MariaDB: `Warnings:` of the LOAD DATA info string, the
    /// full count — the OK packet's 16-bit field stops at 65,535; PostgreSQL: notices of
    /// WARNING severity during COPY).
    pub count: u64,
    /// Rows the engine skipped (rejected) rather than loaded, where it says (MariaDB's
    /// `Skipped:`, e.g. duplicate keys).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<u64>,
    /// The first few, as the engine gave them.
    pub first: Vec<EngineWarning>,
    /// The engine's own summary line, verbatim (MariaDB: `Records: 3  Deleted: 0  Skipped: 0
    /// Warnings: 3`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub info: Option<String>,
    /// Whether any of them is more than a note: on MariaDB a skipped row or a warning of
    /// level Warning or Error (a value truncated, converted or defaulted, a row rejected); on
    /// PostgreSQL a WARNING notice. A load with serious warnings fails unless the study
    /// allows them (`allow_warnings`).
    pub serious: bool,
}

/// One warning as the engine gave it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngineWarning {
    /// `Warning`, `Note`, `Error` (MariaDB) or the notice's severity (PostgreSQL).
    pub level: String,
    /// The engine's code: MariaDB's error number, PostgreSQL's SQLSTATE.
    pub code: String,
    pub message: String,
}

impl std::fmt::Display for EngineWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.level, self.code, self.message)
    }
}

/// Facts about an engine for the run manifest.
#[derive(Debug, Clone, Serialize)]
pub struct EngineInfo {
    pub engine: String,
    pub version: String,
    /// Effective settings as read back from the engine, not as requested.
    pub settings: BTreeMap<String, String>,
}

/// Parameters of a bulk load.
#[derive(Debug, Clone)]
pub struct LoadRequest<'a> {
    pub table: &'a crate::dataset::TableDef,
    /// Tab-separated file, one row a line, columns in table order.
    pub file: &'a Path,
    /// Rows per transaction where the engine commits in batches.
    pub batch_rows: u64,
}

impl FileLoad<'_> {
    /// The columns the file's fields go to: the header's names, or else `table_columns`
    /// (every column of the table, in order, as the engine read them); an error that says
    /// what to do when the table has none, that is, does not exist.
    pub fn columns_or(
        &self,
        table_columns: impl FnOnce() -> Result<Vec<String>>,
    ) -> Result<Vec<String>> {
        let columns = if self.columns.is_empty() {
            table_columns()?
        } else {
            self.columns.to_vec()
        };
        if columns.is_empty() {
            return Err(EngineError::new(
                "data",
                format!(
                    "table {} does not exist: create it in a step before the load (kind = \"sql\")",
                    self.table
                ),
            ));
        }
        Ok(columns)
    }
}

/// How a user's delimited file is written: RFC 4180 quoting (`"` around a field, `""` for
/// a quote inside one), one record a line (`\n` or `\r\n`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFormat {
    /// The field separator: one ASCII character (`,`, `\t`, `;`, `|`).
    pub delimiter: u8,
    /// The first record names the columns (then loaded by those names).
    pub header: bool,
    /// A field equal to this text, quoted or not, is NULL (default: the empty field).
    pub null: String,
}

/// Parameters of a load of a user's own file into a table the user made.
#[derive(Debug, Clone)]
pub struct FileLoad<'a> {
    pub table: &'a str,
    pub file: &'a Path,
    pub format: &'a FileFormat,
    /// The columns the fields go to, in file order (the header's names); empty: every
    /// column of the table, in the table's order.
    pub columns: &'a [String],
    /// Rows per transaction where the engine commits in batches.
    pub batch_rows: u64,
}

/// One contender's engine. Shared by reference across worker threads; each worker opens its
/// own `Session`.
pub trait Engine: Send + Sync {
    /// Engine kind (`sqlite`, `dry`, ...).
    fn kind(&self) -> &'static str;
    fn dialect(&self) -> Dialect;
    /// Open a new connection.
    fn connect(&self) -> Result<Box<dyn Session>>;
    /// Version and effective settings.
    fn info(&self) -> Result<EngineInfo>;
    /// Load a tab-separated file into an existing table by the engine's fastest honest path.
    fn bulk_load(&self, req: &LoadRequest<'_>) -> Result<LoadOutcome>;
    /// Load a user's delimited file into an existing table by the engine's bulk path.
    fn load_file(&self, req: &FileLoad<'_>) -> Result<LoadOutcome> {
        let _ = req;
        Err(EngineError::new(
            "unsupported",
            format!("{} cannot load a file of your own", self.kind()),
        ))
    }
    /// Bytes on disk of `tables` together (data and indexes).
    fn footprint(&self, tables: &[&str]) -> Result<Footprint>;
    /// Restart the engine; `cold` also drops the OS page cache of its files when permitted.
    /// All sessions must be closed first.
    fn restart(&self, cold: bool) -> Result<RestartOutcome>;
    /// Kill the server as a process crash would (or, `Fault::Power`, with what its
    /// filesystem held unsynced: the power layer must be on), start it again and wait until
    /// it accepts a connection. All sessions die with it. Only a server dbduel started itself
    /// can crash: an engine without one (embedded, someone else's, a topology) answers
    /// `unsupported`.
    fn crash(&self, fault: Fault) -> Result<CrashOutcome> {
        let _ = fault;
        Err(EngineError::new(
            "unsupported",
            format!("{} has no server of dbduel's own to crash", self.kind()),
        ))
    }
    /// The power goes, for an engine in dbduel's own process: from now on its files answer
    /// every call with an I/O error, so its sessions end without closing cleanly; then
    /// [`crash`](Self::crash) forgets what they held unsynced. A server needs none of it (its
    /// crash kills it).
    fn cut_power(&self) -> Result<()> {
        Ok(())
    }
    /// Run the server's data directory through the filesystem that forgets unsynced writes
    /// (`on`, the power loss to come), or on its own filesystem again (`None`): the server is
    /// stopped cleanly and started again either way. All sessions must be closed first.
    fn power_layer(&self, on: Option<Fault>) -> Result<()> {
        let _ = on;
        Err(EngineError::new(
            "unsupported",
            format!(
                "{} has no server of dbduel's own to cut the power of",
                self.kind()
            ),
        ))
    }
    /// Kill a replicated contender's primary as a process crash would, let its most advanced
    /// replica apply what it received, and promote it as a DBA would; later writes and reads
    /// go to it through [`Replicated::replica_session`](replication::Replicated). The
    /// primary stays dead. Only a topology dbduel started: others answer `unsupported`.
    fn fail_over(&self) -> Result<FailoverOutcome> {
        Err(EngineError::new(
            "unsupported",
            format!(
                "{} has no primary of dbduel's own with replicas to fail over",
                self.kind()
            ),
        ))
    }
    /// The process doing the engine's work, for system sampling; `None` when embedded in dbduel.
    fn server_pid(&self) -> Option<i32> {
        None
    }
    /// Every server process of the contender — a topology's replicas and a cluster's
    /// nodes with its primary — whose work is the engine's in system samples.
    fn server_pids(&self) -> Vec<i32> {
        let mut pids: Vec<i32> = self.server_pid().into_iter().collect();
        if let Some(r) = self.replication() {
            pids.extend((0..r.replica_count()).filter_map(|i| r.replica_pid(i)));
        }
        if let Some(c) = self.cluster() {
            pids.extend((0..c.node_count()).filter_map(|i| c.node_pid(i)));
        }
        pids.sort_unstable();
        pids.dedup();
        pids
    }
    /// Do [`Engine::counters`] go on counting across a clean restart (PostgreSQL's
    /// cumulative statistics are saved at shutdown), rather than from zero (MySQL's status)?
    fn counters_survive_restart(&self) -> bool {
        false
    }
    /// The server's own activity counters (e.g. MariaDB `Com_select`), to set beside what
    /// dbduel counted. `None` for engines without them.
    fn counters(&self) -> Result<Option<BTreeMap<String, u64>>> {
        Ok(None)
    }
    /// The server's log, whose tail goes into a failed step's result.
    fn server_log(&self) -> Option<PathBuf> {
        None
    }
    /// If the engine's server process has died, how (e.g. `killed by signal 9 (SIGKILL)`).
    /// `None` while it runs, and for engines whose process dbduel does not own.
    fn server_gone(&self) -> Option<String> {
        None
    }
    /// Can an index key column be descending (`col DESC`)? MyRocks cannot (nor a document
    /// store here): such an index is built ascending, and a backward scan serves the order.
    fn descending_indexes(&self) -> bool {
        self.documents().is_none()
    }
    /// Turn the contender's device profile on or off (a load may run at the host disk's full
    /// speed). Whether there was a throttle to turn.
    fn set_throttle(&self, _on: bool) -> Result<bool> {
        Ok(false)
    }
    /// The `ALTER TABLE` algorithms a schema change tries, cheapest first, when the server
    /// has its own list (MySQL 5.6 and 5.7 have no `INSTANT`, no MySQL has `NOCOPY`); `None`:
    /// the dialect's (see [`Dialect::ddl_attempts`]).
    fn ddl_algorithms(&self) -> Option<&'static [&'static str]> {
        None
    }
    /// A schema change in the dialect's words as this server must be sent it, asked just
    /// before it runs: a server without `RENAME COLUMN` (MySQL 5.6, 5.7) renames by
    /// `CHANGE COLUMN` with the column's definition as the server holds it now.
    fn ddl_statement(&self, sql: &str) -> Result<String> {
        Ok(sql.to_string())
    }
    /// Can the dataset's tables take foreign keys (`ALTER TABLE … ADD FOREIGN KEY`)? InnoDB
    /// and PostgreSQL can; MyRocks, Aria, partitioned InnoDB tables and SQLite (which only
    /// declares them in `CREATE TABLE`, unenforced by default) cannot.
    fn foreign_keys(&self) -> bool {
        false
    }
    /// Partitions the dataset's tables are created with (the contender's `partitions`), by
    /// their primary key; `None`: plain tables.
    fn partitions(&self) -> Option<u32> {
        None
    }
    /// The engine's collections, when it stores documents (MongoDB) rather than rows.
    fn documents(&self) -> Option<&dyn documents::Documents> {
        None
    }
    /// The contender's replication, when it is a topology of a primary and replicas.
    fn replication(&self) -> Option<&dyn replication::Replicated> {
        None
    }
    /// The contender's nodes, when it is a cluster whose every node takes writes (Galera).
    fn cluster(&self) -> Option<&dyn cluster::Clustered> {
        None
    }
    /// Does the engine keep what it is given: can rows it was sent be read back and
    /// counted? An engine that only pretends to work, to measure dbduel's own cost, does
    /// not, and steps that check what they wrote are skipped on it.
    fn keeps_rows(&self) -> bool {
        true
    }
    /// Does the engine run inside dbduel's own process?
    fn embedded(&self) -> bool {
        false
    }
    /// Take the run's lease on the study's database on a server dbduel does not own (a
    /// target), held until the engine is finished or dbduel ends: a second run of the same
    /// study on the same server is refused (`busy`) instead of dropping this one's tables.
    /// Private servers and embedded engines need none. Not taken by the shards of one run,
    /// which share the database.
    fn lease(&self) -> Result<()> {
        Ok(())
    }
    /// Release the engine: stop its server and remove its sandbox (or leave it running when
    /// `keep`). Embedded engines have nothing to do.
    fn finish(self: Box<Self>, _keep: bool) -> Result<()> {
        Ok(())
    }
}

/// What a target's account may do beyond the database dbduel will create, as the server
/// says (its grants, its role's attributes), and the account that would suffice.
#[derive(Debug, Clone, Default)]
pub struct AccountReach {
    /// Each privilege that reaches further, in the server's words.
    pub wide: Vec<String>,
    /// The statements that make an account reaching no further.
    pub recipe: String,
}

/// What an engine needs to know to open.
#[derive(Debug, Clone)]
pub struct OpenCtx<'a> {
    /// The contender's name.
    pub contender: &'a str,
    /// The contender's private directory (data, sandbox).
    pub dir: &'a Path,
    /// The database dbduel creates and works in on servers (`dbduel_<study>`).
    pub database: &'a str,
    /// Most clients any step opens at once.
    pub max_clients: u64,
}

/// One kind of engine as a contender configures it: its options, decoded and checked, and
/// what a run asks of it before and when it starts. An engine is one file implementing this
/// (on its options type) plus one line in `engines::REGISTRY`.
pub trait EngineKind: std::fmt::Debug + Send + Sync {
    /// The engine's name in study files (`engine = "..."`).
    fn name(&self) -> &'static str;
    /// Check what this engine needs on this machine (server binaries, plugins) before
    /// anything runs. The error's kind is `missing`.
    fn preflight(&self) -> Result<()> {
        Ok(())
    }
    /// On a target, what its account may do beyond `database` (the one dbduel will create
    /// and work in), read from the server, and the account that would suffice; `None` for a
    /// server dbduel runs itself, or an engine without accounts.
    fn account_reach(&self, _database: &str) -> Result<Option<AccountReach>> {
        Ok(None)
    }
    /// Memory this contender needs on this machine with `clients` connections, bytes, and
    /// the option (relative to the contender) that decides most of it. External servers use
    /// their own machine's memory: 0.
    fn memory_estimate(&self, _clients: u64) -> (u64, KeyPath) {
        (0, KeyPath::root())
    }
    /// Files one client keeps open in dbduel's process: a socket by default.
    fn files_per_client(&self) -> u64 {
        1
    }
    /// The directory its data lives under, when the contender names one.
    fn data_dir(&self) -> Option<&Path> {
        None
    }
    /// The storage class its data is throttled to, when the contender names one.
    fn device_profile(&self) -> Option<&crate::sandbox::device_profile::DeviceProfile> {
        None
    }
    /// Create the engine with its data under `ctx.dir` (which exists); servers are
    /// provisioned and started here.
    fn open(&self, ctx: &OpenCtx<'_>) -> Result<Box<dyn Engine>>;
    /// The replication of a topology given by target, reached as it is — no database
    /// claimed, nothing started or changed — for `dbduel restore` to put back what a run that
    /// died changed on it; `None` for anything else.
    fn attach_replication(
        &self,
        _database: &str,
    ) -> Result<Option<Box<dyn replication::Replicated>>> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn database_names_are_injective_short_and_unfolded() {
        use super::database_name;
        assert_eq!(database_name("shootout"), "dbduel_shootout");
        let names = [
            "a-b",
            "a_b",
            "Ab",
            "ab",
            "a__b",
            "MyStudy",
            &"x".repeat(64),
            &"x".repeat(63),
        ];
        let dbs: Vec<String> = names.iter().map(|n| database_name(n)).collect();
        for (i, d) in dbs.iter().enumerate() {
            assert!(d.len() <= 63, "{d}");
            assert!(
                d.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{d}"
            );
            assert!(!dbs[..i].contains(d), "{} and another share {d}", names[i]);
        }
        assert!(dbs[0].starts_with("dbduel_a_b__"), "{}", dbs[0]);
    }

    #[test]
    fn error_messages_are_bounded_at_a_character_boundary() {
        let short = super::EngineError::new("sql", "near 'x'");
        assert_eq!(short.message, "near 'x'");
        let long = super::EngineError::new("sql", "é".repeat(5000));
        assert!(long.message.len() <= super::MAX_MESSAGE_BYTES + 40);
        assert!(
            long.message.ends_with(" … [5904 more bytes cut]"),
            "{}",
            long.message
        );
    }
}
