//! The journal: the run's events written down. The only writer of the run directory's
//! `manifest.json`, `summary.json` and per-step files; it writes after every step, so nothing
//! finished is lost. (The HTML report is a view of these files, written by a consumer of the
//! run's end outside `run/`, as `dbduel report` writes it.)

use super::events::{RunConsumer, RunEvent, StepFiles};
use super::plan::Pass;
use super::{ExecError, RunOptions, RunReport};
use crate::results::{
    Build, ContenderFacts, ContenderSummary, Host, Manifest, RunDir, SCHEMA_VERSION, ShardFacts,
    Status, StepSummary, Summary, rfc3339,
};
use crate::study::{Step, Study};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A run's records as they grow, and the directory they are written to.
pub struct Journal<'a> {
    dir: RunDir,
    study: &'a Study,
    manifest: Manifest,
    summary: Summary,
    /// Each contender's measurements of finished passes, one per round, in study order.
    measured: Vec<Vec<(String, ContenderSummary)>>,
    /// The pass under way: its contender, round label and steps so far.
    current: Option<(usize, String, ContenderSummary)>,
}

/// A step's file in the run directory: `<pass's directory>/<step><suffix>`.
fn step_file(pass: &Pass, step: &Step, suffix: &str) -> String {
    format!("{}/{}{suffix}", pass.rel_dir, step.name)
}

/// The per-second file of `step` in `pass` of the run in `dir` (`<step>.intervals.ndjson`),
/// which the step appends each second's record to as soon as the second closes: a long step
/// keeps none of them in memory for it, and a run killed mid-step keeps the seconds it had
/// finished. The journal names it; the step writes it (a client step's records are made
/// inside the step, every second).
pub fn seconds_log(dir: &Path, pass: &Pass, step: &Step) -> crate::results::SecondsLog {
    crate::results::SecondsLog::new(seconds_log_path(dir, pass, step))
}

/// Where [`seconds_log`] writes.
pub fn seconds_log_path(dir: &Path, pass: &Pass, step: &Step) -> PathBuf {
    dir.join(step_file(pass, step, ".intervals.ndjson"))
}

/// The sampler's per-second file of `step` in `pass` (`<step>.system.ndjson`), appended to as
/// each sample is taken so that it can be watched live and a run killed mid-step keeps what
/// was sampled; the journal rewrites it whole when the step ends.
pub fn system_log_path(dir: &Path, pass: &Pass, step: &Step) -> PathBuf {
    dir.join(step_file(pass, step, ".system.ndjson"))
}

/// The result files (`<step>.json`) of `step` that other contenders wrote in this run, in the
/// same round as `pass`, in the study's contender order: (contender, path). Contenders run
/// one after another, so these are the ones that ran the step before this pass; a step that
/// compares its answers with theirs reads them.
pub fn earlier_step_files(
    dir: &Path,
    study: &Study,
    pass: &Pass,
    step: &Step,
) -> Vec<(String, PathBuf)> {
    let round = pass.round.unwrap_or(1);
    study
        .contenders
        .iter()
        .filter(|c| c.name != pass.name)
        .map(|c| {
            let rel = if round > 1 {
                format!("{}/round-{round}", c.name)
            } else {
                c.name.clone()
            };
            let path = dir.join(rel).join(format!("{}.json", step.name));
            (c.name.clone(), path)
        })
        .filter(|(_, p)| p.is_file())
        .collect()
}

/// The result files (`<step>.json`) this pass wrote for the steps before `step`, in the
/// study's order: (step, path); a step that combines its figures with an earlier step's
/// reads them.
pub fn own_earlier_step_files(
    dir: &Path,
    study: &Study,
    pass: &Pass,
    step: &Step,
) -> Vec<(String, PathBuf)> {
    study
        .steps
        .iter()
        .take_while(|s| s.name != step.name)
        .map(|s| (s.name.clone(), dir.join(step_file(pass, s, ".json"))))
        .filter(|(_, p)| p.is_file())
        .collect()
}

/// Make the run's directory in `out`, named for `label`: never one that exists.
pub fn create_dir(out: &Path, label: &str) -> Result<RunDir, ExecError> {
    Ok(RunDir::create(out, label)?)
}

impl<'a> Journal<'a> {
    /// The journal of a run of `study` in `dir`, on a machine `host`, begun at `started`.
    /// Writes nothing until the run starts.
    pub fn new(
        dir: RunDir,
        study: &'a Study,
        opts: &RunOptions,
        host: &Host,
        started: SystemTime,
    ) -> Journal<'a> {
        Journal {
            manifest: manifest(study, opts, host, started),
            summary: Summary {
                schema_version: SCHEMA_VERSION,
                study: study.file.study.name.clone(),
                scale: study.scale.clone(),
                started_at: rfc3339(started),
                finished_at: None,
                status: Status::Running,
                contenders: Vec::new(),
            },
            measured: vec![Vec::new(); study.contenders.len()],
            current: None,
            dir,
            study,
        }
    }

    /// The finished run.
    pub fn finish(self) -> RunReport {
        RunReport {
            dir: self.dir,
            summary: self.summary,
            manifest: self.manifest,
        }
    }

    fn write_manifest(&self) -> Result<(), ExecError> {
        Ok(self.dir.write_json("manifest.json", &self.manifest)?)
    }

    fn write_summary(&self) -> Result<(), ExecError> {
        Ok(self.dir.write_json("summary.json", &self.summary)?)
    }

    /// Each round's opening replaces the last one's facts, in the study's order; its files
    /// get their directory.
    fn opened(&mut self, pass: &Pass, facts: &ContenderFacts) -> Result<(), ExecError> {
        let contenders = &mut self.manifest.contenders;
        contenders.retain(|c| c.name != facts.name);
        contenders.push(facts.clone());
        let study = self.study;
        contenders.sort_by_key(|f| study.contenders.iter().position(|c| c.name == f.name));
        self.write_manifest()?;
        self.dir.contender_dir(&pass.rel_dir)?;
        Ok(())
    }

    /// A step that ran: its files, in `pass`'s directory.
    fn step_files(
        &self,
        pass: &Pass,
        step: &Step,
        summary: &StepSummary,
        files: &StepFiles,
    ) -> Result<(), ExecError> {
        let rel = |suffix: &str| step_file(pass, step, suffix);
        self.dir
            .write_ndjson(&rel(".system.ndjson"), &files.samples)?;
        self.dir.write_json(
            &rel(".json"),
            &serde_json::json!({
                "schema_version": SCHEMA_VERSION,
                "contender": pass.name,
                "step": step.name,
                "kind": step.kind,
                "status": summary.status,
                "summary": summary,
                "details": files.details,
                "server_counters": files.server_counters,
                "error": files.error,
            }),
        )?;
        Ok(())
    }

    /// Add a step's record to the pass under way.
    fn record(&mut self, summary: &StepSummary) {
        if let Some((_, _, cs)) = &mut self.current {
            cs.steps.push(summary.clone());
        }
    }

    /// The pass's contender's figures so far (its finished rounds and this one, merged) into
    /// `summary.json`.
    fn publish(&mut self) -> Result<(), ExecError> {
        let Some((ci, label, cs)) = &self.current else {
            return Ok(());
        };
        let mut parts: Vec<(String, &ContenderSummary)> = self.measured[*ci]
            .iter()
            .map(|(l, c)| (l.clone(), c))
            .collect();
        parts.push((label.clone(), cs));
        let merged = crate::results::rounds::contender(&parts);
        let previous = std::mem::take(&mut self.summary.contenders);
        self.summary.contenders = self
            .study
            .contenders
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                if i == *ci {
                    merged.clone()
                } else {
                    previous.iter().find(|x| x.name == c.name).cloned()
                }
            })
            .collect();
        self.write_summary()
    }

    /// The pass is over: published, and kept among its contender's measurements.
    fn closed(&mut self) -> Result<(), ExecError> {
        self.publish()?;
        if let Some((ci, label, cs)) = self.current.take() {
            self.measured[ci].push((label, cs));
        }
        Ok(())
    }

    /// The run is over: which rounds ran, its status, when it finished.
    fn finished(&mut self, rounds_run: usize, interrupted: bool) -> Result<(), ExecError> {
        // The manifest says which rounds ran, not only which were planned.
        self.manifest.rounds.truncate(rounds_run);
        let mut all_steps = self.summary.contenders.iter().flat_map(|c| &c.steps);
        self.summary.status = if interrupted {
            Status::Interrupted
        } else if all_steps.any(|s| s.status == Status::Failed) {
            Status::Failed
        } else {
            Status::Ok
        };
        self.summary.finished_at = Some(rfc3339(SystemTime::now()));
        self.write_summary()?;
        self.write_manifest()
    }

    /// This shard's clock against shard 0's, per contender (written with the manifest's next
    /// writing).
    fn shard_clock(&mut self, pass: &Pass, clock_offset_ms: Option<f64>, late_start_ms: f64) {
        if let Some(f) = self.manifest.shards.first_mut() {
            if let Some(ms) = clock_offset_ms {
                f.clock_offset_ms.insert(pass.name.clone(), ms);
            }
            if late_start_ms > 0.0 {
                f.late_start_ms.insert(pass.name.clone(), late_start_ms);
            }
        }
    }
}

impl RunConsumer for Journal<'_> {
    fn event(&mut self, event: &RunEvent<'_>) -> Result<(), ExecError> {
        match event {
            RunEvent::RunStarted { .. } => {
                self.write_manifest()?;
                self.write_summary()?;
            }
            RunEvent::DatasetWritten { facts, .. } => {
                self.manifest.dataset = Some((*facts).clone());
                self.write_manifest()?;
            }
            RunEvent::RoundsPlanned { orders } => {
                self.manifest.rounds = orders.to_vec();
                self.write_manifest()?;
            }
            RunEvent::ContenderOpening { pass, .. } => {
                let c = &self.study.contenders[pass.contender];
                let cs = ContenderSummary {
                    name: c.name.clone(),
                    engine: c.engine.kind().to_string(),
                    steps: Vec::new(),
                };
                self.current = Some((pass.contender, pass.label.clone(), cs));
            }
            RunEvent::ContenderOpened { pass, facts } => self.opened(pass, facts)?,
            RunEvent::StepRecorded { summary, .. } => self.record(summary),
            RunEvent::StepFinished {
                pass,
                step,
                summary,
                files,
            } => {
                if let Some(files) = files {
                    self.step_files(pass, step, summary, files)?;
                }
                self.record(summary);
                self.publish()?;
            }
            RunEvent::ShardClock {
                pass,
                clock_offset_ms,
                late_start_ms,
            } => self.shard_clock(pass, *clock_offset_ms, *late_start_ms),
            RunEvent::ContenderClosed { .. } => self.closed()?,
            RunEvent::RoundsDecided { facts } => {
                self.manifest.auto_rounds = Some((*facts).clone());
                self.write_manifest()?;
            }
            RunEvent::RunFinished {
                rounds_run,
                interrupted,
            } => self.finished(*rounds_run, *interrupted)?,
            RunEvent::DatasetStarted { .. }
            | RunEvent::ContenderBlocked { .. }
            | RunEvent::ShardsWaiting { .. }
            | RunEvent::ShardsMet { .. }
            | RunEvent::ShardsFailed { .. }
            | RunEvent::StepStarted { .. }
            | RunEvent::RoundDone { .. } => {}
        }
        Ok(())
    }
}

/// Each contender judged against a contender of its own, when both run.
fn pairs(study: &Study) -> std::collections::BTreeMap<String, String> {
    let runs = |n: &str| study.contenders.iter().any(|c| c.name == n);
    study
        .file
        .contenders
        .iter()
        .filter(|c| runs(&c.name))
        .filter_map(|c| Some((c.name.clone(), c.baseline.clone().filter(|b| runs(b))?)))
        .collect()
}

/// The manifest as a run begins: what runs, where, on what.
fn manifest(study: &Study, opts: &RunOptions, host: &Host, started: SystemTime) -> Manifest {
    Manifest {
        schema_version: SCHEMA_VERSION,
        dbduel: Build::current(),
        source: study.source.clone(),
        scale: study.scale.clone(),
        overrides: study.sets.clone(),
        study: serde_json::to_value(&study.file).unwrap_or_default(),
        started_at: rfc3339(started),
        host: host.clone(),
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
        baselines: pairs(study),
        shards: opts
            .shard
            .iter()
            .map(|sh| ShardFacts {
                index: sh.shard.index,
                count: sh.shard.count,
                group: sh.group.clone(),
                hostname: host.hostname.clone(),
                clock_offset_ms: Default::default(),
                late_start_ms: Default::default(),
                run_dir: None,
            })
            .collect(),
        auto_rounds: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::events::Sinks;
    use crate::run::plan::Plan;
    use crate::study::{Request, Source};

    fn study() -> Study {
        let text = "[study]\nname = \"journal-t\"\ndescription = \"t\"\n\
                    [dataset]\ngenerator = \"user_logs\"\nrows = 10\n\
                    [[contender]]\nname = \"c\"\nengine = \"sqlite\"\n\
                    [[step]]\nname = \"load\"\nkind = \"load\"\n\
                    [[step]]\nname = \"size\"\nkind = \"footprint\"\n";
        crate::study::parse(&Source::new("t.toml", text), &Request::default())
            .unwrap_or_else(|e| panic!("test study: {e}"))
    }

    fn read(dir: &Path, rel: &str) -> serde_json::Value {
        let text = std::fs::read_to_string(dir.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    #[test]
    fn the_journal_writes_after_every_step_that_finished() {
        let out = tempfile::tempdir().unwrap();
        let study = study();
        let plan = Plan::new(&study, None);
        let opts = RunOptions {
            out: out.path().to_path_buf(),
            keep: false,
            shard: None,
            rounds: None,
        };
        let dir = create_dir(out.path(), &plan.label).unwrap();
        let path = dir.path.clone();
        let host = crate::run::executor::host(out.path());
        let mut journal = Journal::new(dir, &study, &opts, &host, SystemTime::now());
        let mut sinks = Sinks(vec![&mut journal]);
        let pass = &plan.rounds[0].passes[0];
        let load = &study.steps[0];
        let started = SystemTime::now();
        sinks
            .emit(RunEvent::RunStarted {
                dir: &path,
                host: &host,
                started,
            })
            .unwrap();
        // Until the run finishes, its summary says so: a run that dies never reads as ok.
        assert_eq!(read(&path, "summary.json")["status"], "running");
        sinks
            .emit(RunEvent::ContenderOpening {
                pass,
                engine: "sqlite",
            })
            .unwrap();
        let facts = ContenderFacts {
            name: "c".into(),
            engine: "SQLite".into(),
            version: "3".into(),
            options: serde_json::Value::Null,
            effective: Default::default(),
        };
        sinks
            .emit(RunEvent::ContenderOpened {
                pass,
                facts: &facts,
            })
            .unwrap();
        assert_eq!(read(&path, "manifest.json")["contenders"][0]["name"], "c");
        let failed = StepSummary::without_figures("load", "load", Status::Failed, "broken");
        let files = StepFiles {
            samples: Vec::new(),
            details: serde_json::json!({ "why": "test" }),
            server_counters: None,
            error: Some("c · load: broken".into()),
        };
        sinks
            .emit(RunEvent::StepFinished {
                pass,
                step: load,
                summary: &failed,
                files: Some(&files),
            })
            .unwrap();
        // The step's files, and the summary with it, at once.
        let step = read(&path, "c/load.json");
        assert_eq!(step["error"], "c · load: broken");
        assert_eq!(step["details"]["why"], "test");
        assert!(path.join("c/load.system.ndjson").is_file());
        assert!(!path.join("c/load.intervals.ndjson").exists());
        let steps = |p: &Path| read(p, "summary.json")["contenders"][0]["steps"].clone();
        assert_eq!(steps(&path).as_array().map(Vec::len), Some(1));
        // A step not run is recorded with the pass's end, not before.
        let skipped = StepSummary::without_figures("size", "footprint", Status::Skipped, "no");
        sinks
            .emit(RunEvent::StepRecorded {
                pass,
                summary: &skipped,
            })
            .unwrap();
        assert_eq!(steps(&path).as_array().map(Vec::len), Some(1));
        assert!(!path.join("c/size.json").exists());
        sinks
            .emit(RunEvent::ContenderClosed {
                pass,
                stop_error: None,
            })
            .unwrap();
        assert_eq!(steps(&path).as_array().map(Vec::len), Some(2));
        sinks
            .emit(RunEvent::RunFinished {
                rounds_run: 1,
                interrupted: false,
            })
            .unwrap();
        let summary = read(&path, "summary.json");
        assert_eq!(summary["status"], "failed");
        assert!(summary["finished_at"].is_string());
    }
}
