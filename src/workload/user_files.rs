//! A `load` of the user's own delimited files (`files = { orders = "data/orders.csv" }`)
//! into tables the user made (a `sql` step before it), by each engine's bulk path. The files
//! are found when the study is read (a missing one stops the run there), counted once before
//! the first load (records and bytes, for the manifest and for the check after each load),
//! and loaded with the warnings rules of the generated load.
//!
//! This file owns the files' format keys, finding and counting the files, and the step's run.

use super::ctx::{StepCtx, StepError, StepOutput};
use crate::decode::{DecodeError, KeyPath};
use crate::engine::{FileFormat, FileLoad, LoadOutcome, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// The files a load names, found beside the study, with their format.
#[derive(Debug)]
pub struct UserFiles {
    /// (table, file) in the order loaded.
    pub files: Vec<(String, PathBuf)>,
    pub format: FileFormat,
    /// Each file's facts, counted once whichever contender or the manifest asks first.
    facts: OnceLock<Result<Vec<FileFacts>, String>>,
}

/// What one file holds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FileFacts {
    pub table: String,
    pub path: String,
    pub bytes: u64,
    /// Records, the header left out.
    pub rows: u64,
    /// The header's column names (empty without one).
    pub columns: Vec<String>,
}

/// The format keys as a study writes them (all optional).
pub struct FormatKeys<'a> {
    pub header: Option<bool>,
    pub delimiter: Option<&'a str>,
    pub null: Option<&'a str>,
}

/// Check the format keys and the table names; the format they give (the delimiter from the
/// files' extension when not given: `.tsv` and `.tab` tab, else `,`).
pub fn format(
    files: &BTreeMap<String, String>,
    keys: &FormatKeys<'_>,
) -> Result<FileFormat, DecodeError> {
    let root = KeyPath::root();
    let mut seen: Vec<String> = Vec::new();
    for (table, path) in files {
        let at = root.key("files").key(table);
        if table.is_empty()
            || table.len() > 64
            || !table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(DecodeError::at(
                at,
                format!("table {table:?} must be 1-64 letters, digits or _"),
            ));
        }
        let folded = table.to_ascii_lowercase();
        if seen.contains(&folded) {
            return Err(DecodeError::at(
                at,
                format!(
                    "table {table} is named twice in files (names are compared without case, as the engines compare them); give each table one file"
                ),
            ));
        }
        seen.push(folded);
        if path.trim().is_empty() {
            return Err(DecodeError::at(
                at,
                "give the file's path, relative to the study file",
            ));
        }
    }
    let delimiter = match keys.delimiter {
        None => {
            let tab = files.values().all(|p| {
                let p = p.to_ascii_lowercase();
                p.ends_with(".tsv") || p.ends_with(".tab")
            });
            if tab { b'\t' } else { b',' }
        }
        Some(d) => {
            let b = d.as_bytes();
            if b.len() != 1 || !b[0].is_ascii() || matches!(b[0], b'"' | b'\n' | b'\r' | b'\\') {
                return Err(DecodeError::at(
                    root.key("delimiter"),
                    format!(
                        "delimiter = {d:?} must be one ASCII character other than a quote, a backslash or a line end (e.g. \",\", \"\\t\", \";\", \"|\")"
                    ),
                ));
            }
            b[0]
        }
    };
    let null = keys.null.unwrap_or("").to_string();
    if null.len() > 32
        || null.chars().any(|c| {
            c == '"'
                || c == '\n'
                || c == '\r'
                || c == '\''
                || c == '\\'
                || c as u32 == u32::from(delimiter)
        })
    {
        return Err(DecodeError::at(
            root.key("null"),
            format!(
                "null = {null:?} must be up to 32 characters without quotes, backslashes, line ends or the delimiter (e.g. \"\" — the empty field —, \"NULL\", \"NA\")"
            ),
        ));
    }
    Ok(FileFormat {
        delimiter,
        header: keys.header.unwrap_or(false),
        null,
    })
}

/// Find each file relative to `base`: a missing one is an error at its key.
pub fn resolve(
    files: &BTreeMap<String, String>,
    format: FileFormat,
    base: &Path,
) -> Result<Arc<UserFiles>, (KeyPath, String)> {
    let mut found = Vec::new();
    for (table, rel) in files {
        let full = base.join(rel);
        match std::fs::metadata(&full) {
            Ok(m) if m.is_file() => found.push((table.clone(), full)),
            Ok(_) => {
                return Err((
                    KeyPath::root().key("files").key(table),
                    format!(
                        "{} is not a file; name the data file for table {table}",
                        full.display()
                    ),
                ));
            }
            Err(e) => {
                return Err((
                    KeyPath::root().key("files").key(table),
                    format!(
                        "cannot read {}: {}; paths are relative to the study file",
                        full.display(),
                        if e.kind() == std::io::ErrorKind::NotFound {
                            "no such file".to_string()
                        } else {
                            e.to_string()
                        }
                    ),
                ));
            }
        }
    }
    Ok(Arc::new(UserFiles {
        files: found,
        format,
        facts: OnceLock::new(),
    }))
}

impl UserFiles {
    /// Every file's facts, counted on first use: a record whose field count differs from the
    /// first's, or a header that is not column names, is an error naming the file and line.
    pub fn facts(&self) -> Result<&[FileFacts], String> {
        self.facts
            .get_or_init(|| {
                self.files
                    .iter()
                    .map(|(t, p)| count(t, p, &self.format))
                    .collect()
            })
            .as_deref()
            .map_err(Clone::clone)
    }
}

/// Read a file through: its bytes, records and header.
fn count(table: &str, path: &Path, f: &FileFormat) -> Result<FileFacts, String> {
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| format!("{shown}: {e}"))?;
    let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut r = csv::ReaderBuilder::new()
        .delimiter(f.delimiter)
        .has_headers(f.header)
        .flexible(false)
        .from_reader(std::io::BufReader::with_capacity(1 << 20, file));
    let mut columns = Vec::new();
    if f.header {
        let h = r.headers().map_err(|e| format!("{shown}: {e}"))?;
        for (i, name) in h.iter().enumerate() {
            let name = name.trim();
            if name.is_empty()
                || name.len() > 64
                || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                return Err(format!(
                    "{shown}:1: header field {} is {name:?}, not a column name (letters, digits, _); with header = true the first line names the columns — set header = false if it holds data",
                    i + 1
                ));
            }
            columns.push(name.to_string());
        }
    }
    let mut rec = csv::ByteRecord::new();
    let mut rows = 0u64;
    loop {
        match r.read_byte_record(&mut rec) {
            Ok(true) => rows += 1,
            Ok(false) => break,
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                let what = match e.kind() {
                    csv::ErrorKind::UnequalLengths {
                        expected_len, len, ..
                    } => format!(
                        "this record has {len} fields, the first had {expected_len}; check the delimiter ({:?}) and the quotes",
                        f.delimiter as char
                    ),
                    _ => e.to_string(),
                };
                return Err(format!("{shown}:{line}: {what}"));
            }
        }
    }
    Ok(FileFacts {
        table: table.to_string(),
        path: shown.to_string(),
        bytes,
        rows,
        columns,
    })
}

/// For each of `tables`, the others among them its foreign keys reference, as the engine
/// reports them (its own name and any schema stripped, compared without case); none where
/// the engine cannot say.
fn parents(
    engine: &dyn crate::engine::Engine,
    tables: &[String],
) -> Result<Vec<Vec<usize>>, StepError> {
    let Some(sql) = engine.dialect().foreign_key_parents_sql() else {
        return Ok(vec![Vec::new(); tables.len()]);
    };
    let bare = |n: &str| {
        let n = n.rsplit('.').next().unwrap_or(n);
        n.trim_matches(|c| c == '"' || c == '`').to_lowercase()
    };
    let mut session = engine.connect()?;
    let stmt = session.prepare(sql)?;
    let mut rows = Vec::new();
    let mut out = Vec::with_capacity(tables.len());
    for (i, t) in tables.iter().enumerate() {
        session.run_rows(stmt, &[Value::Text(t.clone())], &mut rows)?;
        let mut mine: Vec<usize> = rows
            .iter()
            .filter_map(|v| match v {
                Value::Text(p) => tables.iter().position(|t| bare(t) == bare(p)),
                _ => None,
            })
            .filter(|&p| p != i)
            .collect();
        mine.sort_unstable();
        mine.dedup();
        out.push(mine);
    }
    Ok(out)
}

/// The order tables load in, from each one's parents ([`parents`]): waves whose tables load
/// side by side, each table in a wave after all its parents', so a server that checks
/// foreign keys finds every parent row. Tables in a cycle (which only a load without checks
/// could fill) go together in a last wave and the engine says what it refuses.
fn waves(parents: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut placed = vec![false; parents.len()];
    let mut out: Vec<Vec<usize>> = Vec::new();
    loop {
        let ready: Vec<usize> = (0..parents.len())
            .filter(|&i| !placed[i] && parents[i].iter().all(|&p| placed[p]))
            .collect();
        let ready = if ready.is_empty() {
            (0..parents.len()).filter(|&i| !placed[i]).collect()
        } else {
            ready
        };
        if ready.is_empty() {
            return out;
        }
        for &i in &ready {
            placed[i] = true;
        }
        out.push(ready);
    }
}

/// Load the files into the tables, checked: each table gained the file's records.
pub fn run(
    files: &UserFiles,
    batch_rows: u64,
    parallel: Option<u64>,
    allow_warnings: bool,
    ctx: &StepCtx<'_>,
) -> Result<StepOutput, StepError> {
    let engine = ctx.engine;
    let facts = files.facts().map_err(StepError::Check)?;
    let counted = engine.keeps_rows();
    let count = |table: &str| -> Result<i64, StepError> {
        Ok(engine
            .connect()?
            .query_i64(&format!("SELECT COUNT(*) FROM {table}"))?)
    };
    let before: Vec<i64> = if counted {
        facts
            .iter()
            .map(|f| {
                count(&f.table).map_err(|e| match e {
                    StepError::Engine(e) => StepError::Check(format!(
                        "table {} (for {}) cannot be read on this contender: {}; a load of \
                         your own files does not create tables: make it in a `sql` step \
                         before this one",
                        f.table, f.path, e.message
                    )),
                    other => other,
                })
            })
            .collect::<Result<_, _>>()?
    } else {
        vec![0; facts.len()]
    };
    let parallel = super::loading::tables_at_once(parallel, engine, facts.len());
    let total_rows: u64 = facts.iter().map(|f| f.rows).sum();
    ctx.progress.status(&format!(
        "loading {total_rows} rows from {} file(s), {parallel} at a time",
        facts.len()
    ));
    let names: Vec<String> = facts.iter().map(|f| f.table.clone()).collect();
    let waves = waves(&parents(engine, &names)?);
    let t = Instant::now();
    let mut slots: Vec<Option<LoadOutcome>> = (0..facts.len()).map(|_| None).collect();
    for wave in &waves {
        let done = super::loading::in_parallel(wave.len(), parallel, |j| {
            let i = wave[j];
            engine.load_file(&FileLoad {
                table: &facts[i].table,
                file: &files.files[i].1,
                format: &files.format,
                columns: &facts[i].columns,
                batch_rows,
            })
        })?;
        for (&i, o) in wave.iter().zip(done) {
            slots[i] = Some(o);
        }
    }
    let outcomes: Vec<LoadOutcome> = slots.into_iter().flatten().collect();
    let elapsed = t.elapsed().as_secs_f64();
    if ctx.stop.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(StepError::Run(crate::runner::RunError::Interrupted));
    }
    let warned = super::loading::Warned::of_names(&names, &outcomes);
    if let Some(w) = &warned
        && w.serious
        && !allow_warnings
    {
        return Err(StepError::Check(w.refusal()));
    }
    if counted {
        for ((f, o), b) in facts.iter().zip(&outcomes).zip(&before) {
            let gained = count(&f.table)? - b;
            let want = if allow_warnings { o.rows } else { f.rows };
            if gained < 0 || gained as u64 != want || o.rows != want {
                return Err(StepError::Check(format!(
                    "table {}: {} holds {} records, the engine loaded {} and the table gained {gained} rows",
                    f.table, f.path, f.rows, o.rows
                )));
            }
        }
    }
    let order: Vec<Vec<&str>> = waves
        .iter()
        .map(|w| w.iter().map(|&i| names[i].as_str()).collect())
        .collect();
    Ok(output(
        files,
        facts,
        &outcomes,
        &order,
        warned,
        parallel,
        elapsed,
        allow_warnings,
        ctx,
    ))
}

/// The step's figures, note and details.
#[allow(clippy::too_many_arguments)]
fn output(
    files: &UserFiles,
    facts: &[FileFacts],
    outcomes: &[LoadOutcome],
    order: &[Vec<&str>],
    warned: Option<super::loading::Warned>,
    parallel: usize,
    elapsed: f64,
    allow_warnings: bool,
    ctx: &StepCtx<'_>,
) -> StepOutput {
    let loaded: u64 = outcomes.iter().map(|o| o.rows).sum();
    let total_rows: u64 = facts.iter().map(|f| f.rows).sum();
    let bytes: u64 = facts.iter().map(|f| f.bytes).sum();
    let (mut s, method) =
        super::loading::loaded_summary(ctx.title("load of your files"), loaded, elapsed, outcomes);
    let mut note = format!(
        "{method}; {} file(s), {bytes} bytes, {total_rows} records",
        facts.len()
    );
    if order.len() > 1 {
        let waves: Vec<String> = order.iter().map(|w| w.join(", ")).collect();
        note.push_str(&format!("; parents before children: {}", waves.join(" → ")));
    }
    if let Some(w) = warned.as_ref().filter(|w| w.count > 0) {
        note.push_str(&format!("; {}", w.describe()));
    }
    s.note = Some(note);
    if let Some(w) = &warned {
        s.metrics.extend(w.figures(total_rows, loaded));
    }
    StepOutput {
        summary: s,
        details: serde_json::json!({
            "method": method,
            "files": facts,
            "delimiter": (files.format.delimiter as char).to_string(),
            "header": files.format.header,
            "null": files.format.null,
            "parallel": parallel,
            "order": order,
            "rows_loaded": loaded,
            "elapsed_s": elapsed,
            "allow_warnings": allow_warnings,
            "warnings": warned,
        }),
        seconds: 0,
        interrupted: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    fn keys<'a>(d: Option<&'a str>, n: Option<&'a str>) -> FormatKeys<'a> {
        FormatKeys {
            header: None,
            delimiter: d,
            null: n,
        }
    }

    #[test]
    fn parents_load_before_their_children_and_a_cycle_last() {
        // 0 orders -> 1 customers; 2 lines -> 0, 3 parts; 4 alone
        let p = vec![vec![1], vec![], vec![0, 3], vec![], vec![]];
        assert_eq!(waves(&p), vec![vec![1, 3, 4], vec![0], vec![2]]);
        assert_eq!(waves(&[vec![], vec![]]), vec![vec![0, 1]]);
        // 1 and 2 reference each other; 3 hangs from 2
        let p = vec![vec![], vec![2], vec![1], vec![2]];
        assert_eq!(waves(&p), vec![vec![0], vec![1, 2, 3]]);
        assert!(waves(&[]).is_empty());
    }

    #[test]
    fn the_delimiter_follows_the_extension_unless_given() {
        let f = format(&files(&[("a", "a.tsv")]), &keys(None, None)).expect("ok");
        assert_eq!(f.delimiter, b'\t');
        let f = format(&files(&[("a", "a.csv")]), &keys(None, None)).expect("ok");
        assert_eq!(f.delimiter, b',');
        let f = format(&files(&[("a", "a.tsv")]), &keys(Some(";"), None)).expect("ok");
        assert_eq!(f.delimiter, b';');
        for bad in [",,", "\"", "", "é", "\n"] {
            let e = format(&files(&[("a", "a.csv")]), &keys(Some(bad), None)).expect_err(bad);
            assert_eq!(e.path.to_string(), "delimiter");
        }
        let e = format(&files(&[("a", "a.csv")]), &keys(None, Some("a,b"))).expect_err("null");
        assert_eq!(e.path.to_string(), "null");
    }

    #[test]
    fn a_table_named_twice_is_refused() {
        let e = format(
            &files(&[("orders", "a.csv"), ("Orders", "b.csv")]),
            &keys(None, None),
        )
        .expect_err("twice");
        assert!(e.message.contains("named twice"), "{}", e.message);
    }

    #[test]
    fn counting_reads_quoted_newlines_and_names_a_ragged_line() {
        let dir = std::env::temp_dir().join(format!("dbduel-uf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let good = dir.join("g.csv");
        std::fs::write(&good, "id,note\n1,\"two\nlines\"\n2,\n").expect("write");
        let f = FileFormat {
            delimiter: b',',
            header: true,
            null: String::new(),
        };
        let facts = count("t", &good, &f).expect("counts");
        assert_eq!((facts.rows, facts.columns.len()), (2, 2));
        let bad = dir.join("b.csv");
        std::fs::write(&bad, "1,a\n2,b\n3,c,d\n").expect("write");
        let e = count("t", &bad, &FileFormat { header: false, ..f }).expect_err("ragged");
        assert!(
            e.contains("b.csv:3: this record has 3 fields, the first had 2"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
