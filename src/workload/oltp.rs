//! `oltp`: sysbench 1.0's OLTP workloads (point_select, read_only, read_write, write_only,
//! update_index, update_non_index, insert, delete) on the `sbtest` tables, with the same
//! statements, per-event mix and key distributions, over a sweep of client counts, closed
//! loop or at a target rate. A level's figure is the mean over its final fraction, as the
//! original study took the final 15 of 60 minutes.

use super::ctx::{StepCtx, StepError, StepOutput, summary};
use super::flight::{Flight, Request};
use super::sweep::Levels;
use crate::dataset::distribution::Distribution;
use crate::dataset::rng::SplitMix64;
use crate::dataset::sbtest::{C_GROUPS, PAD_GROUPS, digit_groups};
use crate::decode::{DecodeError, KeyPath, by_name};
use crate::engine::cluster::Clustered;
use crate::engine::{self, Session, StmtId, Value};
use crate::metrics::Latency;
use crate::results::{Better, Derived, Metric, Role, Unit};
use crate::runner::{self, Bound, RunSpec, Worker};
use serde::Deserialize;
use std::time::Duration;

/// The sysbench workload a step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OltpWorkload {
    PointSelect,
    ReadOnly,
    ReadWrite,
    WriteOnly,
    UpdateIndex,
    UpdateNonIndex,
    Insert,
    Delete,
}

impl OltpWorkload {
    fn name(self) -> &'static str {
        match self {
            OltpWorkload::PointSelect => "point_select",
            OltpWorkload::ReadOnly => "read_only",
            OltpWorkload::ReadWrite => "read_write",
            OltpWorkload::WriteOnly => "write_only",
            OltpWorkload::UpdateIndex => "update_index",
            OltpWorkload::UpdateNonIndex => "update_non_index",
            OltpWorkload::Insert => "insert",
            OltpWorkload::Delete => "delete",
        }
    }

    /// Events run in an explicit transaction (unless `skip_trx`), as sysbench's scripts do.
    fn transactional(self) -> bool {
        matches!(
            self,
            OltpWorkload::ReadOnly | OltpWorkload::ReadWrite | OltpWorkload::WriteOnly
        )
    }
}

/// Seconds at the start of a level of `duration_s` not counted: the warm-up, and everything
/// before the final fraction (at least one second is counted).
pub fn skipped_s(duration_s: u64, final_fraction: f64, warmup_s: u64) -> u64 {
    let keep = ((duration_s as f64) * final_fraction).ceil() as u64;
    warmup_s.max(duration_s.saturating_sub(keep.max(1)))
}

/// The share of each level whose mean is its figure: above 0, at most 1.
pub fn check_final_fraction(final_fraction: f64) -> Result<(), DecodeError> {
    if final_fraction > 0.0 && final_fraction <= 1.0 {
        return Ok(());
    }
    Err(DecodeError::at(
        KeyPath::root().key("final_fraction"),
        "final_fraction must be above 0 and at most 1".to_string(),
    ))
}

pub use super::pacing::Arrival;

fn d_special() -> Distribution {
    Distribution::Special
}
fn d_final() -> f64 {
    0.25
}
fn d_range() -> u64 {
    100
}
fn d_point() -> u64 {
    10
}
fn d_one() -> u64 {
    1
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OltpParams {
    /// `threads`, `duration_s`, `warmup_s` and `cold_start`, decoded apart (see
    /// [`super::sweep::Levels`]).
    #[serde(skip)]
    pub levels: Levels,
    #[serde(deserialize_with = "by_name")]
    pub workload: OltpWorkload,
    /// The share of each level, at its end, whose mean is the level's figure.
    #[serde(default = "d_final")]
    pub final_fraction: f64,
    /// Key distribution (sysbench --rand-type; default special).
    #[serde(default = "d_special", deserialize_with = "by_name")]
    pub distribution: Distribution,
    /// `rate`, `start_rate`, `arrival` and `slo`, decoded apart (see [`super::pacing`]):
    /// events a second in all (open loop); no rate: closed loop.
    #[serde(skip)]
    pub pace: super::pacing::Pace,
    #[serde(default = "d_range")]
    pub range_size: u64,
    #[serde(default = "d_point")]
    pub point_selects: u64,
    #[serde(default = "d_one")]
    pub simple_ranges: u64,
    #[serde(default = "d_one")]
    pub sum_ranges: u64,
    #[serde(default = "d_one")]
    pub order_ranges: u64,
    #[serde(default = "d_one")]
    pub distinct_ranges: u64,
    #[serde(default = "d_one")]
    pub index_updates: u64,
    #[serde(default = "d_one")]
    pub non_index_updates: u64,
    #[serde(default = "d_one")]
    pub delete_inserts: u64,
    /// Run statements in autocommit mode, no BEGIN/COMMIT.
    #[serde(default)]
    pub skip_trx: bool,
    /// Schema changes made on busy tables at chosen seconds of the (one) level.
    #[serde(default)]
    pub ddl: Vec<super::hot_ddl::HotChange>,
    /// Draw every key from the first `hot_rows` rows of each table: a few rows every client
    /// fights over (row-lock waits on one server, certification conflicts in a cluster).
    #[serde(default)]
    pub hot_rows: Option<u64>,
    /// On a cluster, spread the clients over its first `nodes` nodes (client i on node
    /// i mod nodes): 1 is a single writer. Absent: as the contender places them. A contender
    /// of one server has every client on it whatever this says.
    #[serde(default)]
    pub nodes: Option<u64>,
    /// On a cluster, kill one node's server outright (SIGKILL, as a crash) this many seconds
    /// into the step, to see how the others go on: `{ node = 3, at_s = 10 }`.
    #[serde(default)]
    pub kill_node: Option<KillNode>,
    /// Each client reads from another server than it writes to, as behind a read/write
    /// splitting proxy: on a cluster the node after its own, on a primary with replicas a
    /// replica (client i on replica i mod R). Its reads then run outside the write
    /// transaction and see what that server has applied. One server: no effect, noted.
    #[serde(default)]
    pub split_reads: bool,
    /// The OS threads that serve the clients (pgbench's `-j`; the `queries` step calls it
    /// `threads`): each keeps one event in flight on each of its clients' connections,
    /// sending an event's next statement as the last one's answer arrives. None: a thread a
    /// client, as sysbench runs them.
    #[serde(default)]
    pub jobs: Option<u64>,
}

/// A node a step kills on purpose.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillNode {
    /// The node, numbered from 1 as reports name them (`node-3` is 3); not 1, which holds
    /// dbduel's administrative connections.
    pub node: u64,
    /// Seconds after the step's clients start.
    pub at_s: u64,
}

impl OltpParams {
    /// sysbench's `oltp_insert` with `threads` clients for `duration_s`, keys uniform,
    /// every second counted: the writers of the replication steps.
    pub fn insert(threads: u64, duration_s: u64) -> Self {
        let mut t = toml::Table::new();
        t.insert("workload".into(), "insert".into());
        t.insert("threads".into(), (threads as i64).into());
        t.insert("duration_s".into(), (duration_s as i64).into());
        t.insert("final_fraction".into(), 1.0.into());
        t.insert("distribution".into(), "uniform".into());
        <Self as super::kind::StepKind>::decode("oltp", toml::Value::Table(t))
            .expect("oltp_insert's parameters are valid")
    }

    pub fn validate(&self) -> Result<(), DecodeError> {
        let at = |k: &str, m: String| Err(DecodeError::at(KeyPath::root().key(k), m));
        self.levels.check()?;
        check_final_fraction(self.final_fraction)?;
        super::hot_ddl::validate(
            &self.ddl,
            self.levels.threads.levels().len(),
            self.levels.duration_s,
        )?;
        self.pace.validate()?;
        if self.pace.slo.is_some() && (self.kill_node.is_some() || !self.ddl.is_empty()) {
            return at(
                "slo",
                "an slo search repeats one level at many rates: leave kill_node and ddl out of it"
                    .into(),
            );
        }
        if !(1..=1_000_000).contains(&self.range_size) {
            return at("range_size", "range_size must be from 1 to 1000000".into());
        }
        if self.hot_rows == Some(0) {
            return at(
                "hot_rows",
                "hot_rows must be at least 1 (leave it out to use every row)".into(),
            );
        }
        if let Some(k) = self.kill_node {
            let at = |key: &str, m: String| {
                Err(DecodeError::at(
                    KeyPath::root().key("kill_node").key(key),
                    m,
                ))
            };
            if k.node < 2 {
                return at(
                    "node",
                    "node 1 holds dbduel's administrative connections; kill node 2 or above".into(),
                );
            }
            if k.at_s == 0 || k.at_s >= self.levels.duration_s {
                return at(
                    "at_s",
                    format!(
                        "at_s must be within the step: 1 to {} (duration_s - 1)",
                        self.levels.duration_s.saturating_sub(1)
                    ),
                );
            }
            if self.levels.threads.levels().len() > 1 {
                return Err(DecodeError::at(
                    KeyPath::root().key("threads"),
                    "a step that kills a node runs one client count (threads = N), so that before and after compare alike",
                ));
            }
        }
        self.validate_jobs()?;
        if self.nodes.is_some_and(|n| !(1..=64).contains(&n)) {
            return at(
                "nodes",
                "nodes is how many of a cluster's nodes take clients: 1 to 64".into(),
            );
        }
        Ok(())
    }

    /// Whether each event runs between BEGIN and COMMIT.
    fn in_transactions(&self) -> bool {
        self.workload.transactional() && !self.skip_trx
    }

    fn validate_jobs(&self) -> Result<(), DecodeError> {
        let Some(jobs) = self.jobs else {
            return Ok(());
        };
        let at = |m: &str| Err(DecodeError::at(KeyPath::root().key("jobs"), m.to_string()));
        if jobs == 0 {
            return at("jobs must be at least 1 (leave it out for a thread a client)");
        }
        if self.pace.rate.is_some() || self.pace.slo.is_some() {
            return at("jobs serves clients in a closed loop: leave out rate and slo (or jobs)");
        }
        if self.split_reads || self.kill_node.is_some() {
            return at(
                "jobs keeps each client on one connection: leave out split_reads and kill_node (or jobs)",
            );
        }
        Ok(())
    }

    /// Seconds at the start of a level not counted: the warm-up, and everything before the
    /// final fraction.
    pub fn skipped_s(&self) -> u64 {
        skipped_s(
            self.levels.duration_s,
            self.final_fraction,
            self.levels.warmup_s,
        )
    }
}

/// Statement kinds, prepared once per table per client.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Point,
    Simple,
    Sum,
    Order,
    Distinct,
    IndexUpdate,
    NonIndexUpdate,
    Delete,
    Insert,
    InsertAuto,
}

impl Kind {
    /// A statement that only reads (the ones a split client sends to its reader).
    fn reads(self) -> bool {
        matches!(
            self,
            Kind::Point | Kind::Simple | Kind::Sum | Kind::Order | Kind::Distinct
        )
    }

    /// Does an event of `p` run statements of this kind? Only those are prepared, as
    /// sysbench prepares only what its event runs.
    fn used_by(self, p: &OltpParams) -> bool {
        use OltpWorkload as W;
        let mixed = |reads: bool, count: u64| {
            count > 0
                && match p.workload {
                    W::ReadOnly => reads,
                    W::WriteOnly => !reads,
                    W::ReadWrite => true,
                    _ => false,
                }
        };
        match self {
            Kind::Point => p.workload == W::PointSelect || mixed(true, p.point_selects),
            Kind::Simple => mixed(true, p.simple_ranges),
            Kind::Sum => mixed(true, p.sum_ranges),
            Kind::Order => mixed(true, p.order_ranges),
            Kind::Distinct => mixed(true, p.distinct_ranges),
            Kind::IndexUpdate => p.workload == W::UpdateIndex || mixed(false, p.index_updates),
            Kind::NonIndexUpdate => {
                p.workload == W::UpdateNonIndex || mixed(false, p.non_index_updates)
            }
            Kind::Delete | Kind::Insert if p.workload == W::Delete => self == Kind::Delete,
            Kind::Delete | Kind::Insert => mixed(false, p.delete_inserts),
            Kind::InsertAuto => p.workload == W::Insert,
        }
    }
}

const KINDS: [Kind; 10] = [
    Kind::Point,
    Kind::Simple,
    Kind::Sum,
    Kind::Order,
    Kind::Distinct,
    Kind::IndexUpdate,
    Kind::NonIndexUpdate,
    Kind::Delete,
    Kind::Insert,
    Kind::InsertAuto,
];

/// sysbench's statements (oltp_common.lua), for table `t`.
fn sql(kind: Kind, t: &str) -> String {
    match kind {
        Kind::Point => format!("SELECT c FROM {t} WHERE id=?"),
        Kind::Simple => format!("SELECT c FROM {t} WHERE id BETWEEN ? AND ?"),
        Kind::Sum => format!("SELECT SUM(k) FROM {t} WHERE id BETWEEN ? AND ?"),
        Kind::Order => format!("SELECT c FROM {t} WHERE id BETWEEN ? AND ? ORDER BY c"),
        Kind::Distinct => format!("SELECT DISTINCT c FROM {t} WHERE id BETWEEN ? AND ? ORDER BY c"),
        Kind::IndexUpdate => format!("UPDATE {t} SET k=k+1 WHERE id=?"),
        Kind::NonIndexUpdate => format!("UPDATE {t} SET c=? WHERE id=?"),
        Kind::Delete => format!("DELETE FROM {t} WHERE id=?"),
        Kind::Insert => format!("INSERT INTO {t} (id, k, c, pad) VALUES (?, ?, ?, ?)"),
        // oltp_insert with auto_inc: the engine assigns the id.
        Kind::InsertAuto => format!("INSERT INTO {t} (k, c, pad) VALUES (?, ?, ?)"),
    }
}

/// Placeholders in PostgreSQL are $1, $2, ...
pub(crate) fn placeholders(sql: &str, dialect: crate::engine::Dialect) -> String {
    dialect.placeholders(sql)
}

/// An event's transaction statements, [`OltpWorker::txn`]'s 0 and 1.
const TXN: [&str; 2] = ["BEGIN", "COMMIT"];

/// `stmts[table][kind]`: a session's prepared statements.
type Prepared = Vec<[StmtId; KINDS.len()]>;

/// Prepare the statements of every kind `wanted` on every table; the others are left unset
/// (an id no session knows, so running one is an error, never another statement).
fn prepare(
    session: &mut dyn Session,
    tables: &[String],
    dialect: crate::engine::Dialect,
    wanted: impl Fn(Kind) -> bool,
) -> engine::Result<Prepared> {
    let mut out = Vec::with_capacity(tables.len());
    for t in tables {
        let mut ids = [StmtId(usize::MAX); KINDS.len()];
        for (i, k) in KINDS.iter().enumerate().filter(|(_, k)| wanted(**k)) {
            ids[i] = session.prepare(&placeholders(&sql(*k, t), dialect))?;
        }
        out.push(ids);
    }
    Ok(out)
}

/// Where a split client's reads go: a session on another server, with the reads prepared.
struct Reader {
    session: Box<dyn Session>,
    stmts: Prepared,
    /// Its cluster node, when it is on one.
    node: Option<usize>,
}

struct OltpWorker<'a> {
    session: Box<dyn Session>,
    stmts: Prepared,
    /// BEGIN and COMMIT prepared, as sysbench prepares them; `None` for one the engine will
    /// only run as text (MySQL prepares COMMIT but not BEGIN) or when there is no transaction.
    txn: [Option<StmtId>; 2],
    /// Another server's session for the reads, when the step splits them.
    reader: Option<Reader>,
    tables: &'a [String],
    dialect: crate::engine::Dialect,
    /// The cluster node this client is on, when it was placed on one; a client whose node is
    /// lost moves to the next live node, as a client behind a load balancer would.
    home: Option<(&'a dyn Clustered, usize)>,
    p: &'a OltpParams,
    rows: u64,
    rng: SplitMix64,
    /// Reused parameter buffers: no allocation per statement.
    one: [Value; 1],
    two: [Value; 2],
    three: [Value; 3],
    four: [Value; 4],
    /// The event in flight when the client shares a thread (`jobs`).
    flight: Flight,
}

impl OltpWorker<'_> {
    /// Prepare every statement an event runs, on every table, on the current session.
    fn prepare_all(&mut self) -> engine::Result<()> {
        let p = self.p;
        self.stmts = prepare(self.session.as_mut(), self.tables, self.dialect, |k| {
            k.used_by(p)
        })?;
        let trx = p.in_transactions();
        for (id, sql) in self.txn.iter_mut().zip(TXN) {
            *id = if trx {
                self.session.prepare(sql).ok()
            } else {
                None
            };
        }
        Ok(())
    }

    /// BEGIN (`which` 0) or COMMIT (1): prepared where the engine could prepare it, else as
    /// text — what sysbench does.
    fn txn(&mut self, which: usize) -> engine::Result<u64> {
        let request = match self.txn[which] {
            Some(id) => Request::Stmt(id),
            None => Request::Text(TXN[which]),
        };
        if self.flight.recording() {
            self.flight.push(request, &[]);
            return Ok(0);
        }
        match request {
            Request::Stmt(id) => self.session.run(id, &[]),
            Request::Text(sql) => self.session.execute(sql),
        }
    }

    /// Run a statement of `kind` on table `t` with the parameters in buffer `params`, on
    /// the reader's session for reads when the step splits them; planned instead while an
    /// event is planned for a shared thread (which never splits).
    fn run_kind(&mut self, t: usize, kind: Kind, params: Params) -> engine::Result<u64> {
        let values: &[Value] = match params {
            Params::One => &self.one,
            Params::Two => &self.two,
            Params::Three => &self.three,
            Params::Four => &self.four,
        };
        if self.flight.recording() {
            self.flight
                .push(Request::Stmt(self.stmts[t][kind as usize]), values);
            return Ok(0);
        }
        let (session, stmts) = match &mut self.reader {
            Some(r) if kind.reads() => (&mut r.session, &r.stmts),
            _ => (&mut self.session, &self.stmts),
        };
        session.run(stmts[t][kind as usize], values)
    }

    /// After a lost connection: when this client's node is gone, move to the next node that
    /// is not and prepare again there; when its reader's node is gone, open the reader on
    /// the next live node other than its own.
    fn fail_over(&mut self) {
        let Some((cluster, node)) = self.home else {
            return;
        };
        let n = cluster.node_count();
        let next_live = |from: usize, avoid: Option<usize>| {
            (1..n)
                .map(|k| (from + k) % n)
                .find(|&i| cluster.node_gone(i).is_none() && Some(i) != avoid)
        };
        if cluster.node_gone(node).is_some() {
            let moved = next_live(node, None).and_then(|next| {
                self.session = cluster.node_session(next).ok()?;
                self.home = Some((cluster, next));
                self.prepare_all().ok()
            });
            if moved.is_none() {
                return;
            }
        }
        let home = self.home.map(|(_, h)| h);
        let reader_node = self.reader.as_ref().and_then(|r| r.node);
        if let Some(rn) = reader_node
            && cluster.node_gone(rn).is_some()
            && let Some(next) = next_live(rn, home)
            && let Ok(mut session) = cluster.node_session(next)
            && let Ok(stmts) = prepare(session.as_mut(), self.tables, self.dialect, Kind::reads)
        {
            self.reader = Some(Reader {
                session,
                stmts,
                node: Some(next),
            });
        }
    }

    fn table(&mut self) -> usize {
        self.rng.below_u64(self.stmts.len() as u64) as usize
    }

    fn id(&mut self) -> i64 {
        self.p.distribution.sample(&mut self.rng, self.rows) as i64
    }

    fn exec1(&mut self, t: usize, k: Kind, a: i64) -> engine::Result<()> {
        self.one[0] = Value::Int(a);
        self.run_kind(t, k, Params::One).map(|_| ())
    }

    fn ranges(&mut self, k: Kind, count: u64, n: &mut u64) -> engine::Result<()> {
        let t = self.table();
        for _ in 0..count {
            let id = self.id();
            self.two = [
                Value::Int(id),
                Value::Int(id + self.p.range_size as i64 - 1),
            ];
            self.run_kind(t, k, Params::Two)?;
            *n += 1;
        }
        Ok(())
    }

    fn point_selects(&mut self, count: u64, n: &mut u64) -> engine::Result<()> {
        let t = self.table();
        for _ in 0..count {
            let id = self.id();
            self.exec1(t, Kind::Point, id)?;
            *n += 1;
        }
        Ok(())
    }

    fn index_updates(&mut self, count: u64, n: &mut u64) -> engine::Result<()> {
        let t = self.table();
        for _ in 0..count {
            let id = self.id();
            self.exec1(t, Kind::IndexUpdate, id)?;
            *n += 1;
        }
        Ok(())
    }

    fn non_index_updates(&mut self, count: u64, n: &mut u64) -> engine::Result<()> {
        let t = self.table();
        for _ in 0..count {
            let id = self.id();
            if let Value::Text(c) = &mut self.two[0] {
                digit_groups(&mut self.rng, C_GROUPS, c);
            } else {
                let mut c = String::with_capacity(120);
                digit_groups(&mut self.rng, C_GROUPS, &mut c);
                self.two[0] = Value::Text(c);
            }
            self.two[1] = Value::Int(id);
            self.run_kind(t, Kind::NonIndexUpdate, Params::Two)?;
            *n += 1;
        }
        Ok(())
    }

    fn fill_text(v: &mut Value, rng: &mut SplitMix64, groups: usize) {
        if let Value::Text(s) = v {
            digit_groups(rng, groups, s);
        } else {
            let mut s = String::with_capacity(groups * 12);
            digit_groups(rng, groups, &mut s);
            *v = Value::Text(s);
        }
    }

    fn delete_inserts(&mut self, count: u64, n: &mut u64) -> engine::Result<()> {
        let t = self.table();
        for _ in 0..count {
            let id = self.id();
            let k = self.id();
            self.exec1(t, Kind::Delete, id)?;
            self.four[0] = Value::Int(id);
            self.four[1] = Value::Int(k);
            Self::fill_text(&mut self.four[2], &mut self.rng, C_GROUPS);
            Self::fill_text(&mut self.four[3], &mut self.rng, PAD_GROUPS);
            self.run_kind(t, Kind::Insert, Params::Four)?;
            *n += 2;
        }
        Ok(())
    }

    fn insert_auto(&mut self, n: &mut u64) -> engine::Result<()> {
        let t = self.table();
        let k = self.id();
        self.three[0] = Value::Int(k);
        Self::fill_text(&mut self.three[1], &mut self.rng, C_GROUPS);
        Self::fill_text(&mut self.three[2], &mut self.rng, PAD_GROUPS);
        self.run_kind(t, Kind::InsertAuto, Params::Three)?;
        *n += 1;
        Ok(())
    }

    /// One sysbench event; returns the statements it ran.
    fn event(&mut self) -> engine::Result<u64> {
        let p = self.p;
        let mut n = 0u64;
        let trx = p.in_transactions();
        if trx {
            self.txn(0)?;
        }
        let body = (|| -> engine::Result<()> {
            match p.workload {
                OltpWorkload::PointSelect => self.point_selects(1, &mut n),
                OltpWorkload::UpdateIndex => self.index_updates(1, &mut n),
                OltpWorkload::UpdateNonIndex => self.non_index_updates(1, &mut n),
                OltpWorkload::Insert => self.insert_auto(&mut n),
                OltpWorkload::Delete => {
                    let t = self.table();
                    let id = self.id();
                    n += 1;
                    self.exec1(t, Kind::Delete, id)
                }
                OltpWorkload::ReadOnly | OltpWorkload::ReadWrite | OltpWorkload::WriteOnly => {
                    if p.workload != OltpWorkload::WriteOnly {
                        self.point_selects(p.point_selects, &mut n)?;
                        self.ranges(Kind::Simple, p.simple_ranges, &mut n)?;
                        self.ranges(Kind::Sum, p.sum_ranges, &mut n)?;
                        self.ranges(Kind::Order, p.order_ranges, &mut n)?;
                        self.ranges(Kind::Distinct, p.distinct_ranges, &mut n)?;
                    }
                    if p.workload != OltpWorkload::ReadOnly {
                        self.index_updates(p.index_updates, &mut n)?;
                        self.non_index_updates(p.non_index_updates, &mut n)?;
                        self.delete_inserts(p.delete_inserts, &mut n)?;
                    }
                    Ok(())
                }
            }
        })();
        match body {
            Ok(()) => {
                if trx {
                    self.txn(1)?;
                    // sysbench counts BEGIN and COMMIT among its queries ("other")
                    n += 2;
                }
                Ok(n)
            }
            Err(e) => {
                if trx {
                    let _ = self.session.execute("ROLLBACK");
                }
                Err(e)
            }
        }
    }
}

impl Worker for OltpWorker<'_> {
    fn op(&mut self, _seq: u64) -> (usize, engine::Result<u64>) {
        let r = self.event();
        if let Err(e) = &r
            && e.kind == "connection"
        {
            self.fail_over();
        }
        (0, r)
    }

    fn overlapped(&mut self) -> Option<&mut dyn runner::Overlapped> {
        // One connection a client: no reader, no cluster node to move to.
        if self.reader.is_none() && self.home.is_none() && self.session.overlap().is_some() {
            Some(self)
        } else {
            None
        }
    }
}

/// An event on a thread shared with other clients: planned whole (its keys drawn in the
/// order [`OltpWorker::event`] draws them), then sent a statement at a time.
impl runner::Overlapped for OltpWorker<'_> {
    fn fd(&mut self) -> std::os::fd::RawFd {
        self.session.overlap().map_or(-1, |o| o.fd())
    }

    fn start(&mut self, _seq: u64) -> (usize, engine::Result<()>) {
        self.flight.plan();
        let planned = self.event();
        self.flight.planned();
        let sent = planned.and_then(|n| {
            debug_assert_eq!(n, self.flight.statements(), "an event counts what it plans");
            let o = self.session.overlap().ok_or_else(not_shared)?;
            self.flight.send_next(o)
        });
        (0, sent)
    }

    fn finish(&mut self) -> Option<engine::Result<u64>> {
        let o = match self.session.overlap() {
            Some(o) => o,
            None => return Some(Err(not_shared())),
        };
        match self.flight.advance(o)? {
            // every statement planned counts, BEGIN and COMMIT too: `event`'s count
            Ok(()) => Some(Ok(self.flight.statements())),
            Err(e) => {
                // As `event` does: nothing is in flight once an error's answer is read.
                if self.p.in_transactions() {
                    let _ = self.session.execute("ROLLBACK");
                }
                Some(Err(e))
            }
        }
    }
}

fn not_shared() -> engine::EngineError {
    engine::EngineError::new("client", "this session cannot share a thread")
}

/// Which of a worker's reused parameter buffers a statement takes.
#[derive(Clone, Copy)]
enum Params {
    One,
    Two,
    Three,
    Four,
}

/// A level's figures.
#[derive(Debug, Clone, serde::Serialize)]
struct Level {
    threads: u64,
    tps: f64,
    qps: f64,
    events: u64,
    latency_us: Option<Latency>,
    errors: u64,
    measured_s: f64,
    target_rate: Option<f64>,
    late: u64,
    dropped: u64,
    /// Open loop: due before the end, not started by it.
    unstarted: u64,
    dbduel_cpu_us_per_event: f64,
    first_tick: u64,
}

/// One sysbench client on `engine`: a session with every statement prepared on each of
/// `tables` (of `rows` rows, or the first `hot_rows`), its random stream `(stream, client)`;
/// on a cluster, on node `node` when given.
pub fn worker<'p>(
    engine: &'p dyn engine::Engine,
    tables: &'p [String],
    rows: u64,
    p: &'p OltpParams,
    stream: u64,
    client: usize,
    node: Option<usize>,
) -> engine::Result<Box<dyn Worker + 'p>> {
    let home = node.and_then(|n| engine.cluster().map(|c| (c, n)));
    let session = match home {
        Some((c, n)) => c.node_session(n)?,
        None => engine.connect()?,
    };
    let dialect = engine.dialect();
    let reader = if p.split_reads {
        reader_for(engine, home, client, tables)?
    } else {
        None
    };
    let mut w = OltpWorker {
        session,
        stmts: Vec::with_capacity(tables.len()),
        txn: [None; 2],
        reader,
        tables,
        dialect,
        home,
        p,
        rows: p.hot_rows.map_or(rows, |h| h.min(rows)),
        rng: SplitMix64::stream(stream, client as u64),
        one: [Value::Int(0)],
        two: [Value::Int(0), Value::Int(0)],
        three: [
            Value::Int(0),
            Value::Text(String::new()),
            Value::Text(String::new()),
        ],
        four: [
            Value::Int(0),
            Value::Int(0),
            Value::Text(String::new()),
            Value::Text(String::new()),
        ],
        flight: Flight::default(),
    };
    w.prepare_all()?;
    Ok(Box::new(w))
}

/// A split client's reader, its reads prepared on every table: on the cluster node after
/// its own, or on a replica of the topology (client i on replica i mod R); `None` for one
/// server.
fn reader_for(
    engine: &dyn engine::Engine,
    home: Option<(&dyn Clustered, usize)>,
    client: usize,
    tables: &[String],
) -> engine::Result<Option<Reader>> {
    let (mut session, node) = if let Some((c, node)) = home {
        let n = c.node_count();
        let next = (1..n)
            .map(|k| (node + k) % n)
            .find(|&i| c.node_gone(i).is_none())
            .unwrap_or(node);
        (c.node_session(next)?, Some(next))
    } else {
        match engine.replication() {
            Some(r) if r.replica_count() > 0 => {
                (r.replica_session(client % r.replica_count())?, None)
            }
            _ => return Ok(None),
        }
    };
    let stmts = prepare(session.as_mut(), tables, engine.dialect(), Kind::reads)?;
    Ok(Some(Reader {
        session,
        stmts,
        node,
    }))
}

/// The cluster nodes that take the step's clients (client i on the (i mod K)-th of them):
/// the first K running nodes, K being the step's `nodes`, else the contender's placement
/// (a node an earlier step lost takes none). `None` for one server.
pub fn client_nodes(engine: &dyn engine::Engine, nodes: Option<u64>) -> Option<Vec<usize>> {
    let c = engine.cluster()?;
    let k = nodes.map_or(c.client_nodes(), |n| n as usize).max(1);
    let live: Vec<usize> = (0..c.node_count())
        .filter(|&i| c.node_gone(i).is_none())
        .take(k)
        .collect();
    Some(live)
}

/// What a step's levels produced.
#[derive(Default)]
struct Ran {
    levels: Vec<Level>,
    /// On a cluster, each second's operations a second, by the step's tick (what the
    /// throughput around a lost node reads); empty on one server.
    rates: Vec<f64>,
    /// Seconds the levels emitted, ticks through the step.
    seconds: runner::Seconds,
    interrupted: bool,
    hot_changes: Vec<super::hot_ddl::HotRun>,
    failed_kinds: std::collections::BTreeMap<String, u64>,
    /// When the step tried to kill a node on purpose: seconds into its level when it did.
    killed: Option<Option<f64>>,
}

/// Run every level in turn, counting each second the runner records in `ticks`.
fn run_levels(
    p: &OltpParams,
    ctx: &StepCtx<'_>,
    spread: Option<&[usize]>,
    kill: Option<(KillNode, &dyn Clustered)>,
    ticks: &std::sync::atomic::AtomicU64,
    first_tick: u64,
) -> Result<Ran, StepError> {
    let engine = ctx.engine;
    let tables: Vec<String> = ctx.tables.iter().map(|t| t.name.clone()).collect();
    let names = vec![p.workload.name().to_string()];
    let mut r = Ran::default();
    let threads_of_levels = p.levels.threads.levels();
    let timing = (first_tick, p.levels.duration_s);
    // A cluster's seconds feed the throughput around a lost node.
    let on_cluster = engine.cluster().is_some();
    let (levels, interrupted) =
        super::sweep::walk(ctx, &threads_of_levels, timing, |li, threads, tick_base| {
            let spec = RunSpec {
                clients: threads as usize,
                bound: Bound::Duration(Duration::from_secs(p.levels.duration_s)),
                warmup_s: p.skipped_s(),
                pacing: p.pace.pacing(1.0),
                seed: li as u64,
                team: ctx.team.cloned(),
                // A cluster's client may move to another node: a thread of its own each.
                threads: p
                    .jobs
                    .filter(|_| spread.is_none())
                    .map(|j| j.min(threads) as usize),
            };
            ctx.progress
                .status(&format!("{} threads connecting", threads));
            let make = |client: usize| {
                worker(
                    engine,
                    &tables,
                    ctx.dataset_rows,
                    p,
                    0x005b_7e57 ^ li as u64,
                    client,
                    spread
                        .filter(|nodes| !nodes.is_empty())
                        .map(|nodes| nodes[client % nodes.len()]),
                )
            };
            let progress = ctx.progress;
            let (out, runs) =
                super::hot_ddl::alongside(engine, ctx.own(&p.ddl), ctx.stop, |second| {
                    runner::run_closed(&spec, &names, make, ctx.stop, |iv| {
                        ctx.seconds.append_shifted(iv, tick_base, Some(threads));
                        second(iv.into());
                        if on_cluster {
                            r.rates.push(iv.ops_per_s);
                        }
                        if let Some((k, c)) = kill
                            && r.killed.is_none()
                            && iv.t_s >= k.at_s as f64
                        {
                            // Once: a kill that fails (the node already gone) is not claimed.
                            r.killed = Some(c.kill_node(k.node as usize - 1).map(|()| iv.t_s).ok());
                        }
                        ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        progress.status(&format!(
                            "{threads} threads t={:.0}s {:.0} tps",
                            iv.t_s, iv.ops_per_s
                        ));
                    })
                });
            let out = out?;
            r.hot_changes = runs;
            for e in &out.errors {
                *r.failed_kinds.entry(e.kind.clone()).or_insert(0) += e.count;
            }
            if !out.interrupted
                && let Some((errors, first)) = out.all_failed()
            {
                return Err(StepError::Check(format!(
                    "every {} event failed at {threads} threads ({errors} errors); first: {first}",
                    p.workload.name()
                )));
            }
            r.seconds = r.seconds.then(out.seconds.shifted(tick_base));
            Ok((level_of(p, threads, &out, tick_base), out.interrupted))
        })?;
    r.levels = levels;
    r.interrupted = interrupted;
    Ok(r)
}

/// One level's figures from the runner's outcome.
fn level_of(p: &OltpParams, threads: u64, out: &runner::RunOutcome, first_tick: u64) -> Level {
    let per_s = |n: u64| {
        if out.measured_s > 0.0 {
            n as f64 / out.measured_s
        } else {
            0.0
        }
    };
    Level {
        threads,
        tps: per_s(out.ops),
        qps: per_s(out.rows),
        events: out.ops,
        latency_us: Latency::of(&out.all),
        errors: out.error_count(),
        measured_s: out.measured_s,
        target_rate: p
            .pace
            .target_mean(1.0, p.skipped_s() as f64, p.levels.duration_s as f64),
        late: out.late,
        dropped: out.dropped,
        unstarted: out.unstarted,
        dbduel_cpu_us_per_event: out.cpu_us_per_op(),
        first_tick,
    }
}

impl super::kind::StepKind for OltpParams {
    fn decode(_kind: &str, v: toml::Value) -> Result<Self, DecodeError> {
        super::pacing::decode_with(
            v,
            |v| super::sweep::decode(v, |p: &mut Self, levels| p.levels = levels),
            |p, pace| p.pace = pace,
        )
    }
    fn divides_clients() -> bool {
        true
    }
    fn validate(&self) -> Result<(), DecodeError> {
        OltpParams::validate(self)
    }
    fn levels(&self) -> Option<&Levels> {
        Some(&self.levels)
    }
    fn generator(&self) -> Option<super::kind::GeneratorNeed> {
        Some(super::kind::GeneratorNeed::SBTEST)
    }
    fn needs(&self, tables: &[String]) -> Option<super::kind::TableNeed> {
        Some(super::kind::TableNeed::all(
            "runs sysbench's statements on",
            tables,
        ))
    }
    fn run(&self, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
        run(self, ctx)
    }
}

/// `slo`: the search's probes, each one level of the step's (largest) client count.
fn run_slo(
    p: &OltpParams,
    slo: &super::slo::Slo,
    ctx: &StepCtx<'_>,
    spread: Option<&[usize]>,
) -> Result<StepOutput, StepError> {
    super::slo::unsharded(ctx)?;
    let threads = p.levels.threads.max();
    let ticks = std::sync::atomic::AtomicU64::new(0);
    let found = super::slo::search(slo, |rate, tick_base| {
        let mut probe = p.clone();
        probe.pace = p.pace.at(rate);
        probe.final_fraction = 1.0;
        probe.levels.threads = super::sweep::Threads::One(threads);
        let ran = run_levels(&probe, ctx, spread, None, &ticks, tick_base)?;
        let Some(l) = ran.levels.first() else {
            return Err(StepError::Skipped(
                "interrupted before the first probe".into(),
            ));
        };
        Ok(super::slo::Measured {
            // Events started and ended, failed ones included: the error bound judges those.
            achieved: if l.measured_s > 0.0 {
                (l.events + l.errors) as f64 / l.measured_s
            } else {
                0.0
            },
            latency: l.latency_us,
            ops: l.events,
            errors: l.errors,
            late: l.late,
            dropped: l.dropped,
            seconds: ran.seconds,
            interrupted: ran.interrupted,
        })
    })?;
    let title = format!(
        "{}, {threads} threads",
        ctx.title(&format!("oltp {}", p.workload.name()))
    );
    Ok(super::slo::output(
        title,
        slo,
        "events/s",
        p.pace.details(),
        found,
    ))
}

/// The node `kill_node` names, on a cluster that survives losing it (none on one server).
fn node_to_kill<'e>(
    p: &OltpParams,
    engine: &'e dyn engine::Engine,
) -> Result<Option<(KillNode, &'e dyn Clustered)>, StepError> {
    match (p.kill_node, engine.cluster()) {
        (Some(k), Some(c)) if k.node as usize > c.node_count() || c.node_count() < 3 => {
            Err(StepError::Check(format!(
                "kill_node names node {} of a {}-node cluster; it needs a node that exists, in a cluster of at least 3 (fewer lose their majority with one node)",
                k.node,
                c.node_count()
            )))
        }
        (Some(k), Some(c)) => Ok(Some((k, c))),
        _ => Ok(None),
    }
}

/// What a cluster says of the step (its figures and notes, the throughput around a lost
/// node: `rates` by second, `killed` when the step killed one on purpose), into `s` and
/// `notes`; a node lost that nobody meant to lose, in words.
fn cluster_figures(
    p: &OltpParams,
    cluster: Option<&super::cluster::ClusterFigures>,
    (rates, killed): (&[f64], Option<Option<f64>>),
    s: &mut crate::results::StepSummary,
    notes: &mut Vec<String>,
) -> Option<String> {
    let Some(c) = cluster else {
        if p.kill_node.is_some() {
            notes.push(
                "kill_node applies to a cluster: this contender is one server, so no node was killed"
                    .into(),
            );
        }
        return None;
    };
    let planned = p.kill_node.map(|k| (k.node as usize - 1, killed.flatten()));
    let autocommit = !p.workload.transactional() || p.skip_trx;
    let told = c.report(rates, planned, autocommit);
    s.metrics.extend(told.metrics);
    notes.extend(told.notes);
    told.unplanned
}

pub fn run(p: &OltpParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    let engine = ctx.engine;
    let tables: Vec<String> = ctx.tables.iter().map(|t| t.name.clone()).collect();
    let start = super::restart::SweepStart::begin(p.levels.cold_start, ctx)?;
    let spread = client_nodes(engine, p.nodes);
    if let Some(slo) = &p.pace.slo {
        return run_slo(p, slo, ctx, spread.as_deref());
    }
    let kill = node_to_kill(p, engine)?;
    let (ran, cluster) = super::cluster::watched(engine.cluster(), |ticks| {
        run_levels(p, ctx, spread.as_deref(), kill, ticks, 0)
    });
    let Ran {
        levels,
        rates,
        seconds,
        interrupted,
        hot_changes,
        failed_kinds,
        killed,
    } = ran?;
    let Some(best) = levels
        .iter()
        .max_by(|a, b| a.tps.total_cmp(&b.tps))
        .cloned()
    else {
        return Err(StepError::Skipped(
            "interrupted before the first level".into(),
        ));
    };
    let sweep = levels.len() > 1;
    let mut s = summary(ctx.title(&format!("oltp {}", p.workload.name())));
    s.elapsed_s = Some(levels.iter().map(|l| l.measured_s).sum());
    s.ops_per_s = Some(best.tps);
    s.latency_us = best.latency_us;
    s.rows = Some(levels.iter().map(|l| l.events).sum());
    s.errors = Some(levels.iter().map(|l| l.errors).sum());
    s.metrics
        .extend(level_metrics(&levels, &best, s.errors.unwrap_or(0)));
    let mut notes = level_notes(p, spread.is_some(), &levels, &failed_kinds);
    notes.extend(start.as_ref().map(|s| s.note("sweep")));
    if engine.embedded() {
        notes.push("dbduel's CPU per event includes the embedded engine's own work".into());
    }
    if sweep {
        notes.push(format!(
            "best: {:.0} TPS at {} threads",
            best.tps, best.threads
        ));
    }
    let (ddl_metrics, ddl_notes) = super::hot_ddl::figures(&hot_changes);
    s.metrics.extend(ddl_metrics);
    notes.extend(ddl_notes);
    let unplanned = cluster_figures(p, cluster.as_ref(), (&rates, killed), &mut s, &mut notes);
    notes.extend(placement_notes(p, engine, spread.as_deref()));
    s.note = Some(notes.join("; "));
    let failed = super::hot_ddl::failures(&hot_changes);
    let out = StepOutput {
        summary: s,
        details: serde_json::json!({
            "workload": p.workload.name(),
            "distribution": p.distribution,
            "tables": tables,
            "rows_per_table": ctx.dataset_rows,
            "duration_s": p.levels.duration_s,
            "final_fraction": p.final_fraction,
            "measured_s_per_level": p.levels.duration_s - p.skipped_s(),
            "loop": if p.pace.is_open() { "open" } else { "closed" },
            "pacing": p.pace.details(),
            "levels": levels,
            "best": best,
            "cold_start": start.as_ref().map(super::restart::SweepStart::details),
            "ddl": hot_changes,
            "hot_rows": p.hot_rows,
            "jobs": p.jobs,
            "cluster": cluster,
        }),
        seconds: seconds.count,
        interrupted,
    };
    if let Some(lost) = unplanned {
        // The cluster went on, and its figures say how; but a node nobody meant to lose
        // is a failure of the run.
        return Err(StepError::Failed(
            format!("{lost}; the figures stand, with the throughput before and after"),
            super::ctx::Kept(Box::new(out)),
        ));
    }
    super::hot_ddl::outcome(out, failed)
}

/// The step's figures of its levels: each level's TPS and p99, then for a sweep the best level
/// first, else QPS and the tail; the failed events (`errors`) and dbduel's CPU.
fn level_metrics(levels: &[Level], best: &Level, errors: u64) -> Vec<Metric> {
    let sweep = levels.len() > 1;
    let mut m = Vec::new();
    for l in levels {
        let sfx = if sweep {
            format!(" @{}", l.threads)
        } else {
            String::new()
        };
        m.push(
            Metric::new(
                &format!("tps_t{}", l.threads),
                &format!("TPS{sfx}"),
                l.tps,
                Unit::PerSecond,
                Better::Higher,
            )
            .with_role(Role::Rate),
        );
        if let Some(lat) = l.latency_us {
            m.push(
                Metric::new(
                    &format!("p99_us_t{}", l.threads),
                    &format!("p99{sfx}"),
                    lat.p99 as f64,
                    Unit::Micros,
                    Better::Lower,
                )
                .quantile(0.99, Some(l.threads), &[]),
            );
        }
    }
    if sweep {
        // The headline first: reports and verdicts lead with a step's first figure.
        m.insert(
            0,
            Metric::new(
                "best_tps",
                "best TPS",
                best.tps,
                Unit::PerSecond,
                Better::Higher,
            )
            .derived(Derived::Best {
                prefix: "tps_t".into(),
            }),
        );
        m.insert(
            1,
            Metric::new(
                "best_threads",
                "at threads",
                best.threads as f64,
                Unit::Count,
                Better::None,
            )
            .derived(Derived::BestLevel {
                prefix: "tps_t".into(),
            }),
        );
    } else {
        m.push(Metric::new(
            "qps",
            "QPS",
            best.qps,
            Unit::PerSecond,
            Better::Higher,
        ));
        if let Some(lat) = best.latency_us {
            for key in ["p95", "max"] {
                m.push(super::sweep::latency_metric(
                    &format!("{key}_us"),
                    key,
                    &lat,
                    key,
                    Some(best.threads),
                ));
            }
        }
    }
    // A failed event is not retried (sysbench restarts one that hit a deadlock): the figure
    // says how many there were, and the note of what kind.
    m.push(Metric::new(
        "failed_events",
        "failed events",
        errors as f64,
        Unit::Count,
        Better::Lower,
    ));
    m.push(Metric::new(
        "cpu_us_per_event",
        "dbduel CPU/event",
        best.dbduel_cpu_us_per_event,
        Unit::Micros,
        Better::None,
    ));
    m
}

/// The notes on how the levels ran: the loop and measured window, failed events by kind, and
/// the rates an open loop could not sustain.
fn level_notes(
    p: &OltpParams,
    clustered: bool,
    levels: &[Level],
    failed_kinds: &std::collections::BTreeMap<String, u64>,
) -> Vec<String> {
    let mut notes = vec![format!(
        "{}; each level's figure is the mean of its last {:.0}% ({} of {} s)",
        p.pace.loop_note("events/s"),
        p.final_fraction * 100.0,
        p.levels.duration_s - p.skipped_s(),
        p.levels.duration_s
    )];
    if !failed_kinds.is_empty() {
        let kinds: Vec<String> = failed_kinds
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        notes.push(format!(
            "failed events by kind: {} (counted, not retried)",
            kinds.join(", ")
        ));
    }
    match p.jobs {
        Some(_) if clustered => notes.push(
            "jobs left aside: a cluster's clients keep a thread each, as one may move to another node".into(),
        ),
        Some(j) => notes.push(format!(
            "the clients served from at most {j} thread(s) (jobs), one event in flight on each connection, its statements sent one after another"
        )),
        None => {}
    }
    for l in levels {
        notes.extend(super::pacing::shortfall(
            &format!("at {} threads", l.threads),
            l.target_rate,
            l.tps,
            l.late,
            l.dropped,
            l.unstarted,
            "events/s",
        ));
    }
    notes
}

/// The notes on where the clients ran and what they touched: their nodes, hot rows, split
/// reads.
fn placement_notes(
    p: &OltpParams,
    engine: &dyn engine::Engine,
    spread: Option<&[usize]>,
) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(nodes) = spread {
        let names: Vec<String> = nodes.iter().map(|&i| format!("node-{}", i + 1)).collect();
        notes.push(format!(
            "clients spread over {} of the cluster's {} nodes ({})",
            nodes.len(),
            engine.cluster().map_or(nodes.len(), |c| c.node_count()),
            names.join(", ")
        ));
    } else if p.nodes.is_some_and(|n| n > 1) {
        notes.push("one server: every client on it (nodes applies to clusters)".into());
    }
    if let Some(h) = p.hot_rows {
        notes.push(format!("keys drawn from the first {h} rows of each table"));
    }
    if p.split_reads {
        notes.push(
            if engine.cluster().is_some() || engine.replication().is_some() {
                "reads split from writes: each client read from another server than it wrote to (a cluster's next node, or a replica), outside its write transaction, seeing what that server had applied"
            } else {
                "split_reads: one server, so reads and writes both went to it"
            }
            .into(),
        );
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(duration_s: u64, final_fraction: f64, warmup_s: u64) -> OltpParams {
        let text = format!(
            "workload = \"read_write\"\nthreads = [1, 2]\nduration_s = {duration_s}\nfinal_fraction = {final_fraction}\nwarmup_s = {warmup_s}\n"
        );
        let p: OltpParams = crate::workload::kind::params_of(&text).expect("params");
        p.validate().expect("valid");
        p
    }

    #[test]
    fn the_final_fraction_decides_what_counts() {
        // the original study: the final 15 of 60 minutes
        assert_eq!(params(3600, 0.25, 0).skipped_s(), 2700);
        assert_eq!(params(8, 0.25, 0).skipped_s(), 6);
        // at least one second is measured
        assert_eq!(params(2, 0.25, 0).skipped_s(), 1);
        assert_eq!(params(10, 1.0, 0).skipped_s(), 0);
        // a longer warm-up wins
        assert_eq!(params(10, 1.0, 4).skipped_s(), 4);
        assert_eq!(params(10, 0.5, 0).levels.threads.levels(), vec![1, 2]);
    }

    #[test]
    fn jobs_need_a_closed_loop_on_one_connection_a_client() {
        let check = |extra: &str| {
            let text = format!("workload = \"read_only\"\nthreads = 8\nduration_s = 5\n{extra}");
            let p: OltpParams = crate::workload::kind::params_of(&text).expect("params");
            p.validate()
                .err()
                .map(|e| format!("{:?}: {}", e.path, e.message))
        };
        assert_eq!(check("jobs = 2\n"), None);
        // more jobs than clients: a thread a client
        assert_eq!(check("jobs = 64\n"), None);
        let refused = [
            ("jobs = 0\n", "at least 1"),
            ("jobs = 2\nrate = 100\n", "closed loop"),
            ("jobs = 2\nsplit_reads = true\n", "split_reads"),
        ];
        for (extra, why) in refused {
            let e = check(extra).unwrap_or_else(|| panic!("{extra} must be refused"));
            assert!(e.contains("jobs") && e.contains(why), "{extra}: {e}");
        }
    }

    #[test]
    fn postgres_gets_numbered_placeholders() {
        let s = sql(Kind::Insert, "sbtest3");
        assert_eq!(s, "INSERT INTO sbtest3 (id, k, c, pad) VALUES (?, ?, ?, ?)");
        assert_eq!(
            placeholders(&s, crate::engine::Dialect::Postgres),
            "INSERT INTO sbtest3 (id, k, c, pad) VALUES ($1, $2, $3, $4)"
        );
        assert_eq!(placeholders(&s, crate::engine::Dialect::Mysql), s);
    }
}
