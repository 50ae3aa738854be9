//! The data device's I/O over windows a step chooses (a level's measured seconds), read from
//! `/proc/diskstats` at the step's own ticks, so disk figures line up with its QPS exactly.

use super::host::{DiskSnap, disk_rates, read_disks};
use super::sample::DeviceIo;
use std::collections::BTreeMap;
use std::time::Instant;

/// Counters of the whole device holding the data directory, between calls to [`tick`].
///
/// [`tick`]: DiskMeter::tick
pub struct DiskMeter {
    device: Option<String>,
    prev: BTreeMap<String, DiskSnap>,
    at: Instant,
    last_secs: f64,
}

impl DiskMeter {
    /// Start measuring the whole disk behind `data_device` (e.g. `/dev/vda1`); with none
    /// known, the busiest device of each window is reported.
    pub fn start(data_device: Option<&str>) -> Self {
        let prev = read_disks();
        let names: Vec<&str> = prev.keys().map(String::as_str).collect();
        DiskMeter {
            device: whole_disk_of(&names, data_device),
            prev,
            at: Instant::now(),
            last_secs: 0.0,
        }
    }

    /// Seconds the last tick's rates span.
    pub fn secs(&self) -> f64 {
        self.last_secs
    }

    /// The device's rates since the previous tick (or the start); `None` when no disk
    /// statistics are readable. [`DiskMeter::secs`] says how long that was.
    pub fn tick(&mut self) -> Option<DeviceIo> {
        let cur = read_disks();
        let now = Instant::now();
        let secs = now.duration_since(self.at).as_secs_f64().max(1e-3);
        let rates = disk_rates(&self.prev, &cur, secs);
        (self.prev, self.at, self.last_secs) = (cur, now, secs);
        match &self.device {
            Some(d) => rates.into_iter().find(|r| &r.name == d),
            None => rates.into_iter().max_by(|a, b| {
                (a.read_iops + a.write_iops).total_cmp(&(b.read_iops + b.write_iops))
            }),
        }
    }
}

/// The whole device among `names` holding `data_device`: the longest name that the data
/// device's name starts with (`vda1` → `vda`, `nvme0n1p2` → `nvme0n1`).
pub fn whole_disk_of(names: &[&str], data_device: Option<&str>) -> Option<String> {
    let dev = data_device?.rsplit('/').next()?;
    names
        .iter()
        .filter(|n| !n.is_empty() && dev.starts_with(**n))
        .max_by_key(|n| n.len())
        .map(|n| n.to_string())
}

/// Means of device readings over the time each spans, (reading, seconds): a short last
/// interval — where a throttle's burst looks like a high rate — weighs what it lasted (all
/// zero for none).
pub fn mean(samples: &[(DeviceIo, f64)]) -> DeviceIo {
    let total: f64 = samples.iter().map(|s| s.1).sum();
    let total = if total > 0.0 { total } else { 1.0 };
    let sum = |f: fn(&DeviceIo) -> f64| samples.iter().map(|s| f(&s.0) * s.1).sum::<f64>() / total;
    DeviceIo {
        name: samples
            .first()
            .map(|s| s.0.name.clone())
            .unwrap_or_default(),
        read_bytes_per_s: sum(|s| s.read_bytes_per_s),
        write_bytes_per_s: sum(|s| s.write_bytes_per_s),
        read_iops: sum(|s| s.read_iops),
        write_iops: sum(|s| s.write_iops),
        busy_pct: sum(|s| s.busy_pct),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_is_the_whole_disk_of_the_data_directory() {
        let names = ["nvme0n1", "sda", "vda"];
        assert_eq!(
            whole_disk_of(&names, Some("/dev/vda1")).as_deref(),
            Some("vda")
        );
        assert_eq!(
            whole_disk_of(&names, Some("/dev/nvme0n1p2")).as_deref(),
            Some("nvme0n1")
        );
        assert_eq!(whole_disk_of(&names, Some("overlay")), None);
        assert_eq!(whole_disk_of(&names, None), None);
    }

    #[test]
    fn means_of_seconds() {
        let s = |r: f64| DeviceIo {
            name: "vda".into(),
            read_iops: r,
            busy_pct: r / 10.0,
            ..DeviceIo::default()
        };
        let m = mean(&[(s(100.0), 1.0), (s(300.0), 1.0)]);
        assert_eq!(
            (m.name.as_str(), m.read_iops, m.busy_pct),
            ("vda", 200.0, 20.0)
        );
        // a tenth of a second at 500/s weighs a tenth
        let m = mean(&[(s(200.0), 1.0), (s(200.0), 1.0), (s(500.0), 0.1)]);
        assert!(
            (m.read_iops - 2.0 * 200.0 / 2.1 - 50.0 / 2.1).abs() < 1e-9,
            "{}",
            m.read_iops
        );
        assert_eq!(mean(&[]).read_iops, 0.0);
    }
}
