//! The results catalogue: one SQLite file under a results root (`catalogue.sqlite`) with a
//! row per finished run (`runs`), per contender as it ran (`contexts`: engine, version,
//! settings read back) and per figure (`figures`: value, unit, interval, noise). Filled from
//! run directories only, so it can always be rebuilt from them.

use crate::report::compare::judge::figure_noise;
use crate::report::series::RunData;
use crate::results::{ResultsError, RunDir, Status};
use rusqlite::{Connection, params};
use std::path::{Path, PathBuf};

/// The catalogue's file name under a results root.
pub const FILE: &str = "catalogue.sqlite";

/// The layout's version (`PRAGMA user_version`); a catalogue of another is rebuilt.
const LAYOUT: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
    run TEXT PRIMARY KEY,
    study TEXT NOT NULL,
    scale TEXT,
    status TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    host TEXT NOT NULL,
    cpu_model TEXT NOT NULL,
    cores INTEGER NOT NULL,
    dbduel TEXT NOT NULL,
    shard TEXT
);
CREATE TABLE IF NOT EXISTS contexts (
    run TEXT NOT NULL REFERENCES runs(run) ON DELETE CASCADE,
    contender TEXT NOT NULL,
    engine TEXT NOT NULL,
    version TEXT NOT NULL,
    settings TEXT NOT NULL,
    PRIMARY KEY (run, contender)
);
CREATE TABLE IF NOT EXISTS figures (
    run TEXT NOT NULL REFERENCES runs(run) ON DELETE CASCADE,
    contender TEXT NOT NULL,
    step TEXT NOT NULL,
    figure TEXT NOT NULL,
    status TEXT NOT NULL,
    value REAL NOT NULL,
    unit TEXT NOT NULL,
    better TEXT NOT NULL,
    n INTEGER NOT NULL,
    lo REAL,
    hi REAL,
    rse REAL,
    PRIMARY KEY (run, contender, step, figure)
);
CREATE INDEX IF NOT EXISTS figures_by_name ON figures (step, figure);
";

/// Errors of the catalogue.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("{path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(transparent)]
    Results(#[from] ResultsError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}: no run directory here (a directory with summary.json and manifest.json)")]
    NoRuns(PathBuf),
}

/// An open catalogue.
pub struct Catalogue {
    pub(super) conn: Connection,
    path: PathBuf,
    /// The results root it catalogues.
    pub root: PathBuf,
}

impl Catalogue {
    /// Open (or create) the catalogue of results root `root`.
    pub fn open(root: &Path) -> Result<Catalogue, HistoryError> {
        std::fs::create_dir_all(root).map_err(|source| HistoryError::Io {
            path: root.to_path_buf(),
            source,
        })?;
        let path = root.join(FILE);
        let conn = Connection::open(&path).map_err(|source| HistoryError::Sqlite {
            path: path.clone(),
            source,
        })?;
        let cat = Catalogue {
            conn,
            path,
            root: root.to_path_buf(),
        };
        cat.sql(|c| {
            // Shards of one run may finish at once into one results root.
            c.busy_timeout(std::time::Duration::from_secs(30))?;
            c.pragma_update(None, "foreign_keys", true)?;
            let v: i64 = c.pragma_query_value(None, "user_version", |r| r.get(0))?;
            if v != LAYOUT {
                c.execute_batch(
                    "DROP TABLE IF EXISTS figures; DROP TABLE IF EXISTS contexts;
                     DROP TABLE IF EXISTS runs;",
                )?;
            }
            c.execute_batch(SCHEMA)?;
            c.pragma_update(None, "user_version", LAYOUT)
        })?;
        Ok(cat)
    }

    /// Run `f` on the connection, naming the file in its error.
    pub(super) fn sql<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, HistoryError> {
        f(&self.conn).map_err(|source| HistoryError::Sqlite {
            path: self.path.clone(),
            source,
        })
    }

    /// Record the run in directory `dir` (again: its rows are replaced). A run still under
    /// way, or one that never finished, is left out; returns whether it was recorded.
    pub fn record(&mut self, dir: &Path) -> Result<bool, HistoryError> {
        let rd = RunDir::open(dir)?;
        let summary = rd.read_summary()?;
        if summary.status == Status::Running {
            return Ok(false);
        }
        let manifest = rd.read_manifest()?;
        let data = RunData::load(&rd.path, summary, manifest);
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction()
            .map_err(|source| HistoryError::Sqlite {
                path: path.clone(),
                source,
            })?;
        insert_run(&tx, &data)
            .and_then(|()| tx.commit())
            .map_err(|source| HistoryError::Sqlite { path, source })?;
        Ok(true)
    }

    /// Every run directory directly under the root (run directory names, sorted).
    pub fn run_dirs(root: &Path) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.join("summary.json").is_file() && p.join("manifest.json").is_file()
                    })
                    .collect()
            })
            .unwrap_or_default();
        dirs.sort();
        dirs
    }

    /// Make the catalogue of `root` again from its run directories alone; returns how many
    /// runs it holds.
    pub fn rebuild(root: &Path) -> Result<usize, HistoryError> {
        let mut cat = Catalogue::open(root)?;
        cat.sql(|c| {
            c.execute_batch("DELETE FROM figures; DELETE FROM contexts; DELETE FROM runs;")
        })?;
        let mut n = 0;
        for dir in Catalogue::run_dirs(root) {
            n += usize::from(cat.record(&dir)?);
        }
        Ok(n)
    }
}

/// The run's name in the catalogue: its directory's name.
fn run_name(data: &RunData) -> &str {
    &data.name
}

fn insert_run(tx: &rusqlite::Transaction<'_>, data: &RunData) -> rusqlite::Result<()> {
    let (s, m) = (&data.summary, &data.manifest);
    let run = run_name(data);
    tx.execute("DELETE FROM runs WHERE run = ?1", params![run])?;
    let shard = m
        .shards
        .first()
        .filter(|_| m.shards.len() == 1)
        .map(|sh| format!("{}/{}", sh.index, sh.count));
    tx.execute(
        "INSERT INTO runs (run, study, scale, status, started_at, finished_at, host, cpu_model,
                           cores, dbduel, shard)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            run,
            s.study,
            s.scale,
            s.status.as_str(),
            s.started_at,
            s.finished_at,
            m.host.hostname,
            m.host.cpu_model,
            m.host.cores as i64,
            m.dbduel.to_string(),
            shard,
        ],
    )?;
    for c in &m.contenders {
        let settings = serde_json::to_string(&c.effective).unwrap_or_default();
        tx.execute(
            "INSERT INTO contexts (run, contender, engine, version, settings)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![run, c.name, c.engine, c.version, settings],
        )?;
    }
    let mut ins = tx.prepare(
        "INSERT INTO figures (run, contender, step, figure, status, value, unit, better, n, lo,
                              hi, rse)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?;
    for c in &s.contenders {
        for st in &c.steps {
            let ivs = data
                .step(&c.name, &st.name)
                .map(|x| x.intervals.as_slice())
                .unwrap_or_default();
            for f in &st.metrics {
                let spread = f.repeated();
                ins.execute(params![
                    run,
                    c.name,
                    st.name,
                    f.key,
                    st.status.as_str(),
                    f.value,
                    crate::report::csv::unit_name(f.unit),
                    crate::report::csv::better_name(f.better),
                    spread.map_or(1, |x| x.n) as i64,
                    spread.map(|x| x.lo),
                    spread.map(|x| x.hi),
                    figure_noise(f, ivs),
                ])?;
            }
        }
    }
    Ok(())
}
