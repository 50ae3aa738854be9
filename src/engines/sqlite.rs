//! The embedded SQLite engine (rusqlite, bundled): one database file per contender, one
//! connection per session, pragmas from the contender's options.

use crate::decode::{DecodeError, KeyPath};
use crate::engine::{
    Changes, Dialect, Engine, EngineError, EngineInfo, FileLoad, Footprint, LoadOutcome,
    LoadRequest, RestartOutcome, Result, Session, StmtId, Value,
};
use crate::sandbox::device_profile::DeviceProfile;
use crate::sandbox::limits::{Entered, Limits};
use rusqlite::{Connection, OpenFlags};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Contender options for `engine = "sqlite"`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqliteOptions {
    /// `PRAGMA journal_mode`: wal, delete, truncate, persist, memory or off.
    #[serde(default = "default_journal")]
    pub journal_mode: String,
    /// `PRAGMA synchronous`: off, normal, full or extra.
    #[serde(default = "default_sync")]
    pub synchronous: String,
    /// Page cache per connection, KiB (`PRAGMA cache_size = -N`).
    #[serde(default = "default_cache_kib")]
    pub cache_size_kib: u64,
    /// `PRAGMA page_size` in bytes, set before the table is created: 512..=65536, a power of two.
    #[serde(default = "default_page_size")]
    pub page_size: u64,
    /// How long a session waits on a lock before `SQLITE_BUSY`, ms.
    #[serde(default = "default_busy_ms")]
    pub busy_timeout_ms: u64,
    /// Throttle the database file's I/O to a storage class (`hdd`, `sata-ssd`, `cloud-disk`,
    /// `raid10-hdd`, `raid10-ssd`, or your own numbers). SQLite runs inside dbduel, so
    /// dbduel's process is throttled while this contender runs; the OS page cache is not
    /// limited, so a read is throttled only the first time (use a cold start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_profile: Option<DeviceProfile>,
}

fn default_journal() -> String {
    "wal".into()
}
fn default_sync() -> String {
    "normal".into()
}
fn default_cache_kib() -> u64 {
    2000
}
fn default_page_size() -> u64 {
    4096
}
fn default_busy_ms() -> u64 {
    10_000
}

const JOURNAL_MODES: &[&str] = &["wal", "delete", "truncate", "persist", "memory", "off"];
const SYNC_MODES: &[&str] = &["off", "normal", "full", "extra"];

/// The `sqlite` family in the engines registry.
pub const FAMILY: crate::engines::Family = crate::engines::Family {
    name: "sqlite",
    decode,
    sql_variants: &["sqlite", ""],
    url_schemes: &[],
    keeps_rows: true,
    shards_meet: false,
    sandbox: None,
};

/// `engine = "sqlite"`: decode and check the options; embedded, so no target.
pub fn decode(
    options: &toml::Table,
    target: Option<&crate::engine::target::TargetSpec<'_>>,
    binary: &crate::engines::versions::BinaryChoice,
) -> std::result::Result<Box<dyn crate::engine::EngineKind>, DecodeError> {
    crate::engines::refuse_target("sqlite", target)?;
    binary.refuse("engine sqlite runs inside dbduel")?;
    let o: SqliteOptions = crate::engines::decode_options(options)?;
    o.validate().map_err(crate::engines::in_options)?;
    Ok(Box::new(o))
}

impl crate::engine::EngineKind for SqliteOptions {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn device_profile(&self) -> Option<&DeviceProfile> {
        self.device_profile.as_ref()
    }

    /// Each connection's page cache, at most.
    fn memory_estimate(&self, clients: u64) -> (u64, KeyPath) {
        (
            self.cache_size_kib * 1024 * clients,
            KeyPath::root().key("options").key("cache_size_kib"),
        )
    }

    /// The database file, and the write-ahead log in WAL mode.
    fn files_per_client(&self) -> u64 {
        if self.journal_mode.eq_ignore_ascii_case("wal") {
            2
        } else {
            1
        }
    }

    fn open(&self, ctx: &crate::engine::OpenCtx<'_>) -> Result<Box<dyn Engine>> {
        let mut engine = SqliteEngine::new(self.clone(), ctx.dir);
        if let Some(p) = &self.device_profile {
            // dbduel's whole process joins the throttle for as long as the engine is open.
            let limits = Limits::for_sandbox(ctx.contender, None, Some(p), ctx.dir)
                .map_err(|e| EngineError::new("missing", e))?
                .expect("a profile makes a cgroup");
            let entered = limits.enter().map_err(|e| EngineError::new("missing", e))?;
            engine.throttle = Some((entered, limits));
        }
        Ok(Box::new(engine))
    }
}

impl SqliteOptions {
    /// Check values (after serde checked types and keys).
    pub fn validate(&self) -> std::result::Result<(), DecodeError> {
        one_of("journal_mode", &self.journal_mode, JOURNAL_MODES)?;
        one_of("synchronous", &self.synchronous, SYNC_MODES)?;
        if !(512..=65536).contains(&self.page_size) || !self.page_size.is_power_of_two() {
            return Err(DecodeError::at(
                KeyPath::root().key("page_size"),
                format!(
                    "page_size = {} is not allowed; use a power of two from 512 to 65536",
                    self.page_size
                ),
            ));
        }
        if self.cache_size_kib == 0 || self.cache_size_kib > 64 << 20 {
            return Err(DecodeError::at(
                KeyPath::root().key("cache_size_kib"),
                "cache_size_kib must be from 1 to 67108864 (64 GiB)",
            ));
        }
        if self.busy_timeout_ms > 3_600_000 {
            return Err(DecodeError::at(
                KeyPath::root().key("busy_timeout_ms"),
                "busy_timeout_ms must be at most 3600000 (one hour)",
            ));
        }
        Ok(())
    }
}

fn one_of(key: &str, value: &str, allowed: &[&str]) -> std::result::Result<(), DecodeError> {
    if allowed.contains(&value.to_ascii_lowercase().as_str()) {
        Ok(())
    } else {
        Err(DecodeError::at(
            KeyPath::root().key(key),
            format!(
                "{key} = \"{value}\" is not allowed; use one of: {}",
                allowed.join(", ")
            ),
        ))
    }
}

/// A SQLite database file in a contender's data directory.
pub struct SqliteEngine {
    opts: SqliteOptions,
    dir: PathBuf,
    path: PathBuf,
    /// dbduel inside the device profile's cgroup (left before the cgroup is removed: the
    /// fields drop in order).
    throttle: Option<(Entered, Limits)>,
    /// The filesystem that forgets unsynced writes, over the database's directory while a
    /// power loss is to come (the crash step's `fault = "power"`).
    #[cfg(feature = "servers")]
    power: std::sync::Mutex<Option<crate::sandbox::lazyfs::LazyMount>>,
}

impl SqliteEngine {
    pub fn new(opts: SqliteOptions, dir: &Path) -> Self {
        SqliteEngine {
            opts,
            dir: dir.to_path_buf(),
            path: dir.join("db.sqlite"),
            throttle: None,
            #[cfg(feature = "servers")]
            power: std::sync::Mutex::new(None),
        }
    }

    fn open(&self) -> Result<Connection> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sql_err)?;
        conn.busy_timeout(Duration::from_millis(self.opts.busy_timeout_ms))
            .map_err(sql_err)?;
        let o = &self.opts;
        // page_size only takes effect before the first table exists; harmless afterwards.
        conn.execute_batch(&format!(
            "PRAGMA page_size = {}; PRAGMA journal_mode = {}; PRAGMA synchronous = {}; PRAGMA cache_size = -{};",
            o.page_size, o.journal_mode, o.synchronous, o.cache_size_kib
        ))
        .map_err(sql_err)?;
        // a TPC-C terminal keeps about 70 statements prepared
        conn.set_prepared_statement_cache_capacity(128);
        Ok(conn)
    }

    /// The database file and the files that may hold its data (WAL, rollback journal). The
    /// `-shm` file is a shared-memory index of the WAL, not data, and is left out.
    fn files(&self) -> Vec<PathBuf> {
        ["", "-wal", "-journal"]
            .iter()
            .map(|s| PathBuf::from(format!("{}{s}", self.path.display())))
            .collect()
    }
}

fn sql_err(e: rusqlite::Error) -> EngineError {
    let kind = match &e {
        rusqlite::Error::SqliteFailure(f, _) => match f.code {
            rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked => "busy",
            rusqlite::ErrorCode::ConstraintViolation => "constraint",
            rusqlite::ErrorCode::DiskFull => "disk_full",
            rusqlite::ErrorCode::SystemIoFailure => "io",
            rusqlite::ErrorCode::CannotOpen => "connect",
            // only a statement timeout's watchdog interrupts a session
            rusqlite::ErrorCode::OperationInterrupted => crate::engine::TIMEOUT,
            _ => "sql",
        },
        _ => "sql",
    };
    EngineError::new(kind, format!("sqlite: {e}"))
}

fn io_err(what: &str, e: std::io::Error) -> EngineError {
    EngineError::new("io", format!("{what}: {e}"))
}

impl Engine for SqliteEngine {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn connect(&self) -> Result<Box<dyn Session>> {
        Ok(Box::new(SqliteSession {
            conn: self.open()?,
            stmts: Vec::new(),
            limit: None,
        }))
    }

    fn info(&self) -> Result<EngineInfo> {
        let conn = self.open()?;
        let mut settings = BTreeMap::new();
        for pragma in [
            "journal_mode",
            "synchronous",
            "cache_size",
            "page_size",
            "busy_timeout",
        ] {
            let v: String = conn
                .query_row(&format!("PRAGMA {pragma}"), [], |r| {
                    r.get::<_, rusqlite::types::Value>(0)
                })
                .map(|v| match v {
                    rusqlite::types::Value::Integer(i) => i.to_string(),
                    rusqlite::types::Value::Text(t) => t,
                    other => format!("{other:?}"),
                })
                .map_err(sql_err)?;
            settings.insert(pragma.to_string(), v);
        }
        Ok(EngineInfo {
            engine: "sqlite".into(),
            version: rusqlite::version().to_string(),
            settings,
        })
    }

    fn bulk_load(&self, req: &LoadRequest<'_>) -> Result<LoadOutcome> {
        let mut conn = self.open()?;
        // Read through the stop flag: Ctrl-C ends the load (its transaction rolls back).
        let file = crate::stop::Reader(
            std::fs::File::open(req.file).map_err(|e| io_err("open dataset file", e))?,
        );
        let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
        let mut line = String::new();
        let mut rows = 0u64;
        let batch = req.batch_rows.max(1);
        loop {
            let tx = conn.transaction().map_err(sql_err)?;
            let mut in_batch = 0u64;
            {
                let cols = req.table.columns;
                let marks: Vec<String> = (1..=cols.len()).map(|i| format!("?{i}")).collect();
                let mut stmt = tx
                    .prepare_cached(&format!(
                        "INSERT INTO {} VALUES ({})",
                        req.table.name,
                        marks.join(", ")
                    ))
                    .map_err(sql_err)?;
                while in_batch < batch {
                    line.clear();
                    let n = reader
                        .read_line(&mut line)
                        .map_err(|e| io_err("read dataset file", e))?;
                    if n == 0 {
                        break;
                    }
                    let mut fields = line.trim_end_matches('\n').splitn(cols.len(), '\t');
                    for (i, col) in cols.iter().enumerate() {
                        let bad = || {
                            EngineError::new(
                                "data",
                                format!("dataset line {}: bad or missing `{}`", rows + 1, col.name),
                            )
                        };
                        let field = fields.next().ok_or_else(bad)?;
                        if col.nullable && field == "\\N" {
                            stmt.raw_bind_parameter(i + 1, rusqlite::types::Null)
                        } else if col.ty.is_integer() {
                            let v: i64 = field.parse().map_err(|_| bad())?;
                            stmt.raw_bind_parameter(i + 1, v)
                        } else {
                            stmt.raw_bind_parameter(i + 1, field)
                        }
                        .map_err(sql_err)?;
                    }
                    stmt.raw_execute().map_err(sql_err)?;
                    rows += 1;
                    in_batch += 1;
                }
            }
            tx.commit().map_err(sql_err)?;
            if in_batch < batch {
                break;
            }
        }
        Ok(LoadOutcome {
            rows,
            method: format!("INSERT, prepared, {batch} rows per transaction"),
            // SQLite has no warnings: a line that does not parse fails the load above.
            warnings: None,
        })
    }

    /// Prepared INSERTs, `batch_rows` a transaction; a field equal to the NULL marker is
    /// bound as NULL, every other as text (the column's affinity converts it, as SQLite's own
    /// `.import` does).
    fn load_file(&self, req: &FileLoad<'_>) -> Result<LoadOutcome> {
        let mut conn = self.open()?;
        let file = crate::stop::Reader(
            std::fs::File::open(req.file).map_err(|e| io_err("open the data file", e))?,
        );
        let mut r = csv::ReaderBuilder::new()
            .delimiter(req.format.delimiter)
            .has_headers(req.format.header)
            .flexible(false)
            .from_reader(std::io::BufReader::with_capacity(1 << 20, file));
        let mut rec = csv::ByteRecord::new();
        let (mut rows, batch) = (0u64, req.batch_rows.max(1));
        let null = req.format.null.as_bytes();
        let mut sql = String::new();
        loop {
            let tx = conn.transaction().map_err(sql_err)?;
            let mut in_batch = 0u64;
            while in_batch < batch {
                let more = r.read_byte_record(&mut rec).map_err(|e| {
                    EngineError::new("data", format!("{}: {e}", req.file.display()))
                })?;
                if !more {
                    break;
                }
                if sql.is_empty() {
                    sql = file_insert(req, rec.len());
                }
                let mut stmt = tx.prepare_cached(&sql).map_err(sql_err)?;
                for (i, field) in rec.iter().enumerate() {
                    if field == null {
                        stmt.raw_bind_parameter(i + 1, rusqlite::types::Null)
                    } else {
                        let text = std::str::from_utf8(field).map_err(|_| {
                            EngineError::new(
                                "data",
                                format!(
                                    "{}: record {} field {} is not UTF-8",
                                    req.file.display(),
                                    rows + 1,
                                    i + 1
                                ),
                            )
                        })?;
                        stmt.raw_bind_parameter(i + 1, text)
                    }
                    .map_err(sql_err)?;
                }
                stmt.raw_execute().map_err(sql_err)?;
                rows += 1;
                in_batch += 1;
            }
            tx.commit().map_err(sql_err)?;
            if in_batch < batch {
                break;
            }
        }
        Ok(LoadOutcome {
            rows,
            method: format!("INSERT, prepared, {batch} rows per transaction"),
            warnings: None,
        })
    }

    fn set_throttle(&self, on: bool) -> Result<bool> {
        match &self.throttle {
            Some((_, limits)) => limits.set_io(on).map_err(|e| EngineError::new("io", e)),
            None => Ok(false),
        }
    }

    fn footprint(&self, tables: &[&str]) -> Result<Footprint> {
        let conn = self.open()?;
        // Fold the WAL into the main file so the file sizes show the table, not a log.
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .map_err(sql_err)?;
        let mut engine_bytes = 0i64;
        for table in tables {
            engine_bytes += conn
                .query_row(
                    "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name = ?1 \
                     OR name IN (SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?1)",
                    [table],
                    |r| r.get::<_, i64>(0),
                )
                .map_err(sql_err)?;
        }
        drop(conn);
        let (files_bytes, allocated_bytes, files) =
            crate::engines::file_sizes(&self.dir, &self.files());
        Ok(Footprint {
            files_bytes: Some(files_bytes),
            allocated_bytes: Some(allocated_bytes),
            files,
            files_rule: "the database file plus its -wal and -journal files, after a WAL checkpoint; the database holds only this study's tables".into(),
            engine_bytes: Some(engine_bytes.max(0) as u64),
            engine_rule: "dbstat: pages of the tables and their indexes".into(),
        })
    }

    fn embedded(&self) -> bool {
        true
    }

    fn power_layer(&self, on: Option<crate::engine::Fault>) -> Result<()> {
        power::layer(self, on)
    }

    fn cut_power(&self) -> Result<()> {
        power::cut(self);
        Ok(())
    }

    /// The power goes (a process crash would be dbduel's own): with every session gone (see
    /// [`cut_power`](Engine::cut_power)), what the files held unsynced is forgotten and the
    /// database opened again, its recovery (a WAL replayed, a hot journal rolled back) timed.
    fn crash(&self, fault: crate::engine::Fault) -> Result<crate::engine::CrashOutcome> {
        if !fault.cuts_power() {
            return Err(EngineError::new(
                "unsupported",
                "SQLite runs inside dbduel's process: a process crash would be dbduel's own",
            ));
        }
        let start = Instant::now();
        let unsynced_lost = power::lose(self)?;
        drop(self.open()?);
        Ok(crate::engine::CrashOutcome {
            accepting_s: start.elapsed().as_secs_f64(),
            recovery_log: Vec::new(),
            unsynced_lost: Some(unsynced_lost),
        })
    }

    fn restart(&self, cold: bool) -> Result<RestartOutcome> {
        // An embedded engine "restarts" by closing every connection (sessions are closed by
        // the caller) and opening a new one; its only cache left is the OS page cache.
        let start = Instant::now();
        let (cold_ok, cache, resident) = crate::oscache::drop_for_restart(&self.files(), cold);
        // Open once so the restart cost (schema load) is not charged to the next query.
        drop(self.open()?);
        Ok(RestartOutcome {
            cold: cold_ok,
            cache,
            resident_bytes: resident,
            elapsed_s: start.elapsed().as_secs_f64(),
        })
    }
}

/// The power-loss filesystem over the database's directory (builds with the server engines
/// have it; the others refuse a power loss).
#[cfg(feature = "servers")]
mod power {
    use super::SqliteEngine;
    use crate::engine::{EngineError, Fault, Result, UnsyncedLost};
    use crate::sandbox::lazyfs::LazyMount;

    fn io(what: &str, e: std::io::Error) -> EngineError {
        EngineError::new("io", format!("{what}: {e}"))
    }

    pub fn layer(e: &SqliteEngine, on: Option<Fault>) -> Result<()> {
        let mut slot = e.power.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = slot.take() {
            m.unmount()
                .map_err(|err| io("cannot unmount the power-loss filesystem", err))?;
        }
        if let Some(f) = on {
            let m = LazyMount::over(&e.dir, f.strict_names())
                .map_err(|err| io("cannot mount the power-loss filesystem", err))?;
            *slot = Some(m);
        }
        Ok(())
    }

    pub fn cut(e: &SqliteEngine) {
        if let Some(m) = e.power.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            m.cut();
        }
    }

    pub fn lose(e: &SqliteEngine) -> Result<UnsyncedLost> {
        let mut slot = e.power.lock().unwrap_or_else(|p| p.into_inner());
        let m = slot.take().ok_or_else(|| {
            EngineError::new(
                "usage",
                "the database's directory is not on the power-loss filesystem",
            )
        })?;
        let strict = m.strict_names();
        let l = m
            .lose_power()
            .map_err(|err| io("cannot cut the power of the filesystem", err))?;
        *slot = Some(
            LazyMount::over(&e.dir, strict)
                .map_err(|err| io("cannot mount the power-loss filesystem", err))?,
        );
        Ok(l.into())
    }
}

#[cfg(not(feature = "servers"))]
mod power {
    use super::SqliteEngine;
    use crate::engine::{EngineError, Fault, Result, UnsyncedLost};

    fn not_here() -> EngineError {
        EngineError::new(
            "unsupported",
            "this build has no power-loss filesystem (it comes with the server engines)",
        )
    }

    pub fn layer(_: &SqliteEngine, on: Option<Fault>) -> Result<()> {
        match on {
            Some(_) => Err(not_here()),
            None => Ok(()),
        }
    }

    pub fn cut(_: &SqliteEngine) {}

    pub fn lose(_: &SqliteEngine) -> Result<UnsyncedLost> {
        Err(not_here())
    }
}

/// One rusqlite connection. Prepared statements live in rusqlite's per-connection cache,
/// keyed by their SQL text; `StmtId` indexes that text.
pub struct SqliteSession {
    conn: Connection,
    stmts: Vec<String>,
    /// How long a statement may run before its watchdog interrupts it.
    limit: Option<Duration>,
}

impl SqliteSession {
    /// Run `f` (one statement) under the session's time limit: a watchdog thread calls
    /// `sqlite3_interrupt` on this connection once the limit passes, and is told to go and
    /// joined as soon as `f` returns, so no interrupt reaches a later statement.
    fn watched<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let Some(limit) = self.limit else {
            return f(self);
        };
        let handle = self.conn.get_interrupt_handle();
        let (done, wait) = std::sync::mpsc::channel::<()>();
        // Past the limit it interrupts every millisecond until the statement ends: an
        // interrupt that comes before the statement has begun running is forgotten.
        let dog = std::thread::spawn(move || {
            let mut wait_for = limit;
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(wait_for)
            {
                handle.interrupt();
                wait_for = Duration::from_millis(1);
            }
        });
        let r = f(self);
        let _ = done.send(());
        let _ = dog.join();
        r
    }

    fn execute_now(&mut self, sql: &str) -> Result<u64> {
        let mut stmt = self.conn.prepare(sql).map_err(sql_err)?;
        if stmt.readonly() && stmt.column_count() > 0 {
            let mut rows = stmt.raw_query();
            let mut n = 0;
            while rows.next().map_err(sql_err)?.is_some() {
                n += 1;
            }
            Ok(n)
        } else {
            Ok(stmt.raw_execute().map_err(sql_err)? as u64)
        }
    }
}

impl Session for SqliteSession {
    /// A watchdog thread a statement: `sqlite3_interrupt` when the limit passes.
    fn statement_timeout(&mut self, limit: Option<Duration>) -> Result<bool> {
        self.limit = limit;
        Ok(true)
    }

    fn execute(&mut self, sql: &str) -> Result<u64> {
        self.watched(|s| s.execute_now(sql))
    }

    fn query_i64(&mut self, sql: &str) -> Result<i64> {
        self.conn.query_row(sql, [], |r| r.get(0)).map_err(sql_err)
    }

    /// SQLite's `changes()` counts every row the statement matched, whether or not its values
    /// changed; it has no separate count of changed rows.
    fn execute_counted(&mut self, sql: &str) -> Result<Changes> {
        let n = self.execute(sql)?;
        let changes = self.conn.changes();
        Ok(Changes {
            affected: n,
            matched: Some(changes),
            ..Changes::default()
        })
    }

    fn prepare(&mut self, sql: &str) -> Result<StmtId> {
        self.conn.prepare_cached(sql).map_err(sql_err)?;
        self.stmts.push(sql.to_string());
        Ok(StmtId(self.stmts.len() - 1))
    }

    fn run(&mut self, stmt: StmtId, params: &[Value]) -> Result<u64> {
        let sql = self
            .stmts
            .get(stmt.0)
            .ok_or_else(|| EngineError::new("usage", "unknown prepared statement"))?;
        let mut st = self.conn.prepare_cached(sql).map_err(sql_err)?;
        bind(&mut st, params)?;
        if st.column_count() > 0 {
            let mut rows = st.raw_query();
            let mut n = 0;
            while let Some(row) = rows.next().map_err(sql_err)? {
                // Touch the first column so the engine materializes the row, as a client would.
                let _ = row.get_ref(0).map_err(sql_err)?;
                n += 1;
            }
            Ok(n)
        } else {
            Ok(st.raw_execute().map_err(sql_err)? as u64)
        }
    }

    fn run_rows(&mut self, stmt: StmtId, params: &[Value], out: &mut Vec<Value>) -> Result<u64> {
        self.watched(|s| s.run_rows_now(stmt, params, out))
    }
}

impl SqliteSession {
    fn run_rows_now(
        &mut self,
        stmt: StmtId,
        params: &[Value],
        out: &mut Vec<Value>,
    ) -> Result<u64> {
        use rusqlite::types::ValueRef;
        out.clear();
        let sql = self
            .stmts
            .get(stmt.0)
            .ok_or_else(|| EngineError::new("usage", "unknown prepared statement"))?;
        let mut st = self.conn.prepare_cached(sql).map_err(sql_err)?;
        bind(&mut st, params)?;
        let columns = st.column_count();
        if columns == 0 {
            return Ok(st.raw_execute().map_err(sql_err)? as u64);
        }
        let mut rows = st.raw_query();
        let mut n = 0;
        while let Some(row) = rows.next().map_err(sql_err)? {
            for i in 0..columns {
                out.push(match row.get_ref(i).map_err(sql_err)? {
                    ValueRef::Null => Value::Null,
                    ValueRef::Integer(v) => Value::Int(v),
                    ValueRef::Real(v) => Value::Text(v.to_string()),
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        Value::Text(String::from_utf8_lossy(t).into_owned())
                    }
                });
            }
            n += 1;
        }
        Ok(n)
    }
}

/// Bind a statement's parameters, in order.
fn bind(st: &mut rusqlite::CachedStatement<'_>, params: &[Value]) -> Result<()> {
    for (i, p) in params.iter().enumerate() {
        match p {
            Value::Int(v) => st.raw_bind_parameter(i + 1, v),
            Value::Text(v) => st.raw_bind_parameter(i + 1, v.as_str()),
            Value::Null => st.raw_bind_parameter(i + 1, rusqlite::types::Null),
        }
        .map_err(sql_err)?;
    }
    Ok(())
}

/// `INSERT INTO t (cols) VALUES (?1, …)` for a record of `fields` fields.
fn file_insert(req: &FileLoad<'_>, fields: usize) -> String {
    let marks: Vec<String> = (1..=fields).map(|i| format!("?{i}")).collect();
    let cols = if req.columns.is_empty() {
        String::new()
    } else {
        format!(" ({})", req.columns.join(", "))
    };
    format!(
        "INSERT INTO {}{cols} VALUES ({})",
        req.table,
        marks.join(", ")
    )
}
