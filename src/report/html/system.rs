//! The machine's per-second charts: CPU, memory and each disk, with a device profile's limits drawn.

use super::timeline::{Timeline, timeline};
use super::{Figure, PanelView};
use crate::report::format;
use crate::report::series::{Combine, RunData, SystemPoint};
use crate::report::svg::{self};
use crate::sandbox::device_profile::DeviceProfile;

/// Host CPU, disk throughput and IOPS each second, sampled beside every step.
pub(super) fn system_timelines(v: &PanelView<'_>) -> Vec<Figure> {
    let disk = v
        .series
        .iter()
        .flatten()
        .find(|s| !s.system.is_empty())
        .map(|s| s.disk.clone())
        .unwrap_or_default();
    let pct = |x: f64| format!("{x:.0}%");
    let busy = |x: f64| format!("{}%", svg::trim_zeros(&format!("{x:.1}")));
    // Disk rates in decimal MB/s, as iostat and vendors' data sheets give them.
    let mbps = |x: f64| format!("{} MB/s", svg::trim_zeros(&format!("{:.2}", x / 1e6)));
    let iops = |x: f64| format::count(x);
    let mut out = Vec::new();
    out.extend(timeline(
        v,
        Timeline {
            caption: "host CPU".into(),
            detail: "busy % of all cores, each second".into(),
            unit_fmt: &pct,
            combine: Combine::Mean,
            log_over: None,
            shade: Vec::new(),
            refs: Vec::new(),
        },
        &|sr| {
            sr.system
                .iter()
                .map(|p| {
                    let eng = p
                        .engine_cpu_pct
                        .map(|e| format!("engine {e:.0}% of a core"))
                        .unwrap_or_default();
                    (p.t_s, p.cpu_busy_pct, eng)
                })
                .collect()
        },
    ));
    // Disk figures each way, as nmon showed them, with each contender's device profile
    // limit as a dashed line in its colour.
    let profiles = device_profiles(v.run);
    let disk_timeline = |caption: &str,
                         fmt: &dyn Fn(f64) -> String,
                         y: fn(&SystemPoint) -> f64,
                         limit: fn(&DeviceProfile) -> f64| {
        let axis = DiskAxis { fmt, y, limit };
        disk_timeline(v, &profiles, &disk, caption, axis)
    };
    out.extend(disk_timeline(
        "disk reads",
        &mbps,
        |p| p.read_bytes_per_s,
        |d| d.read_bps() as f64,
    ));
    out.extend(disk_timeline(
        "disk writes",
        &mbps,
        |p| p.write_bytes_per_s,
        |d| d.write_bps() as f64,
    ));
    out.extend(disk_timeline(
        "read IOPS",
        &iops,
        |p| p.read_iops,
        |d| d.read_iops as f64,
    ));
    out.extend(disk_timeline(
        "write IOPS",
        &iops,
        |p| p.write_iops,
        |d| d.write_iops as f64,
    ));
    out.extend(timeline(
        v,
        Timeline {
            caption: "disk busy".into(),
            detail: format!("{disk}, % of each second with a request in flight (nmon's Busy)"),
            unit_fmt: &busy,
            combine: Combine::Mean,
            log_over: None,
            shade: Vec::new(),
            refs: Vec::new(),
        },
        &|sr| {
            sr.system
                .iter()
                .map(|p| (p.t_s, p.busy_pct, String::new()))
                .collect()
        },
    ));
    out
}

/// One disk figure of the system series: how to show it, read it from a point, and read the
/// matching limit from a device profile.
struct DiskAxis<'a> {
    fmt: &'a dyn Fn(f64) -> String,
    y: fn(&SystemPoint) -> f64,
    limit: fn(&DeviceProfile) -> f64,
}

/// A disk figure's timeline, with each contender's device profile limit as a dashed line in
/// its colour.
fn disk_timeline(
    v: &PanelView<'_>,
    profiles: &[Option<DeviceProfile>],
    disk: &str,
    caption: &str,
    axis: DiskAxis<'_>,
) -> Option<Figure> {
    let DiskAxis { fmt, y, limit } = axis;
    let peak = v
        .series
        .iter()
        .flatten()
        .flat_map(|sr| sr.system.iter().map(y))
        .fold(0.0, f64::max);
    let (refs, above) = limit_lines(v, profiles, fmt, limit, peak);
    let mut detail = format!("{disk}, each second");
    if !above.is_empty() {
        detail.push_str(&format!("; above the chart: {}", above.join(", ")));
    }
    timeline(
        v,
        Timeline {
            caption: caption.into(),
            detail,
            unit_fmt: fmt,
            combine: Combine::Mean,
            log_over: None,
            shade: Vec::new(),
            refs,
        },
        &|sr| {
            sr.system
                .iter()
                .map(|p| (p.t_s, y(p), String::new()))
                .collect()
        },
    )
}

/// One line per profile limit, with the contenders it holds; in a contender's colour when it
/// holds one. A limit far above what was measured would flatten the lines: it is named
/// instead (the second list).
fn limit_lines(
    v: &PanelView<'_>,
    profiles: &[Option<DeviceProfile>],
    fmt: &dyn Fn(f64) -> String,
    limit: fn(&DeviceProfile) -> f64,
    peak: f64,
) -> (Vec<svg::RefLine>, Vec<String>) {
    let mut limits: Vec<(String, f64, Vec<usize>)> = Vec::new();
    for (i, p) in profiles.iter().enumerate() {
        let Some(p) = p else { continue };
        if v.series.get(i).is_none_or(|s| s.is_none()) {
            continue;
        }
        let label = format!("{} limit {}", p.name, fmt(limit(p)));
        match limits.iter_mut().find(|l| l.0 == label) {
            Some(l) => l.2.push(i),
            None => limits.push((label, limit(p), vec![i])),
        }
    }
    let mut above = Vec::new();
    let mut refs = Vec::new();
    for (label, at, who) in limits {
        let names: Vec<&str> = who.iter().map(|&i| v.name(i)).collect();
        let hover = format!("{label}: {}", names.join(", "));
        if at <= peak * 2.0 {
            refs.push(svg::RefLine {
                y: at,
                label,
                hover,
                color: match who.as_slice() {
                    [one] => svg::color(*one),
                    _ => "#4a5160",
                },
            });
        } else {
            above.push(hover);
        }
    }
    (refs, above)
}

/// Each contender's device profile (in the run's order), from the study as run.
fn device_profiles(run: &RunData) -> Vec<Option<DeviceProfile>> {
    let all = crate::report::study::device_profiles(&run.manifest.study);
    run.summary
        .contenders
        .iter()
        .map(|c| all.iter().find(|p| p.0 == c.name).map(|p| p.1.clone()))
        .collect()
}
