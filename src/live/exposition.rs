//! The two text exposition formats a scraper may ask for: OpenMetrics (what Prometheus asks
//! for first, `application/openmetrics-text`: families with `# TYPE`/`# UNIT`/`# HELP`, a
//! counter's family named without its `_total`, and the closing `# EOF`) and Prometheus's
//! classic text format 0.0.4 (what a plain `curl` and `promtool check metrics` read: a
//! counter's `# HELP` and `# TYPE` name the `_total` sample, no `# UNIT`, no `# EOF`). Samples
//! and escaped label values are the same in both.

use std::fmt::Write;

/// Which text exposition format to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TextFormat {
    #[default]
    OpenMetrics,
    /// Prometheus's text format 0.0.4.
    Classic,
}

impl TextFormat {
    /// The `Content-Type` of the format's text.
    pub fn content_type(self) -> &'static str {
        match self {
            TextFormat::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            TextFormat::Classic => "text/plain; version=0.0.4; charset=utf-8",
        }
    }

    /// The format an `Accept` header asks for, chosen as the Prometheus client libraries
    /// choose it: OpenMetrics when a media range names `application/openmetrics-text` (with
    /// a `q` other than 0), else the classic text (no header at all included).
    pub fn negotiate(accept: Option<&str>) -> Self {
        let open = accept.into_iter().flat_map(|a| a.split(',')).any(|range| {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("");
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .is_some_and(|q| q.parse::<f64>().is_ok_and(|q| q <= 0.0))
            });
            media.eq_ignore_ascii_case("application/openmetrics-text") && !refused
        });
        if open {
            TextFormat::OpenMetrics
        } else {
            TextFormat::Classic
        }
    }
}

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
    format: TextFormat,
}

impl Exposition {
    pub fn new(format: TextFormat) -> Self {
        Exposition {
            text: String::new(),
            format,
        }
    }

    /// Begin a family: `kind` is `counter`, `gauge` or `histogram`; `name` is the family's
    /// (a counter's without `_total`).
    pub fn family(&mut self, name: &str, kind: &str, unit: Option<&str>, help: &str) {
        match self.format {
            TextFormat::OpenMetrics => {
                let _ = writeln!(self.text, "# TYPE {name} {kind}");
                if let Some(u) = unit {
                    let _ = writeln!(self.text, "# UNIT {name} {u}");
                }
                let _ = writeln!(self.text, "# HELP {name} {help}");
            }
            TextFormat::Classic => {
                let total = if kind == "counter" { "_total" } else { "" };
                let _ = writeln!(self.text, "# HELP {name}{total} {help}");
                let _ = writeln!(self.text, "# TYPE {name}{total} {kind}");
            }
        }
    }

    /// One sample: `name` is the family's name plus its suffix (`_total`, `_bucket`, ...).
    pub fn sample(&mut self, name: &str, labels: &str, value: f64) {
        let _ = writeln!(self.text, "{name}{labels} {}", number(value));
    }

    /// The whole text (OpenMetrics' closed with `# EOF`).
    pub fn finish(mut self) -> String {
        if self.format == TextFormat::OpenMetrics {
            self.text.push_str("# EOF\n");
        }
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

    #[test]
    fn the_format_follows_the_accept_header_and_names_counters_as_each_wants() {
        use TextFormat::*;
        assert_eq!(TextFormat::negotiate(None), Classic);
        assert_eq!(TextFormat::negotiate(Some("*/*")), Classic);
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(TextFormat::negotiate(Some(prometheus)), OpenMetrics);
        assert_eq!(
            TextFormat::negotiate(Some("application/openmetrics-text;q=0, text/plain")),
            Classic
        );
        for (format, type_line, eof) in [
            (OpenMetrics, "# TYPE x_ops counter", true),
            (Classic, "# TYPE x_ops_total counter", false),
        ] {
            let mut x = Exposition::new(format);
            x.family("x_ops", "counter", Some("seconds"), "Ops.");
            x.sample("x_ops_total", "", 1.0);
            let text = x.finish();
            assert!(text.lines().any(|l| l == type_line), "{text}");
            assert_eq!(text.contains("# EOF"), eof, "{text}");
            assert_eq!(text.contains("# UNIT"), format == OpenMetrics, "{text}");
        }
    }
}
