//! Device profiles: the storage class a contender's server is given, as limits on its block
//! I/O (bandwidth and requests a second, each way) that the kernel's cgroup throttle holds it
//! to — a named class (`hdd`, `sata-ssd`, `cloud-disk`) or the user's own numbers.

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

/// The built-in profiles: (name, MB/s, IOPS, what it stands for).
pub const PROFILES: &[(&str, u64, u64, &str)] = &[
    ("hdd", 120, 150, "a 7,200 rpm disk"),
    ("sata-ssd", 500, 20_000, "a SATA SSD"),
    (
        "cloud-disk",
        125,
        3_000,
        "a general-purpose cloud volume's baseline",
    ),
];

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
                        .map(|p| format!("{} ({} MB/s, {} IOPS)", p.0, p.1, p.2))
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
            .find(|p| p.0 == name)
            .map(|&(name, mb, iops, _)| DeviceProfile {
                name: name.into(),
                read_mb_s: mb,
                write_mb_s: mb,
                read_iops: iops,
                write_iops: iops,
            })
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

    #[derive(Serialize)]
    struct W2 {
        p: DeviceProfile,
    }
}
