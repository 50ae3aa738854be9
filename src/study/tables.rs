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
pub fn check(f: &StudyFile, steps: &[Step]) -> Result<(), DecodeError> {
    let Some(generator) = Generator::parse(&f.dataset.generator) else {
        return Ok(());
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
        if let (Some((key, does, t)), Some(c)) = (kind.names_table(), empty)
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
