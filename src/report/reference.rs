//! Published figures set beside a run's (`[[reference]]` tables of the study as run): which
//! apply to the run (its scale), and each one's value for a step's figure. They are shown,
//! marked "published", and never ranked or judged: they were not measured here.

use crate::results::Manifest;
use crate::results::ReferenceSpec;

/// The references of the study as run that apply at the run's scale.
pub fn of(m: &Manifest) -> Vec<ReferenceSpec> {
    let all: Vec<ReferenceSpec> =
        serde_json::from_value(m.study["reference"].clone()).unwrap_or_default();
    all.into_iter()
        .filter(|r| r.scale.is_none() || r.scale == m.scale)
        .collect()
}

/// A reference's published value of figure `key` of step `step`.
pub fn value(r: &ReferenceSpec, step: &str, key: &str) -> Option<f64> {
    r.figures.get(&format!("{step}.{key}")).copied()
}

/// Its column heading.
pub fn column(r: &ReferenceSpec) -> String {
    format!("{} (published)", r.name)
}

/// One line of context: who measured it, on what, where it was published.
pub fn describe(r: &ReferenceSpec) -> String {
    format!(
        "{}: published, not measured here — {} on {}; {}",
        column(r),
        r.engine,
        r.hardware,
        r.source
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_follow_the_runs_scale() {
        let study = serde_json::json!({ "reference": [
            { "name": "full-only", "source": "s", "engine": "e", "hardware": "h",
              "scale": "full", "figures": { "load.elapsed_s": 78.02 } },
            { "name": "always", "source": "s", "engine": "e", "hardware": "h",
              "figures": { "load.elapsed_s": 1.5 } }
        ]});
        let mut m: Manifest = serde_json::from_value(serde_json::json!({
            "schema_version": 1,
            "dbduel": { "version": "0", "commit": "x" },
            "source": "t", "scale": "quick", "overrides": [], "study": study,
            "started_at": "t",
            "host": { "hostname": "h", "cpu_model": "c", "cores": 2, "mem_total_bytes": 1, "kernel": "k" },
            "contenders": []
        }))
        .expect("manifest");
        let names = |m: &Manifest| of(m).into_iter().map(|r| r.name).collect::<Vec<_>>();
        assert_eq!(names(&m), ["always"]);
        m.scale = Some("full".into());
        assert_eq!(names(&m), ["full-only", "always"]);
        let r = &of(&m)[0];
        assert_eq!(value(r, "load", "elapsed_s"), Some(78.02));
        assert_eq!(value(r, "load", "rows"), None);
        assert!(describe(r).contains("published, not measured here"));
    }
}
