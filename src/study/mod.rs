//! Study files: reading (built-in or from disk), applying scale and `--set` overrides, and
//! validating everything before anything runs. Every error names file:line:col (or the
//! override that caused it), what is wrong and what is allowed.

pub mod builtin;
mod findings;
pub mod model;
pub mod overrides;
pub mod resources;
pub mod source;
pub mod tables;
pub mod template;

pub use model::StudyFile;
pub use source::{Source, StudyError};

use crate::dataset::Generator;
use crate::decode::{DecodeError, KeyPath, decode};
use crate::engines::EngineConfig;
use crate::workload::StepParams;
use overrides::{Origin, Override};
use std::collections::HashSet;

/// A contender ready to run.
#[derive(Debug, Clone)]
pub struct Contender {
    pub name: String,
    pub engine: EngineConfig,
    /// Options as written (after overrides), for the manifest.
    pub options: toml::Table,
}

/// A step ready to run.
#[derive(Debug, Clone)]
pub struct Step {
    pub name: String,
    pub kind: String,
    pub title: Option<String>,
    pub params: StepParams,
}

/// A validated study: what will run, after scale and overrides.
#[derive(Debug, Clone)]
pub struct Study {
    /// Where the study came from (a path, or `studies/NAME.toml` for a built-in).
    pub source: String,
    /// The study as it will run.
    pub file: StudyFile,
    /// The generator its `[dataset]` names, decoded when it was checked (`None`: no
    /// generated dataset; the steps load the study's own files).
    pub generator: Option<Generator>,
    pub scale: Option<String>,
    /// `--set` arguments as given.
    pub sets: Vec<String>,
    pub contenders: Vec<Contender>,
    pub steps: Vec<Step>,
    /// `run --allow-wide-account`: every target contender as if it said `wide_account`.
    pub allow_wide_account: bool,
}

impl Study {
    /// The steps that send SQL the study wrote (not dbduel's own statements): `sql`,
    /// `script`, `update` and `queries`, by name.
    pub fn study_sql_steps(&self) -> Vec<&str> {
        self.steps
            .iter()
            .filter(|s| matches!(s.kind.as_str(), "sql" | "script" | "update" | "queries"))
            .map(|s| s.name.as_str())
            .collect()
    }

    /// Does contender `name` run study-written SQL on a wide target account by choice?
    pub fn wide_account_allowed(&self, name: &str) -> bool {
        self.allow_wide_account
            || self
                .file
                .contenders
                .iter()
                .any(|c| c.name == name && c.wide_account)
    }

    /// Can this study run sharded (see [`crate::shard`])? Every contender must be a server
    /// every shard reaches (a MariaDB or PostgreSQL `target`) for the shards to share its
    /// data and meet in it; no step may restart it; rounds are not repeated.
    pub fn check_sharding(&self) -> Result<(), String> {
        if self.file.study.repeat > 1 {
            return Err(
                "repeat with shards is not supported: run the sharded study again (with a new run group) and compare the merged runs"
                    .into(),
            );
        }
        for c in &self.contenders {
            let spec = self.file.contenders.iter().find(|s| s.name == c.name);
            let kind = c.engine.kind();
            if !c.engine.family().shards_meet {
                return Err(format!(
                    "contender `{}` is {kind}; sharded runs need MariaDB or PostgreSQL contenders (the shards meet in their database)",
                    c.name
                ));
            }
            if spec.is_none_or(|s| s.target.is_none()) {
                return Err(format!(
                    "contender `{}` would start a server of its own on each shard; the shards of a run must share one: give it a target = \"mysql://…\" or \"postgres://…\" that every shard reaches",
                    c.name
                ));
            }
        }
        for s in &self.steps {
            if let Some(key) = s.params.restarts() {
                return Err(format!(
                    "step `{}` restarts the server ({key} = true), which the shards share: a restart on one cuts every shard's sessions. Run cold steps unsharded, or set step.{}.{key}=false",
                    s.name, s.name
                ));
            }
        }
        Ok(())
    }

    /// The most clients any step opens at once (at least 1).
    pub fn max_clients(&self) -> u64 {
        self.steps
            .iter()
            .map(|s| s.params.clients())
            .max()
            .unwrap_or(1)
    }

    /// Open files a run of this study needs in dbduel's process: its widest step's clients
    /// on the contender whose clients hold the most files each.
    pub fn open_files_needed(&self) -> u64 {
        let per_client = self
            .contenders
            .iter()
            .map(|c| c.engine.files_per_client())
            .max()
            .unwrap_or(1);
        crate::fdlimit::needed(self.max_clients().saturating_mul(per_client))
    }
}

/// What the user asked to run.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// A built-in study name or a path to a TOML file.
    pub study: String,
    pub scale: Option<String>,
    pub sets: Vec<String>,
    /// Only these contenders (when empty: the study's default_contenders, or all).
    pub contenders: Vec<String>,
    /// Every contender, whatever the study's default.
    pub all_contenders: bool,
    /// Check the study fits this machine (memory, disk under this results root).
    pub machine: Option<resources::Machine>,
    /// The study runs elsewhere (`dbduel k8s`): targets' passwords are not read here.
    pub passwords_elsewhere: bool,
}

/// Read and validate the study a user asked for.
pub fn load(req: &Request) -> Result<Study, StudyError> {
    parse(&source(&req.study)?, req)
}

/// The text of a study: a built-in's name or a file's path.
pub fn source(study: &str) -> Result<Source, StudyError> {
    Ok(match builtin::get(study) {
        Some(text) => Source::new(format!("studies/{study}.toml"), text),
        None => {
            let path = std::path::Path::new(study);
            let bytes = std::fs::read(path).map_err(|e| StudyError {
                origin: study.to_string(),
                line_col: None,
                message: if e.kind() == std::io::ErrorKind::NotFound {
                    format!(
                        "no such study file, and not a built-in study (built-ins: {}); run `dbduel studies` to list them",
                        builtin::names().join(", ")
                    )
                } else {
                    format!("cannot read the study file: {e}")
                },
            })?;
            let text = String::from_utf8(bytes).map_err(|e| StudyError {
                origin: study.to_string(),
                line_col: None,
                message: format!(
                    "not a text file: invalid UTF-8 at byte {}; a study file is TOML text",
                    e.utf8_error().valid_up_to()
                ),
            })?;
            Source::new(study, text)
        }
    })
}

/// The study a past run recorded (its manifest's `study`: the file as it ran, scale and
/// overrides already applied), to run it again exactly: with the run's contenders, and
/// labelled with its source, scale and overrides. No scale or override is applied again.
pub fn as_run(
    manifest: &crate::results::Manifest,
    run_name: &str,
    contenders: Vec<String>,
    machine: Option<resources::Machine>,
    read_passwords: bool,
) -> Result<Study, StudyError> {
    let err = |message: String| StudyError {
        origin: format!("{run_name}/manifest.json"),
        line_col: None,
        message,
    };
    let mut doc = match toml::Value::try_from(&manifest.study) {
        Ok(toml::Value::Table(t)) => t,
        Ok(_) | Err(_) => {
            return Err(err(
                "the run recorded no study that can be read back (is it from an older dbduel?)"
                    .into(),
            ));
        }
    };
    // The document already holds the scale's values: do not apply its scale again.
    let default_scale = doc
        .get_mut("study")
        .and_then(toml::Value::as_table_mut)
        .and_then(|t| t.remove("default_scale"))
        .and_then(|v| v.as_str().map(str::to_string));
    let text = toml::to_string(&doc).map_err(|e| err(format!("writing the study back: {e}")))?;
    let source = Source::new(
        format!("{run_name}/manifest.json (the study as it ran)"),
        text,
    );
    let req = Request {
        study: source.name.clone(),
        scale: None,
        sets: Vec::new(),
        contenders,
        all_contenders: false,
        machine,
        passwords_elsewhere: !read_passwords,
    };
    let mut study = parse_in(&source, &req, &base_of(&manifest.source))?;
    study.file.study.default_scale = default_scale;
    study.source = manifest.source.clone();
    study.scale = manifest.scale.clone();
    study.sets = manifest.overrides.clone();
    Ok(study)
}

/// Parse, override and validate a study from its source text; files its steps name (a
/// `script` step's scripts) are read relative to the study file's directory.
pub fn parse(src: &Source, req: &Request) -> Result<Study, StudyError> {
    parse_in(src, req, &base_of(&src.name))
}

/// The directory files named in the study at `source` are relative to.
fn base_of(source: &str) -> std::path::PathBuf {
    std::path::Path::new(source)
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default()
}

/// Read and parse the files the steps name, relative to `base`: an error is located in the
/// file it is in (a script's line and column), or at the study's key that names it.
fn load_step_files(
    src: &Source,
    file: &StudyFile,
    steps: &mut [Step],
    base: &std::path::Path,
) -> Result<(), StudyError> {
    let at_key = |i: usize, path: &KeyPath, message: String| {
        let path = KeyPath::root().key("step").index(i).join(path);
        src.error_at_path(&path, format!("{path}: {message}"))
    };
    let located = |origin: String, line: usize, col: usize, message: String| StudyError {
        origin,
        line_col: Some((line, col)),
        message,
    };
    let users: Vec<crate::workload::kind::ContenderUse<'_>> = file
        .contenders
        .iter()
        .map(|c| crate::workload::kind::ContenderUse {
            name: &c.name,
            engine: &c.engine,
            target: c.target.is_some(),
            variants: crate::engines::sql_variants(&c.engine),
        })
        .collect();
    let beside = crate::workload::kind::Beside {
        base,
        users: &users,
        on_target: users.iter().find(|u| u.target).map(|u| u.name),
    };
    for (i, step) in steps.iter_mut().enumerate() {
        step.params
            .kind_mut()
            .read_beside(&beside)
            .map_err(|e| match e {
                crate::workload::kind::BesideError::At(path, message) => at_key(i, &path, message),
                crate::workload::kind::BesideError::In {
                    file,
                    line,
                    col,
                    message,
                } => located(file, line, col, message),
            })?;
    }
    Ok(())
}

/// The overrides of scale `s` (`--scale`, or the study's default), which the study must have.
fn chosen_scale(file: &StudyFile, s: &str) -> Result<Vec<Override>, StudyError> {
    let Some(table) = file.scale.get(s) else {
        let known: Vec<&str> = file.scale.keys().map(String::as_str).collect();
        return Err(StudyError {
            origin: format!("--scale {s}"),
            line_col: None,
            message: format!(
                "study `{}` has no scale `{s}`; its scales are: {}",
                file.study.name,
                if known.is_empty() {
                    "(none)".to_string()
                } else {
                    known.join(", ")
                }
            ),
        });
    };
    Ok(overrides::scale_overrides(s, table))
}

/// [`parse`] with the directory the study's files are relative to.
fn parse_in(src: &Source, req: &Request, base: &std::path::Path) -> Result<Study, StudyError> {
    let mut doc: toml::Table = toml::from_str(&src.text)
        .map_err(|e| src.error_at(e.span(), format!("TOML syntax: {}", e.message().trim())))?;
    let file: StudyFile =
        decode(toml::Value::Table(doc.clone())).map_err(|e| file_error(src, &e))?;
    let read_passwords = !req.passwords_elsewhere;
    let checked = check(&file, read_passwords).map_err(|e| file_error(src, &e))?;

    // Every scale is checked, not only the one chosen: a mistake in `[scale.full]` must not
    // wait for the first run at that scale.
    for (name, table) in &file.scale {
        apply_all(
            src,
            &mut doc.clone(),
            &overrides::scale_overrides(name, table),
            read_passwords,
        )?;
    }

    let scale = req
        .scale
        .clone()
        .or_else(|| file.study.default_scale.clone());
    let mut all: Vec<Override> = match &scale {
        Some(s) => chosen_scale(&file, s)?,
        None => Vec::new(),
    };
    for arg in &req.sets {
        all.push(overrides::parse_set(arg).map_err(|m| StudyError {
            origin: "--set".into(),
            line_col: None,
            message: m,
        })?);
    }

    let (
        file,
        Valid {
            contenders,
            steps,
            generator,
        },
    ) = match apply_all(src, &mut doc, &all, read_passwords)? {
        Some(x) => x,
        None => (file, checked),
    };

    let chosen: &[String] = if req.all_contenders {
        &[]
    } else if req.contenders.is_empty() {
        file.study.default_contenders.as_deref().unwrap_or(&[])
    } else {
        &req.contenders
    };
    let contenders = select(contenders, chosen)?;
    let mut steps = steps;
    load_step_files(src, &file, &mut steps, base)?;
    let study = Study {
        source: src.name.clone(),
        file,
        generator,
        scale,
        sets: req.sets.clone(),
        contenders,
        steps,
        allow_wide_account: false,
    };
    if let Some(m) = &req.machine {
        resources::check(&study, m).map_err(|e| {
            // Say where the need comes from: the override that set it, or the file.
            let ov = all.iter().rev().find(|o| {
                overrides::resolve(&doc, &o.key)
                    .is_ok_and(|p| p == e.path || e.path.starts_with(&p))
            });
            match ov {
                Some(o) => override_error(src, o, format!("{}: {}", e.path, e.message)),
                None => file_error(src, &e),
            }
        })?;
    }
    Ok(study)
}

/// Most warehouses a TPC-C dataset may have (the seed ran 5,000; about 100 MB each loaded).
const MAX_WAREHOUSES: u64 = 100_000;

/// A `tpcc` dataset is sized by its warehouses, never by rows.
fn tpcc_scale(f: &StudyFile) -> Result<(), DecodeError> {
    let ds = KeyPath::root().key("dataset");
    if f.dataset.rows != 0 {
        return Err(DecodeError::at(
            ds.key("rows"),
            "generator tpcc is sized by warehouses, not rows: write `warehouses = N` instead (each has 10 districts, 30,000 customers and 100,000 stock rows)".to_string(),
        ));
    }
    match f.dataset.warehouses {
        None => Err(DecodeError::at(
            ds,
            "generator tpcc needs its scale: add `warehouses = N` (e.g. 4) to [dataset]"
                .to_string(),
        )),
        Some(w) if !(1..=MAX_WAREHOUSES).contains(&w) => Err(DecodeError::at(
            ds.key("warehouses"),
            format!("warehouses = {w} is out of range; use 1 to {MAX_WAREHOUSES}"),
        )),
        Some(_) => Ok(()),
    }
}

/// A `tpch` dataset is sized by its scale factor, never by rows or warehouses.
fn tpch_scale(f: &StudyFile) -> Result<(), DecodeError> {
    let ds = KeyPath::root().key("dataset");
    if f.dataset.rows != 0 {
        return Err(DecodeError::at(
            ds.key("rows"),
            "generator tpch is sized by its scale factor, not rows: write `sf = N` instead (sf = 1 makes 6 million lineitem rows)".to_string(),
        ));
    }
    if f.dataset.warehouses.is_some() {
        return Err(DecodeError::at(
            ds.key("warehouses"),
            "warehouses is a tpcc setting; generator tpch is sized by `sf = N`".to_string(),
        ));
    }
    let max = crate::dataset::tpch::MAX_UNITS / crate::dataset::tpch::UNITS_PER_SF;
    match f.dataset.sf {
        None => Err(DecodeError::at(
            ds,
            "generator tpch needs its scale factor: add `sf = N` (e.g. 0.1) to [dataset]"
                .to_string(),
        )),
        Some(sf) if model::tpch_units(sf).is_none() => Err(DecodeError::at(
            ds.key("sf"),
            format!(
                "sf = {sf} is not a multiple of 0.01 from 0.01 to {max}; use e.g. 0.01, 0.1, 1, 10 or 100"
            ),
        )),
        Some(_) => Ok(()),
    }
}

/// A study after its overrides: the file as it will run, its contenders and its steps.
type Checked = (StudyFile, Valid);

/// What the checks of a study file decode: its contenders, its steps and the generator its
/// dataset names (`None`: no generated dataset).
struct Valid {
    contenders: Vec<Contender>,
    steps: Vec<Step>,
    generator: Option<Generator>,
}

/// Apply `overrides` to `doc`, then check the result once: options that depend on each other
/// (a memory limit and the cache it must hold) may come in any order. An error belongs to the
/// last override that set the key it names (or a table around it), else to the last one.
/// `None` when there are no overrides.
fn apply_all(
    src: &Source,
    doc: &mut toml::Table,
    overrides: &[Override],
    read_passwords: bool,
) -> Result<Option<Checked>, StudyError> {
    let Some(last) = overrides.last() else {
        return Ok(None);
    };
    let mut paths = Vec::with_capacity(overrides.len());
    for ov in overrides {
        let fail = |m: String| override_error(src, ov, m);
        let path = overrides::resolve(doc, &ov.key).map_err(fail)?;
        overrides::apply(doc, &path, ov.value.clone()).map_err(fail)?;
        paths.push(path);
    }
    let blame = |e: DecodeError| {
        let ov = overrides
            .iter()
            .zip(&paths)
            .rev()
            .find(|(_, p)| e.path.starts_with(p))
            .map_or(last, |(o, _)| o);
        override_error(src, ov, format!("{}: {}", e.path, e.message))
    };
    let f: StudyFile = decode(toml::Value::Table(doc.clone())).map_err(blame)?;
    let c = check(&f, read_passwords).map_err(blame)?;
    Ok(Some((f, c)))
}

fn file_error(src: &Source, e: &DecodeError) -> StudyError {
    let mut err = src.error_at_path(&e.path, format!("{}: {}", e.path, e.message));
    if e.path.0.is_empty() {
        err.message = missing_section_hint(&e.message).unwrap_or_else(|| e.message.clone());
    }
    if let Some(hint) = array_of_tables_hint(e) {
        err.message = format!("{}: {hint}", e.path);
    }
    if err.line_col.is_none() {
        err.line_col = Some((1, 1));
    }
    err
}

/// Say how to write `[[step]]` or `[[contender]]` when one was written as a single table.
fn array_of_tables_hint(e: &DecodeError) -> Option<String> {
    let [crate::decode::Seg::Key(section)] = e.path.0.as_slice() else {
        return None;
    };
    if section != "step" && section != "contender" {
        return None;
    }
    e.message
        .starts_with("invalid type: table, expected an array")
        .then(|| {
            format!(
                "[{section}] must be an array of tables: write [[{section}]] above each {section}"
            )
        })
}

/// Say what to add when a whole section of the study is missing.
fn missing_section_hint(message: &str) -> Option<String> {
    let field = message.strip_prefix("missing field `")?.split('`').next()?;
    Some(match field {
        "study" => "the study has no [study] table; add one with name = \"...\" and description = \"...\"".into(),
        "dataset" => "the study has no [dataset] table; add one with generator = \"user_logs\" and rows = N".into(),
        "contender" => "the study has no [[contender]]; add at least one with name and engine (e.g. engine = \"sqlite\")".into(),
        "step" => "the study has no [[step]]; add at least one with name and kind (e.g. kind = \"load\")".into(),
        other => format!("missing `{other}`"),
    })
}

fn override_error(src: &Source, ov: &Override, message: String) -> StudyError {
    match &ov.origin {
        Origin::CommandLine(text) => StudyError {
            origin: text.clone(),
            line_col: None,
            message,
        },
        Origin::Scale { scale, path } => {
            let mut e =
                src.error_at_path(path, format!("in [scale.{scale}] `{}`: {message}", ov.key));
            if e.line_col.is_none() {
                e.line_col = Some((1, 1));
            }
            e
        }
    }
}

/// Keep only the contenders named (in the study's order); error on unknown names.
fn select(all: Vec<Contender>, names: &[String]) -> Result<Vec<Contender>, StudyError> {
    if names.is_empty() {
        return Ok(all);
    }
    for n in names {
        if !all.iter().any(|c| &c.name == n) {
            return Err(StudyError {
                origin: format!("--contender {n}"),
                line_col: None,
                message: format!(
                    "no contender named `{n}`; this study's contenders are: {}",
                    all.iter()
                        .map(|c| c.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
    }
    Ok(all
        .into_iter()
        .filter(|c| names.contains(&c.name))
        .collect())
}

/// Names used in paths and file names: letters, digits, `_` and `-`, 1 to 64 of them.
pub fn is_safe_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !s.starts_with('-')
}

/// A contender's name: as [`is_safe_name`], and `.` inside it too (`mysql-5.6`, the way a
/// server's version is written), never first, last or twice in a row, so the name is still
/// one path component (never `..`) and an override key can find it (`contender.mysql-5.6.KEY`,
/// or quoted: `contender."mysql-5.6".KEY`).
pub fn is_contender_name(s: &str) -> bool {
    let plain = s.replace('.', "_");
    is_safe_name(&plain) && !s.starts_with('.') && !s.ends_with('.') && !s.contains("..")
}

fn safe_name(path: KeyPath, s: &str) -> Result<(), DecodeError> {
    if is_safe_name(s) {
        Ok(())
    } else {
        Err(DecodeError::at(
            path,
            format!("name {s:?} is not allowed; use 1-64 letters, digits, `_` or `-` (not first)"),
        ))
    }
}

/// `[[reference]]` tables: safe names unlike any contender's, figures on steps of the study,
/// finite values, a scale the study has.
fn check_references(f: &StudyFile) -> Result<(), DecodeError> {
    let root = KeyPath::root();
    for (i, r) in f.references.iter().enumerate() {
        let at = root.key("reference").index(i);
        safe_name(at.key("name"), &r.name)?;
        if f.contenders.iter().any(|c| c.name == r.name)
            || f.references[..i].iter().any(|o| o.name == r.name)
        {
            return Err(DecodeError::at(
                at.key("name"),
                format!(
                    "reference `{}` has the name of a contender or another reference; give it its own",
                    r.name
                ),
            ));
        }
        if let Some(sc) = &r.scale
            && !f.scale.contains_key(sc)
        {
            return Err(DecodeError::at(
                at.key("scale"),
                format!("scale = {sc:?} names no [scale.{sc}] table"),
            ));
        }
        for (k, v) in &r.figures {
            let step = k.split_once('.').map(|(s, _)| s);
            let known = step.is_some_and(|s| f.steps.iter().any(|x| x.name == s));
            if !known || !v.is_finite() || *v < 0.0 {
                return Err(DecodeError::at(
                    at.key("figures").key(k),
                    format!(
                        "figures keys are \"STEP.FIGURE\" with STEP one of this study's steps ({}) and a value of 0 or more; got {k:?} = {v}",
                        f.step_names()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Most rounds a study may repeat.
pub const MAX_REPEAT: u32 = 100;

pub use crate::dataset::MAX_ROWS;

/// Semantic checks of a decoded study; decodes engine options, step parameters and the
/// dataset's generator.
fn check(f: &StudyFile, read_passwords: bool) -> Result<Valid, DecodeError> {
    check_study_table(f)?;
    let generator = check_dataset(f)?;
    let contenders = check_contenders(f, read_passwords)?;
    check_pairs(f)?;
    let steps = check_steps(f)?;
    tables::check(f, generator, &steps)?;
    Ok(Valid {
        contenders,
        steps,
        generator,
    })
}

/// The `[study]` table: its name, default scale, repeat, baseline and default contenders,
/// and the names of the `[scale.*]` tables.
fn check_study_table(f: &StudyFile) -> Result<(), DecodeError> {
    let root = KeyPath::root();
    safe_name(root.key("study").key("name"), &f.study.name)?;
    if let Some(s) = &f.study.default_scale
        && !f.scale.contains_key(s)
    {
        return Err(DecodeError::at(
            root.key("study").key("default_scale"),
            format!("default_scale = {s:?} names no [scale.{s}] table"),
        ));
    }
    for name in f.scale.keys() {
        safe_name(root.key("scale").key(name), name)?;
    }
    if !(1..=MAX_REPEAT).contains(&f.study.repeat) {
        return Err(DecodeError::at(
            root.key("study").key("repeat"),
            format!(
                "repeat = {} is out of range: give 1 (one round) to {MAX_REPEAT}; 5 rounds or more let a difference be judged",
                f.study.repeat
            ),
        ));
    }
    check_references(f)?;
    findings::check(f)?;
    if let Some(b) = &f.study.baseline
        && !f.contenders.iter().any(|c| &c.name == b)
    {
        return Err(DecodeError::at(
            root.key("study").key("baseline"),
            format!(
                "baseline = {b:?} names no [[contender]] of this study; contenders are: {}",
                f.contender_names()
            ),
        ));
    }
    for (i, n) in f.study.default_contenders.iter().flatten().enumerate() {
        if !f.contenders.iter().any(|c| &c.name == n) {
            return Err(DecodeError::at(
                root.key("study").key("default_contenders").index(i),
                format!("default_contenders names `{n}`, which is no [[contender]] of this study"),
            ));
        }
    }
    Ok(())
}

/// The `[dataset]` table: a known generator and rows, tables and a table name it can make.
fn check_dataset(f: &StudyFile) -> Result<Option<Generator>, DecodeError> {
    use crate::dataset::Sizing;
    let root = KeyPath::root();
    let ds = root.key("dataset");
    let d = &f.dataset;
    if !d.generates() {
        return if d.rows != 0 || d.warehouses.is_some() {
            Err(DecodeError::at(
                ds.key("generator"),
                "generator = \"none\" generates no rows: leave rows and warehouses out, or name a generator",
            ))
        } else {
            Ok(None)
        };
    }
    let Some(desc) = crate::dataset::GENERATORS
        .iter()
        .find(|g| g.name == d.generator)
    else {
        let names: Vec<&str> = crate::dataset::GENERATORS.iter().map(|g| g.name).collect();
        return Err(DecodeError::at(
            ds.key("generator"),
            format!(
                "unknown generator {:?}; generators are: {}, and none (no generated dataset: the study loads its own files)",
                d.generator,
                names.join(", ")
            ),
        ));
    };
    let (max_tables, max_rows) = match desc.sizing {
        Sizing::Warehouses if d.sf.is_some() => {
            return Err(DecodeError::at(
                ds.key("sf"),
                "sf is a tpch setting; generator tpcc is sized by `warehouses = N`".to_string(),
            ));
        }
        Sizing::Warehouses => {
            tpcc_scale(f)?;
            (1, None)
        }
        Sizing::ScaleFactor => {
            tpch_scale(f)?;
            (1, None)
        }
        Sizing::Rows {
            max_tables,
            max_rows,
        } => {
            counts_rows(d, &ds)?;
            (max_tables, Some(max_rows))
        }
    };
    if let Some(max_rows) = max_rows
        && d.rows > max_rows
    {
        // Only tiers40's own bound is below MAX_ROWS: its timestamps would pass 2038.
        return Err(DecodeError::at(
            ds.key("rows"),
            format!(
                "rows = {} is too many for {} (its timestamps would pass 2038); use at most {max_rows} a table, and more tables",
                d.rows, desc.name
            ),
        ));
    }
    if !(1..=max_tables).contains(&d.tables) {
        return Err(DecodeError::at(
            ds.key("tables"),
            format!(
                "tables = {} is out of range for generator {:?}; use 1 to {max_tables}",
                d.tables, d.generator
            ),
        ));
    }
    let t = &d.table;
    if t.is_empty() || t.len() > 64 || !t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(DecodeError::at(
            ds.key("table"),
            format!("table = {t:?} must be 1-64 letters, digits or _"),
        ));
    }
    Ok(Some(desc.generator))
}

/// A row-sized generator's `[dataset]`: no TPC-C or TPC-H sizes, and rows from 1 to
/// [`MAX_ROWS`].
fn counts_rows(d: &model::DatasetSpec, ds: &KeyPath) -> Result<(), DecodeError> {
    if let Some(sf) = d.sf {
        return Err(DecodeError::at(
            ds.key("sf"),
            format!(
                "sf = {sf} is a tpch setting; generator {:?} counts rows (dataset.rows)",
                d.generator
            ),
        ));
    }
    if let Some(w) = d.warehouses {
        return Err(DecodeError::at(
            ds.key("warehouses"),
            format!(
                "warehouses = {w} is a tpcc setting; generator {:?} counts rows (dataset.rows)",
                d.generator
            ),
        ));
    }
    if d.rows == 0 {
        return Err(DecodeError::at(
            ds.key("rows"),
            format!(
                "rows is missing or 0: give the rows per table, 1 to {MAX_ROWS} (e.g. rows = 100000)"
            ),
        ));
    }
    if d.rows > MAX_ROWS {
        return Err(DecodeError::at(
            ds.key("rows"),
            format!("rows = {} is out of range; use 1 to {MAX_ROWS}", d.rows),
        ));
    }
    Ok(())
}

/// Each `[[contender]]`: a unique safe name, target settings only with a target, and its
/// engine's options decoded.
fn check_contenders(f: &StudyFile, read_passwords: bool) -> Result<Vec<Contender>, DecodeError> {
    let root = KeyPath::root();
    if f.contenders.is_empty() {
        return Err(DecodeError::at(
            root.key("contender"),
            "the study has no [[contender]]; add at least one (e.g. engine = \"sqlite\")",
        ));
    }
    let mut seen = HashSet::new();
    let mut contenders = Vec::new();
    for (i, c) in f.contenders.iter().enumerate() {
        let at = root.key("contender").index(i);
        if !is_contender_name(&c.name) {
            return Err(DecodeError::at(
                at.key("name"),
                format!(
                    "name {:?} is not allowed; use 1-64 letters, digits, `_`, `-` or `.` (not first; `.` not last nor twice in a row)",
                    c.name
                ),
            ));
        }
        if !seen.insert(c.name.as_str()) {
            return Err(DecodeError::at(
                at.key("name"),
                format!(
                    "contender name {:?} is used twice; names must be unique",
                    c.name
                ),
            ));
        }
        let target = c
            .target
            .as_deref()
            .map(|url| crate::engine::target::TargetSpec {
                url,
                password_env: c.password_env.as_deref(),
                password_file: c.password_file.as_ref(),
                restart_command: c.restart_command.as_deref(),
                read_password: read_passwords,
            });
        if target.is_none() {
            for (key, set) in [
                ("password_env", c.password_env.is_some()),
                ("password_file", c.password_file.is_some()),
                ("restart_command", c.restart_command.is_some()),
            ] {
                if set {
                    return Err(DecodeError::at(
                        at.key(key),
                        format!("{key} applies only with a target"),
                    ));
                }
            }
        }
        let binary = crate::engines::versions::BinaryChoice {
            version: c
                .version
                .as_ref()
                .map(crate::engines::versions::version_text)
                .transpose()
                .map_err(|e| e.under(&at))?,
            basedir: c.basedir.clone(),
        };
        binary.validate().map_err(|e| e.under(&at))?;
        let engine = EngineConfig::decode(&c.engine, &c.options, target.as_ref(), &binary)
            .map_err(|e| e.under(&at))?;
        contenders.push(Contender {
            name: c.name.clone(),
            engine,
            options: c.options.clone(),
        });
    }
    Ok(contenders)
}

/// Each contender's own `baseline`: another contender of the study, the one it is judged
/// against.
fn check_pairs(f: &StudyFile) -> Result<(), DecodeError> {
    for (i, c) in f.contenders.iter().enumerate() {
        let Some(b) = &c.baseline else { continue };
        let at = KeyPath::root().key("contender").index(i).key("baseline");
        if b == &c.name {
            return Err(DecodeError::at(
                at,
                format!(
                    "baseline = {b:?} is contender `{b}` itself; name the contender it is judged against"
                ),
            ));
        }
        if !f.contenders.iter().any(|o| &o.name == b) {
            return Err(DecodeError::at(
                at,
                format!(
                    "baseline = {b:?} names no [[contender]] of this study; contenders are: {}",
                    f.contender_names()
                ),
            ));
        }
    }
    Ok(())
}

/// Each `[[step]]`: a unique safe name, its kind's parameters decoded, its report interval.
fn check_steps(f: &StudyFile) -> Result<Vec<Step>, DecodeError> {
    let root = KeyPath::root();
    if f.steps.is_empty() {
        return Err(DecodeError::at(
            root.key("step"),
            "the study has no [[step]]; add at least one",
        ));
    }
    let mut seen = HashSet::new();
    let mut steps = Vec::new();
    for (i, s) in f.steps.iter().enumerate() {
        let at = root.key("step").index(i);
        safe_name(at.key("name"), &s.name)?;
        if !seen.insert(s.name.as_str()) {
            return Err(DecodeError::at(
                at.key("name"),
                format!("step name {:?} is used twice; names must be unique", s.name),
            ));
        }
        let params = StepParams::decode(&s.kind, &s.params).map_err(|e| e.under(&at))?;
        if let Some(r) = s.report_interval_s
            && !(1..=3600).contains(&r)
        {
            return Err(DecodeError::at(
                at.key("report_interval_s"),
                format!("report_interval_s = {r} is out of range; use 1 to 3600 seconds"),
            ));
        }
        steps.push(Step {
            name: s.name.clone(),
            kind: s.kind.clone(),
            title: s.title.clone(),
            params,
        });
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tpch_scale_factors_are_whole_hundredths_in_range() {
        use model::tpch_units;
        let ok = [
            (0.01, 1),
            (0.1, 10),
            (0.3, 30),
            (0.5, 50),
            (1.0, 100),
            (10.0, 1_000),
        ];
        for (sf, units) in ok.into_iter().chain([(100.0, 10_000), (300.0, 30_000)]) {
            assert_eq!(tpch_units(sf), Some(units), "{sf}");
        }
        for sf in [0.0, 0.005, 0.015, -1.0, 300.01, f64::NAN, f64::INFINITY] {
            assert_eq!(tpch_units(sf), None, "{sf}");
        }
    }

    /// A one-contender study with these steps (and any extra contender lines).
    fn study(contender: &str, dataset: &str, steps: &str) -> Source {
        Source::new(
            "t.toml",
            format!(
                "[study]\nname = \"t\"\ndescription = \"t\"\n[dataset]\n{dataset}\nrows = 100\n\
                 [[contender]]\nname = \"c\"\n{contender}\n{steps}"
            ),
        )
    }

    const LOAD: &str = "[[step]]\nname = \"load\"\nkind = \"load\"\n";
    const OLTP: &str = "[[step]]\nname = \"o\"\nkind = \"oltp\"\nworkload = \"point_select\"\nthreads = 2\nduration_s = 3\n";

    fn check_text(src: &Source) -> Result<Study, StudyError> {
        parse(src, &Request::default())
    }

    /// `mysql-5.6` is a contender's name (an override finds it, quoted or not); a name that
    /// could climb out of the run directory or hide a part of a key is not.
    #[test]
    fn a_contender_name_may_hold_a_version() {
        let text = |name: &str| {
            Source::new(
                "t.toml",
                format!(
                    "[study]\nname = \"t\"\ndescription = \"t\"\n[dataset]\ngenerator = \"user_logs\"\nrows = 100\n\
                     [[contender]]\nname = \"{name}\"\nengine = \"sqlite\"\n{LOAD}"
                ),
            )
        };
        let req = Request {
            sets: vec!["contender.v-3.45.journal_mode=wal".into()],
            ..Request::default()
        };
        let s = parse(&text("v-3.45"), &req).expect("v-3.45 is a name");
        assert_eq!(s.contenders[0].name, "v-3.45");
        for bad in ["..", ".v", "v.", "v..1", "-v", "v/1", "v 1"] {
            let e = check_text(&text(bad)).map(|_| ()).unwrap_err();
            assert!(e.message.contains("is not allowed"), "{bad}: {}", e.message);
        }
        assert!(
            !is_safe_name("v-3.45"),
            "steps and studies keep their names"
        );
    }

    #[test]
    fn no_message_shows_parser_internals() {
        // Every value decoded through a type of our own (untagged, enums, structs), given
        // something of the wrong kind.
        let oltp = "workload = \"point_select\"\nthreads = 2\nduration_s = 3";
        let cases = [
            (
                "oltp",
                "workload = \"point_select\"\nthreads = [4, -1]\nduration_s = 3",
            ),
            (
                "oltp",
                "workload = \"point_select\"\nthreads = 1.5\nduration_s = 3",
            ),
            (
                "oltp",
                "workload = \"point_select\"\nthreads = { n = 1 }\nduration_s = 3",
            ),
            ("oltp", "workload = 3\nthreads = 2\nduration_s = 3"),
            ("oltp", "workload = {}\nthreads = 2\nduration_s = 3"),
            ("oltp", "workload = \"x\"\nthreads = 2\nduration_s = 3"),
            ("oltp", &format!("{oltp}\ndistribution = 2")),
            ("oltp", &format!("{oltp}\ndistribution = \"zipf\"")),
            ("oltp", &format!("{oltp}\narrival = [1]")),
            ("oltp", &format!("{oltp}\narrival = \"burst\"")),
            ("oltp", &format!("{oltp}\nrate = \"fast\"")),
            ("oltp", &format!("{oltp}\nskip_trx = 1")),
            ("ddl", "action = 1"),
            ("ddl", "action = { create_index = 1 }"),
            ("ddl", "action = \"truncate\""),
            (
                "queries",
                "clients = 1\nper_client = 1\nqueries = [\"SELECT ?\"]\nparams = [5]",
            ),
            (
                "queries",
                "clients = 1\nper_client = 1\nqueries = [\"SELECT ?\"]\nparams = [\"a\"]",
            ),
            (
                "queries",
                "clients = 1\nper_client = 1\nqueries = \"SELECT 1\"",
            ),
            (
                "queries",
                "clients = -1\nper_client = 1\nqueries = [\"SELECT 1\"]",
            ),
            ("count", "cold = \"yes\""),
            ("load", "batch_rows = 1.5"),
        ];
        for (kind, text) in cases {
            let table: toml::Table = toml::from_str(text).expect("case is TOML");
            let e = StepParams::decode(kind, &table).expect_err(text);
            for internal in [
                "enum ",
                "struct ",
                "variant",
                "u64",
                "u8",
                "f64",
                "map",
                "sequence",
                "floating point",
                "string only",
                "element",
            ] {
                assert!(
                    !e.message.contains(internal),
                    "{kind} `{text}`: {}: {}",
                    e.path,
                    e.message
                );
            }
        }
        let e = StepParams::decode(
            "oltp",
            &toml::from_str("workload = \"point_select\"\nthreads = [4, -1]\nduration_s = 3")
                .expect("toml"),
        )
        .expect_err("negative threads");
        assert_eq!(e.path.to_string(), "threads");
        assert_eq!(
            e.message,
            "threads must be a positive client count or a list of them"
        );
    }

    #[test]
    fn every_scale_is_checked_whichever_is_chosen() {
        let src = Source::new(
            "t.toml",
            format!(
                "[study]\nname = \"t\"\ndescription = \"t\"\n[dataset]\ngenerator = \"user_logs\"\n\
                 rows = 100\n[[contender]]\nname = \"c\"\nengine = \"sqlite\"\n{LOAD}\
                 [scale.quick]\ndataset.rows = 10\n[scale.full]\nstep.nope.x = 1\n"
            ),
        );
        for scale in [None, Some("quick")] {
            let req = Request {
                scale: scale.map(str::to_string),
                ..Request::default()
            };
            let e = parse(&src, &req).expect_err("a bad [scale.full]");
            assert!(
                e.message.starts_with("in [scale.full] `step.nope.x`"),
                "{e}"
            );
            assert_eq!(e.line_col, Some((16, 11)), "{e}");
        }
    }

    #[test]
    fn steps_need_a_load_unless_the_contender_may_hold_the_tables() {
        let sb = "generator = \"sbtest\"";
        let ul = "generator = \"user_logs\"";
        let sqlite = "engine = \"sqlite\"";
        let target = "engine = \"postgres\"\ntarget = \"postgres://me@db:5432\"";
        let dry = "engine = \"dry\"";
        // refused on an embedded engine, before or without a load
        let e = check_text(&study(sqlite, sb, OLTP)).expect_err("oltp without load");
        assert_eq!(e.line_col, Some((12, 1)));
        assert!(e.message.contains("add a step with kind = \"load\""), "{e}");
        let e = check_text(&study(sqlite, sb, &format!("{OLTP}{LOAD}"))).expect_err("late");
        assert!(e.message.ends_with("move step \"load\" before it"), "{e}");
        // fine after a load, on an external target, and on the dry engine
        assert!(check_text(&study(sqlite, sb, &format!("{LOAD}{OLTP}"))).is_ok());
        assert!(check_text(&study(target, sb, OLTP)).is_ok());
        assert!(check_text(&study(dry, sb, OLTP)).is_ok());
        // a query that names no table needs none
        let q = |sql: &str| {
            format!(
                "[[step]]\nname = \"q\"\nkind = \"queries\"\nclients = 1\nper_client = 1\nqueries = [\"{sql}\"]\n"
            )
        };
        assert!(check_text(&study(sqlite, ul, &q("SELECT 1"))).is_ok());
        let e = check_text(&study(sqlite, ul, &q("SELECT uid FROM USER_LOGS")))
            .expect_err("a query of the table");
        assert!(e.message.contains("reads table user_logs"), "{e}");
        // a renamed table is the one looked for
        let renamed = "generator = \"user_logs\"\ntable = \"logs\"";
        assert!(check_text(&study(sqlite, renamed, &q("SELECT uid FROM user_logs"))).is_ok());
        // oltp needs the sbtest tables, whatever the contender, unless it is dry
        for c in [sqlite, target] {
            let e = check_text(&study(c, ul, &format!("{LOAD}{OLTP}"))).expect_err("user_logs");
            assert!(e.message.contains("use generator = \"sbtest\""), "{e}");
        }
        assert!(check_text(&study(dry, ul, OLTP)).is_ok());
    }

    #[test]
    fn a_second_contender_without_target_still_needs_the_load() {
        let src = study(
            "engine = \"postgres\"\ntarget = \"postgres://me@db:5432\"\n\
             [[contender]]\nname = \"mine\"\nengine = \"sqlite\"",
            "generator = \"sbtest\"",
            OLTP,
        );
        let e = check_text(&src).expect_err("mine starts empty");
        assert!(e.message.contains("contender `mine` starts empty"), "{e}");
        // even when only the target is chosen: the study itself is wrong
        let req = Request {
            contenders: vec!["c".into()],
            ..Request::default()
        };
        assert!(parse(&src, &req).is_err());
    }
}
