//! What the live endpoint shows, fed from the run's events and its per-second records: a
//! [`RunConsumer`] that notes each step as it starts (its labels and the per-second file the
//! journal names for it), and at each scrape reads only the lines appended to those files
//! since the last one. The step's hot path is untouched: the records are the ones the runner
//! already merges each second and the journal already writes.

use super::exposition::{Exposition, labels};
use crate::metrics::Hist;
use crate::results::IntervalRecord;
use crate::run::{ExecError, RunConsumer, RunEvent};
use crate::sysmon::SystemSample;
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

/// Upper bounds of the latency histogram's buckets, seconds (50 µs to 10 s, then +Inf).
pub const BUCKETS_S: [f64; 17] = [
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0,
];

/// Seconds of the running step the live page gets (the last ten minutes).
pub const PAGE_SECONDS: usize = 600;

/// One op kind's totals over a step's seconds so far.
#[derive(Debug, Clone, Default)]
struct OpTotals {
    ops: u64,
    /// Operations per bucket of [`BUCKETS_S`] (not cumulative), the last for +Inf.
    buckets: [u64; BUCKETS_S.len() + 1],
    sum_s: f64,
}

/// A file that grows by whole lines, read from where the last read stopped.
#[derive(Debug, Default)]
struct Tail {
    file: Option<PathBuf>,
    offset: u64,
}

impl Tail {
    fn new(file: Option<PathBuf>) -> Tail {
        Tail { file, offset: 0 }
    }

    /// Each whole line appended since the last read.
    fn read_new(&mut self, mut line: impl FnMut(&[u8])) {
        let Some(path) = &self.file else { return };
        let Ok(mut f) = std::fs::File::open(path) else {
            return;
        };
        let mut buf = Vec::new();
        if f.seek(SeekFrom::Start(self.offset)).is_err() || f.read_to_end(&mut buf).is_err() {
            return;
        }
        let Some(end) = buf.iter().rposition(|b| *b == b'\n') else {
            return;
        };
        buf[..end].split(|b| *b == b'\n').for_each(&mut line);
        self.offset += end as u64 + 1;
    }
}

/// One step of one pass, as far as its per-second files have been read.
#[derive(Debug)]
struct StepTail {
    contender: String,
    step: String,
    round: String,
    /// The runner's seconds (`<step>.intervals.ndjson`).
    seconds: Tail,
    /// The sampler's seconds (`<step>.system.ndjson`).
    system: Tail,
    ops: BTreeMap<String, OpTotals>,
    /// Failures by op kind and error kind (a second's errors of no known kind under
    /// `("", "other")`).
    error_kinds: BTreeMap<(String, String), u64>,
    clients: Option<u64>,
    rate: Option<f64>,
    /// Open loop: the rate the clients are scheduled at.
    target_rate: Option<f64>,
    /// The sampler's latest second: host, devices, the server's process tree.
    machine: Option<SystemSample>,
    /// The step's latest seconds for the live page: end (seconds after the step's start),
    /// operations a second, p99 (µs); at most [`PAGE_SECONDS`].
    recent: std::collections::VecDeque<(f64, f64, Option<u64>)>,
    running: bool,
}

impl StepTail {
    fn new(contender: &str, step: &str, round: String, dir: Option<(PathBuf, PathBuf)>) -> Self {
        let (seconds, system) = dir.unzip();
        StepTail {
            contender: contender.into(),
            step: step.into(),
            round,
            seconds: Tail::new(seconds),
            system: Tail::new(system),
            ops: BTreeMap::new(),
            error_kinds: BTreeMap::new(),
            clients: None,
            rate: None,
            target_rate: None,
            machine: None,
            recent: Default::default(),
            running: true,
        }
    }

    /// Read the records appended since the last read (whole lines only).
    fn catch_up(&mut self) {
        let mut recs = Vec::new();
        self.seconds.read_new(|line| {
            if let Ok(rec) = serde_json::from_slice::<IntervalRecord>(line) {
                recs.push(rec);
            }
        });
        recs.iter().for_each(|r| self.add(r));
        let mut latest = None;
        self.system.read_new(|line| {
            if let Ok(s) = serde_json::from_slice::<SystemSample>(line) {
                latest = Some(s);
            }
        });
        if latest.is_some() {
            self.machine = latest;
        }
    }

    fn add(&mut self, rec: &IntervalRecord) {
        let mut known = 0;
        for e in &rec.error_kinds {
            known += e.count;
            *self
                .error_kinds
                .entry((e.op.clone(), e.kind.clone()))
                .or_default() += e.count;
        }
        if rec.errors > known {
            *self
                .error_kinds
                .entry((String::new(), "other".into()))
                .or_default() += rec.errors - known;
        }
        self.clients = rec.level.or(self.clients);
        self.rate = Some(rec.ops_per_s);
        self.target_rate = rec.target_rate.or(self.target_rate);
        if self.recent.len() == PAGE_SECONDS {
            self.recent.pop_front();
        }
        self.recent
            .push_back((rec.t_s, rec.ops_per_s, rec.latency_us.map(|l| l.p99)));
        for o in &rec.per_op {
            let t = self.ops.entry(o.op.clone()).or_default();
            t.ops += o.ops;
            if let Some(h) = o
                .hist
                .as_deref()
                .and_then(|h| crate::metrics::decode(h).ok())
            {
                add_hist(t, &h);
            }
        }
    }
}

fn add_hist(t: &mut OpTotals, h: &Hist) {
    for v in h.iter_recorded() {
        let s = h.highest_equivalent(v.value_iterated_to()) as f64 / 1e6;
        let n = v.count_at_value();
        let i = BUCKETS_S
            .iter()
            .position(|b| s <= *b)
            .unwrap_or(BUCKETS_S.len());
        t.buckets[i] += n;
        t.sum_s += s * n as f64;
    }
}

/// The live state of a run, shared by its feed and its endpoint.
#[derive(Debug, Default)]
pub struct State {
    study: String,
    shard: String,
    dir: Option<PathBuf>,
    steps: Vec<StepTail>,
}

/// The state shared between the run (writer) and the endpoint (reader).
pub type Shared = Arc<Mutex<State>>;

/// A new state for a run of `study` (`shard`: `I/N` for one shard of a run, else empty).
pub fn shared(study: &str, shard: &str) -> Shared {
    Arc::new(Mutex::new(State {
        study: study.into(),
        shard: shard.into(),
        ..State::default()
    }))
}

/// The run consumer that keeps a [`State`] up to date.
pub struct Feed(pub Shared);

impl RunConsumer for Feed {
    fn event(&mut self, event: &RunEvent<'_>) -> Result<(), ExecError> {
        let mut st = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            RunEvent::RunStarted { dir, .. } => st.dir = Some(dir.to_path_buf()),
            RunEvent::StepStarted { pass, step } => {
                let files = st.dir.as_deref().map(|d| {
                    (
                        crate::run::journal::seconds_log_path(d, pass, step),
                        crate::run::journal::system_log_path(d, pass, step),
                    )
                });
                let round = pass.round.map(|r| r.to_string()).unwrap_or_default();
                st.steps
                    .push(StepTail::new(&pass.name, &step.name, round, files));
            }
            RunEvent::StepFinished { pass, step, .. } => {
                let round = pass.round.map(|r| r.to_string()).unwrap_or_default();
                if let Some(t) =
                    st.steps.iter_mut().rev().find(|t| {
                        t.contender == pass.name && t.step == step.name && t.round == round
                    })
                {
                    t.catch_up();
                    t.running = false;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The exposition of the state now: every step seen so far (finished ones keep their final
/// counts, so a scrape after a step sees its whole count), and dbduel's own CPU and memory.
pub fn render(shared: &Shared, format: super::exposition::TextFormat) -> String {
    let mut st = shared.lock().unwrap_or_else(PoisonError::into_inner);
    st.steps
        .iter_mut()
        .filter(|t| t.running)
        .for_each(StepTail::catch_up);
    let st = &*st;
    let base = |t: &StepTail| base_labels(st, t);
    let mut x = Exposition::new(format);
    x.family(
        "dbduel_operations",
        "counter",
        None,
        "Operations completed, by step and op kind.",
    );
    for t in &st.steps {
        for (op, o) in &t.ops {
            x.sample(
                "dbduel_operations_total",
                &lab(&base(t), &[("op", op)]),
                o.ops as f64,
            );
        }
    }
    x.family(
        "dbduel_errors",
        "counter",
        None,
        "Operations that failed, by step, op kind and error kind (0 without labels until one fails).",
    );
    for t in &st.steps {
        if t.error_kinds.is_empty() {
            x.sample("dbduel_errors_total", &lab(&base(t), &[]), 0.0);
        }
        for ((op, kind), n) in &t.error_kinds {
            x.sample(
                "dbduel_errors_total",
                &lab(&base(t), &[("op", op), ("kind", kind)]),
                *n as f64,
            );
        }
    }
    latency(&mut x, st);
    x.family(
        "dbduel_clients",
        "gauge",
        None,
        "Clients of the running step (its sweep level).",
    );
    for t in st.steps.iter().filter(|t| t.running) {
        if let Some(c) = t.clients {
            x.sample("dbduel_clients", &lab(&base(t), &[]), c as f64);
        }
    }
    x.family(
        "dbduel_achieved_rate",
        "gauge",
        None,
        "Operations a second in the running step's last whole second.",
    );
    for t in st.steps.iter().filter(|t| t.running) {
        if let Some(r) = t.rate {
            x.sample("dbduel_achieved_rate", &lab(&base(t), &[]), r);
        }
    }
    x.family(
        "dbduel_target_rate",
        "gauge",
        None,
        "Open loop: operations a second the running step's clients are scheduled at.",
    );
    for t in st.steps.iter().filter(|t| t.running) {
        if let Some(r) = t.target_rate {
            x.sample("dbduel_target_rate", &lab(&base(t), &[]), r);
        }
    }
    super::machine::render(
        &mut x,
        st.steps
            .iter()
            .filter(|t| t.running)
            .filter_map(|t| Some((base(t), t.machine.as_ref()?))),
    );
    x.family(
        "dbduel_step_running",
        "gauge",
        None,
        "1 while the step runs, then 0.",
    );
    for t in &st.steps {
        x.sample(
            "dbduel_step_running",
            &lab(&base(t), &[]),
            f64::from(u8::from(t.running)),
        );
    }
    own_use(&mut x, &st.study, &st.shard);
    x.finish()
}

/// A step's own labels.
pub(super) type Labels = Vec<(&'static str, String)>;

fn base_labels(st: &State, t: &StepTail) -> Labels {
    vec![
        ("study", st.study.clone()),
        ("contender", t.contender.clone()),
        ("step", t.step.clone()),
        ("round", t.round.clone()),
        ("shard", st.shard.clone()),
    ]
}

/// A step's labels and `extra`, laid out.
pub(super) fn lab(pairs: &Labels, extra: &[(&str, &str)]) -> String {
    let mut all: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    all.extend_from_slice(extra);
    labels(&all)
}

fn latency(x: &mut Exposition, st: &State) {
    x.family(
        "dbduel_latency_seconds",
        "histogram",
        Some("seconds"),
        "Latency of completed operations, by step and op kind.",
    );
    for t in &st.steps {
        for (op, o) in &t.ops {
            let b = base_labels(st, t);
            let mut cum = 0;
            for (i, le) in BUCKETS_S.iter().enumerate() {
                cum += o.buckets[i];
                let le = super::exposition::number(*le);
                x.sample(
                    "dbduel_latency_seconds_bucket",
                    &lab(&b, &[("op", op), ("le", &le)]),
                    cum as f64,
                );
            }
            cum += o.buckets[BUCKETS_S.len()];
            x.sample(
                "dbduel_latency_seconds_bucket",
                &lab(&b, &[("op", op), ("le", "+Inf")]),
                cum as f64,
            );
            x.sample(
                "dbduel_latency_seconds_count",
                &lab(&b, &[("op", op)]),
                cum as f64,
            );
            x.sample(
                "dbduel_latency_seconds_sum",
                &lab(&b, &[("op", op)]),
                o.sum_s,
            );
        }
    }
}

/// dbduel's own CPU time and resident memory, from /proc.
fn own_use(x: &mut Exposition, study: &str, shard: &str) {
    let l = labels(&[("study", study), ("shard", shard)]);
    let Ok(stat) = procfs::process::Process::myself().and_then(|p| p.stat()) else {
        return;
    };
    let tps = procfs::ticks_per_second() as f64;
    x.family(
        "dbduel_process_cpu_seconds",
        "counter",
        Some("seconds"),
        "CPU time dbduel itself used (user and system).",
    );
    x.sample(
        "dbduel_process_cpu_seconds_total",
        &l,
        (stat.utime + stat.stime) as f64 / tps,
    );
    x.family(
        "dbduel_process_resident_memory_bytes",
        "gauge",
        Some("bytes"),
        "dbduel's resident memory.",
    );
    let page = procfs::page_size() as f64;
    x.sample(
        "dbduel_process_resident_memory_bytes",
        &l,
        stat.rss as f64 * page,
    );
}

/// The running steps' latest seconds, for the live page: `{"study", "steps": [{"contender",
/// "step", "round", "seconds": [[t_s, ops_per_s, p99_us], ...]}]}`.
pub fn snapshot(shared: &Shared) -> String {
    let mut st = shared.lock().unwrap_or_else(PoisonError::into_inner);
    st.steps
        .iter_mut()
        .filter(|t| t.running)
        .for_each(StepTail::catch_up);
    let steps: Vec<serde_json::Value> = st
        .steps
        .iter()
        .filter(|t| t.running && !t.recent.is_empty())
        .map(|t| {
            serde_json::json!({
                "contender": t.contender,
                "step": t.step,
                "round": t.round,
                "seconds": t.recent,
            })
        })
        .collect();
    serde_json::json!({ "study": st.study, "steps": steps }).to_string()
}
