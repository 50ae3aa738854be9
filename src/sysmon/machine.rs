//! Whether the machine was quiet during a step: the CPU that neither dbduel nor the engine's
//! process tree used (other processes, and the kernel's own threads), the CPU the hypervisor
//! stole, and the memory left — from the samples the sampler took anyway. A step over a
//! threshold is *disturbed*: its note says so with the figure, and `compare` does not judge
//! its figures.

use super::sample::SystemSample;
use serde::{Deserialize, Serialize};

/// Other processes' CPU above this share of the machine (percent) disturbs a step.
pub const OTHERS_MAX_PCT: f64 = 10.0;
/// Stolen CPU above this share (percent) disturbs a step.
pub const STEAL_MAX_PCT: f64 = 5.0;
/// Available memory below this share of the total (percent), at any sample, disturbs a step.
pub const MEM_MIN_PCT: f64 = 5.0;
/// Steps shorter than this (seconds of samples) are not judged: a second or two of
/// someone else's work says little about them.
const MIN_SPAN_S: f64 = 2.0;

/// What the rest of the machine did during a step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MachineShare {
    /// CPU used by neither dbduel nor the engine, in percent of all cores, time-weighted.
    pub others_cpu_pct: f64,
    /// CPU stolen by the hypervisor, in percent of all cores, time-weighted.
    pub steal_pct: f64,
    /// The least available memory seen, in percent of the total.
    pub min_available_mem_pct: f64,
    /// Seconds of samples the figures cover.
    pub span_s: f64,
}

impl MachineShare {
    /// The machine during a step from its samples on `cores` cores; `engine_is_dbduel` for an
    /// embedded engine (its tree is dbduel's own process). None for steps too short to say.
    pub fn of(samples: &[SystemSample], cores: usize, engine_is_dbduel: bool) -> Option<Self> {
        if cores == 0 {
            return None;
        }
        let mut last = 0.0;
        let (mut span, mut others, mut steal) = (0.0, 0.0, 0.0);
        let mut min_avail = 100.0f64;
        for s in samples {
            let dt = (s.t_s - last).max(0.0);
            last = s.t_s;
            let busy = s.cpu.user_pct + s.cpu.sys_pct;
            let engine = match (&s.engine, engine_is_dbduel) {
                (Some(e), false) => e.cpu_pct,
                _ => 0.0,
            };
            let ours = (s.dbduel.cpu_pct + engine) / cores as f64;
            others += (busy - ours).max(0.0) * dt;
            steal += s.cpu.steal_pct * dt;
            span += dt;
            if s.mem.total_bytes > 0 {
                min_avail =
                    min_avail.min(s.mem.available_bytes as f64 * 100.0 / s.mem.total_bytes as f64);
            }
        }
        (span >= MIN_SPAN_S).then(|| MachineShare {
            others_cpu_pct: others / span,
            steal_pct: steal / span,
            min_available_mem_pct: min_avail,
            span_s: span,
        })
    }

    /// Why the step's figures are disturbed, in words with the figures; empty when the
    /// machine was quiet.
    pub fn disturbances(&self) -> Vec<String> {
        let mut why = Vec::new();
        if self.others_cpu_pct > OTHERS_MAX_PCT {
            why.push(format!(
                "other processes used {:.0}% of the machine's CPU during this step",
                self.others_cpu_pct
            ));
        }
        if self.steal_pct > STEAL_MAX_PCT {
            why.push(format!(
                "the hypervisor stole {:.0}% of the CPU during this step",
                self.steal_pct
            ));
        }
        if self.min_available_mem_pct < MEM_MIN_PCT {
            why.push(format!(
                "memory ran short during this step: {:.1}% available at the lowest",
                self.min_available_mem_pct
            ));
        }
        why
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysmon::{HostCpu, HostMem, ProcUsage};

    fn sample(t_s: f64, busy: f64, dbduel: f64, engine: f64, steal: f64) -> SystemSample {
        SystemSample {
            t_s,
            tick: t_s as u64,
            cpu: HostCpu {
                user_pct: busy * 0.8,
                sys_pct: busy * 0.2,
                idle_pct: 100.0 - busy - steal,
                iowait_pct: 0.0,
                steal_pct: steal,
            },
            mem: HostMem {
                total_bytes: 1000,
                available_bytes: 500,
                used_bytes: 500,
                cached_bytes: 0,
            },
            devices: Vec::new(),
            engine: Some(ProcUsage {
                cpu_pct: engine,
                ..ProcUsage::default()
            }),
            dbduel: ProcUsage {
                cpu_pct: dbduel,
                ..ProcUsage::default()
            },
        }
    }

    #[test]
    fn others_are_what_neither_dbduel_nor_the_engine_used() {
        // 2 cores: dbduel 40% of a core, the server 100%: 70% of the machine; busy 75%
        let quiet: Vec<_> = (1..=4)
            .map(|t| sample(t as f64, 75.0, 40.0, 100.0, 0.0))
            .collect();
        let m = MachineShare::of(&quiet, 2, false).unwrap();
        assert!((m.others_cpu_pct - 5.0).abs() < 1e-9, "{m:?}");
        assert!(m.disturbances().is_empty());
        // a compile on the side: busy 100%, the same client and server
        let busy: Vec<_> = (1..=4)
            .map(|t| sample(t as f64, 100.0, 40.0, 100.0, 0.0))
            .collect();
        let m = MachineShare::of(&busy, 2, false).unwrap();
        assert_eq!(
            m.disturbances(),
            ["other processes used 30% of the machine's CPU during this step"]
        );
        // an embedded engine's tree is dbduel itself: counted once
        let lite: Vec<_> = (1..=4)
            .map(|t| sample(t as f64, 50.0, 100.0, 100.0, 0.0))
            .collect();
        assert_eq!(
            MachineShare::of(&lite, 2, true).unwrap().others_cpu_pct,
            0.0
        );
        // steal, and a step too short to judge
        let stolen: Vec<_> = (1..=3)
            .map(|t| sample(t as f64, 50.0, 50.0, 50.0, 9.0))
            .collect();
        assert_eq!(
            MachineShare::of(&stolen, 2, false)
                .unwrap()
                .disturbances()
                .len(),
            1
        );
        assert!(MachineShare::of(&stolen[..1], 2, false).is_none());
    }
}
