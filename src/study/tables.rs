//! Steps that need the dataset's tables before they run. Only a `load` step creates them, so
//! a study whose step would find no table on a contender that starts empty is refused before
//! anything runs, with the step to add; so is a step that needs tables the dataset never has.
//!
//! A contender with a `target` may already hold the tables on its server, and the `dry`
//! engine holds none and needs none: neither starts empty in this sense.

use super::Step;
use super::model::StudyFile;
use crate::dataset::Generator;
use crate::decode::{DecodeError, KeyPath};
use crate::workload::kind::describe;

/// Check every step's tables against the contenders the study runs them on (all of the
/// study's contenders, whichever are chosen for a run). Paths are from the document root.
pub fn check(
    f: &StudyFile,
    generator: Option<Generator>,
    steps: &[Step],
) -> Result<(), DecodeError> {
    let Some(generator) = generator else {
        return without_dataset(steps);
    };
    let tables: Vec<String> = generator
        .tables(
            &f.dataset.table,
            f.dataset.tables,
            f.dataset.scale(),
            f.dataset.seed,
        )
        .into_iter()
        .map(|t| t.name)
        .collect();
    let real = f
        .contenders
        .iter()
        .find(|c| crate::engines::keeps_rows(&c.engine));
    let empty = f
        .contenders
        .iter()
        .find(|c| crate::engines::keeps_rows(&c.engine) && c.target.is_none());
    let load = steps.iter().position(|s| s.params.kind().creates_tables());
    for (i, s) in steps.iter().enumerate() {
        let at = KeyPath::root().key("step").index(i);
        let kind = s.params.kind();
        kind.check_dataset(generator, f.dataset.scale())
            .map_err(|e| e.under(&at))?;
        if let Some(g) = kind.generator()
            && g.generator != generator
            && real.is_some()
        {
            return Err(DecodeError::at(
                at.key("kind"),
                format!(
                    "step {:?} {}; dataset.generator = {:?} makes {} instead; use {}",
                    s.name,
                    g.why,
                    f.dataset.generator,
                    describe(&tables),
                    g.fix
                ),
            ));
        }
        let own_tables = steps[..i]
            .iter()
            .any(|s| s.params.kind().makes_own_tables());
        if let (Some((key, does, t)), Some(c), false) = (kind.names_table(), empty, own_tables)
            && !tables.iter().any(|n| n.eq_ignore_ascii_case(&t))
        {
            return Err(DecodeError::at(
                at.join(&key),
                format!(
                    "{does} table {t}, which nothing creates on contender `{}` (it has no \
                     target); the dataset's tables are: {}",
                    c.name,
                    tables.join(", ")
                ),
            ));
        }
        let (Some(c), Some(need)) = (empty, kind.needs(&tables)) else {
            continue;
        };
        match load {
            Some(l) if l < i => {}
            later => {
                let fix = match later {
                    Some(l) => format!("move step {:?} before it", steps[l].name),
                    None => "add a step with kind = \"load\" before it".to_string(),
                };
                return Err(DecodeError::at(
                    at.join(&need.key),
                    format!(
                        "step {:?} {}, but no step before it creates {}: contender `{}` starts \
                         empty (it has no target); {fix}",
                        s.name,
                        need.what,
                        if need.one { "it" } else { "them" },
                        c.name,
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A study without a generated dataset: no step may load it or work on its tables.
fn without_dataset(steps: &[Step]) -> Result<(), DecodeError> {
    for (i, s) in steps.iter().enumerate() {
        let at = KeyPath::root().key("step").index(i);
        let kind = s.params.kind();
        let what = if kind.creates_tables() {
            Some("loads the generated dataset (it has no files)".to_string())
        } else if let Some(g) = kind.generator() {
            Some(g.why.to_string())
        } else {
            kind.needs(&[]).map(|n| n.what)
        };
        if let Some(what) = what {
            return Err(DecodeError::at(
                at.key("kind"),
                format!(
                    "step {:?} {what}, but this study has no generated dataset ([dataset] is absent or generator = \"none\"); load your own files with kind = \"load\" and files = {{ TABLE = \"FILE.csv\" }}, or add a [dataset] with a generator",
                    s.name
                ),
            ));
        }
    }
    Ok(())
}
