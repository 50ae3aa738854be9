//! Published figures set beside a run's (`[[reference]]` tables of the study as run), at every
//! scale, and each one's value for a step's figure. They are shown, marked "published", and
//! never ranked or judged: they were not measured here. A reference made at one scale's sizes
//! (the original's) says so in a run of another.

use crate::results::Manifest;
use crate::results::ReferenceSpec;

/// The references of the study as run.
pub fn of(m: &Manifest) -> Vec<ReferenceSpec> {
    serde_json::from_value(m.study["reference"].clone()).unwrap_or_default()
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
pub fn describe(r: &ReferenceSpec, run_scale: Option<&str>) -> String {
    format!("{}: published, {}", column(r), provenance(r, run_scale))
}

/// Who measured it, on what, where it was published, and — in a run at another scale than
/// the one its sizes are — that its sizes are not the run's.
pub fn provenance(r: &ReferenceSpec, run_scale: Option<&str>) -> String {
    let sizes = match r.scale.as_deref() {
        Some(s) if Some(s) != run_scale => {
            format!("; at the sizes of `--scale {s}`, not this run's")
        }
        _ => String::new(),
    };
    format!(
        "not measured here — {} on {}; {}{sizes}",
        r.engine, r.hardware, r.source
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_show_at_every_scale_saying_whose_sizes_they_are() {
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
        assert_eq!(names(&m), ["full-only", "always"]);
        let r = &of(&m)[0];
        assert!(
            describe(r, Some("quick")).contains("at the sizes of `--scale full`, not this run's"),
            "{}",
            describe(r, Some("quick"))
        );
        m.scale = Some("full".into());
        assert_eq!(names(&m), ["full-only", "always"]);
        assert_eq!(value(r, "load", "elapsed_s"), Some(78.02));
        assert_eq!(value(r, "load", "rows"), None);
        assert!(describe(r, Some("full")).contains("published, not measured here"));
        assert!(!describe(r, Some("full")).contains("sizes"));
        assert!(!describe(&of(&m)[1], None).contains("sizes"));
    }
}
