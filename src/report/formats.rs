//! Every output format in one table ([`FORMATS`]): its name, what it is for, how it renders a
//! run and, where it can, a comparison. `run`, `report`, `merge`, `compare` and `rerun` take
//! their `--format` values from it, so a format added here works everywhere it makes sense.

use super::compare::Comparison;
use super::{compare, csv, html, json, series, table};
use crate::results::{Manifest, Summary};
use std::path::Path;

/// A run as a format renders it: its directory (HTML reads the per-second series there),
/// summary and manifest.
pub struct RunView<'a> {
    pub dir: &'a Path,
    pub summary: &'a Summary,
    pub manifest: &'a Manifest,
}

/// A run rendered: the text, or why it could not be written.
type RenderRun = fn(&RunView<'_>) -> Result<String, String>;

/// A comparison rendered.
type RenderComparison = fn(&Comparison) -> Result<String, String>;

/// One output format.
pub struct FormatDef {
    /// The `--format` value.
    pub name: &'static str,
    /// What it is for, in `--help`.
    pub help: &'static str,
    /// A run in this format.
    pub run: RenderRun,
    /// Two runs compared in this format; `None` where a format has no way to show one.
    pub compare: Option<RenderComparison>,
}

/// Every format, the default first.
pub static FORMATS: &[FormatDef] = &[
    FormatDef {
        name: "text",
        help: "a side-by-side table for a terminal, with its context",
        run: |r| Ok(table::render(r.summary, r.manifest, false)),
        compare: Some(|c| Ok(compare::render::text(c, false))),
    },
    FormatDef {
        name: "markdown",
        help: "the same tables in Markdown, for a post or a pull request",
        run: |r| Ok(table::render(r.summary, r.manifest, true)),
        compare: Some(|c| Ok(compare::render::text(c, true))),
    },
    FormatDef {
        name: "json",
        help: "the summary and its context (or the comparison), for scripts",
        run: |r| Ok(json::render(r.summary, r.manifest)),
        compare: Some(|c| {
            serde_json::to_string_pretty(c)
                .map(|t| t + "\n")
                .map_err(|e| format!("cannot write JSON: {e}"))
        }),
    },
    FormatDef {
        name: "html",
        help: "one self-contained page with SVG charts",
        run: |r| {
            Ok(html::render(&series::RunData::load(
                r.dir,
                r.summary.clone(),
                r.manifest.clone(),
            )))
        },
        compare: Some(|c| Ok(compare::render::html(c))),
    },
    FormatDef {
        name: "csv",
        help: "for spreadsheets: one row per contender × step × figure (a comparison: with A, B, the change and the verdict)",
        run: |r| csv::figures(r.summary),
        compare: Some(csv::comparison),
    },
];

/// A format of [`FORMATS`], as a `--format` value.
#[derive(Clone, Copy)]
pub struct Format(&'static FormatDef);

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name)
    }
}

impl Format {
    /// The format called `name`, if there is one.
    pub fn named(name: &str) -> Option<Format> {
        FORMATS.iter().find(|f| f.name == name).map(Format)
    }

    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// The run in this format.
    pub fn run(self, view: &RunView<'_>) -> Result<String, String> {
        (self.0.run)(view)
    }

    /// The comparison in this format (an error names the formats that can show one).
    pub fn compare(self, c: &Comparison) -> Result<String, String> {
        match self.0.compare {
            Some(render) => render(c),
            None => Err(format!(
                "--format {} cannot show a comparison; these can: {}",
                self.0.name,
                FORMATS
                    .iter()
                    .filter(|f| f.compare.is_some())
                    .map(|f| f.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// The parser of `--format`: the table's names, each with its help.
    pub fn parser() -> impl clap::builder::TypedValueParser<Value = Format> {
        use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
        PossibleValuesParser::new(
            FORMATS
                .iter()
                .map(|f| PossibleValue::new(f.name).help(f.help)),
        )
        .map(|name| Format::named(&name).expect("a name of FORMATS"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_the_default_is_first() {
        let mut names: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
        assert_eq!(names[0], "text");
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FORMATS.len());
        assert_eq!(Format::named("csv").map(Format::name), Some("csv"));
        assert!(Format::named("yaml").is_none());
    }
}
