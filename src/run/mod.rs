//! Runs a validated study: makes the run directory, generates the dataset once, then for each
//! contender opens its engine and runs every step with the system sampler beside it, writing
//! results after each step so nothing finished is lost.

use crate::dataset::Generator;
use crate::engine::{Engine, OpenCtx};
use crate::progress::Progress;
use crate::results::{
    Better, Build, ContenderFacts, ContenderSummary, DatasetFacts, Host, Manifest, Metric, RunDir,
    SCHEMA_VERSION, ShardFacts, Status, StepSummary, Summary, Unit, rfc3339,
};
use crate::shard::{Barrier, Shard, Team};
use crate::study::Study;
use crate::sysmon;
use crate::workload::{self, StepCtx, StepParams};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Results root; the run makes its own directory inside.
    pub out: PathBuf,
    /// Keep data files (databases, dataset) after the run.
    pub keep: bool,
    /// Run one shard of the study (see [`crate::shard`]).
    pub shard: Option<Sharding>,
}

/// Which shard to run, and how the shards meet.
#[derive(Debug, Clone)]
pub struct Sharding {
    pub shard: Shard,
    /// The name every shard of the run shares in the meeting table.
    pub group: String,
    /// How long a shard waits for the others at a meeting point.
    pub timeout: Duration,
}

/// A finished (or stopped) run.
pub struct RunReport {
    pub dir: RunDir,
    pub summary: Summary,
    pub manifest: Manifest,
}

/// Errors that stop a run before or outside any step.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error(transparent)]
    Results(#[from] crate::results::ResultsError),
    #[error("generating the dataset into {path}: {source}")]
    Dataset {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Run `study`. Step failures are recorded in the summary (status `failed`), not returned.
pub fn run(
    study: &Study,
    opts: &RunOptions,
    progress: &mut Progress,
    stop: &AtomicBool,
) -> Result<RunReport, ExecError> {
    // A shard's directory says which it is, so shards can share one results volume.
    let label = match &opts.shard {
        Some(sh) => format!("{}-{}", study.file.study.name, sh.shard.label()),
        None => study.file.study.name.clone(),
    };
    let dir = RunDir::create(&opts.out, &label)?;
    progress.note(&format!("results: {}", dir.path.display()));
    let work = dir.work_dir();
    std::fs::create_dir_all(&work).map_err(|e| crate::results::ResultsError::Io {
        path: work.clone(),
        source: e,
    })?;
    let facts = sysmon::host_facts();
    let fs = sysmon::filesystem_of(&work);
    let started = SystemTime::now();
    let mut manifest = Manifest {
        schema_version: SCHEMA_VERSION,
        dbduel: Build::current(),
        source: study.source.clone(),
        scale: study.scale.clone(),
        overrides: study.sets.clone(),
        study: serde_json::to_value(&study.file).unwrap_or_default(),
        started_at: rfc3339(started),
        host: Host {
            hostname: facts.hostname.clone(),
            cpu_model: facts.cpu_model,
            cores: facts.cores,
            mem_total_bytes: facts.mem_total_bytes,
            kernel: facts.kernel,
            data_fs: fs
                .as_ref()
                .map(|f| format!("{} on {}", f.fs_type, f.mount_point)),
            data_device: fs.as_ref().map(|f| f.source.clone()),
        },
        dataset: None,
        contenders: Vec::new(),
        rounds: Vec::new(),
        // Shown only when that contender runs.
        baseline: study
            .file
            .study
            .baseline
            .clone()
            .filter(|b| study.contenders.iter().any(|c| &c.name == b)),
        shards: opts
            .shard
            .iter()
            .map(|sh| ShardFacts {
                index: sh.shard.index,
                count: sh.shard.count,
                group: sh.group.clone(),
                hostname: facts.hostname.clone(),
                clock_offset_ms: Default::default(),
                late_start_ms: Default::default(),
                run_dir: None,
            })
            .collect(),
    };
    let mut summary = Summary {
        schema_version: SCHEMA_VERSION,
        study: study.file.study.name.clone(),
        scale: study.scale.clone(),
        started_at: rfc3339(started),
        finished_at: None,
        status: Status::Ok,
        contenders: Vec::new(),
    };
    dir.write_json("manifest.json", &manifest)?;
    dir.write_json("summary.json", &summary)?;

    let ds = &study.file.dataset;
    let generator = Generator::parse(&ds.generator).unwrap_or(Generator::UserLogs);
    let tables = generator.tables(&ds.table, ds.tables, ds.scale(), ds.seed);
    let dataset_files: Vec<PathBuf> = tables
        .iter()
        .map(|t| work.join(format!("{}.tsv", t.name)))
        .collect();
    // Servers get their own database, named for the study; dbduel works only inside it.
    let database = format!("dbduel_{}", study.file.study.name.replace('-', "_"));
    let max_clients = study.max_clients();
    // The resource check made sure the limit can be raised this far (unless it was skipped).
    crate::fdlimit::raise_to(study.open_files_needed());
    // Only the shard that loads needs the dataset.
    let leads = opts.shard.as_ref().is_none_or(|sh| sh.shard.leads());
    let needs_data = leads
        && study
            .steps
            .iter()
            .any(|s| matches!(s.params, StepParams::Load(_)));
    if needs_data {
        let all_rows: u64 = tables.iter().map(|t| t.rows).sum();
        progress.begin(&match ds.warehouses {
            Some(w) => format!(
                "dataset {} ({w} warehouses, seed {})",
                ds.generator, ds.seed
            ),
            None => format!(
                "dataset {} ({} tables × {} rows, seed {})",
                ds.generator, ds.tables, ds.rows, ds.seed
            ),
        });
        let t = Instant::now();
        let bytes = write_dataset(generator, ds, &dataset_files)?;
        let generate_s = t.elapsed().as_secs_f64();
        progress.end(&format!(
            "dataset: {} rows, {} in {generate_s:.1} s",
            all_rows,
            crate::report::format::bytes(bytes)
        ));
        manifest.dataset = Some(DatasetFacts {
            generator: ds.generator.clone(),
            // per table; for TPC-C (tables of many sizes) all of them
            rows: if ds.warehouses.is_some() {
                all_rows
            } else {
                ds.rows
            },
            warehouses: ds.warehouses,
            tables: tables.len() as u64,
            seed: ds.seed,
            table: match tables.as_slice() {
                [one] => one.name.clone(),
                [first, .., last] => format!("{}…{}", first.name, last.name),
                [] => ds.table.clone(),
            },
            file_bytes: bytes,
            generate_s,
        });
        dir.write_json("manifest.json", &manifest)?;
    }

    let env = Env {
        dir: &dir,
        work: &work,
        study,
        opts,
        database: &database,
        max_clients,
        tables: &tables,
        dataset_files: &dataset_files,
        stop,
    };
    let rounds = plan(study);
    if rounds.len() > 1 {
        manifest.rounds = rounds
            .iter()
            .map(|o| {
                o.iter()
                    .map(|&i| study.contenders[i].name.clone())
                    .collect()
            })
            .collect();
        dir.write_json("manifest.json", &manifest)?;
        progress.note(&format!(
            "{} rounds, contenders interleaved: {}",
            rounds.len(),
            manifest
                .rounds
                .iter()
                .map(|o| o.join(" "))
                .collect::<Vec<_>>()
                .join(" | ")
        ));
    }
    // Each contender's measurements so far, one per round, in study order.
    let mut measured: Vec<Vec<(String, ContenderSummary)>> =
        vec![Vec::new(); study.contenders.len()];
    let mut rounds_run = 0;
    'rounds: for (r, order) in rounds.iter().enumerate() {
        for &ci in order {
            // An interrupted first round still lists every contender (as not run); later
            // rounds simply stop.
            if r > 0 && stop.load(Ordering::Relaxed) {
                break 'rounds;
            }
            rounds_run = r + 1;
            let round = (rounds.len() > 1).then_some(r + 1);
            let label = format!("round {}", r + 1);
            let mut publish = |cs: &ContenderSummary| -> Result<(), ExecError> {
                let mut parts: Vec<(String, &ContenderSummary)> =
                    measured[ci].iter().map(|(l, c)| (l.clone(), c)).collect();
                parts.push((label.clone(), cs));
                let merged = crate::results::rounds::contender(&parts);
                summary.contenders = study
                    .contenders
                    .iter()
                    .enumerate()
                    .filter_map(|(i, c)| {
                        if i == ci {
                            merged.clone()
                        } else {
                            summary
                                .contenders
                                .iter()
                                .find(|x| x.name == c.name)
                                .cloned()
                        }
                    })
                    .collect();
                dir.write_json("summary.json", &summary)?;
                Ok(())
            };
            let cs = run_contender(
                &env,
                &study.contenders[ci],
                round,
                &mut manifest,
                progress,
                &mut publish,
            )?;
            measured[ci].push((label, cs));
        }
    }
    // The manifest says which rounds ran, not only which were planned.
    if manifest.rounds.len() > rounds_run {
        manifest.rounds.truncate(rounds_run);
    }
    if !opts.keep {
        let _ = std::fs::remove_dir_all(&work);
    }
    let all_steps = summary.contenders.iter().flat_map(|c| &c.steps);
    summary.status = if stop.load(Ordering::Relaxed) {
        Status::Interrupted
    } else if all_steps.clone().any(|s| s.status == Status::Failed) {
        Status::Failed
    } else {
        Status::Ok
    };
    summary.finished_at = Some(rfc3339(SystemTime::now()));
    dir.write_json("summary.json", &summary)?;
    dir.write_json("manifest.json", &manifest)?;
    // The charts are a view of the files above: failing to write them loses no result.
    if let Err(e) = crate::report::write_html(&dir, &summary, &manifest) {
        progress.note(&format!("could not write the HTML report: {e}"));
    }
    Ok(RunReport {
        dir,
        summary,
        manifest,
    })
}

/// What every contender's pass shares.
struct Env<'a> {
    dir: &'a RunDir,
    work: &'a Path,
    study: &'a Study,
    opts: &'a RunOptions,
    database: &'a str,
    max_clients: u64,
    tables: &'a [crate::dataset::TableDef],
    dataset_files: &'a [PathBuf],
    stop: &'a AtomicBool,
}

/// The run's plan: for each round, the order its contenders run in (indexes into the study's
/// contenders). One round runs them in study order. Repeated rounds rotate an order shuffled
/// from the dataset's seed, so drift on the machine falls on every contender alike, the lead
/// passes from one contender to the next each round (equally often when the rounds are a
/// multiple of the contenders), and the same seed gives the same plan.
pub fn plan(study: &Study) -> Vec<Vec<usize>> {
    let n = study.contenders.len();
    let rounds = study.file.study.repeat.max(1) as usize;
    if rounds == 1 {
        return vec![(0..n).collect()];
    }
    let mut base: Vec<usize> = (0..n).collect();
    // Its own stream of the seed: the plan does not shift any generated row.
    let mut rng = crate::dataset::rng::SplitMix64::stream(study.file.dataset.seed, 0x0DE5);
    for i in (1..n).rev() {
        base.swap(i, rng.below_u64(i as u64 + 1) as usize);
    }
    (0..rounds)
        .map(|r| {
            let mut o = base.clone();
            o.rotate_left(r % n.max(1));
            o
        })
        .collect()
}

/// One pass of one contender: start its engine, run every step, stop it. `publish` is called
/// with the contender's figures so far after each step, so nothing finished is lost.
fn run_contender(
    env: &Env,
    contender: &crate::study::Contender,
    round: Option<usize>,
    manifest: &mut Manifest,
    progress: &mut Progress,
    publish: &mut dyn FnMut(&ContenderSummary) -> Result<(), ExecError>,
) -> Result<ContenderSummary, ExecError> {
    let (dir, study, stop) = (env.dir, env.study, env.stop);
    let mut cs = ContenderSummary {
        name: contender.name.clone(),
        engine: contender.engine.kind().to_string(),
        steps: Vec::new(),
    };
    // Round 1 writes where a single run does; later rounds beside it in `round-N`.
    let (rel_dir, data_dir) = match round {
        Some(r) if r > 1 => (
            format!("{}/round-{r}", contender.name),
            // `.rounds` is no contender's name (names cannot start with a dot).
            env.work
                .join(".rounds")
                .join(r.to_string())
                .join(&contender.name),
        ),
        _ => (contender.name.clone(), env.work.join(&contender.name)),
    };
    let in_round = round.map(|r| format!(" (round {r})")).unwrap_or_default();
    let open_ctx = OpenCtx {
        contender: &contender.name,
        dir: &data_dir,
        database: env.database,
        max_clients: env.max_clients,
    };
    progress.begin(&format!(
        "{} · start {}{in_round}",
        contender.name,
        contender.engine.kind()
    ));
    // Data on a device the contender names: its disk is the one measured.
    let data_on = contender.engine.data_dir().map(Path::to_path_buf);
    let contender_fs = data_on.as_deref().and_then(sysmon::filesystem_of);
    let contender_device = contender_fs.as_ref().map(|f| f.source.clone());
    let opened = contender.engine.open(&open_ctx).and_then(|e| {
        let info = e.info()?;
        Ok((e, info))
    });
    let engine: Option<Box<dyn Engine>> = match opened {
        Ok((engine, mut info)) => {
            progress.end(&format!(
                "{} · {} {} ready",
                contender.name, info.engine, info.version
            ));
            // Where the data lives, when the contender names a device for it.
            if let (Some(d), Some(fs)) = (&data_on, &contender_fs) {
                info.settings.insert(
                    "data_dir".into(),
                    format!("{} ({} on {})", d.display(), fs.fs_type, fs.mount_point),
                );
                info.settings
                    .insert("data_device".into(), fs.source.clone());
            }
            // The profile's numbers, and the disk they hold, beside the settings.
            if let Some(p) = contender.engine.device_profile() {
                let disk = crate::sandbox::limits::block_device_of(
                    data_on.as_deref().unwrap_or(&data_dir),
                )
                .map(|d| format!("{} ({})", d.name, d.dev))
                .unwrap_or_else(|e| e);
                info.settings.insert(
                    "device_profile".into(),
                    format!("{}, throttled on {disk}", p.describe()),
                );
            }
            // Each round's opening replaces the last one's facts, in the study's order.
            manifest.contenders.retain(|c| c.name != contender.name);
            manifest.contenders.push(ContenderFacts {
                name: contender.name.clone(),
                engine: info.engine,
                version: info.version,
                options: serde_json::to_value(&contender.options).unwrap_or_default(),
                effective: info.settings,
            });
            manifest
                .contenders
                .sort_by_key(|f| study.contenders.iter().position(|c| c.name == f.name));
            dir.write_json("manifest.json", manifest)?;
            Some(engine)
        }
        Err(e) => {
            progress.fail(&format!(
                "FAILED {}: engine could not start: {e}",
                contender.name
            ));
            for s in &study.steps {
                cs.steps.push(StepSummary::without_figures(
                    &s.name,
                    &s.kind,
                    Status::Failed,
                    format!("engine could not start: {e}"),
                ));
            }
            None
        }
    };
    if let Some(engine) = engine {
        dir.contender_dir(&rel_dir)?;
        let mut blocked: Option<String> = None;
        // A sharded run meets the other shards in this contender's database.
        let barrier = match &env.opts.shard {
            Some(sh) => {
                match Barrier::open(engine.as_ref(), sh.shard, &sh.group, &rel_dir, sh.timeout) {
                    Ok(b) => Some(Arc::new(b)),
                    Err(e) => {
                        blocked = Some(format!("the shards cannot meet: {e}"));
                        None
                    }
                }
            }
            None => None,
        };
        if let Some(why) = &blocked {
            progress.fail(&format!("FAILED {}: {why}", contender.name));
            cs.steps = study
                .steps
                .iter()
                .map(|s| StepSummary::without_figures(&s.name, &s.kind, Status::Failed, why))
                .collect();
        }
        // Steps not yet recorded (all of them, unless the shards could not meet).
        let steps = if cs.steps.is_empty() {
            &study.steps[..]
        } else {
            &[]
        };
        for step in steps {
            if stop.load(Ordering::Relaxed) {
                if let Some(b) = &barrier {
                    b.abandon("interrupted");
                }
                cs.steps.push(StepSummary::without_figures(
                    &step.name,
                    &step.kind,
                    Status::Interrupted,
                    "not run: interrupted",
                ));
                continue;
            }
            if let Some(why) = &blocked {
                cs.steps.push(StepSummary::without_figures(
                    &step.name,
                    &step.kind,
                    Status::Skipped,
                    format!("not run: {why}"),
                ));
                continue;
            }
            let team = match &barrier {
                None => None,
                Some(b) => match shard_gate(b, &rel_dir, step, stop, progress) {
                    Gate::Run(team) => team,
                    Gate::Recorded(s) => {
                        if s.status != Status::Skipped {
                            blocked = Some(format!("step `{}` failed", step.name));
                        }
                        cs.steps.push(*s);
                        publish(&cs)?;
                        continue;
                    }
                },
            };
            // Shard 0 running a step alone says it is busy, so the others wait for it.
            let alone = barrier.as_deref().filter(|_| team.is_none());
            let s = beating(alone, || {
                run_step(
                    dir,
                    &rel_dir,
                    engine.as_ref(),
                    study,
                    step,
                    &contender.name,
                    env.tables,
                    env.dataset_files,
                    &manifest.host,
                    contender_device
                        .as_deref()
                        .or(manifest.host.data_device.as_deref()),
                    progress,
                    stop,
                    team.as_ref(),
                )
            })?;
            if let (Some(b), Some(f)) = (&barrier, manifest.shards.first_mut()) {
                if let Some(ms) = b.clock_offset_ms() {
                    f.clock_offset_ms.insert(contender.name.clone(), ms);
                }
                if b.late_start_ms() > 0.0 {
                    f.late_start_ms
                        .insert(contender.name.clone(), b.late_start_ms());
                }
            }
            // The other shards are told at once when this one cannot go on.
            if let Some(b) = &barrier
                && (matches!(s.status, Status::Failed | Status::Interrupted)
                    || stop.load(Ordering::Relaxed))
            {
                b.abandon(&format!("step `{}`: {}", step.name, s.status.as_str()));
            }
            if s.status == Status::Failed {
                blocked = Some(format!("step `{}` failed", step.name));
            }
            cs.steps.push(s);
            publish(&cs)?;
        }
        if let Err(e) = engine.finish(env.opts.keep) {
            progress.note(&format!("{}: stopping the engine: {e}", contender.name));
        }
    }
    publish(&cs)?;
    if !env.opts.keep {
        let _ = std::fs::remove_dir_all(&data_dir);
    }
    Ok(cs)
}

/// What a shard does about a step.
enum Gate {
    /// Run it here: as this shard's part of the team when its clients are divided, else
    /// (shard 0's own step) alone.
    Run(Option<Team>),
    /// Not here: another shard runs it (shard 0, a step not divided among clients; skipped),
    /// or the shards could not meet (failed, the other shards told). Its record.
    Recorded(Box<StepSummary>),
}

/// Run `work`, saying every [`BEAT`](crate::shard::barrier::BEAT) at `barrier` (when there
/// is one) that this shard is busy with it.
fn beating<T>(barrier: Option<&Barrier>, work: impl FnOnce() -> T) -> T {
    let Some(b) = barrier else {
        return work();
    };
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                // A beat that fails costs the others only their patience: the timeout.
                let _ = b.beat();
                let next = Instant::now() + crate::shard::barrier::BEAT;
                while !done.load(Ordering::Relaxed) && Instant::now() < next {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        });
        let out = work();
        done.store(true, Ordering::Relaxed);
        out
    })
}

/// Meet the other shards before `step` (`rel_dir`: the contender's, in this round).
fn shard_gate(
    b: &Arc<Barrier>,
    rel_dir: &str,
    step: &crate::study::Step,
    stop: &AtomicBool,
    progress: &mut Progress,
) -> Gate {
    let point = format!("{rel_dir}/{}", step.name);
    let record = |status, note: String| {
        Gate::Recorded(Box::new(StepSummary::without_figures(
            &step.name, &step.kind, status, note,
        )))
    };
    progress.begin(&format!("{point}: waiting for the other shards"));
    if let Err(e) = b.meet(&point, stop) {
        progress.fail(&format!("FAILED {point}: {e}"));
        b.abandon(&format!("{point}: {e}"));
        let status = match e {
            crate::shard::BarrierError::Interrupted => Status::Interrupted,
            _ => Status::Failed,
        };
        return record(status, e.to_string());
    }
    let shard = b.shard();
    if crate::workload::divides_clients(&step.kind) {
        progress.end(&format!("{point}: the {} shards met", shard.count));
        return Gate::Run(Some(Team::new(shard, b.clone(), point)));
    }
    if shard.leads() {
        progress.end(&format!("{point}: the shards met; this one runs it alone"));
        return Gate::Run(None);
    }
    progress.end(&format!("{point}: run by shard 0"));
    record(
        Status::Skipped,
        "run by shard 0 alone: its work is not divided among clients".into(),
    )
}

/// Run one step with the sampler beside it and write its files.
#[allow(clippy::too_many_arguments)]
fn run_step(
    dir: &RunDir,
    rel_dir: &str,
    engine: &dyn Engine,
    study: &Study,
    step: &crate::study::Step,
    contender: &str,
    tables: &[crate::dataset::TableDef],
    dataset_files: &[PathBuf],
    host: &Host,
    data_device: Option<&str>,
    progress: &mut Progress,
    stop: &AtomicBool,
    team: Option<&Team>,
) -> Result<StepSummary, ExecError> {
    progress.begin(&format!("{contender} · {}", step.name));
    let start = Instant::now();
    let sampler = sysmon::Sampler::start(
        start,
        sysmon::Targets {
            // An embedded engine works inside dbduel, so its process is ours; an external
            // server's process is not visible from here.
            engine_pids: if engine.embedded() {
                vec![std::process::id() as i32]
            } else {
                engine.server_pids()
            },
            self_pid: std::process::id() as i32,
        },
    );
    // The step stops on Ctrl-C and when its server dies; a watcher notices the latter
    // within a fraction of a second, whatever the step is doing.
    let step_stop = AtomicBool::new(false);
    let ctx = StepCtx {
        contender,
        step: &step.name,
        title: step.title.as_deref(),
        engine,
        tables,
        dataset_files,
        dataset_rows: study.file.dataset.scale(),
        dataset_seed: study.file.dataset.seed,
        data_device,
        progress: &*progress,
        stop: &step_stop,
        team,
    };
    let counters_before = engine.counters().ok().flatten();
    let pid_before = engine.server_pid();
    let own = sysmon::own::OwnMeter::begin();
    let (result, server_died) = watched(engine, stop, &step_stop, start, || {
        workload::run(&step.params, &ctx)
    });
    let samples = sampler.stop();
    let own = own.end(
        samples
            .iter()
            .map(|s| s.dbduel.rss_bytes)
            .max()
            .unwrap_or(0),
    );
    // A server restarted inside the step (a cold count, a sweep's cold start) counts from
    // zero again: its counters afterwards are what the step did since.
    let restarted = pid_before.is_some() && engine.server_pid() != pid_before;
    let server_counters = match (counters_before, engine.counters().ok().flatten()) {
        (Some(_), Some(after)) if restarted => Some(after),
        (Some(before), Some(after)) => Some(counter_delta(&before, &after)),
        _ => None,
    };
    let rel = |suffix: &str| format!("{rel_dir}/{}{suffix}", step.name);
    dir.write_ndjson(&rel(".system.ndjson"), &samples)?;
    let result = match (result, &server_died) {
        (r, None) => r,
        (_, Some(death)) => Err(workload::StepError::Check(death.clone())),
    };
    // A step whose result is wrong but whose figures stand keeps them, and fails.
    let (result, wrong) = match result {
        Err(workload::StepError::Failed(why, workload::Kept(out))) => (Ok(*out), Some(why)),
        r => (r, None),
    };
    let (summary, details, error) = match result {
        Ok(out) => {
            let mut s = out.summary;
            s.name = step.name.clone();
            s.kind = step.kind.clone();
            s.status = if wrong.is_some() {
                Status::Failed
            } else if out.interrupted {
                Status::Interrupted
            } else {
                Status::Ok
            };
            if !out.intervals.is_empty() {
                dir.write_ndjson(&rel(".intervals.ndjson"), &out.intervals)?;
            }
            if !out.intervals.is_empty() {
                s.metrics.push(Metric::new(
                    "dbduel_peak_rss_bytes",
                    "dbduel peak RSS",
                    own.peak_rss_bytes as f64,
                    Unit::Bytes,
                    Better::None,
                ));
            }
            s.machine = machine_share(engine, &samples, host.cores);
            let disturbed = s.machine.iter().flat_map(|m| m.disturbances()).map(|w| {
                format!(
                    "warning: {w}; the step's figures are disturbed and compare will not judge them"
                )
            });
            let warnings = [
                client_cpu_warning(engine, &samples, host.cores),
                client_memory_warning(engine, own.peak_rss_bytes, host.mem_total_bytes),
            ];
            for w in warnings.into_iter().flatten().chain(disturbed) {
                s.note = Some(match s.note.take() {
                    Some(n) => format!("{n}; {w}"),
                    None => w,
                });
            }
            s.dbduel = Some(own);
            if let Some(why) = &wrong {
                s.note = Some(match s.note.take() {
                    Some(n) => format!("FAILED: {why}; {n}"),
                    None => format!("FAILED: {why}"),
                });
            }
            let error = wrong.map(|why| format!("{contender} · {}: {why}", step.name));
            (s, out.details, error)
        }
        Err(workload::StepError::Skipped(reason)) => {
            let s = StepSummary::without_figures(
                &step.name,
                &step.kind,
                Status::Skipped,
                format!("skipped: {reason}"),
            );
            (s, serde_json::Value::Null, None)
        }
        // Ctrl-C while the clients connected or waited for the other shards.
        Err(
            e @ workload::StepError::Run(
                crate::runner::RunError::Interrupted
                | crate::runner::RunError::Shards(crate::shard::BarrierError::Interrupted),
            ),
        ) => {
            let s = StepSummary::without_figures(
                &step.name,
                &step.kind,
                Status::Interrupted,
                e.to_string(),
            );
            (s, serde_json::Value::Null, None)
        }
        Err(e) => {
            let msg = format!("{contender} · {}: {e}", step.name);
            let s =
                StepSummary::without_figures(&step.name, &step.kind, Status::Failed, e.to_string());
            // The server's own account of what went wrong.
            let log = engine.server_log().map(|p| crate::sandbox::tail(&p, 30));
            (s, serde_json::json!({ "server_log_tail": log }), Some(msg))
        }
    };
    dir.write_json(
        &rel(".json"),
        &serde_json::json!({
            "schema_version": SCHEMA_VERSION,
            "contender": contender,
            "step": step.name,
            "kind": step.kind,
            "status": summary.status,
            "summary": summary,
            "details": details,
            "server_counters": server_counters,
            "error": error,
        }),
    )?;
    match &error {
        Some(m) => progress.fail(&format!("FAILED {m}")),
        None => progress.end(&format!(
            "{contender} · {}: {} {}",
            step.name,
            summary.status.as_str(),
            crate::report::format::headline(&summary)
        )),
    }
    Ok(summary)
}

/// Per-counter change over a step. A counter that went down was reset by a restart inside
/// the step that the server's pid did not show (an external server's restart command); its
/// value after the restart is what the step did since.
fn counter_delta(
    before: &std::collections::BTreeMap<String, u64>,
    after: &std::collections::BTreeMap<String, u64>,
) -> std::collections::BTreeMap<String, u64> {
    after
        .iter()
        .map(|(k, a)| {
            let b = before.get(k).copied().unwrap_or(0);
            (k.clone(), if *a >= b { a - b } else { *a })
        })
        .collect()
}

/// A warning when dbduel itself used more than half of the machine's CPU during a step
/// against a server: the client then competed with the server and may have capped the
/// figures. (An embedded engine runs inside dbduel, so there it is expected.)
fn client_cpu_warning(
    engine: &dyn Engine,
    samples: &[sysmon::SystemSample],
    cores: usize,
) -> Option<String> {
    engine.server_pid()?;
    if samples.is_empty() || cores == 0 {
        return None;
    }
    let mean = samples.iter().map(|s| s.dbduel.cpu_pct).sum::<f64>() / samples.len() as f64;
    let share = mean / (cores as f64 * 100.0);
    (share > 0.5).then(|| {
        format!(
            "warning: dbduel itself used {:.0}% of the machine's CPU during this step; the client may have limited these figures",
            share * 100.0
        )
    })
}

/// What the rest of the machine did during a step. Not for a replication topology: its
/// replicas are servers of the contender outside the primary's process tree, and would count
/// as others.
fn machine_share(
    engine: &dyn Engine,
    samples: &[sysmon::SystemSample],
    cores: usize,
) -> Option<sysmon::machine::MachineShare> {
    if engine.replication().is_some() {
        return None;
    }
    sysmon::machine::MachineShare::of(samples, cores, engine.embedded())
}

/// Share of the machine's memory above which dbduel's own peak RSS is called out.
const CLIENT_MEMORY_WARN_SHARE: f64 = 0.05;

/// A warning when dbduel itself held a significant share of the machine's memory during a
/// step against a server: on a shared host that is page cache the server did not have.
/// (An embedded engine's caches live inside dbduel, so there it is expected.)
fn client_memory_warning(engine: &dyn Engine, peak_rss: u64, mem_total: u64) -> Option<String> {
    engine.server_pid()?;
    let share = peak_rss as f64 / mem_total.max(1) as f64;
    (mem_total > 0 && share > CLIENT_MEMORY_WARN_SHARE).then(|| {
        format!(
            "warning: dbduel itself held {} ({:.0}% of the machine's memory) during this step; on a shared host that memory was not the server's",
            crate::report::format::bytes(peak_rss),
            share * 100.0
        )
    })
}

/// How often the watcher looks at the server and the stop flag.
const WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// Run `f` while a watcher thread mirrors the run's stop flag into the step's and checks
/// that the engine's server is alive. Returns `f`'s result and, if the server died, what
/// happened and when it was noticed.
fn watched<T: Send>(
    engine: &dyn Engine,
    run_stop: &AtomicBool,
    step_stop: &AtomicBool,
    start: Instant,
    f: impl FnOnce() -> T + Send,
) -> (T, Option<String>) {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                if run_stop.load(Ordering::Relaxed) {
                    step_stop.store(true, Ordering::Relaxed);
                }
                if let Some(how) = engine.server_gone() {
                    step_stop.store(true, Ordering::Relaxed);
                    return Some(format!(
                        "the server died during the step ({how}; noticed {:.1} s into the step)",
                        start.elapsed().as_secs_f64()
                    ));
                }
                std::thread::sleep(WATCH_EVERY);
            }
            None
        });
        let out = f();
        done.store(true, Ordering::Relaxed);
        let died = watcher.join().unwrap_or(None);
        (out, died)
    })
}

/// Write every table's tab-separated file, tables in parallel (one thread per core);
/// returns the bytes written.
fn write_dataset(
    generator: Generator,
    ds: &crate::study::model::DatasetSpec,
    files: &[PathBuf],
) -> Result<u64, ExecError> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(files.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<Result<u64, ExecError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut bytes = 0;
                    loop {
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        let Some(path) = files.get(n) else {
                            return Ok(bytes);
                        };
                        bytes += generator
                            .write_tsv(ds.seed, ds.scale(), ds.tables, n as u64, path)
                            .map_err(|e| ExecError::Dataset {
                                path: path.clone(),
                                source: e,
                            })?;
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(ExecError::Dataset {
                        path: PathBuf::from("(dataset)"),
                        source: std::io::Error::other("a generator thread panicked"),
                    })
                })
            })
            .collect()
    });
    results.into_iter().sum()
}
