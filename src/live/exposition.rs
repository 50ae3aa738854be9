//! The OpenMetrics text exposition format (what Prometheus scrapes with
//! `application/openmetrics-text`): metric families with their `# TYPE`/`# HELP` lines,
//! samples with escaped label values, and the closing `# EOF`.

use std::fmt::Write;

/// The content type of [`Exposition::finish`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A label value escaped for the exposition: backslash, double quote and line feed.
pub fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for ch in v.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Labels as `{a="x",b="y"}` (empty values left out; nothing when none remain).
pub fn labels(pairs: &[(&str, &str)]) -> String {
    let inner: Vec<String> = pairs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    if inner.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", inner.join(","))
    }
}

/// A number as OpenMetrics writes it (`+Inf`, integers without a fraction).
pub fn number(v: f64) -> String {
    if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if v.is_nan() {
        "NaN".into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// The exposition being written: families in the order they are begun, each once.
#[derive(Default)]
pub struct Exposition {
    text: String,
}

impl Exposition {
    /// Begin a family: `kind` is `counter`, `gauge` or `histogram`.
    pub fn family(&mut self, name: &str, kind: &str, unit: Option<&str>, help: &str) {
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
        if let Some(u) = unit {
            let _ = writeln!(self.text, "# UNIT {name} {u}");
        }
        let _ = writeln!(self.text, "# HELP {name} {help}");
    }

    /// One sample: `name` is the family's name plus its suffix (`_total`, `_bucket`, ...).
    pub fn sample(&mut self, name: &str, labels: &str, value: f64) {
        let _ = writeln!(self.text, "{name}{labels} {}", number(value));
    }

    /// The whole text, closed with `# EOF`.
    pub fn finish(mut self) -> String {
        self.text.push_str("# EOF\n");
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(
            labels(&[("contender", "my \"fast\" \\ one\nx"), ("shard", "")]),
            r#"{contender="my \"fast\" \\ one\nx"}"#
        );
        assert_eq!(labels(&[("a", "")]), "");
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(f64::INFINITY), "+Inf");
    }
}
