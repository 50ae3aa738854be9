//! `[[finding]]` tables checked against the study they are in: figures on its steps,
//! contenders it has, an original ratio a verdict can be read against, scales it has.

use super::model::StudyFile;
use crate::decode::{DecodeError, KeyPath};

/// Each `[[finding]]` of `f`, or the first error, located at its key.
pub fn check(f: &StudyFile) -> Result<(), DecodeError> {
    let root = KeyPath::root();
    for (i, x) in f.findings.iter().enumerate() {
        let at = root.key("finding").index(i);
        for (key, text) in [("says", &x.says), ("source", &x.source)] {
            if text.trim().is_empty() {
                return Err(DecodeError::at(
                    at.key(key),
                    format!("{key} is empty: say what the original found and which one said it"),
                ));
            }
        }
        figure(f, at.key("figure"), &x.figure)?;
        if let Some(o) = &x.over_figure {
            figure(f, at.key("over_figure"), o)?;
        }
        contender(f, at.key("of"), &x.of)?;
        if let Some(o) = &x.over {
            contender(f, at.key("over"), o)?;
        }
        if x.over.is_none() && x.over_figure.is_none() {
            return Err(DecodeError::at(
                at.clone(),
                "a finding sets one figure against another: give `over` (another contender's same figure) or `over_figure` (the same contender's figure at another step), or both".to_string(),
            ));
        }
        if let Some((lo, hi)) = x.original.bounds()
            && !(lo.is_finite()
                && hi.is_finite()
                && lo > 0.0
                && (lo == hi || lo >= 1.0 || hi <= 1.0))
        {
            return Err(DecodeError::at(
                at.key("original"),
                format!(
                    "original = {} is not a ratio the run can be judged against: give the original's figure over its other figure, more than 0 (1 for a tie), a range [LO, HI] on one side of 1, or \"above\" / \"below\" where it gave no figure",
                    x.original.text()
                ),
            ));
        }
        for (j, s) in x.scales.iter().enumerate() {
            if !f.scale.contains_key(s) {
                return Err(DecodeError::at(
                    at.key("scales").index(j),
                    format!("scales names {s:?}, and this study has no [scale.{s}] table"),
                ));
            }
        }
    }
    Ok(())
}

fn figure(f: &StudyFile, at: KeyPath, key: &str) -> Result<(), DecodeError> {
    let step = key.split_once('.').filter(|(_, k)| !k.is_empty());
    if step.is_some_and(|(s, _)| f.steps.iter().any(|x| x.name == s)) {
        return Ok(());
    }
    Err(DecodeError::at(
        at,
        format!(
            "{key:?} is not \"STEP.FIGURE\" with STEP one of this study's steps ({})",
            f.step_names()
        ),
    ))
}

fn contender(f: &StudyFile, at: KeyPath, name: &str) -> Result<(), DecodeError> {
    if f.contenders.iter().any(|c| c.name == name) {
        return Ok(());
    }
    Err(DecodeError::at(
        at,
        format!(
            "{name:?} names no [[contender]] of this study; contenders are: {}",
            f.contender_names()
        ),
    ))
}
