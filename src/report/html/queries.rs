//! Numbered queries' seconds (figures whose role is a query's) as a line per contender over
//! the queries.

use super::{Figure, PanelView};
use crate::report::format;
use crate::report::svg::{self, Line, LineChart};
use crate::results::{Metric, Role};

/// A numbered query's figure: (its query's number, its phase: `hot` or `cold`). Such figures
/// are drawn together by [`query_times`], not one bar chart each.
pub(super) fn query_figure(m: &Metric) -> Option<(u32, &str)> {
    match &m.role {
        Some(Role::Query { number, phase }) => Some((*number, phase.as_str())),
        _ => None,
    }
}

/// One contender's line of `which` (`hot` or `cold`) query times: (the query's place among
/// `queries`, seconds) with a tip each, in the axis's order. The step records its queries in
/// the order they ran (stream 0's: Q14, Q2, Q9, …), not 1 to 22.
fn query_points(
    name: &str,
    metrics: &[Metric],
    queries: &[u32],
    which: &str,
) -> (Vec<(f64, f64)>, Vec<String>) {
    let mut out: Vec<((f64, f64), String)> = metrics
        .iter()
        .filter_map(|m| {
            let (q, w) = query_figure(m)?;
            let j = queries.iter().position(|x| *x == q)?;
            (w == which && m.value > 0.0).then(|| {
                let tip = format!("{name}: Q{q} {which} {}", format::seconds(m.value));
                ((j as f64, m.value), tip)
            })
        })
        .collect();
    out.sort_by(|a, b| a.0.0.total_cmp(&b.0.0));
    out.into_iter().unzip()
}

/// Steps that time numbered queries (`tpch-power`): per query, each contender's best hot
/// seconds and its cold seconds, one line per contender over the queries, log scale.
pub(super) fn query_times(v: &PanelView<'_>) -> Vec<Figure> {
    let mut queries: Vec<u32> = v
        .keys
        .iter()
        .filter_map(|m| query_figure(m))
        .map(|(q, _)| q)
        .collect();
    queries.sort_unstable();
    queries.dedup();
    if queries.is_empty() {
        return Vec::new();
    }
    let cats: Vec<String> = queries.iter().map(|q| format!("Q{q}")).collect();
    let chart = |which: &str, caption: &str| {
        let lines: Vec<Line> = v
            .per
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let metrics = &p.as_ref()?.metrics;
                let (points, tips) = query_points(v.name(i), metrics, &queries, which);
                (!points.is_empty()).then(|| Line {
                    name: v.name(i).to_string(),
                    color: svg::color(i),
                    points,
                    tips,
                })
            })
            .collect();
        let fmt = |x: f64| format::seconds(x);
        let none = |_: f64| String::new();
        Figure {
            caption: caption.to_string(),
            detail: "per query, log scale; lower is better; TPC-H-like, not audited".into(),
            svg: svg::line_chart(&LineChart {
                title: format!("{}: {caption}", v.step),
                x_label: "query".into(),
                lines,
                y_fmt: &fmt,
                x_fmt: &none,
                log_y: true,
                categories: Some(cats.clone()),
                shade: Vec::new(),
                refs: Vec::new(),
                marks: Vec::new(),
            }),
            key: Vec::new(),
        }
    };
    vec![
        chart("hot", "best hot seconds per query"),
        chart("cold", "cold seconds per query"),
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_contenders_query_line_runs_in_the_axis_order_not_the_run_order() {
        use crate::results::{Better, Metric, Role, Unit};
        let m = |number: u32, phase: &str, value: f64| {
            Metric::new("", "", value, Unit::Seconds, Better::Lower).with_role(Role::Query {
                number,
                phase: phase.into(),
            })
        };
        // as stream 0 ran them: Q14, Q2, Q9; a cold figure and a zero left out
        let metrics = [
            m(14, "hot", 0.5),
            m(14, "cold", 9.0),
            m(2, "hot", 0.2),
            m(9, "hot", 0.0),
            m(9, "hot", 0.9),
        ];
        let (points, tips) = super::query_points("pg", &metrics, &[2, 9, 14], "hot");
        assert_eq!(points, vec![(0.0, 0.2), (1.0, 0.9), (2.0, 0.5)]);
        assert_eq!(tips[0], "pg: Q2 hot 200 ms");
        assert_eq!(tips.len(), 3);
    }
}
