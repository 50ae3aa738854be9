//! `load`: create the dataset's table and bulk-load the generated file into it, timed; then
//! check (untimed) that the table holds exactly the rows generated. With `rows`, a load
//! recreates the tables with only the first rows of each — a fresh, smaller database for the
//! steps after it, as the 2010 storage study pre-loaded 25 M rows for its insert run after
//! its 64 M-row select runs.
//!
//! The engine's warnings are part of the result: the shoot-out's original study's LOAD DATA raised one for
//! every row (`Warnings: 641098`), a data problem hidden behind a fast time. Their count and
//! the first few are recorded; a load whose warnings say values were truncated or changed, or
//! rows rejected, fails unless the step sets `allow_warnings = true`.

use super::ctx::{StepCtx, StepError, StepOutput};
use super::loading::{Warned, in_parallel, loaded_summary, tables_at_once};
use super::restart::Unthrottled;
use crate::dataset::{Generator, TableDef};
use crate::decode::{DecodeError, KeyPath};
use crate::engine::documents::Documents;
use crate::engine::{Engine, EngineError, LoadOutcome, LoadRequest};
use serde::Deserialize;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadParams {
    /// Rows per transaction for engines that load by batched inserts.
    #[serde(default = "default_batch")]
    pub batch_rows: u64,
    /// Tables loaded at once on a server (default: the machine's cores).
    #[serde(default)]
    pub parallel: Option<u64>,
    /// Go on when the engine warned that values were truncated, converted or defaulted, or
    /// rows rejected (the warnings are recorded and shown either way); the table's row count
    /// must then equal the rows the engine loaded rather than the rows generated.
    #[serde(default)]
    pub allow_warnings: bool,
    /// Load at the host disk's full speed on a contender with a device profile (the profile
    /// applies again from the next step): for studies that measure what comes after the load.
    #[serde(default)]
    pub unthrottled: bool,
    /// Load only the first this many rows of each table (at most the dataset's `rows`; not
    /// with `tpcc`, whose tables are sized by warehouses): the tables are dropped and made
    /// afresh with them. Absent: every row.
    #[serde(default)]
    pub rows: Option<u64>,
    /// The user's own delimited files, by table (`{ orders = "data/orders.csv" }`), relative
    /// to the study file, loaded into tables a step before made; absent: the generated
    /// dataset.
    #[serde(default)]
    pub files: std::collections::BTreeMap<String, String>,
    /// With `files`: the first line names the columns (default false).
    #[serde(default)]
    pub header: Option<bool>,
    /// With `files`: the field separator (default `\t` for `.tsv`/`.tab` files, else `,`).
    #[serde(default)]
    pub delimiter: Option<String>,
    /// With `files`: the text that means NULL, quoted or not (default: the empty field).
    #[serde(default)]
    pub null: Option<String>,
    /// With `files`: the format checked, and the files found ([`LoadParams::resolve_files`]).
    #[serde(skip)]
    pub user: Option<std::sync::Arc<super::user_files::UserFiles>>,
}

fn default_batch() -> u64 {
    50_000
}

impl LoadParams {
    /// Find the user's files beside the study file (`base`); an error names the key.
    pub fn resolve_files(&mut self, base: &Path) -> Result<(), (KeyPath, String)> {
        if self.files.is_empty() {
            return Ok(());
        }
        let format = self.file_format().map_err(|e| (e.path, e.message))?;
        self.user = Some(super::user_files::resolve(&self.files, format, base)?);
        Ok(())
    }

    /// The user's files' format, checked.
    fn file_format(&self) -> Result<crate::engine::FileFormat, DecodeError> {
        super::user_files::format(
            &self.files,
            &super::user_files::FormatKeys {
                header: self.header,
                delimiter: self.delimiter.as_deref(),
                null: self.null.as_deref(),
            },
        )
    }

    /// The user's files, found with the study; `None` for a load of the generated dataset.
    pub fn user_files(&self) -> Option<&std::sync::Arc<super::user_files::UserFiles>> {
        self.user.as_ref()
    }

    pub fn validate(&self) -> Result<(), DecodeError> {
        if self.files.is_empty() {
            for (key, set) in [
                ("header", self.header.is_some()),
                ("delimiter", self.delimiter.is_some()),
                ("null", self.null.is_some()),
            ] {
                if set {
                    return Err(DecodeError::at(
                        KeyPath::root().key(key),
                        format!(
                            "{key} describes the user's files: it applies only with files = {{ TABLE = \"FILE\" }}"
                        ),
                    ));
                }
            }
        } else {
            self.file_format()?;
            if self.rows.is_some() {
                return Err(DecodeError::at(
                    KeyPath::root().key("rows"),
                    "rows loads the first rows of the generated dataset; with files every record of each file is loaded",
                ));
            }
        }
        if !(1..=10_000_000).contains(&self.batch_rows) {
            return Err(DecodeError::at(
                KeyPath::root().key("batch_rows"),
                format!(
                    "batch_rows = {} is out of range; use 1 to 10000000",
                    self.batch_rows
                ),
            ));
        }
        if self.rows == Some(0) {
            return Err(DecodeError::at(
                KeyPath::root().key("rows"),
                "rows = 0 would load nothing; give the rows each table gets (at least 1), or leave rows out to load them all",
            ));
        }
        Ok(())
    }

    /// `rows` against the dataset: at most its rows a table, and not on `tpcc`.
    fn check_rows(&self, generator: Generator, dataset_rows: u64) -> Result<(), DecodeError> {
        let Some(n) = self.rows else {
            return Ok(());
        };
        let at = KeyPath::root().key("rows");
        if generator == Generator::Tpcc {
            return Err(DecodeError::at(
                at,
                "rows loads the first rows of each table, but the tpcc dataset's tables are sized by its warehouses; leave rows out, or load fewer warehouses (dataset.warehouses)",
            ));
        }
        if generator == Generator::Tpch {
            return Err(DecodeError::at(
                at,
                "rows loads the first rows of each table, but the tpch dataset's tables are sized by its scale factor; leave rows out, or load a smaller one (dataset.sf)",
            ));
        }
        if n > dataset_rows {
            return Err(DecodeError::at(
                at,
                format!(
                    "rows = {n} is more than the dataset's {dataset_rows} rows a table; use at most {dataset_rows} (dataset.rows), or leave rows out to load them all"
                ),
            ));
        }
        Ok(())
    }
}

impl super::kind::StepKind for LoadParams {
    fn validate(&self) -> Result<(), DecodeError> {
        LoadParams::validate(self)
    }
    fn is_sql(&self) -> bool {
        false
    }
    fn creates_tables(&self) -> bool {
        self.files.is_empty()
    }
    fn makes_own_tables(&self) -> bool {
        !self.files.is_empty()
    }
    fn read_beside(
        &mut self,
        beside: &super::kind::Beside<'_>,
    ) -> Result<(), super::kind::BesideError> {
        self.resolve_files(beside.base)
            .map_err(|(path, message)| super::kind::BesideError::At(path, message))
    }
    fn user_files(&self) -> Vec<crate::results::UserFileFacts> {
        let Some(Ok(facts)) = LoadParams::user_files(self).map(|f| f.facts()) else {
            return Vec::new();
        };
        facts
            .iter()
            .map(|f| crate::results::UserFileFacts {
                table: f.table.clone(),
                path: f.path.clone(),
                bytes: f.bytes,
                rows: f.rows,
            })
            .collect()
    }
    fn check_dataset(&self, generator: Generator, rows: u64) -> Result<(), DecodeError> {
        self.check_rows(generator, rows)
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        if self.files.is_empty() {
            return run(self, ctx);
        }
        let files = self.user_files().ok_or_else(|| {
            StepError::Check("the step's files were not found with the study".into())
        })?;
        super::user_files::run(
            files,
            self.batch_rows,
            self.parallel,
            self.allow_warnings,
            ctx,
        )
    }
}

/// The tables a load fills and their files: the dataset's, or with `rows` each table's
/// first rows, in files written beside the dataset's (once, whichever contender asks first).
fn part(rows: Option<u64>, ctx: &StepCtx<'_>) -> Result<(Vec<TableDef>, Vec<PathBuf>), StepError> {
    let all = || (ctx.tables.to_vec(), ctx.dataset_files.to_vec());
    let Some(n) = rows else {
        return Ok(all());
    };
    if ctx.tables.iter().any(|t| t.rows != ctx.dataset_rows) || n > ctx.dataset_rows {
        return Err(StepError::Check(format!(
            "rows = {n}: this load takes the first rows of tables of {} rows each, which this dataset's are not",
            ctx.dataset_rows
        )));
    }
    if n == ctx.dataset_rows {
        return Ok(all());
    }
    let mut tables = Vec::new();
    let mut files = Vec::new();
    for (t, file) in ctx.tables.iter().zip(ctx.dataset_files) {
        let first = file.with_file_name(format!("{}.first-{n}.tsv", t.name));
        if !first.exists() {
            first_lines(file, &first, n).map_err(|e| {
                StepError::Check(format!(
                    "writing the first {n} rows of table {} to {}: {e}",
                    t.name,
                    first.display()
                ))
            })?;
        }
        tables.push(TableDef {
            rows: n,
            ..t.clone()
        });
        files.push(first);
    }
    Ok((tables, files))
}

/// Copy the first `n` lines of `from` to `to` (through a temporary file, synced, so `to`
/// is whole or absent).
fn first_lines(from: &Path, to: &Path, n: u64) -> std::io::Result<()> {
    let mut input = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(from)?);
    let tmp = to.with_extension("tsv.part");
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
    let mut line = Vec::with_capacity(4096);
    for i in 0..n {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Err(std::io::Error::other(format!(
                "{} ends after {i} lines",
                from.display()
            )));
        }
        out.write_all(&line)?;
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    std::fs::rename(&tmp, to)
}

pub fn run(p: &LoadParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let engine = ctx.engine;
    // The profile is back on however the load ends.
    let unthrottled = if p.unthrottled {
        Unthrottled::begin(engine)?
    } else {
        None
    };
    let (tables, files) = part(p.rows, ctx)?;
    let store = Store::of(engine);
    // Tables are (re)created in dbduel's own database only: a sandbox, an embedded file, or
    // a target database that carries dbduel's marker.
    let creates = store.recreate(&tables)?;
    let parallel = tables_at_once(p.parallel, engine, tables.len());
    let total_rows: u64 = tables.iter().map(|t| t.rows).sum();
    let (outcomes, load_s) = load_rows(p, ctx, (&tables, &files), parallel)?;
    // Secondary indexes after the rows are in: one sorted build instead of a tree
    // maintained row by row.
    let t = Instant::now();
    let (indexes, ascending_only) = build_indexes(engine, &tables, &store, parallel)?;
    let index_s = t.elapsed().as_secs_f64();
    // Foreign keys last, once the referencing columns have their indexes.
    let t = Instant::now();
    let foreign_keys = add_foreign_keys(engine, &tables, &store)?;
    let foreign_key_s = t.elapsed().as_secs_f64();
    let elapsed = load_s + index_s + foreign_key_s;

    let loaded: u64 = outcomes.iter().map(|o| o.rows).sum();
    let warned = Warned::of(&tables, &outcomes);
    if let Some(w) = &warned
        && w.serious
        && !p.allow_warnings
    {
        return Err(StepError::Check(w.refusal()));
    }
    let counted = if engine.keeps_rows() {
        Some(count_rows(&store, &tables, &outcomes, p.allow_warnings)?)
    } else {
        None
    };
    let (mut s, method) = loaded_summary(ctx.title("bulk load"), loaded, elapsed, &outcomes);
    let mut note = load_note(
        &method,
        indexes.len(),
        index_s,
        warned.as_ref(),
        ascending_only,
        unthrottled.is_some(),
    );
    if let Some(fk) = foreign_key_note(engine, &tables, &foreign_keys, foreign_key_s) {
        note.push_str(&fk);
    }
    s.note = Some(first_rows_note(p, ctx.dataset_rows, note));
    if let Some(w) = &warned {
        s.metrics.extend(w.figures(total_rows, loaded));
    }
    if let Some(r) = unthrottled {
        r.finish()?;
    }
    Ok(StepOutput {
        summary: s,
        details: serde_json::json!({
            "create_table": creates,
            "method": method,
            "tables": tables.len(),
            "rows_a_table": p.rows,
            "parallel": parallel,
            "rows_loaded": loaded,
            "rows_counted": counted,
            "load_s": load_s,
            "index_s": index_s,
            "indexes": indexes.iter().map(|(i, name, cols)| serde_json::json!({
                "table": tables[*i].name, "name": name, "columns": cols,
            })).collect::<Vec<_>>(),
            "foreign_keys": foreign_keys,
            "foreign_key_s": foreign_key_s,
            "elapsed_s": elapsed,
            "allow_warnings": p.allow_warnings,
            // null: the engine reports no warnings (SQLite fails the load instead)
            "warnings": warned,
        }),
        seconds: 0,
        interrupted: false,
    })
}

/// Load every table's file, `parallel` tables at a time: each table's outcome, and the
/// seconds it took. Stopped as the rows went in: no index build, no count, so it fails.
fn load_rows(
    p: &LoadParams,
    ctx: &StepCtx<'_>,
    (tables, files): (&[TableDef], &[PathBuf]),
    parallel: usize,
) -> Result<(Vec<LoadOutcome>, f64), StepError> {
    let total_rows: u64 = tables.iter().map(|t| t.rows).sum();
    let n = tables.len();
    ctx.progress.status(&format!(
        "loading {total_rows} rows into {n} table(s), {parallel} at a time"
    ));
    let t = Instant::now();
    let outcomes = in_parallel(tables.len(), parallel, |i| {
        ctx.engine.bulk_load(&LoadRequest {
            table: &tables[i],
            file: &files[i],
            batch_rows: p.batch_rows,
        })
    })?;
    let load_s = t.elapsed().as_secs_f64();
    if ctx.stop.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(StepError::Run(crate::runner::RunError::Interrupted));
    }
    Ok((outcomes, load_s))
}

/// `note`, said of the first `rows` of each table when the step loads fewer than the
/// dataset's.
fn first_rows_note(p: &LoadParams, dataset_rows: u64, note: String) -> String {
    match p.rows.filter(|&n| n < dataset_rows) {
        Some(n) => format!(
            "the first {n} of the dataset's {dataset_rows} rows of each table, into tables made afresh; {note}"
        ),
        None => note,
    }
}

/// Every table holds the rows generated for it — or, with warnings allowed, the rows the
/// engine says it loaded (those it rejected are missing by design); all of them together.
fn count_rows(
    store: &Store<'_>,
    tables: &[TableDef],
    outcomes: &[LoadOutcome],
    allow_warnings: bool,
) -> Result<u64, StepError> {
    let mut n_all = 0u64;
    for (t, o) in tables.iter().zip(outcomes) {
        let n = store.count(&t.name)?;
        let want = if allow_warnings { o.rows } else { t.rows };
        if n < 0 || n as u64 != want || o.rows > t.rows || o.rows != want {
            return Err(StepError::Check(format!(
                "table {}: loaded {} rows ({} counted in the table) but {} were generated",
                t.name, o.rows, n, t.rows
            )));
        }
        n_all += n as u64;
    }
    Ok(n_all)
}

/// A secondary index: its table's place in the dataset, its name, its columns.
type Index = (usize, String, Vec<String>);

/// The tables' secondary indexes, built after the rows are in, `parallel` at a time: each
/// (table, name, columns), and whether a DESC column had to be built ascending.
fn build_indexes(
    engine: &dyn Engine,
    tables: &[TableDef],
    store: &Store<'_>,
    parallel: usize,
) -> Result<(Vec<Index>, bool), StepError> {
    let descending = engine.descending_indexes();
    let mut ascending_only = false;
    let indexes: Vec<Index> = tables
        .iter()
        .enumerate()
        .flat_map(|(i, t)| t.indexes.iter().map(move |ix| (i, ix)))
        .map(|(i, (name, cols))| {
            let cols = cols
                .iter()
                .map(|c| match c.strip_suffix(" DESC") {
                    Some(asc) if !descending => {
                        ascending_only = true;
                        asc.to_string()
                    }
                    _ => c.clone(),
                })
                .collect();
            (i, name.clone(), cols)
        })
        .collect();
    in_parallel(indexes.len(), parallel, |n| {
        let (i, name, cols) = &indexes[n];
        store.create_index(&tables[*i].name, name, cols)
    })?;
    Ok((indexes, ascending_only))
}

/// The tables' foreign keys, added after their rows and indexes on an engine that has them
/// (one session, in table order); the statements run. None on other engines.
fn add_foreign_keys(
    engine: &dyn Engine,
    tables: &[TableDef],
    store: &Store<'_>,
) -> Result<Vec<String>, StepError> {
    let mut done = Vec::new();
    if !engine.foreign_keys() || !matches!(store, Store::Sql(_)) {
        return Ok(done);
    }
    let all: Vec<_> = tables
        .iter()
        .flat_map(|t| t.foreign_keys.iter().map(move |fk| (t, fk)))
        .collect();
    if all.is_empty() {
        return Ok(done);
    }
    let dialect = engine.dialect();
    let mut s = engine.connect()?;
    for (t, fk) in all {
        for sql in dialect.add_foreign_key(&t.name, fk) {
            s.execute(&sql)?;
            done.push(sql);
        }
    }
    Ok(done)
}

/// What the note says of foreign keys: how many were added and how, or that the engine has
/// none while the dataset declares some.
fn foreign_key_note(
    engine: &dyn Engine,
    tables: &[TableDef],
    added: &[String],
    secs: f64,
) -> Option<String> {
    let declared: usize = tables.iter().map(|t| t.foreign_keys.len()).sum();
    if declared == 0 {
        return None;
    }
    let added = added.iter().filter(|s| s.starts_with("ALTER")).count();
    Some(if added == 0 {
        format!(
            "; the dataset's {declared} foreign keys not declared: only InnoDB (unpartitioned) and PostgreSQL tables take them here"
        )
    } else if engine.dialect().adds_foreign_keys_unchecked() {
        format!(
            "; {added} foreign keys added after the load ({secs:.2} s, included) with foreign_key_checks = 0, as a dump's restore: rows not checked"
        )
    } else {
        format!(
            "; {added} foreign keys added after the load, every row checked ({secs:.2} s, included)"
        )
    })
}

/// The load's note: its method, the indexes built after it, warnings, and what the engine or
/// the profile changed.
fn load_note(
    method: &str,
    indexes: usize,
    index_s: f64,
    warned: Option<&Warned>,
    ascending_only: bool,
    unthrottled: bool,
) -> String {
    let mut note = if indexes == 0 {
        method.to_string()
    } else {
        format!(
            "{method}; {} secondary index(es) built after the load ({index_s:.2} s, included)",
            indexes
        )
    };
    if let Some(w) = warned.filter(|w| w.count > 0) {
        note.push_str(&format!("; {}", w.describe()));
    }
    if ascending_only {
        note.push_str(
            "; the storage engine has no descending indexes: DESC columns were built ascending (a backward scan serves the order)",
        );
    }
    if unthrottled {
        note.push_str(
            "; loaded at the host disk's full speed (unthrottled = true): the contender's device profile applies from the next step",
        );
    }
    note
}

/// Where the load's tables live: SQL tables (through sessions, in the engine's dialect), or a
/// document engine's collections.
enum Store<'a> {
    Sql(&'a dyn Engine),
    Documents(&'a dyn Documents),
}

impl<'a> Store<'a> {
    fn of(engine: &'a dyn Engine) -> Self {
        match engine.documents() {
            Some(d) => Store::Documents(d),
            None => Store::Sql(engine),
        }
    }

    /// Drop and create every table; returns what was run, for the step's details.
    fn recreate(&self, tables: &[TableDef]) -> Result<Vec<String>, EngineError> {
        let mut done = Vec::new();
        match self {
            Store::Sql(engine) => {
                let dialect = engine.dialect();
                let mut admin = engine.connect()?;
                for t in tables {
                    let create = dialect
                        .create_table_statements(t, engine.partitions())
                        .ok_or_else(|| {
                            EngineError::new(
                                "usage",
                                format!("{} has no table partitioning", engine.kind()),
                            )
                        })?;
                    admin.execute(&dialect.drop_table_if_exists(&t.name))?;
                    for sql in create {
                        admin.execute(&sql)?;
                        done.push(sql);
                    }
                }
            }
            Store::Documents(d) => {
                for t in tables {
                    d.recreate(&t.name)?;
                    done.push(format!("collection {} dropped and created", t.name));
                }
            }
        }
        Ok(done)
    }

    fn create_index(&self, table: &str, name: &str, cols: &[String]) -> Result<(), EngineError> {
        match self {
            Store::Sql(engine) => engine
                .connect()?
                .execute(&engine.dialect().create_index(table, name, cols))
                .map(|_| ()),
            Store::Documents(d) => d.create_index(table, name, cols),
        }
    }

    fn count(&self, table: &str) -> Result<i64, EngineError> {
        match self {
            Store::Sql(engine) => {
                // On a cluster the next client's node may not have applied the rows yet
                // (a load's commit is certified everywhere but applied on each node in its
                // own time): count with a read that waits for them.
                let mut s = match engine.cluster() {
                    Some(c) => c.causal_session(0)?,
                    None => engine.connect()?,
                };
                s.query_i64(&engine.dialect().count_rows(table))
            }
            Store::Documents(d) => d.count(table).map(|n| n as i64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{
        Dialect, Engine, EngineError, EngineInfo, EngineWarning, Footprint, LoadWarnings,
        RestartOutcome, Session, StmtId, Value,
    };
    use std::sync::atomic::AtomicBool;

    /// An engine whose load reports `outcome` and whose table then holds `outcome.rows`.
    struct Fake {
        outcome: LoadOutcome,
    }

    struct FakeSession {
        rows: u64,
    }

    impl Session for FakeSession {
        fn execute(&mut self, _sql: &str) -> crate::engine::Result<u64> {
            Ok(0)
        }
        fn query_i64(&mut self, _sql: &str) -> crate::engine::Result<i64> {
            Ok(self.rows as i64)
        }
        fn prepare(&mut self, _sql: &str) -> crate::engine::Result<StmtId> {
            Ok(StmtId(0))
        }
        fn run(&mut self, _stmt: StmtId, _params: &[Value]) -> crate::engine::Result<u64> {
            Ok(0)
        }
        fn run_rows(
            &mut self,
            _stmt: StmtId,
            _params: &[Value],
            _out: &mut Vec<Value>,
        ) -> crate::engine::Result<u64> {
            Ok(0)
        }
    }

    fn unused<T>() -> crate::engine::Result<T> {
        Err(EngineError::new("unsupported", "not in this test"))
    }

    impl Engine for Fake {
        fn kind(&self) -> &'static str {
            "fake"
        }
        fn dialect(&self) -> Dialect {
            Dialect::Sqlite
        }
        fn connect(&self) -> crate::engine::Result<Box<dyn Session>> {
            Ok(Box::new(FakeSession {
                rows: self.outcome.rows,
            }))
        }
        fn info(&self) -> crate::engine::Result<EngineInfo> {
            unused()
        }
        fn bulk_load(&self, _req: &LoadRequest<'_>) -> crate::engine::Result<LoadOutcome> {
            Ok(self.outcome.clone())
        }
        fn footprint(&self, _tables: &[&str]) -> crate::engine::Result<Footprint> {
            unused()
        }
        fn restart(&self, _cold: bool) -> crate::engine::Result<RestartOutcome> {
            unused()
        }
    }

    fn truncated(count: u64, skipped: u64) -> LoadWarnings {
        LoadWarnings {
            count,
            skipped: Some(skipped),
            first: vec![EngineWarning {
                level: "Warning".into(),
                code: "1265".into(),
                message: "Data truncated for column 'content' at row 1".into(),
            }],
            info: Some(format!(
                "Records: 100  Deleted: 0  Skipped: {skipped}  Warnings: {count}"
            )),
            serious: true,
        }
    }

    /// Load 100 generated rows into a fake engine that loads `rows` with `warnings`.
    fn load(
        rows: u64,
        warnings: Option<LoadWarnings>,
        allow_warnings: bool,
    ) -> Result<StepOutput, StepError> {
        let files = vec![std::path::PathBuf::from("unused.tsv")];
        let p = LoadParams {
            batch_rows: 10,
            parallel: None,
            allow_warnings,
            unthrottled: false,
            rows: None,
            files: Default::default(),
            header: None,
            delimiter: None,
            null: None,
            user: None,
        };
        load_files(rows, warnings, &files, &p)
    }

    /// Load the 100-row dataset in `files` with `p` into a fake engine that loads `rows`.
    fn load_files(
        rows: u64,
        warnings: Option<LoadWarnings>,
        files: &[PathBuf],
        p: &LoadParams,
    ) -> Result<StepOutput, StepError> {
        let engine = Fake {
            outcome: LoadOutcome {
                rows,
                method: "fake".into(),
                warnings,
            },
        };
        let tables = crate::dataset::Generator::UserLogs.tables("user_logs", 1, 100, 1);
        let progress = crate::progress::Progress::new(true);
        let stop = AtomicBool::new(false);
        let ctx = StepCtx {
            contender: "c",
            step: "load",
            title: None,
            engine: &engine,
            tables: &tables,
            dataset_files: files,
            dataset_rows: 100,
            dataset_seed: 1,
            data_device: None,
            progress: &progress,
            stop: &stop,
            team: None,
            seconds: &crate::results::SecondsLog::discard(),
            originals: None,
            earlier: &[],
            before: &[],
            sampler: None,
        };
        run(p, &ctx)
    }

    /// `rows = 40` loads a file of the dataset's first 40 lines into tables made afresh, and
    /// the table must then hold 40; `rows` is checked where it is written.
    #[test]
    fn a_load_of_the_first_rows_loads_them_and_counts_them() {
        let dir = tempfile::tempdir().expect("tmp");
        let file = dir.path().join("user_logs.tsv");
        let lines: String = (0..100).map(|i| format!("{i}\tline {i}\n")).collect();
        std::fs::write(&file, lines).expect("write");
        let p = LoadParams {
            batch_rows: 10,
            parallel: None,
            allow_warnings: false,
            unthrottled: false,
            rows: Some(40),
            files: Default::default(),
            header: None,
            delimiter: None,
            null: None,
            user: None,
        };
        let out = load_files(40, None, std::slice::from_ref(&file), &p).expect("40 of 100");
        assert_eq!(out.summary.rows, Some(40));
        assert_eq!(out.details["rows_a_table"], 40);
        let note = out.summary.note.unwrap_or_default();
        assert!(
            note.starts_with("the first 40 of the dataset's 100 rows of each table"),
            "{note}"
        );
        let first = std::fs::read_to_string(dir.path().join("user_logs.first-40.tsv")).unwrap();
        assert_eq!(first.lines().count(), 40);
        assert_eq!(first.lines().last(), Some("39\tline 39"));
        // the table holding all 100 rows is a wrong count for a load of 40
        assert!(matches!(
            load_files(100, None, std::slice::from_ref(&file), &p),
            Err(StepError::Check(_))
        ));
        let p: LoadParams = toml::from_str("rows = 0").unwrap();
        let e = p.validate().unwrap_err();
        assert_eq!(e.path.to_string(), "rows");
        let p: LoadParams = toml::from_str("rows = 101").unwrap();
        let e = p.check_rows(Generator::Sbtest, 100).unwrap_err();
        assert!(
            e.message
                .contains("more than the dataset's 100 rows a table"),
            "{}",
            e.message
        );
        assert!(p.check_rows(Generator::Sbtest, 101).is_ok());
        let e = p.check_rows(Generator::Tpcc, 1000).unwrap_err();
        assert!(
            e.message.contains("sized by its warehouses"),
            "{}",
            e.message
        );
        let e = p.check_rows(Generator::Tpch, 1000).unwrap_err();
        assert!(
            e.message.contains("sized by its scale factor"),
            "{}",
            e.message
        );
    }

    fn keys(out: &StepOutput) -> Vec<(String, f64)> {
        out.summary
            .metrics
            .iter()
            .map(|m| (m.key.clone(), m.value))
            .filter(|(k, _)| k != "elapsed_s" && k != "rows_per_s")
            .collect()
    }

    #[test]
    fn truncating_warnings_fail_the_load_unless_allowed() {
        let Err(StepError::Check(msg)) = load(100, Some(truncated(100, 0)), false) else {
            panic!("a load that truncated every row must fail")
        };
        assert!(
            msg.starts_with("the engine raised 100 warnings (Records: 100  Deleted: 0  Skipped: 0  Warnings: 100; first: Warning 1265: Data truncated for column 'content' at row 1)")
                && msg.ends_with("or set allow_warnings = true on this step to record them and go on"),
            "{msg}"
        );
        let out = load(100, Some(truncated(100, 0)), true).expect("allowed");
        assert_eq!(
            keys(&out),
            vec![("rows".into(), 100.0), ("warnings".into(), 100.0)]
        );
        let note = out.summary.note.unwrap_or_default();
        assert!(
            note.starts_with("fake; 100 warnings (Records: 100"),
            "{note}"
        );
        assert_eq!(out.details["warnings"]["count"], 100);
        assert_eq!(out.details["warnings"]["first"][0]["code"], "1265");
        assert_eq!(out.details["warnings"]["first"][0]["table"], "user_logs");
    }

    #[test]
    fn rejected_rows_fail_the_load_or_are_counted_when_allowed() {
        assert!(matches!(
            load(97, Some(truncated(3, 3)), false),
            Err(StepError::Check(_))
        ));
        let out = load(97, Some(truncated(3, 3)), true).expect("allowed");
        assert_eq!(out.summary.rows, Some(97));
        assert_eq!(
            keys(&out),
            vec![
                ("rows".into(), 97.0),
                ("warnings".into(), 3.0),
                ("rows_rejected".into(), 3.0)
            ]
        );
    }

    #[test]
    fn notes_are_shown_but_do_not_fail_and_a_clean_load_shows_no_count() {
        let notes = LoadWarnings {
            count: 2,
            first: vec![EngineWarning {
                level: "Note".into(),
                code: "1000".into(),
                message: "a note".into(),
            }],
            ..LoadWarnings::default()
        };
        let out = load(100, Some(notes), false).expect("notes do not fail a load");
        assert_eq!(
            keys(&out),
            vec![("rows".into(), 100.0), ("warnings".into(), 2.0)]
        );
        let out = load(100, Some(LoadWarnings::default()), false).expect("clean");
        assert_eq!(keys(&out), vec![("rows".into(), 100.0)]);
        assert_eq!(out.details["warnings"]["count"], 0);
        assert_eq!(out.summary.note.as_deref(), Some("fake"));
        // An engine that reports no warnings at all records none.
        let out = load(100, None, false).expect("no warnings");
        assert!(out.details["warnings"].is_null());
        // Fewer rows than generated, without a word from the engine, still fails.
        assert!(matches!(load(99, None, false), Err(StepError::Check(_))));
    }
}
