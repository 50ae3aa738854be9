//! Rendering results for people and scripts: a side-by-side table (text or Markdown) with its
//! context, the summary as JSON, or a self-contained HTML page with charts; and the
//! comparison of two runs. Reads only what is in the run directories, and works from each
//! step's `Metric`s (what a chart or a finding needs of a figure, its `Role`, the step kind
//! gives) and generic per-second series, never from step-kind or figure names. The formats
//! are one table, [`FORMATS`]; the HTML's charts are panels, a file each under `html/`.

pub mod compare;
pub mod csv;
pub mod finding_checks;
pub mod findings;
pub mod format;
pub mod formats;
pub mod html;
pub mod json;
pub mod page;
pub mod reference;
pub mod series;
pub mod study;
pub mod svg;
pub mod table;
pub mod verdict;
pub mod view;

use crate::results::{Manifest, ResultsError, RunDir, Summary};
use std::path::{Path, PathBuf};

pub use formats::{FORMATS, Format, RunView};

/// The name of the HTML report every run writes into its directory.
pub const HTML_FILE: &str = "report.html";

/// The run in directory `dir` (whose summary and manifest are given) in `format`.
pub fn render(
    dir: &Path,
    summary: &Summary,
    manifest: &Manifest,
    format: Format,
) -> Result<String, String> {
    format.run(&RunView {
        dir,
        summary,
        manifest,
    })
}

/// Write `report.html` into the run directory (atomically); returns its path.
pub fn write_html(
    dir: &RunDir,
    summary: &Summary,
    manifest: &Manifest,
) -> Result<PathBuf, ResultsError> {
    let page = html::render(&series::RunData::load(
        &dir.path,
        summary.clone(),
        manifest.clone(),
    ));
    let path = dir.path.join(HTML_FILE);
    crate::results::write_atomic(&path, page.as_bytes())?;
    Ok(path)
}

/// Read a run directory for rendering or comparing.
pub fn load(path: &Path) -> Result<series::RunData, ResultsError> {
    let dir = RunDir::open(path)?;
    let summary = dir.read_summary()?;
    let manifest = dir.read_manifest()?;
    Ok(series::RunData::load(&dir.path, summary, manifest))
}
