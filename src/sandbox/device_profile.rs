//! Device profiles: the storage class a contender's server is given, as limits on its block
//! I/O (bandwidth and requests a second, each way) that the kernel's cgroup throttle holds it
//! to — a named class (`hdd`, `sata-ssd`, `cloud-disk`, `raid10-hdd`, `raid10-ssd`) or the
//! user's own numbers.

use serde::{Deserialize, Serialize};

/// Limits on a server's block I/O. Both bandwidth and requests are limited: an IOPS limit
/// alone lets large requests through at full speed, a bandwidth limit alone lets small ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Spec")]
pub struct DeviceProfile {
    /// The profile's name (`hdd`, …, or `custom`).
    pub name: String,
    pub read_mb_s: u64,
    pub write_mb_s: u64,
    pub read_iops: u64,
    pub write_iops: u64,
}

/// A built-in profile: its name, its limits each way, and what it stands for.
pub struct Builtin {
    pub name: &'static str,
    pub read_mb_s: u64,
    pub write_mb_s: u64,
    pub read_iops: u64,
    pub write_iops: u64,
    /// What it stands for, and where its numbers come from.
    pub what: &'static str,
}

/// A profile that reads and writes alike.
const fn same(name: &'static str, mb_s: u64, iops: u64, what: &'static str) -> Builtin {
    Builtin {
        name,
        read_mb_s: mb_s,
        write_mb_s: mb_s,
        read_iops: iops,
        write_iops: iops,
        what,
    }
}

/// The built-in profiles.
///
/// The two `raid10-*` profiles stand for the arrays of the 2010 storage study (CUBRID and
/// MySQL on HDD and SSD machines: six disks in RAID 0+1 each) and of the TokuDB v5.2 post
/// (eight 10k SAS disks in RAID10), from the disks' datasheet figures and RAID10's rule —
/// a random read is served by any one of the N disks, a write goes to both disks of a
/// mirror, and a stream is striped over the N/2 mirror pairs:
/// - `raid10-hdd`: six 10,000 rpm SAS disks. One serves about 150 random requests a second
///   (3.8 ms average seek plus 3 ms, half a turn at 10k rpm) and streams about 125 MB/s:
///   reads 6 × 150 = 900 IOPS, writes 3 × 150 = 450 IOPS, 3 × 125 = 375 MB/s each way.
///   (The TokuDB post's eight disks give a third more.)
/// - `raid10-ssd`: six SLC SSDs of 2010 (Intel X25-E class: about 35,000 random 4 KiB reads
///   and 3,300 writes a second, 250 MB/s reads and 170 MB/s writes, by its datasheet):
///   writes 3 × 3,300 ≈ 10,000 IOPS and 3 × 170 ≈ 500 MB/s; reads held to 40,000 IOPS and
///   750 MB/s, about what a RAID controller of the time passed (six disks' own 210,000 IOPS
///   and 1.5 GB/s are beyond it).
pub const PROFILES: &[Builtin] = &[
    same("hdd", 120, 150, "a 7,200 rpm disk"),
    same("sata-ssd", 500, 20_000, "a SATA SSD"),
    same(
        "cloud-disk",
        125,
        3_000,
        "a general-purpose cloud volume's baseline",
    ),
    Builtin {
        name: "raid10-hdd",
        read_mb_s: 375,
        write_mb_s: 375,
        read_iops: 900,
        write_iops: 450,
        what: "six 10k rpm SAS disks in RAID10 (the 2010 storage study's HDD array)",
    },
    Builtin {
        name: "raid10-ssd",
        read_mb_s: 750,
        write_mb_s: 500,
        read_iops: 40_000,
        write_iops: 10_000,
        what: "six SLC SSDs of 2010 in RAID10 behind a RAID controller (the 2010 storage study's SSD array)",
    },
];

impl Builtin {
    /// The profile it gives a contender.
    pub fn profile(&self) -> DeviceProfile {
        DeviceProfile {
            name: self.name.into(),
            read_mb_s: self.read_mb_s,
            write_mb_s: self.write_mb_s,
            read_iops: self.read_iops,
            write_iops: self.write_iops,
        }
    }
}

/// A profile as a study writes it: a name, or numbers.
#[derive(Deserialize)]
#[serde(untagged)]
enum Spec {
    Named(String),
    Numbers {
        #[serde(default)]
        name: Option<String>,
        read_mb_s: u64,
        #[serde(default)]
        write_mb_s: Option<u64>,
        read_iops: u64,
        #[serde(default)]
        write_iops: Option<u64>,
    },
}

impl TryFrom<Spec> for DeviceProfile {
    type Error = String;

    fn try_from(s: Spec) -> Result<Self, String> {
        let p = match s {
            Spec::Named(n) => DeviceProfile::named(&n).ok_or_else(|| {
                format!(
                    "no device profile `{n}`; use one of {}, or your own numbers: {{ read_mb_s = 100, read_iops = 500 }} (writes default to the same)",
                    PROFILES
                        .iter()
                        .map(|p| p.profile().describe())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?,
            Spec::Numbers {
                name,
                read_mb_s,
                write_mb_s,
                read_iops,
                write_iops,
            } => DeviceProfile {
                name: name.unwrap_or_else(|| "custom".into()),
                read_mb_s,
                write_mb_s: write_mb_s.unwrap_or(read_mb_s),
                read_iops,
                write_iops: write_iops.unwrap_or(read_iops),
            },
        };
        for (k, v) in [
            ("read_mb_s", p.read_mb_s),
            ("write_mb_s", p.write_mb_s),
            ("read_iops", p.read_iops),
            ("write_iops", p.write_iops),
        ] {
            if !(1..=10_000_000).contains(&v) {
                return Err(format!(
                    "device profile {k} = {v} is out of range; use 1 to 10000000"
                ));
            }
        }
        Ok(p)
    }
}

impl DeviceProfile {
    /// A built-in profile by name.
    pub fn named(name: &str) -> Option<Self> {
        PROFILES
            .iter()
            .find(|p| p.name == name)
            .map(Builtin::profile)
    }

    /// Bytes a second, each way (MB here are 10^6 bytes, as disks are sold).
    pub fn read_bps(&self) -> u64 {
        self.read_mb_s * 1_000_000
    }

    pub fn write_bps(&self) -> u64 {
        self.write_mb_s * 1_000_000
    }

    /// In words: `hdd (120 MB/s, 150 IOPS)`, with writes when they differ.
    pub fn describe(&self) -> String {
        if (self.read_mb_s, self.read_iops) == (self.write_mb_s, self.write_iops) {
            format!(
                "{} ({} MB/s, {} IOPS)",
                self.name, self.read_mb_s, self.read_iops
            )
        } else {
            format!(
                "{} (reads {} MB/s, {} IOPS; writes {} MB/s, {} IOPS)",
                self.name, self.read_mb_s, self.read_iops, self.write_mb_s, self.write_iops
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct W {
        p: DeviceProfile,
    }

    #[test]
    fn named_and_numbered_profiles() {
        let w: W = toml::from_str("p = \"hdd\"").unwrap();
        assert_eq!((w.p.read_iops, w.p.write_mb_s), (150, 120));
        assert_eq!(w.p.describe(), "hdd (120 MB/s, 150 IOPS)");
        let w: W =
            toml::from_str("p = { read_mb_s = 50, read_iops = 500, write_iops = 100 }").unwrap();
        assert_eq!(
            (w.p.name.as_str(), w.p.write_mb_s, w.p.write_iops),
            ("custom", 50, 100)
        );
        // what the manifest keeps reads back the same
        let text = toml::to_string(&W2 { p: w.p.clone() }).unwrap();
        let back: W = toml::from_str(&text).unwrap();
        assert_eq!(back.p, w.p);
        let e = toml::from_str::<W>("p = \"floppy\"")
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("no device profile `floppy`") && e.contains("hdd"),
            "{e}"
        );
        let e = toml::from_str::<W>("p = { read_mb_s = 0, read_iops = 5 }")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("read_mb_s = 0"), "{e}");
    }

    /// The arrays' profiles follow RAID10's rule from one disk's figures: reads from all
    /// six disks, writes to three mirror pairs.
    #[test]
    fn the_raid10_profiles_are_six_disks_of_their_kind() {
        let hdd = DeviceProfile::named("raid10-hdd").unwrap();
        assert_eq!((hdd.read_iops, hdd.write_iops), (6 * 150, 3 * 150));
        assert_eq!((hdd.read_mb_s, hdd.write_mb_s), (3 * 125, 3 * 125));
        assert_eq!(
            hdd.describe(),
            "raid10-hdd (reads 375 MB/s, 900 IOPS; writes 375 MB/s, 450 IOPS)"
        );
        let ssd = DeviceProfile::named("raid10-ssd").unwrap();
        assert!(ssd.write_iops >= 3 * 3_300 && ssd.write_iops < 6 * 3_300);
        assert!(ssd.read_iops > 40 * hdd.read_iops / 2);
        let e = toml::from_str::<W>("p = \"raid10\"")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("raid10-hdd (reads 375 MB/s"), "{e}");
    }

    #[derive(Serialize)]
    struct W2 {
        p: DeviceProfile,
    }
}
