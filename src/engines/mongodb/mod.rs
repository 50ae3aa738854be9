//! The MongoDB engine (`engine = "mongodb"`): any MongoDB-wire server by URI (`target =
//! "mongodb://…"`), or a private FerretDB sandbox on SQLite when no target is given. It speaks
//! no SQL: SQL steps are skipped on it, and the steps that can run on documents use its
//! [`Documents`] capability — load by unordered `insert_many` batches, lookups by `_id`,
//! footprint from `collStats`, counters from `serverStatus().opcounters`.
//!
//! Each session is its own driver client with a pool of one connection, so one client means
//! one connection with one operation in flight, as on every other engine. The driver's
//! blocking API runs on its own runtime threads; their cost is dbduel's and is measured as
//! such.

pub mod ferretdb;

use crate::dataset::ColumnType;
use crate::decode::{DecodeError, KeyPath};
use crate::engine::documents::{DocSession, Documents};
use crate::engine::target::Target;
use crate::engine::{
    Dialect, Engine, EngineError, EngineInfo, Footprint, LoadOutcome, LoadRequest, OpenCtx,
    RestartOutcome, Result, Session,
};
use crate::engines::server::{MARKER, MARKER_NOTE, Provisioned, Server};
use ferretdb::FerretdbRecipe;
use mongodb::bson::{Bson, Document, doc};
use mongodb::options::{ClientOptions, Credential, ServerAddress};
use mongodb::sync::{Client, Collection};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::time::Duration;

/// Contender options for `engine = "mongodb"`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MongodbOptions {
    /// Documents per unordered `insert_many` batch when loading.
    #[serde(default = "default_batch")]
    pub batch_docs: u64,
    /// How long connecting (and choosing the server) may take before it fails, seconds.
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout_s: u64,
    /// The contender's target, when it is someone else's server.
    #[serde(skip)]
    pub target: Option<Target>,
}

fn default_batch() -> u64 {
    10_000
}
fn default_connect_timeout() -> u64 {
    10
}

/// The `mongodb` family in the engines registry.
pub const FAMILY: crate::engines::Family = crate::engines::Family {
    name: "mongodb",
    decode,
    // No SQL: a `sql` step does not run on it.
    sql_variants: &[],
    url_schemes: &["mongodb"],
    keeps_rows: true,
    shards_meet: false,
    sandbox: None,
};

/// `engine = "mongodb"`: decode the options, and the `target` of an external server.
pub fn decode(
    options: &toml::Table,
    target: Option<&crate::engine::target::TargetSpec<'_>>,
    binary: &crate::engines::versions::BinaryChoice,
) -> std::result::Result<Box<dyn crate::engine::EngineKind>, DecodeError> {
    binary.refuse("engine mongodb runs the FerretDB that scripts/install-ferretdb installs")?;
    let mut o: MongodbOptions = crate::engines::decode_options(options)?;
    if !(1..=1_000_000).contains(&o.batch_docs) {
        return Err(DecodeError::at(
            KeyPath::root().key("options").key("batch_docs"),
            "batch_docs must be from 1 to 1000000",
        ));
    }
    if !(1..=3600).contains(&o.connect_timeout_s) {
        return Err(DecodeError::at(
            KeyPath::root().key("options").key("connect_timeout_s"),
            "connect_timeout_s must be from 1 to 3600",
        ));
    }
    if let Some(t) = target {
        o.target = Some(crate::engine::target::parse_user_optional(
            t, "mongodb", 27017,
        )?);
    }
    Ok(Box::new(o))
}

impl crate::engine::EngineKind for MongodbOptions {
    fn name(&self) -> &'static str {
        "mongodb"
    }

    fn preflight(&self) -> Result<()> {
        use crate::sandbox::Recipe;
        match &self.target {
            None => FerretdbRecipe::default()
                .check_installed()
                .map_err(crate::engines::server::sandbox_err),
            Some(t) => {
                let c = client(t, self.connect_timeout_s, 1)?;
                ping(&c).map_err(|e| {
                    EngineError::new(
                        e.kind,
                        format!("cannot connect to {}: {}", t.display(), e.message),
                    )
                })
            }
        }
    }

    fn memory_estimate(&self, clients: u64) -> (u64, KeyPath) {
        if self.target.is_some() {
            return (0, KeyPath::root());
        }
        // FerretDB's own process, and about a MiB per connection on either side.
        ((128 + 2 * clients) << 20, KeyPath::root())
    }

    fn open(&self, ctx: &OpenCtx<'_>) -> Result<Box<dyn Engine>> {
        Ok(Box::new(MongodbEngine::open(self.clone(), ctx)?))
    }
}

/// A driver client for `t`, holding at most `pool` connections.
fn client(t: &Target, connect_timeout_s: u64, pool: u32) -> Result<Client> {
    let timeout = Duration::from_secs(connect_timeout_s);
    let credential = (!t.user.is_empty()).then(|| {
        Credential::builder()
            .username(t.user.clone())
            .password(t.password.as_ref().map(|p| p.expose().to_string()))
            .source(Some("admin".to_string()))
            .build()
    });
    // A sandbox's server listens on a Unix socket only: its path is the host (in a target
    // URL percent-encoded, as MongoDB's own: `mongodb://%2Fpath%2Fto%2Fserver.sock/db`).
    let address = if t.host.ends_with(".sock") {
        ServerAddress::parse(&t.host).map_err(mongo_err)?
    } else {
        ServerAddress::Tcp {
            host: t.host.clone(),
            port: Some(t.port),
        }
    };
    let options = ClientOptions::builder()
        .hosts(vec![address])
        .direct_connection(true)
        .connect_timeout(timeout)
        .server_selection_timeout(timeout)
        .max_pool_size(pool)
        .app_name("dbduel".to_string())
        .credential(credential)
        .tls(driver_tls(&t.tls)?)
        .build();
    Client::with_options(options).map_err(mongo_err)
}

/// The driver's TLS for a target's settings. MongoDB clients connect in clear unless told,
/// so `prefer` (the default of every target) is clear here; `require` accepts any
/// certificate; `verify-ca` is refused (the driver cannot skip the name). The driver takes the client's certificate and key in
/// one PEM file.
fn driver_tls(tls: &crate::engine::target::TlsSettings) -> Result<Option<mongodb::options::Tls>> {
    use crate::engine::target::{RootCert, TlsMode};
    use mongodb::options::{Tls, TlsOptions};
    if !tls.mode.requires_tls() {
        return Ok(None);
    }
    let cert_key = match (&tls.cert, &tls.key) {
        (Some(c), Some(k)) if c == k => Some(c.clone()),
        (Some(_), Some(_)) => {
            return Err(crate::engines::wire::tls::tls_error(
                "mongodb",
                "MongoDB's driver takes the client certificate and its key in one PEM file: give sslcert and sslkey the same file",
            ));
        }
        _ => None,
    };
    if let Some(k) = &cert_key {
        crate::engine::target::open_regular(k, true)
            .map_err(|m| crate::engines::wire::tls::tls_error("mongodb", m))?;
    }
    let mut o = TlsOptions::default();
    o.ca_file_path = match &tls.ca {
        Some(RootCert::File(f)) => Some(f.clone()),
        _ => None,
    };
    o.cert_key_file_path = cert_key;
    o.allow_invalid_certificates = Some(tls.mode == TlsMode::Require);
    if tls.mode == TlsMode::VerifyCa {
        return Err(crate::engines::wire::tls::tls_error(
            "mongodb",
            "MongoDB's driver (on rustls) checks a certificate's name whenever it checks its chain: give sslmode=verify-full, or require",
        ));
    }
    Ok(Some(Tls::Enabled(o)))
}

/// Does the server answer (and accept the credentials)?
fn ping(c: &Client) -> Result<()> {
    c.database("admin")
        .run_command(doc! { "ping": 1 })
        .run()
        .map(|_| ())
        .map_err(mongo_err)
}

/// A driver error as an engine error, its kind counted: `auth`, `connect`, `command`, …
pub(crate) fn mongo_err(e: mongodb::error::Error) -> EngineError {
    use mongodb::error::ErrorKind as K;
    let kind = match e.kind.as_ref() {
        K::Authentication { .. } => "auth",
        K::ServerSelection { .. } | K::Io(_) | K::ConnectionPoolCleared { .. } => "connect",
        K::Command(_) => "command",
        K::InsertMany(_) | K::BulkWrite(_) | K::Write(_) => "write",
        K::InvalidArgument { .. } => "usage",
        _ => "mongodb",
    };
    let message = match e.kind.as_ref() {
        K::ServerSelection { message, .. } => format!(
            "no answer from the server ({})",
            message.lines().next().unwrap_or("")
        ),
        // The driver's own text is its debug dump; the server's words and the fix suffice.
        K::Authentication { message, .. } => format!(
            "the server refused the credentials ({message}): check the user in the target and the password its password_env or password_file gives"
        ),
        _ => e.to_string(),
    };
    EngineError::new(kind, message)
}

/// A MongoDB-wire server and dbduel's database in it.
pub struct MongodbEngine {
    opts: MongodbOptions,
    server: Server,
    reach: Target,
    database: String,
    /// The sandbox's data directory (FerretDB's SQLite files), when it is one.
    datadir: Option<PathBuf>,
    /// The engine's own administrative client (a small pool, shared).
    admin: Client,
}

impl MongodbEngine {
    pub fn open(opts: MongodbOptions, ctx: &OpenCtx<'_>) -> Result<Self> {
        let Provisioned {
            server,
            mut reach,
            datadir,
        } = Server::provision(
            opts.target.as_ref(),
            Box::new(FerretdbRecipe::default()),
            ctx.contender,
            ctx.dir,
            "mongodb",
            "",
        )?;
        // A sandbox is reached through its private socket, never over TCP.
        if let Some(sb) = server.sandbox() {
            reach.host = sb.layout.socket.display().to_string();
            reach.password = None;
        }
        let database = reach
            .database
            .clone()
            .unwrap_or_else(|| ctx.database.to_string());
        let admin = client(&reach, opts.connect_timeout_s, 4)?;
        let engine = MongodbEngine {
            opts,
            server,
            reach,
            database,
            datadir,
            admin,
        };
        ping(&engine.admin).map_err(|e| {
            EngineError::new(
                e.kind,
                format!(
                    "cannot connect to {}: {}",
                    engine.reach.display(),
                    e.message
                ),
            )
        })?;
        engine.claim_database()?;
        Ok(engine)
    }

    /// Use the study's database if it carries dbduel's marker collection, or create it with
    /// one; a database without the marker was not made by dbduel and is never touched.
    fn claim_database(&self) -> Result<()> {
        if ["admin", "local", "config"].contains(&self.database.as_str()) {
            return Err(EngineError::new(
                "refused",
                format!(
                    "database `{}` is the server's own; name another database in the target",
                    self.database
                ),
            ));
        }
        let names = self.admin.list_database_names().run().map_err(mongo_err)?;
        let db = self.admin.database(&self.database);
        if names.contains(&self.database) {
            let collections = db.list_collection_names().run().map_err(mongo_err)?;
            if !collections.iter().any(|c| c == MARKER) {
                return Err(Server::not_ours(&self.database, &self.reach));
            }
            return Ok(());
        }
        db.collection::<Document>(MARKER)
            .insert_one(doc! { "note": MARKER_NOTE })
            .run()
            .map_err(mongo_err)?;
        Ok(())
    }

    fn collection(&self, name: &str) -> Collection<Document> {
        self.admin.database(&self.database).collection(name)
    }

    fn server_status(&self) -> Result<Document> {
        self.admin
            .database("admin")
            .run_command(doc! { "serverStatus": 1 })
            .run()
            .map_err(mongo_err)
    }
}

/// A number from a server document, whichever integer or float type the server chose.
fn number(d: &Document, key: &str) -> Option<u64> {
    match d.get(key)? {
        Bson::Int32(v) => u64::try_from(*v).ok(),
        Bson::Int64(v) => u64::try_from(*v).ok(),
        Bson::Double(v) if *v >= 0.0 => Some(*v as u64),
        _ => None,
    }
}

/// One line of a dataset file as a document: columns by name, the primary key as `_id`.
fn document(line: &str, req: &LoadRequest<'_>, line_no: u64) -> Result<Document> {
    let mut d = Document::new();
    let single_key = req.table.columns.iter().filter(|c| c.primary_key).count() == 1;
    let mut fields = line.split('\t');
    for c in req.table.columns {
        let text = fields.next().ok_or_else(|| {
            EngineError::new(
                "data",
                format!(
                    "{} line {line_no}: fewer fields than the table's {} columns",
                    req.file.display(),
                    req.table.columns.len()
                ),
            )
        })?;
        let value = match c.ty {
            _ if c.nullable && text == "\\N" => Bson::Null,
            ColumnType::Integer | ColumnType::SmallInt => {
                Bson::Int64(text.parse().map_err(|_| {
                    EngineError::new(
                        "data",
                        format!(
                            "{} line {line_no}: column {} is {text:?}, not an integer",
                            req.file.display(),
                            c.name
                        ),
                    )
                })?)
            }
            // Decimal amounts stay text: a double would round them.
            ColumnType::Text
            | ColumnType::Decimal(..)
            | ColumnType::Char(_)
            | ColumnType::Varchar(_)
            | ColumnType::Timestamp
            | ColumnType::Date => Bson::String(text.to_string()),
        };
        // A one-column key is the document's `_id`; a composite key's parts stay fields.
        let key = if c.primary_key && single_key {
            "_id"
        } else {
            c.name
        };
        d.insert(key, value);
    }
    Ok(d)
}

impl Documents for MongodbEngine {
    fn recreate(&self, collection: &str) -> Result<()> {
        let c = self.collection(collection);
        c.drop().run().map_err(mongo_err)?;
        self.admin
            .database(&self.database)
            .create_collection(collection)
            .run()
            .map_err(mongo_err)
    }

    fn bulk_load(&self, req: &LoadRequest<'_>) -> Result<LoadOutcome> {
        let coll = self.collection(&req.table.name);
        // Read through the stop flag: Ctrl-C ends the load at its next read.
        let file = crate::stop::Reader(std::fs::File::open(req.file).map_err(|e| {
            EngineError::new("io", format!("cannot read {}: {e}", req.file.display()))
        })?);
        let batch = self.opts.batch_docs as usize;
        let mut docs = Vec::with_capacity(batch);
        let mut rows = 0u64;
        let send = |docs: &mut Vec<Document>| -> Result<u64> {
            let n = docs.len();
            let r = coll
                .insert_many(std::mem::take(docs))
                .ordered(false)
                .run()
                .map_err(mongo_err)?;
            Ok(r.inserted_ids.len().min(n) as u64)
        };
        for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|e| {
                EngineError::new("io", format!("cannot read {}: {e}", req.file.display()))
            })?;
            docs.push(document(&line, req, i as u64 + 1)?);
            if docs.len() == batch {
                rows += send(&mut docs)?;
            }
        }
        if !docs.is_empty() {
            rows += send(&mut docs)?;
        }
        Ok(LoadOutcome {
            rows,
            method: format!(
                "insert_many, unordered, {} documents a batch",
                self.opts.batch_docs
            ),
            warnings: None,
        })
    }

    fn create_index(&self, collection: &str, name: &str, fields: &[String]) -> Result<()> {
        let mut keys = Document::new();
        for f in fields {
            keys.insert(f.as_str(), 1);
        }
        let model = mongodb::IndexModel::builder()
            .keys(keys)
            .options(
                mongodb::options::IndexOptions::builder()
                    .name(name.to_string())
                    .build(),
            )
            .build();
        self.collection(collection)
            .create_index(model)
            .run()
            .map(|_| ())
            .map_err(mongo_err)
    }

    fn count(&self, collection: &str) -> Result<u64> {
        self.collection(collection)
            .count_documents(doc! {})
            .run()
            .map_err(mongo_err)
    }

    fn session(&self) -> Result<Box<dyn DocSession>> {
        let c = client(&self.reach, self.opts.connect_timeout_s, 1)?;
        ping(&c)?;
        Ok(Box::new(MongodbSession {
            db: c.database(&self.database),
            _client: c,
        }))
    }
}

/// One worker's client: its own driver client with one connection.
pub struct MongodbSession {
    db: mongodb::sync::Database,
    _client: Client,
}

impl DocSession for MongodbSession {
    fn find_by_id(&mut self, collection: &str, id: i64) -> Result<u64> {
        let found = self
            .db
            .collection::<Document>(collection)
            .find_one(doc! { "_id": id })
            .run()
            .map_err(mongo_err)?;
        Ok(u64::from(found.is_some()))
    }

    fn read_by_key(&mut self, collection: &str, key: &str, field: Option<&str>) -> Result<u64> {
        let coll = self.db.collection::<Document>(collection);
        let find = coll.find_one(doc! { "_id": key });
        let found = match field {
            Some(f) => find.projection(doc! { f: 1 }).run(),
            None => find.run(),
        }
        .map_err(mongo_err)?;
        Ok(u64::from(found.is_some()))
    }

    fn update_by_key(
        &mut self,
        collection: &str,
        key: &str,
        fields: &[(&str, &str)],
    ) -> Result<u64> {
        let mut set = Document::new();
        for (f, v) in fields {
            set.insert(*f, *v);
        }
        let r = self
            .db
            .collection::<Document>(collection)
            .update_one(doc! { "_id": key }, doc! { "$set": set })
            .run()
            .map_err(mongo_err)?;
        Ok(r.matched_count)
    }

    fn insert_doc(&mut self, collection: &str, key: &str, fields: &[(&str, &str)]) -> Result<u64> {
        let mut d = doc! { "_id": key };
        for (f, v) in fields {
            d.insert(*f, *v);
        }
        self.db
            .collection::<Document>(collection)
            .insert_one(d)
            .run()
            .map_err(mongo_err)?;
        Ok(1)
    }

    fn scan_from(&mut self, collection: &str, key: &str, n: u64) -> Result<u64> {
        let cursor = self
            .db
            .collection::<Document>(collection)
            .find(doc! { "_id": { "$gte": key } })
            .sort(doc! { "_id": 1 })
            .limit(i64::try_from(n).unwrap_or(i64::MAX))
            .run()
            .map_err(mongo_err)?;
        let mut read = 0;
        for d in cursor {
            d.map_err(mongo_err)?;
            read += 1;
        }
        Ok(read)
    }
}

impl Engine for MongodbEngine {
    fn kind(&self) -> &'static str {
        "mongodb"
    }

    fn dialect(&self) -> Dialect {
        Dialect::Documents
    }

    fn connect(&self) -> Result<Box<dyn Session>> {
        Err(EngineError::new(
            crate::engine::NO_SQL,
            "MongoDB speaks no SQL, and this step's work is SQL statements",
        ))
    }

    fn documents(&self) -> Option<&dyn Documents> {
        Some(self)
    }

    fn info(&self) -> Result<EngineInfo> {
        let build = self
            .admin
            .database("admin")
            .run_command(doc! { "buildInfo": 1 })
            .run()
            .map_err(mongo_err)?;
        let version = build.get_str("version").unwrap_or("unknown").to_string();
        let mut settings = BTreeMap::new();
        settings.insert("batch_docs".into(), self.opts.batch_docs.to_string());
        settings.insert("database".into(), self.database.clone());
        let ferretdb = build.get_str("ferretdbVersion").ok().map(str::to_string);
        let version = match (&self.server, ferretdb) {
            (Server::Sandbox(_), f) => format!(
                "FerretDB {} on SQLite (MongoDB-wire, reports {version}) — not MongoDB",
                f.unwrap_or_else(|| "?".into())
            ),
            (Server::External(_), Some(f)) => {
                format!("FerretDB {f} (MongoDB-wire, reports {version}) — not MongoDB")
            }
            (Server::External(t), None) => {
                settings.insert("target".into(), t.display());
                format!("MongoDB {version}")
            }
        };
        Ok(EngineInfo {
            engine: "mongodb".into(),
            version,
            settings,
        })
    }

    fn bulk_load(&self, req: &LoadRequest<'_>) -> Result<LoadOutcome> {
        Documents::bulk_load(self, req)
    }

    /// `collStats` (storage size plus every index's size) and, for a sandbox, the SQLite
    /// files of dbduel's database.
    fn footprint(&self, tables: &[&str]) -> Result<Footprint> {
        let db = self.admin.database(&self.database);
        let mut engine_bytes = 0;
        for t in tables {
            let s = db
                .run_command(doc! { "collStats": *t })
                .run()
                .map_err(mongo_err)?;
            engine_bytes +=
                number(&s, "storageSize").unwrap_or(0) + number(&s, "totalIndexSize").unwrap_or(0);
        }
        let (files_bytes, allocated_bytes, files, files_rule) = match &self.datadir {
            Some(dir) => {
                let prefix = format!("{}.sqlite", self.database);
                let paths: Vec<PathBuf> = std::fs::read_dir(dir)
                    .map(|rd| {
                        rd.flatten()
                            .map(|e| e.path())
                            .filter(|p| {
                                p.file_name()
                                    .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let (bytes, allocated, files) = crate::engines::file_sizes(dir, &paths);
                (
                    Some(bytes),
                    Some(allocated),
                    files,
                    "FerretDB's SQLite files of dbduel's database (with its WAL): every collection in it, the marker included".to_string(),
                )
            }
            None => (
                None,
                None,
                Vec::new(),
                "the server's files are not readable from here".to_string(),
            ),
        };
        Ok(Footprint {
            files_bytes,
            allocated_bytes,
            files,
            files_rule,
            engine_bytes: Some(engine_bytes),
            engine_rule: "collStats storageSize + totalIndexSize".into(),
        })
    }

    fn restart(&self, cold: bool) -> Result<RestartOutcome> {
        self.server.restart(
            cold,
            self.datadir.as_deref(),
            "FerretDB holds no cache of its own; SQLite's page cache is per connection",
            || ping(&self.admin).is_ok(),
        )
    }

    fn server_pid(&self) -> Option<i32> {
        self.server.pid()
    }

    /// The server's own counts from `serverStatus`: `opcounters.*` (MongoDB: documents
    /// inserted, queries, …) where it keeps them, and `commands.<name>`, each command's total
    /// (`metrics.commands`: MongoDB and FerretDB both keep these).
    fn counters(&self) -> Result<Option<BTreeMap<String, u64>>> {
        let status = self.server_status()?;
        let mut out = BTreeMap::new();
        if let Ok(ops) = status.get_document("opcounters") {
            for k in ops.keys() {
                if let Some(v) = number(ops, k) {
                    out.insert(format!("opcounters.{k}"), v);
                }
            }
        }
        let commands = status
            .get_document("metrics")
            .and_then(|m| m.get_document("commands"));
        if let Ok(commands) = commands {
            for (k, v) in commands {
                if let Some(total) = v.as_document().and_then(|d| number(d, "total")) {
                    out.insert(format!("commands.{k}"), total);
                }
            }
        }
        Ok((!out.is_empty()).then_some(out))
    }

    fn server_log(&self) -> Option<PathBuf> {
        self.server.log()
    }

    fn server_gone(&self) -> Option<String> {
        self.server.gone()
    }

    fn finish(self: Box<Self>, keep: bool) -> Result<()> {
        let this = *self;
        drop(this.admin);
        this.server.finish(keep)
    }
}
