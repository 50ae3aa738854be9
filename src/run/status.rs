//! The run's status lines on stderr: a consumer of its events that tells [`Progress`] what
//! begins, ends and fails.

use super::ExecError;
use super::events::{RunConsumer, RunEvent};
use super::plan::Share;
use crate::progress::Progress;

/// Progress as a consumer of a run's events.
pub struct StatusLines<'a>(pub &'a Progress);

impl RunConsumer for StatusLines<'_> {
    fn event(&mut self, event: &RunEvent<'_>) -> Result<(), ExecError> {
        let p = self.0;
        match event {
            RunEvent::RunStarted { dir, .. } => p.note(&format!("results: {}", dir.display())),
            RunEvent::DatasetStarted { spec: ds } => p.begin(&match (ds.warehouses, ds.sf) {
                _ if !ds.generates() => "reading your files".to_string(),
                (Some(w), _) => format!(
                    "dataset {} ({w} warehouses, seed {})",
                    ds.generator, ds.seed
                ),
                (None, Some(sf)) => {
                    format!(
                        "dataset {} (scale factor {sf}, seed {})",
                        ds.generator, ds.seed
                    )
                }
                (None, None) => format!(
                    "dataset {} ({} tables × {} rows, seed {})",
                    ds.generator, ds.tables, ds.rows, ds.seed
                ),
            }),
            RunEvent::DatasetWritten { facts, all_rows } => p.end(&format!(
                "dataset: {} rows, {} in {:.1} s",
                all_rows,
                crate::results::format::bytes(facts.file_bytes),
                facts.generate_s
            )),
            RunEvent::RoundsPlanned { orders } => p.note(&format!(
                "{} rounds, contenders interleaved: {}",
                orders.len(),
                orders
                    .iter()
                    .map(|o| o.join(" "))
                    .collect::<Vec<_>>()
                    .join(" | ")
            )),
            RunEvent::ContenderOpening { pass, engine } => {
                let in_round = pass
                    .round
                    .map(|r| format!(" (round {r})"))
                    .unwrap_or_default();
                p.begin(&format!("{} · start {engine}{in_round}", pass.name));
            }
            RunEvent::ContenderOpened { pass, facts } => p.end(&format!(
                "{} · {} {} ready",
                pass.name, facts.engine, facts.version
            )),
            RunEvent::ContenderBlocked { pass, why } => {
                p.fail(&format!("FAILED {}: {why}", pass.name));
            }
            RunEvent::ShardsWaiting { point } => {
                p.begin(&format!("{point}: waiting for the other shards"));
            }
            RunEvent::ShardsMet {
                point,
                share,
                count,
            } => p.end(&match share {
                Share::Divided => format!("{point}: the {count} shards met"),
                Share::Alone | Share::Whole => {
                    format!("{point}: the shards met; this one runs it alone")
                }
                Share::Elsewhere => format!("{point}: run by shard 0"),
            }),
            RunEvent::ShardsFailed { point, error } => p.fail(&format!("FAILED {point}: {error}")),
            RunEvent::StepStarted { pass, step } => {
                p.begin(&format!("{} · {}", pass.name, step.name));
            }
            RunEvent::StepFinished {
                pass,
                step,
                summary,
                files: Some(files),
            } => match &files.error {
                Some(m) => p.fail(&format!("FAILED {m}")),
                None => p.end(&format!(
                    "{} · {}: {} {}",
                    pass.name,
                    step.name,
                    summary.status.as_str(),
                    crate::results::format::headline(summary)
                )),
            },
            RunEvent::ContenderClosed {
                pass,
                stop_error: Some(e),
            } => p.note(&format!("{}: stopping the engine: {e}", pass.name)),
            RunEvent::RoundsDecided { facts } => p.note(&rounds_decided(facts)),
            _ => {}
        }
        Ok(())
    }
}

/// What stopped a run's rounds, in one line.
fn rounds_decided(facts: &crate::results::AutoRoundsFacts) -> String {
    let undecided = facts.figures.iter().filter(|f| f.needed.is_none()).count();
    let tail = if facts.auto && undecided > 0 {
        format!(" ({undecided} judged figure(s) never within the threshold)")
    } else {
        String::new()
    };
    format!(
        "rounds: {} of at most {}, stopped by {}{tail}",
        facts.rounds_run, facts.max, facts.stopped_by
    )
}
