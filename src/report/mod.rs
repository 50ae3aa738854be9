//! Rendering results for people and scripts: a side-by-side table (text or Markdown) with
//! its context, or the summary as JSON. Reads only what is in the run directory.

pub mod format;
pub mod table;

use crate::results::{Manifest, Summary};

/// Output formats of `dbduel report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Markdown,
    Json,
}

/// Render a run.
pub fn render(summary: &Summary, manifest: &Manifest, format: Format) -> String {
    match format {
        Format::Text => table::render(summary, manifest, false),
        Format::Markdown => table::render(summary, manifest, true),
        Format::Json => serde_json::to_string_pretty(summary).unwrap_or_default() + "\n",
    }
}
