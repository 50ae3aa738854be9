//! What every per-second chart shares: a line per contender over the step's seconds, with its
//! marks and the seconds a point covers.

use super::{Figure, PanelView};
use crate::report::series::{Combine, Interval, MAX_POINTS, StepSeries, downsample};
use crate::report::svg::{self, Line, LineChart};

/// `12 s`, `0.5 s`.
fn secs_label(t: f64) -> String {
    if t == t.trunc() {
        format!("{t:.0} s")
    } else {
        format!("{t:.1} s")
    }
}

/// One timeline: a value per point of each contender's series, downsampled.
pub(super) struct Timeline<'a> {
    pub(super) caption: String,
    pub(super) detail: String,
    pub(super) unit_fmt: &'a dyn Fn(f64) -> String,
    pub(super) combine: Combine,
    /// Log scale when the values span more than this ratio (`None`: linear).
    pub(super) log_over: Option<f64>,
    pub(super) shade: Vec<(f64, f64, String)>,
    /// Reference lines (a device profile's limits).
    pub(super) refs: Vec<svg::RefLine>,
}

/// A series' points as (x, y, what the hover text adds).
type PointsOf<'a> = &'a dyn Fn(&StepSeries) -> Vec<(f64, f64, String)>;

/// One line of a timeline: its name, its colour's number and its points.
pub(super) type NamedPoints = (String, usize, Vec<(f64, f64, String)>);

pub(super) fn timeline(
    v: &PanelView<'_>,
    t: Timeline<'_>,
    points_of: PointsOf<'_>,
) -> Option<Figure> {
    let named = v
        .series
        .iter()
        .enumerate()
        .filter_map(|(i, sr)| Some((v.name(i).to_string(), i, points_of(sr.as_ref()?))))
        .collect();
    timeline_of(v, t, named, false)
}

/// A timeline of named lines (a contender's, or a contender's replica's), each with its
/// colour's number and its points.
/// `own_key`: the figure carries a colour key of its lines.
pub(super) fn timeline_of(
    v: &PanelView<'_>,
    t: Timeline<'_>,
    named: Vec<NamedPoints>,
    own_key: bool,
) -> Option<Figure> {
    let mut lines = Vec::new();
    for (name, i, pts) in named {
        if pts.is_empty() {
            continue;
        }
        let xy: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, p.1)).collect();
        let (down, per) = downsample(&xy, MAX_POINTS, t.combine);
        let tips: Vec<String> = if per == 1 {
            pts.iter()
                .map(|p| {
                    let mut s = format!("{}: {}", secs_label(round1(p.0)), (t.unit_fmt)(p.1));
                    if !p.2.is_empty() {
                        s.push_str(&format!(" ({})", p.2));
                    }
                    s
                })
                .collect()
        } else {
            let how = match t.combine {
                Combine::Mean => "mean",
                Combine::Max => "worst",
            };
            down.iter()
                .map(|p| {
                    format!(
                        "{}: {} ({how} of {per} s)",
                        secs_label(round1(p.0)),
                        (t.unit_fmt)(p.1)
                    )
                })
                .collect()
        };
        lines.push(Line {
            name,
            color: svg::color(i),
            points: down,
            tips,
        });
    }
    if lines.iter().all(|l| l.points.len() < 2) {
        return None;
    }
    let ys: Vec<f64> = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .filter(|y| *y > 0.0)
        .collect();
    let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ys.iter().copied().fold(0.0, f64::max);
    let log_y = t.log_over.is_some_and(|r| lo > 0.0 && hi / lo > r);
    let detail = if log_y {
        format!("{}; log scale", t.detail)
    } else {
        t.detail
    };
    let key = if own_key {
        lines.iter().map(|l| (l.name.clone(), l.color)).collect()
    } else {
        Vec::new()
    };
    Some(Figure {
        svg: svg::line_chart(&LineChart {
            title: format!("{}: {}", v.step, t.caption),
            x_label: "seconds into the step".into(),
            lines,
            y_fmt: t.unit_fmt,
            x_fmt: &|x| format!("{x}"),
            log_y,
            categories: None,
            shade: t.shade,
            refs: t.refs,
            marks: marks_of(v),
        }),
        caption: t.caption,
        detail,
        key,
    })
}

/// Each contender's schema changes during the step, numbered in their order.
fn marks_of(v: &PanelView<'_>) -> Vec<svg::Mark> {
    v.series
        .iter()
        .enumerate()
        .filter_map(|(i, sr)| Some((i, sr.as_ref()?)))
        .flat_map(|(i, sr)| {
            sr.marks
                .iter()
                .enumerate()
                .map(move |(k, (a, b, what))| svg::Mark {
                    from: *a,
                    to: *b,
                    number: k + 1,
                    label: format!("{}: {}. {what}", v.name(i), k + 1),
                })
        })
        .collect()
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Intervals long enough to stand for a rate (the last one of a run may be a sliver).
pub(super) fn usable(iv: &Interval) -> bool {
    iv.duration_s() >= 0.25
}
