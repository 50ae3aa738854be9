//! The JSON report: the run's summary as written, plus — when figures are judged against a
//! baseline (the run's, or a contender's own) — each judged contender's ratios, so a script
//! reads the same `×N` the tables show, and the original's findings as checked
//! (`findings_checked`: each one's ratios, verdict and why).

use super::view::ReportView;
use crate::results::{Better, Manifest, Summary};
use serde_json::{Map, Value, json};

/// The summary as JSON, with `ratios` beside it when any contender is judged against another.
pub fn render(summary: &Summary, manifest: &Manifest) -> String {
    let mut v = serde_json::to_value(summary).unwrap_or_default();
    let view = ReportView::build(summary, manifest, None);
    let ratios = ratios(&view);
    if let (Value::Object(o), false) = (&mut v, ratios.is_empty()) {
        o.insert("ratios".into(), Value::Array(ratios));
    }
    if let (Value::Object(o), false) = (&mut v, view.checks.is_empty()) {
        o.insert("findings_checked".into(), json!(view.checks));
    }
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

/// Per judged contender: `{contender, against, figures: {"STEP.KEY": ratio}}`, the ratio of
/// each figure with a better direction to the same figure of the contender it is judged
/// against (both finite, that one not 0).
fn ratios(v: &ReportView<'_>) -> Vec<Value> {
    let names = &v.summary.contenders;
    v.bases
        .iter()
        .enumerate()
        .filter_map(|(i, b)| {
            let b = (*b)?;
            let mut figures = Map::new();
            for st in &v.steps {
                for row in &st.rows {
                    let (Some(f), Some(base)) = (row.figs[i], row.figs[b]) else {
                        continue;
                    };
                    let r = f.value / base.value;
                    if f.better != Better::None && base.value != 0.0 && r.is_finite() {
                        figures.insert(format!("{}.{}", st.name, f.key), json!(r));
                    }
                }
            }
            Some(json!({
                "contender": names[i].name,
                "against": names[b].name,
                "figures": figures,
            }))
        })
        .collect()
}
