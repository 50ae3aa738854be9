//! The study as run, as the manifest records it (scale and overrides applied): read as
//! `path → text` leaves, and its contenders' device profiles.

use crate::sandbox::device_profile::DeviceProfile;
use serde_json::Value;
use std::collections::BTreeMap;

/// A JSON value as `path → text` leaves; arrays of named objects are keyed by name.
pub fn flatten(v: &serde_json::Value) -> BTreeMap<String, String> {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, String>) {
        let join = |k: &str| {
            if prefix.is_empty() {
                k.to_string()
            } else {
                format!("{prefix}.{k}")
            }
        };
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    walk(&join(k), x, out);
                }
            }
            serde_json::Value::Array(a)
                if a.iter()
                    .all(|x| x.get("name").and_then(|n| n.as_str()).is_some())
                    && !a.is_empty() =>
            {
                for x in a {
                    let name = x.get("name").and_then(|n| n.as_str()).unwrap_or("");
                    walk(&join(name), x, out);
                }
            }
            serde_json::Value::Null => {}
            other => {
                let text = match other {
                    serde_json::Value::String(s) => s.clone(),
                    x => x.to_string(),
                };
                out.insert(prefix.to_string(), text);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk("", v, &mut out);
    out
}

/// The contenders of the study as run that have a device profile: (name, profile, what
/// else makes the contender — engine, target, its other options).
pub fn device_profiles(study: &Value) -> Vec<(String, DeviceProfile, Value)> {
    study
        .get("contender")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let mut o = c.get("options").cloned()?;
            let p: DeviceProfile =
                serde_json::from_value(o.as_object_mut()?.remove("device_profile")?).ok()?;
            let rest = serde_json::json!([c.get("engine"), c.get("target"), o]);
            Some((c.get("name")?.as_str()?.to_string(), p, rest))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flattening_keys_named_arrays_by_name() {
        let v = serde_json::json!({
            "dataset": {"rows": 10},
            "step": [{"name": "load", "batch_rows": 5}, {"name": "q", "queries": ["a", "b"]}],
            "x": null
        });
        let f = flatten(&v);
        assert_eq!(f.get("dataset.rows").map(String::as_str), Some("10"));
        assert_eq!(f.get("step.load.batch_rows").map(String::as_str), Some("5"));
        assert_eq!(f.get("step.q.queries.0").map(String::as_str), None);
        assert!(f.contains_key("step.q.queries"));
        assert!(!f.contains_key("x"));
    }
}
