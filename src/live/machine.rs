//! The system sampler's latest second of each running step as gauges: the host's CPU and
//! memory, each block device's throughput, IOPS and busy share (nmon's columns), and the
//! server's process tree — read from the samples the step writes each second.

use super::exposition::Exposition;
use super::feed::{Labels, lab};
use crate::sysmon::SystemSample;

/// One value of a gauge: its labels beyond the step's, and the value.
type Value = (Vec<(&'static str, String)>, f64);

/// One gauge family: its name, help, and how a step's sample gives its values.
struct Gauge {
    name: &'static str,
    help: &'static str,
    values: fn(&SystemSample) -> Vec<Value>,
}

const GAUGES: &[Gauge] = &[
    Gauge {
        name: "dbduel_host_cpu_ratio",
        help: "Share of all the host's cores in each CPU mode over the last sampled second (0-1).",
        values: |s| {
            [
                ("user", s.cpu.user_pct),
                ("system", s.cpu.sys_pct),
                ("idle", s.cpu.idle_pct),
                ("iowait", s.cpu.iowait_pct),
                ("steal", s.cpu.steal_pct),
            ]
            .into_iter()
            .map(|(m, v)| (vec![("mode", m.to_string())], v / 100.0))
            .collect()
        },
    },
    Gauge {
        name: "dbduel_host_memory_used_bytes",
        help: "Host memory in use (total less available) at the last sample.",
        values: |s| vec![(vec![], s.mem.used_bytes as f64)],
    },
    Gauge {
        name: "dbduel_host_memory_cached_bytes",
        help: "Host page cache at the last sample.",
        values: |s| vec![(vec![], s.mem.cached_bytes as f64)],
    },
    Gauge {
        name: "dbduel_device_read_bytes_per_second",
        help: "Bytes read a second from each block device over the last sampled second.",
        values: |s| per_device(s, |d| d.read_bytes_per_s),
    },
    Gauge {
        name: "dbduel_device_write_bytes_per_second",
        help: "Bytes written a second to each block device over the last sampled second.",
        values: |s| per_device(s, |d| d.write_bytes_per_s),
    },
    Gauge {
        name: "dbduel_device_read_iops",
        help: "Reads completed a second by each block device over the last sampled second.",
        values: |s| per_device(s, |d| d.read_iops),
    },
    Gauge {
        name: "dbduel_device_write_iops",
        help: "Writes completed a second by each block device over the last sampled second.",
        values: |s| per_device(s, |d| d.write_iops),
    },
    Gauge {
        name: "dbduel_device_busy_ratio",
        help: "Share of the last sampled second each block device had a request in flight (0-1).",
        values: |s| per_device(s, |d| d.busy_pct / 100.0),
    },
    Gauge {
        name: "dbduel_server_cpu_cores",
        help: "CPU of the server's process tree over the last sampled second, in cores.",
        values: |s| {
            s.engine
                .iter()
                .map(|e| (vec![], e.cpu_pct / 100.0))
                .collect()
        },
    },
    Gauge {
        name: "dbduel_server_resident_memory_bytes",
        help: "Resident memory of the server's process tree at the last sample.",
        values: |s| {
            s.engine
                .iter()
                .map(|e| (vec![], e.rss_bytes as f64))
                .collect()
        },
    },
];

fn per_device(s: &SystemSample, value: fn(&crate::sysmon::DeviceIo) -> f64) -> Vec<Value> {
    s.devices
        .iter()
        .map(|d| (vec![("device", d.name.clone())], value(d)))
        .collect()
}

/// Every gauge family, with the values of each running step's latest sample (`steps`: the
/// step's labels and that sample).
pub fn render<'a>(x: &mut Exposition, steps: impl Iterator<Item = (Labels, &'a SystemSample)>) {
    let steps: Vec<(Labels, &SystemSample)> = steps.collect();
    for g in GAUGES {
        x.family(g.name, "gauge", None, g.help);
        for (base, sample) in &steps {
            for (extra, v) in (g.values)(sample) {
                let extra: Vec<(&str, &str)> =
                    extra.iter().map(|(k, v)| (*k, v.as_str())).collect();
                x.sample(g.name, &lab(base, &extra), v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysmon::{DeviceIo, HostCpu, HostMem, ProcUsage};

    #[test]
    fn a_running_steps_sample_is_every_gauge() {
        let s = SystemSample {
            t_s: 3.0,
            tick: 3,
            cpu: HostCpu {
                user_pct: 50.0,
                sys_pct: 10.0,
                idle_pct: 30.0,
                iowait_pct: 10.0,
                steal_pct: 0.0,
            },
            mem: HostMem {
                total_bytes: 100,
                available_bytes: 60,
                used_bytes: 40,
                cached_bytes: 20,
            },
            devices: vec![DeviceIo {
                name: "vda".into(),
                read_bytes_per_s: 1024.0,
                write_bytes_per_s: 0.0,
                read_iops: 150.0,
                write_iops: 2.0,
                busy_pct: 98.0,
            }],
            engine: Some(ProcUsage {
                cpu_pct: 150.0,
                rss_bytes: 4096,
                ..ProcUsage::default()
            }),
            dbduel: ProcUsage::default(),
        };
        let mut x = Exposition::default();
        let base: Labels = vec![("study", "s".into()), ("step", "io-bound".into())];
        render(&mut x, std::iter::once((base, &s)));
        let text = x.finish();
        for line in [
            r#"dbduel_host_cpu_ratio{study="s",step="io-bound",mode="iowait"} 0.1"#,
            r#"dbduel_host_memory_used_bytes{study="s",step="io-bound"} 40"#,
            r#"dbduel_device_read_iops{study="s",step="io-bound",device="vda"} 150"#,
            r#"dbduel_device_busy_ratio{study="s",step="io-bound",device="vda"} 0.98"#,
            r#"dbduel_server_cpu_cores{study="s",step="io-bound"} 1.5"#,
            r#"dbduel_server_resident_memory_bytes{study="s",step="io-bound"} 4096"#,
        ] {
            assert!(text.lines().any(|l| l == line), "no {line} in\n{text}");
        }
        assert_eq!(text.matches("# TYPE ").count(), GAUGES.len());
    }
}
