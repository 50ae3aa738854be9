//! The executor: walks the [`Plan`] — the dataset once, then each round's passes, each pass
//! opening its contender's engine from nothing and running every step through the shard
//! gate — and emits [`RunEvent`]s. It writes no file and prints nothing: consumers do (the
//! journal the run directory, the status lines the terminal). It asks the journal only
//! where a step's files go, to hand the step its per-second file and its earlier results.

use super::events::{RunEvent, Sinks};
use super::gate::{Admit, Gate};
use super::plan::{Pass, Plan, PlannedStep};
use super::step::{StepEnv, run_step};
use super::{ExecError, RunOptions};
use crate::dataset::TableDef;
use crate::engine::{Engine, OpenCtx};
use crate::progress::Progress;
use crate::results::{ContenderFacts, DatasetFacts, Host, Status, StepSummary};
use crate::study::{Contender, Study};
use crate::sysmon;
use crate::workload::StepCtx;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime};

/// Everything a run's walk needs.
pub struct Executor<'a> {
    pub study: &'a Study,
    pub opts: &'a RunOptions,
    pub plan: &'a Plan,
    /// The run's run directory, for the consumers.
    pub dir: &'a Path,
    /// The run's data directory: the dataset, and each pass's data beneath it.
    pub work: &'a Path,
    pub host: &'a Host,
    pub started: SystemTime,
    /// Where steps say what they are doing.
    pub progress: &'a Progress,
    pub stop: &'a AtomicBool,
    /// The judged figures of the rounds run, for `--repeat auto`.
    pub tally: std::cell::RefCell<super::auto_rounds::Tally>,
}

/// The dataset's tables and where their files are.
struct Data {
    tables: Vec<TableDef>,
    files: Vec<PathBuf>,
}

/// The machine's facts for the manifest, with the filesystem `work` is on.
pub fn host(work: &Path) -> Host {
    let facts = sysmon::host_facts();
    let fs = sysmon::filesystem_of(work);
    Host {
        hostname: facts.hostname,
        cpu_model: facts.cpu_model,
        cores: facts.cores,
        mem_total_bytes: facts.mem_total_bytes,
        kernel: facts.kernel,
        data_fs: fs
            .as_ref()
            .map(|f| format!("{} on {}", f.fs_type, f.mount_point)),
        data_device: fs.as_ref().map(|f| f.source.clone()),
    }
}

impl Executor<'_> {
    /// Walk the plan, telling `sinks` what happens. Step failures are events, not errors.
    pub fn run(&self, sinks: &mut Sinks) -> Result<(), ExecError> {
        sinks.emit(RunEvent::RunStarted {
            dir: self.dir,
            host: self.host,
            started: self.started,
        })?;
        // The resource check made sure the limit can be raised this far (unless it was skipped).
        crate::fdlimit::raise_to(self.study.open_files_needed());
        let data = match self.dataset(sinks) {
            // Stopped while the dataset was written: nothing ran, and the run says so.
            Err(ExecError::Interrupted) => {
                if !self.opts.keep {
                    let _ = std::fs::remove_dir_all(self.work);
                }
                return sinks.emit(RunEvent::RunFinished {
                    rounds_run: 0,
                    interrupted: true,
                });
            }
            other => other?,
        };
        let orders = self.plan.orders();
        if !orders.is_empty() {
            sinks.emit(RunEvent::RoundsPlanned { orders: &orders })?;
        }
        let rounds_run = self.rounds(&data, sinks)?;
        if !self.opts.keep {
            let _ = std::fs::remove_dir_all(self.work);
        }
        sinks.emit(RunEvent::RunFinished {
            rounds_run,
            interrupted: self.stopped(),
        })
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// The dataset's tables, generated into the work directory when the plan needs them.
    fn dataset(&self, sinks: &mut Sinks) -> Result<Data, ExecError> {
        let ds = &self.study.file.dataset;
        // Without a generated dataset the steps see no tables of it.
        let tables = match self.study.generator {
            Some(g) => g.tables(&ds.table, ds.tables, ds.scale(), ds.seed),
            None => Vec::new(),
        };
        let files: Vec<PathBuf> = tables
            .iter()
            .map(|t| self.work.join(format!("{}.tsv", t.name)))
            .collect();
        let data = Data { tables, files };
        let t = Instant::now();
        let own = self.user_files();
        // A plan needs the dataset only when the study names a generator (checked).
        if let (true, Some(generator)) = (self.plan.needs_dataset, self.study.generator) {
            sinks.emit(RunEvent::DatasetStarted { spec: ds })?;
            let t = Instant::now();
            let bytes = super::dataset::write(generator, ds, &data.files, self.stop)?;
            let all_rows: u64 = data.tables.iter().map(|t| t.rows).sum();
            let mut facts = dataset_facts(ds, &data.tables, all_rows, bytes, t.elapsed());
            facts.files = own;
            sinks.emit(RunEvent::DatasetWritten {
                facts: &facts,
                all_rows,
            })?;
        } else if !own.is_empty() && !ds.generates() {
            sinks.emit(RunEvent::DatasetStarted { spec: ds })?;
            let all_rows: u64 = own.iter().map(|f| f.rows).sum();
            let facts = DatasetFacts {
                generator: ds.generator.clone(),
                rows: all_rows,
                warehouses: None,
                sf: None,
                tables: own.len() as u64,
                seed: ds.seed,
                table: own
                    .iter()
                    .map(|f| f.table.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                file_bytes: own.iter().map(|f| f.bytes).sum(),
                generate_s: t.elapsed().as_secs_f64(),
                files: own,
            };
            sinks.emit(RunEvent::DatasetWritten {
                facts: &facts,
                all_rows,
            })?;
        }
        Ok(data)
    }

    /// The user's files the study's loads name, read through once (their records counted);
    /// a file that cannot be read is left out here, and fails its step.
    fn user_files(&self) -> Vec<crate::results::UserFileFacts> {
        let mut out: Vec<crate::results::UserFileFacts> = Vec::new();
        for s in &self.study.steps {
            for f in s.params.kind().user_files() {
                if !out.iter().any(|o| o.path == f.path && o.table == f.table) {
                    out.push(f);
                }
            }
        }
        out
    }

    /// Every round's passes; how many rounds began. An interrupted first round still lists
    /// every contender (as not run); later rounds simply stop, and so do the rounds a
    /// [`RoundRule`](super::auto_rounds::RoundRule) decides against, between rounds only.
    fn rounds(&self, data: &Data, sinks: &mut Sinks) -> Result<usize, ExecError> {
        use super::auto_rounds::Stop;
        let began = Instant::now();
        let mut rounds_run = 0;
        let mut stop = Stop::Max;
        for round in &self.plan.rounds {
            for pass in &round.passes {
                if round.number > 1 && self.stopped() {
                    stop = Stop::Interrupted;
                    break;
                }
                rounds_run = round.number;
                self.pass(pass, data, sinks)?;
            }
            if stop == Stop::Interrupted {
                break;
            }
            sinks.emit(RunEvent::RoundDone {
                round: round.number,
            })?;
            if let Some(why) = self.enough(round.number, began) {
                stop = why;
                break;
            }
        }
        if self.stopped() {
            stop = Stop::Interrupted;
        }
        if let Some(rule) = &self.opts.rounds {
            let facts = self
                .tally
                .borrow()
                .facts(rule, self.plan.rounds.len(), rounds_run, stop);
            sinks.emit(RunEvent::RoundsDecided { facts: &facts })?;
        }
        Ok(rounds_run)
    }

    /// After round `done` (of the plan's, `began` when the first started): whether the rule
    /// stops the run here, and why.
    fn enough(&self, done: usize, began: Instant) -> Option<super::auto_rounds::Stop> {
        use super::auto_rounds::Stop;
        let rule = self.opts.rounds.as_ref()?;
        if done >= self.plan.rounds.len() {
            return None;
        }
        if rule.auto && self.tally.borrow_mut().decide(done, rule.threshold) {
            return Some(Stop::Precise);
        }
        // No round starts that would end past the budget, at the pace of those run.
        let spent = began.elapsed();
        let pace = spent / done as u32;
        rule.budget
            .is_some_and(|b| spent + pace > b)
            .then_some(Stop::Budget)
    }

    /// One pass of one contender: start its engine, run every step, stop it.
    fn pass(&self, pass: &Pass, data: &Data, sinks: &mut Sinks) -> Result<(), ExecError> {
        let contender = &self.study.contenders[pass.contender];
        let data_dir = pass.data_dir_in(self.work);
        sinks.emit(RunEvent::ContenderOpening {
            pass,
            engine: contender.engine.kind(),
        })?;
        // Stopped before this contender started: its steps are not run, no server starts.
        if self.stopped() {
            self.blocked(pass, "not run: interrupted", Status::Interrupted, sinks)?;
            return sinks.emit(RunEvent::ContenderClosed {
                pass,
                stop_error: None,
            });
        }
        let stop_error = match self.open(pass, contender, &data_dir, sinks)? {
            Some(Opened { engine, device }) => {
                let env = PassEnv {
                    pass,
                    engine: engine.as_ref(),
                    data,
                    data_device: device.as_deref().or(self.host.data_device.as_deref()),
                };
                self.steps(&env, sinks)?;
                engine.finish(self.opts.keep).err().map(|e| e.to_string())
            }
            None => None,
        };
        sinks.emit(RunEvent::ContenderClosed { pass, stop_error })?;
        if !self.opts.keep {
            let _ = std::fs::remove_dir_all(&data_dir);
        }
        Ok(())
    }

    /// Open the contender's engine in `data_dir`, and the device its data is on when it
    /// names one. None when it could not start (its steps then recorded as failed).
    fn open(
        &self,
        pass: &Pass,
        contender: &Contender,
        data_dir: &Path,
        sinks: &mut Sinks,
    ) -> Result<Option<Opened>, ExecError> {
        let open_ctx = OpenCtx {
            contender: &contender.name,
            dir: data_dir,
            database: &self.plan.database,
            max_clients: self.study.max_clients(),
        };
        // Data on a device the contender names: its disk is the one measured.
        let fs = contender.engine.data_dir().and_then(sysmon::filesystem_of);
        // The shards of one run share the database: only an unsharded run takes its lease.
        let lease = self.opts.shard.is_none();
        let opened = contender.engine.open(&open_ctx).and_then(|e| {
            if lease {
                e.lease()?;
            }
            let info = e.info()?;
            Ok((e, info))
        });
        match opened {
            Ok((engine, info)) => {
                let settings = settings(info.settings, contender, data_dir, fs.as_ref());
                let facts = ContenderFacts {
                    name: contender.name.clone(),
                    engine: info.engine,
                    version: info.version,
                    options: serde_json::to_value(&contender.options).unwrap_or_default(),
                    effective: settings,
                };
                sinks.emit(RunEvent::ContenderOpened {
                    pass,
                    facts: &facts,
                })?;
                Ok(Some(Opened {
                    engine,
                    device: fs.map(|f| f.source),
                }))
            }
            // A stop asked for while the server started ends its start: interrupted.
            Err(e) if self.stopped() => {
                let why = format!("not run: interrupted while the engine started ({e})");
                self.blocked(pass, &why, Status::Interrupted, sinks)?;
                Ok(None)
            }
            Err(e) => {
                let why = format!("engine could not start: {e}");
                self.blocked(pass, &why, Status::Failed, sinks)?;
                Ok(None)
            }
        }
    }

    /// The pass cannot run its steps: each recorded with `status` for `why`.
    fn blocked(
        &self,
        pass: &Pass,
        why: &str,
        status: Status,
        sinks: &mut Sinks,
    ) -> Result<(), ExecError> {
        if status == Status::Failed {
            sinks.emit(RunEvent::ContenderBlocked { pass, why })?;
        }
        for s in &self.study.steps {
            let summary = StepSummary::without_figures(&s.name, &s.kind, status, why);
            sinks.emit(RunEvent::StepRecorded {
                pass,
                summary: &summary,
            })?;
        }
        Ok(())
    }

    /// Every step of a pass whose engine is open, through the shard gate. After a failed
    /// step the contender's later steps are skipped.
    fn steps(&self, env: &PassEnv, sinks: &mut Sinks) -> Result<(), ExecError> {
        let pass = env.pass;
        let gate = match Gate::open(self.opts.shard.as_ref(), env.engine, &pass.rel_dir) {
            Ok(g) => g,
            Err(why) => return self.blocked(pass, &why, Status::Failed, sinks),
        };
        let mut blocked: Option<String> = None;
        for planned in &self.plan.steps {
            let step = &self.study.steps[planned.index];
            let not_run = if self.stopped() {
                gate.interrupted();
                Some((Status::Interrupted, "not run: interrupted".to_string()))
            } else {
                blocked
                    .as_ref()
                    .map(|why| (Status::Skipped, format!("not run: {why}")))
            };
            if let Some((status, note)) = not_run {
                let summary = StepSummary::without_figures(&step.name, &step.kind, status, note);
                sinks.emit(RunEvent::StepRecorded {
                    pass,
                    summary: &summary,
                })?;
                continue;
            }
            if self.step(env, &gate, planned, sinks)? {
                blocked = Some(format!("step `{}` failed", step.name));
            }
        }
        Ok(())
    }

    /// One step: through the gate, run here or recorded. Whether it blocks the contender's
    /// later steps (it failed, or the shards did not meet).
    fn step(
        &self,
        env: &PassEnv,
        gate: &Gate,
        planned: &PlannedStep,
        sinks: &mut Sinks,
    ) -> Result<bool, ExecError> {
        let (pass, step) = (env.pass, &self.study.steps[planned.index]);
        let team = match gate.before(pass, step, planned.share, self.stop, sinks)? {
            Admit::Run(team) => team,
            Admit::Recorded(summary) => {
                sinks.emit(RunEvent::StepFinished {
                    pass,
                    step,
                    summary: &summary,
                    files: None,
                })?;
                // A step another shard runs blocks nothing here.
                return Ok(summary.status != Status::Skipped);
            }
        };
        sinks.emit(RunEvent::StepStarted { pass, step })?;
        let seconds = super::journal::seconds_log(self.dir, pass, step);
        let originals = crate::workload::replication::originals::path_in(self.dir);
        let earlier = super::journal::earlier_step_files(self.dir, self.study, pass, step);
        let before = super::journal::own_earlier_step_files(self.dir, self.study, pass, step);
        let step_env = StepEnv {
            ctx: StepCtx {
                contender: &pass.name,
                step: &step.name,
                title: step.title.as_deref(),
                engine: env.engine,
                tables: &env.data.tables,
                dataset_files: &env.data.files,
                dataset_rows: self.study.file.dataset.scale(),
                dataset_seed: self.study.file.dataset.seed,
                data_device: env.data_device,
                progress: self.progress,
                stop: self.stop,
                team: team.as_ref(),
                seconds: &seconds,
                originals: Some(&originals),
                earlier: &earlier,
                before: &before,
                sampler: None,
            },
            step,
            host: self.host,
            system_log: Some(super::journal::system_log_path(self.dir, pass, step)),
        };
        let (summary, files) = gate.during(team.as_ref(), || run_step(&step_env));
        seconds.finish()?;
        self.tally.borrow_mut().add(&pass.name, &summary);
        sinks.emit(RunEvent::StepFinished {
            pass,
            step,
            summary: &summary,
            files: Some(&files),
        })?;
        gate.after(pass, step, summary.status, self.stop, sinks)?;
        Ok(summary.status == Status::Failed)
    }
}

/// The settings an opened engine reports, with where its data lives when the contender names
/// a device for it (`fs`: that device's filesystem), and its device profile's numbers with
/// the disk they hold.
fn settings(
    mut settings: BTreeMap<String, String>,
    contender: &Contender,
    data_dir: &Path,
    fs: Option<&sysmon::FsInfo>,
) -> BTreeMap<String, String> {
    let data_on = contender.engine.data_dir();
    if let (Some(d), Some(fs)) = (data_on, fs) {
        settings.insert(
            "data_dir".into(),
            format!("{} ({} on {})", d.display(), fs.fs_type, fs.mount_point),
        );
        settings.insert("data_device".into(), fs.source.clone());
    }
    if let Some(p) = contender.engine.device_profile() {
        let disk = crate::sandbox::limits::block_device_of(data_on.unwrap_or(data_dir))
            .map(|d| format!("{} ({})", d.name, d.dev))
            .unwrap_or_else(|e| e);
        settings.insert(
            "device_profile".into(),
            format!("{}, throttled on {disk}", p.describe()),
        );
    }
    settings
}

/// A contender's engine, open, and the device its data is on when it names one.
struct Opened {
    engine: Box<dyn Engine>,
    device: Option<String>,
}

/// What the steps of one pass share.
struct PassEnv<'a> {
    pass: &'a Pass,
    engine: &'a dyn Engine,
    data: &'a Data,
    /// The device the contender's data is on: the one it names, else the run's.
    data_device: Option<&'a str>,
}

/// What the manifest says of the dataset written.
fn dataset_facts(
    ds: &crate::study::model::DatasetSpec,
    tables: &[TableDef],
    all_rows: u64,
    file_bytes: u64,
    took: std::time::Duration,
) -> DatasetFacts {
    DatasetFacts {
        generator: ds.generator.clone(),
        // per table; for TPC-C (tables of many sizes) all of them
        rows: if ds.warehouses.is_some() || ds.sf.is_some() {
            all_rows
        } else {
            ds.rows
        },
        warehouses: ds.warehouses,
        sf: ds.sf,
        tables: tables.len() as u64,
        seed: ds.seed,
        table: match tables {
            [one] => one.name.clone(),
            [first, .., last] => format!("{}…{}", first.name, last.name),
            [] => ds.table.clone(),
        },
        file_bytes,
        generate_s: took.as_secs_f64(),
        files: Vec::new(),
    }
}
