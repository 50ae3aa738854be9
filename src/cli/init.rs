//! `dbduel init [DIR] [--target URL]`: write the `custom` template — a study of your own
//! schema, data and transactions with the files it names — into DIR, refusing to overwrite
//! anything there.

use super::failure::Failure;
use super::output::outln;
use crate::study::template;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct InitArgs {
    /// The directory to write into (made if absent; files already there are never
    /// overwritten).
    #[arg(default_value = "my-study")]
    pub dir: PathBuf,
    /// Add a contender on your own server (`mysql://user@host:3306` or
    /// `postgres://user@host:5432`); its password is read from the environment variable
    /// named by --password-env when the study runs.
    #[arg(long)]
    pub target: Option<String>,
    /// The environment variable holding --target's password.
    #[arg(long, default_value = "DBDUEL_TARGET_PASSWORD", requires = "target")]
    pub password_env: String,
}

/// Write the template's files, each only where nothing is.
pub(super) fn exec(args: InitArgs) -> Result<(), Failure> {
    let t = &template::CUSTOM;
    let study = match &args.target {
        None => t.study().to_string(),
        Some(url) => t
            .study_with_target(url, &args.password_env)
            .ok_or_else(|| {
                Failure::bad_input(format!(
                    "--target {url}: give a mysql://USER@HOST:PORT or postgres://USER@HOST:PORT URL"
                ))
            })?,
    };
    let taken: Vec<String> = t
        .files
        .iter()
        .map(|(rel, _)| args.dir.join(rel))
        .filter(|p| p.exists())
        .map(|p| p.display().to_string())
        .collect();
    if !taken.is_empty() {
        return Err(Failure::bad_input(format!(
            "{} already exist(s); dbduel init never overwrites a file: choose another directory, or move them away",
            taken.join(", ")
        )));
    }
    for (i, (rel, text)) in t.files.iter().enumerate() {
        let text = if i == 0 { study.as_str() } else { text };
        write_new(&args.dir.join(rel), text)?;
    }
    let study_path = args.dir.join(t.files[0].0);
    outln!(
        "wrote {} files into {}; check and run the study:",
        t.files.len(),
        args.dir.display()
    );
    outln!("  dbduel run {} --check", study_path.display());
    outln!("  dbduel run {}", study_path.display());
    Ok(())
}

/// Create `path` (and its directory) holding `text`; an existing file is an error.
fn write_new(path: &Path, text: &str) -> Result<(), Failure> {
    let fail =
        |e: std::io::Error| Failure::bad_input(format!("cannot write {}: {e}", path.display()));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(fail)?;
    std::io::Write::write_all(&mut f, text.as_bytes()).map_err(fail)
}
