//! The replication steps, for a contender that is a topology (a primary and its replicas):
//! `catch-up` (writers on the primary while the replicas only fetch, then each replica's apply
//! rate, CPU and time to catch up), `commit-wait` (the primary's write rate under group-commit
//! waits) and `replica-lag` (each replica's lag, second by second, under load). Each step
//! starts and ends with every replica caught up, and ends by checking that every table's
//! checksum on each replica equals the primary's: nothing lost.

pub mod catch_up;
pub mod commit_wait;
pub mod follow;
pub mod lag;
pub mod originals;
pub mod restore;
pub mod verify;
pub mod writers;

use super::ctx::{StepCtx, StepError};
use crate::decode::{DecodeError, KeyPath, by_name};
use serde::Deserialize;

/// What the writers on the primary do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Writes {
    /// sysbench's `oltp_insert`: one row a transaction into a random sbtest table.
    #[default]
    Insert,
    /// The seed's own shape: rows holding a compressed bitmap of a few KB to a few MB,
    /// inserted, then inserted and updated half and half.
    Bitmaps,
}

/// How the replicas of a topology apply what the writers wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Apply {
    /// One replica after another, each from the same starting point while the others wait:
    /// no replica competes with another for this machine's CPU and disk.
    #[default]
    OneAtATime,
    /// All at once, as the seed's replicas on their own machines.
    Together,
}

/// When a catch-up's replicas receive what the writers write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fetch {
    /// While the writers write, their apply stopped: the catch-up then times apply alone.
    #[default]
    During,
    /// Only once the writers are done, as the seed started its replicas after its writes:
    /// each replica stops receiving too (MariaDB and MySQL: its IO thread) and receives
    /// nothing meanwhile. A replica that cannot stop receiving (a PostgreSQL standby)
    /// receives during the writes, and the step says so.
    After,
}

/// Which replication step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    #[default]
    CatchUp,
    CommitWait,
    Lag,
}

fn d_writers() -> u64 {
    10
}
fn d_min() -> u64 {
    4 << 10
}
fn d_max() -> u64 {
    1 << 20
}
fn d_timeout() -> u64 {
    3600
}

/// The longest group-commit wait a study may ask for, microseconds: one second, the most
/// MySQL's `binlog_group_commit_sync_delay` takes (MariaDB takes more, but a longer wait only
/// stalls every commit that cannot fill its group).
pub const MAX_WAIT_USEC: u64 = 1_000_000;

/// Parameters of the replication steps; each kind uses its own few beyond the writers'.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicationParams {
    #[serde(default, deserialize_with = "by_name")]
    pub writes: Writes,
    /// Writer clients on the primary (the seed: 10).
    #[serde(default = "d_writers")]
    pub writers: u64,
    /// Seconds the writers write (for `commit-wait`: at each setting).
    pub duration_s: u64,
    /// `bitmaps`: smallest and largest bitmap, bytes; sizes are drawn log-uniformly between.
    #[serde(default = "d_min")]
    pub bitmap_min_bytes: u64,
    #[serde(default = "d_max")]
    pub bitmap_max_bytes: u64,
    /// `catch-up`: replicas apply one at a time (default) or together.
    #[serde(default, deserialize_with = "opt_by_name")]
    pub apply: Option<Apply>,
    /// `catch-up`: replicas receive during the writes (default) or only after them.
    #[serde(default, deserialize_with = "opt_by_name")]
    pub fetch: Option<Fetch>,
    /// The longest a replica may take to catch up before the step fails, seconds.
    #[serde(default = "d_timeout")]
    pub catch_up_timeout_s: u64,
    /// `commit-wait`: the primary's `binlog_commit_wait_count` values (default 0, 4, 8, 12).
    #[serde(default)]
    pub wait_counts: Option<Vec<u64>>,
    /// `commit-wait`: `binlog_commit_wait_usec` values (default 10000, 100000).
    #[serde(default)]
    pub wait_usecs: Option<Vec<u64>>,
    /// `catch-up`: the primary's `binlog_commit_wait_count` while the writers write (the
    /// seed's first experiment: 4), given with `wait_usec`; absent: the primary's own.
    #[serde(default)]
    pub wait_count: Option<u64>,
    /// `catch-up`: the primary's `binlog_commit_wait_usec` while the writers write,
    /// microseconds (the seed: 10000), given with `wait_count`.
    #[serde(default)]
    pub wait_usec: Option<u64>,
    /// `catch-up` of `bitmaps`: spread the writers over this many GTID domains (writer c
    /// writes in domain c mod N, by `SET SESSION gtid_domain_id`), which MariaDB's parallel
    /// replicas may apply out of order; absent: every writer in the primary's own domain.
    #[serde(default)]
    pub gtid_domains: Option<u64>,
    /// `replica-lag`: write at this many transactions per second in all (open loop);
    /// absent: as fast as the writers can.
    #[serde(default)]
    pub rate: Option<f64>,
    #[serde(skip)]
    pub method: Method,
}

fn opt_by_name<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    by_name(d).map(Some)
}

impl ReplicationParams {
    /// Decode the parameters of a step of kind `method`.
    pub fn decode(method: Method, v: toml::Value) -> Result<Self, DecodeError> {
        let mut p: ReplicationParams = crate::decode::decode(v)?;
        p.method = method;
        Ok(p)
    }

    pub fn validate(&self) -> Result<(), DecodeError> {
        let at = |k: &str, m: String| Err(DecodeError::at(KeyPath::root().key(k), m));
        if !(1..=crate::workload::sweep::MAX_CLIENTS).contains(&self.writers) {
            return at(
                "writers",
                format!(
                    "writers must be from 1 to {}",
                    crate::workload::sweep::MAX_CLIENTS
                ),
            );
        }
        if !(1..=7 * 86_400).contains(&self.duration_s) {
            return at(
                "duration_s",
                "duration_s must be from 1 to 604800 (a week)".into(),
            );
        }
        if !(1..=7 * 86_400).contains(&self.catch_up_timeout_s) {
            return at(
                "catch_up_timeout_s",
                "catch_up_timeout_s must be from 1 to 604800 (a week)".into(),
            );
        }
        // A bitmap travels hex-encoded in one packet of at most 64 MiB.
        if self.bitmap_min_bytes < 16
            || self.bitmap_max_bytes < self.bitmap_min_bytes
            || self.bitmap_max_bytes > 16 << 20
        {
            return at(
                "bitmap_min_bytes",
                "bitmap sizes must satisfy 16 <= bitmap_min_bytes <= bitmap_max_bytes <= 16777216"
                    .into(),
            );
        }
        self.check_kinds()?;
        if let Some(r) = self.rate
            && !(r > 0.0 && r <= 10_000_000.0)
        {
            return at(
                "rate",
                "rate must be above 0 and at most 10000000 transactions/s".into(),
            );
        }
        for (key, v) in [
            ("wait_counts", &self.wait_counts),
            ("wait_usecs", &self.wait_usecs),
        ] {
            if let Some(v) = v
                && v.is_empty()
            {
                return at(key, format!("{key} must list at least one value"));
            }
        }
        if let Some(i) = self
            .wait_counts()
            .iter()
            .position(|c| *c > u64::from(u32::MAX))
        {
            return Err(DecodeError::at(
                KeyPath::root().key("wait_counts").index(i),
                "a binlog_commit_wait_count is 0 to 4294967295".to_string(),
            ));
        }
        if let Some(i) = self.wait_usecs().iter().position(|u| *u > MAX_WAIT_USEC) {
            return Err(DecodeError::at(
                KeyPath::root().key("wait_usecs").index(i),
                format!("a binlog_commit_wait_usec here is 0 to {MAX_WAIT_USEC} (one second)"),
            ));
        }
        self.check_catch_up()
    }

    /// Each kind's own keys only on a step of that kind.
    fn check_kinds(&self) -> Result<(), DecodeError> {
        let given = [
            ("apply", self.apply.is_some(), Method::CatchUp),
            ("fetch", self.fetch.is_some(), Method::CatchUp),
            (
                "wait_counts",
                self.wait_counts.is_some(),
                Method::CommitWait,
            ),
            ("wait_usecs", self.wait_usecs.is_some(), Method::CommitWait),
            ("wait_count", self.wait_count.is_some(), Method::CatchUp),
            ("wait_usec", self.wait_usec.is_some(), Method::CatchUp),
            ("gtid_domains", self.gtid_domains.is_some(), Method::CatchUp),
            ("rate", self.rate.is_some(), Method::Lag),
        ];
        for (key, given, m) in given {
            if given && self.method != m {
                let kind = match m {
                    Method::CatchUp => "catch-up",
                    Method::CommitWait => "commit-wait",
                    Method::Lag => "replica-lag",
                };
                return Err(DecodeError::at(
                    KeyPath::root().key(key),
                    format!("{key} applies to steps of kind {kind:?}"),
                ));
            }
        }
        Ok(())
    }

    /// A catch-up's `wait_count` and `wait_usec` (both or neither, each in its range) and its
    /// `gtid_domains` (bitmap writers, at most one domain a writer).
    fn check_catch_up(&self) -> Result<(), DecodeError> {
        let at = |k: &str, m: String| Err(DecodeError::at(KeyPath::root().key(k), m));
        if let Some(n) = self.gtid_domains {
            if self.writes != Writes::Bitmaps {
                return at(
                    "gtid_domains",
                    "gtid_domains puts each bitmap writer's session in a domain; the insert writers do not take it (set writes = \"bitmaps\")".into(),
                );
            }
            if !(1..=self.writers).contains(&n) {
                return at(
                    "gtid_domains",
                    format!(
                        "gtid_domains = {n}: from 1 to the {} writers (writer c writes in domain c mod gtid_domains)",
                        self.writers
                    ),
                );
            }
        }
        match (self.wait_count, self.wait_usec) {
            (Some(_), None) => at(
                "wait_count",
                "wait_count needs wait_usec beside it: the primary holds a commit until this many transactions commit together or wait_usec microseconds pass (the original: wait_count = 4, wait_usec = 10000)".into(),
            ),
            (None, Some(_)) => at(
                "wait_usec",
                "wait_usec needs wait_count beside it (the original: wait_count = 4, wait_usec = 10000)".into(),
            ),
            (Some(c), _) if c > u64::from(u32::MAX) => at(
                "wait_count",
                format!("wait_count = {c}: a binlog_commit_wait_count is 0 to 4294967295"),
            ),
            (_, Some(u)) if u > MAX_WAIT_USEC => at(
                "wait_usec",
                format!(
                    "wait_usec = {u}: a binlog_commit_wait_usec here is 0 to {MAX_WAIT_USEC} (one second)"
                ),
            ),
            _ => Ok(()),
        }
    }

    /// The primary's group-commit wait a catch-up asks for, (count, microseconds).
    pub fn catch_up_wait(&self) -> Option<(u64, u64)> {
        self.wait_count.zip(self.wait_usec)
    }

    /// `binlog_commit_wait_count` values to sweep.
    pub fn wait_counts(&self) -> Vec<u64> {
        self.wait_counts
            .clone()
            .unwrap_or_else(|| vec![0, 4, 8, 12])
    }

    /// `binlog_commit_wait_usec` values to sweep.
    pub fn wait_usecs(&self) -> Vec<u64> {
        self.wait_usecs
            .clone()
            .unwrap_or_else(|| vec![10_000, 100_000])
    }
}

impl super::kind::StepKind for ReplicationParams {
    fn decode(kind: &str, v: toml::Value) -> Result<Self, DecodeError> {
        let method = match kind {
            "catch-up" => Method::CatchUp,
            "commit-wait" => Method::CommitWait,
            _ => Method::Lag,
        };
        ReplicationParams::decode(method, v)
    }
    fn validate(&self) -> Result<(), DecodeError> {
        ReplicationParams::validate(self)
    }
    fn clients(&self) -> u64 {
        self.writers
    }
    fn generator(&self) -> Option<super::kind::GeneratorNeed> {
        (self.writes == Writes::Insert).then_some(super::kind::GeneratorNeed::SBTEST)
    }
    fn needs(&self, tables: &[String]) -> Option<super::kind::TableNeed> {
        (self.writes == Writes::Insert).then(|| {
            super::kind::TableNeed::all("inserts (as sysbench's oltp_insert) into", tables)
        })
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<super::ctx::StepOutput, StepError> {
        run(self, ctx)
    }
}

/// Run a replication step.
pub fn run(p: &ReplicationParams, ctx: &StepCtx<'_>) -> Result<super::ctx::StepOutput, StepError> {
    let Some(repl) = ctx.engine.replication() else {
        return Err(StepError::Skipped(format!(
            "contender {} is a single server; replication steps need a topology (give it replicas = [...])",
            ctx.contender
        )));
    };
    if repl.replica_count() == 0 {
        return Err(StepError::Skipped("the topology has no replicas".into()));
    }
    match p.method {
        Method::CatchUp => catch_up::run(p, ctx, repl),
        Method::CommitWait => commit_wait::run(p, ctx, repl),
        Method::Lag => lag::run(p, ctx, repl),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(kind: Method, extra: &str) -> Result<ReplicationParams, DecodeError> {
        let v: toml::Value = toml::from_str(&format!("duration_s = 5\n{extra}")).expect("toml");
        let p = ReplicationParams::decode(kind, v)?;
        p.validate().map(|()| p)
    }

    fn refused(kind: Method, extra: &str) -> String {
        match params(kind, extra) {
            Ok(_) => panic!("{extra} was accepted"),
            Err(e) => format!("{}: {}", e.path, e.message),
        }
    }

    #[test]
    fn a_catch_up_takes_the_originals_commit_wait_and_refuses_bad_ones() {
        let p = params(Method::CatchUp, "wait_count = 4\nwait_usec = 10000").expect("valid");
        assert_eq!(p.catch_up_wait(), Some((4, 10_000)));
        assert_eq!(
            params(Method::CatchUp, "").expect("valid").catch_up_wait(),
            None
        );
        let e = refused(Method::CatchUp, "wait_count = 4");
        assert!(
            e.contains("wait_count") && e.contains("needs wait_usec"),
            "{e}"
        );
        let e = refused(Method::CatchUp, "wait_usec = 10000");
        assert!(
            e.contains("wait_usec") && e.contains("needs wait_count"),
            "{e}"
        );
        let e = refused(Method::CatchUp, "wait_count = 4\nwait_usec = 2000000");
        assert!(e.contains("wait_usec = 2000000"), "{e}");
        let e = refused(Method::CatchUp, "wait_count = 4294967296\nwait_usec = 10");
        assert!(e.contains("wait_count = 4294967296"), "{e}");
        // Only a catch-up holds its writers' commits; the sweep has its own lists.
        let e = refused(Method::Lag, "wait_count = 4\nwait_usec = 10000");
        assert!(e.contains("applies to steps of kind \"catch-up\""), "{e}");
        let e = refused(Method::CommitWait, "wait_usecs = [10000, 5000000]");
        assert!(e.contains("wait_usecs[1]"), "{e}");
    }

    #[test]
    fn gtid_domains_are_for_a_catch_up_of_bitmaps_and_at_most_one_a_writer() {
        let p = params(
            Method::CatchUp,
            "writes = \"bitmaps\"\nwriters = 4\ngtid_domains = 4",
        )
        .expect("valid");
        assert_eq!(p.gtid_domains, Some(4));
        let e = refused(Method::CatchUp, "gtid_domains = 2");
        assert!(e.contains("writes = \"bitmaps\""), "{e}");
        let e = refused(
            Method::CatchUp,
            "writes = \"bitmaps\"\nwriters = 4\ngtid_domains = 5",
        );
        assert!(
            e.contains("gtid_domains = 5: from 1 to the 4 writers"),
            "{e}"
        );
        let e = refused(Method::CatchUp, "writes = \"bitmaps\"\ngtid_domains = 0");
        assert!(e.contains("gtid_domains = 0"), "{e}");
        let e = refused(Method::Lag, "writes = \"bitmaps\"\ngtid_domains = 2");
        assert!(e.contains("applies to steps of kind \"catch-up\""), "{e}");
    }
}
