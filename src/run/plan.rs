//! The Plan of a run: pure data, decided before anything runs and checked without servers —
//! the rounds and the order their contenders run in, where each pass keeps its data and its
//! results, and for each step what it needs (the dataset) and which shard runs it.

use crate::shard::Shard;
use crate::study::Study;
use std::path::{Path, PathBuf};

/// What a run of a study will do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The run directory's label: the study's name, and the shard's when sharded (so shards
    /// can share one results volume).
    pub label: String,
    /// The database servers get, named for the study; dbduel works only inside it.
    pub database: String,
    /// This run generates the dataset: some step loads it and this shard is the one that
    /// loads (shard 0, or the only one).
    pub needs_dataset: bool,
    /// The rounds in the order they run; one unless the study repeats.
    pub rounds: Vec<Round>,
    /// The study's steps, each as every pass runs it.
    pub steps: Vec<PlannedStep>,
}

/// One round: each contender once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Round {
    /// 1-based.
    pub number: usize,
    pub passes: Vec<Pass>,
}

/// One contender in one round: its engine opened from nothing, every step, its engine
/// stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pass {
    /// Index into the study's contenders.
    pub contender: usize,
    /// The contender's name.
    pub name: String,
    /// The round's number when the run has several rounds, else `None`.
    pub round: Option<usize>,
    /// How the round is named among the contender's measurements ("round 1").
    pub label: String,
    /// Where its step files go, relative to the run directory: the contender's directory
    /// (round 1, or a single run) or `<contender>/round-N` beside it.
    pub rel_dir: String,
    /// Where its engine keeps its data, relative to the run's work directory.
    pub data_dir: PathBuf,
}

impl Pass {
    /// Its data directory under the run's work directory `work`.
    pub fn data_dir_in(&self, work: &Path) -> PathBuf {
        work.join(&self.data_dir)
    }
}

/// One step as the plan runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedStep {
    /// Index into the study's steps.
    pub index: usize,
    /// It loads the generated dataset.
    pub loads: bool,
    /// Which shard runs it.
    pub share: Share,
}

/// Which shard runs a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Share {
    /// Not sharded: this run does all of it.
    Whole,
    /// Every shard runs its part of the step's clients, as a team.
    Divided,
    /// The step's work is not divided among clients, and this shard (shard 0) runs it
    /// alone while the others wait.
    Alone,
    /// Shard 0 runs it alone; this shard records it as skipped.
    Elsewhere,
}

impl Plan {
    /// The plan of running `study`, as `shard` when the run is sharded.
    pub fn new(study: &Study, shard: Option<Shard>) -> Plan {
        let name = &study.file.study.name;
        let steps: Vec<PlannedStep> = study
            .steps
            .iter()
            .enumerate()
            .map(|(index, s)| PlannedStep {
                index,
                loads: s.params.kind().creates_tables(),
                share: share(&s.kind, shard),
            })
            .collect();
        Plan {
            label: match shard {
                Some(sh) => format!("{name}-{}", sh.label()),
                None => name.clone(),
            },
            database: crate::engine::database_name(name),
            needs_dataset: shard.is_none_or(|sh| sh.leads()) && steps.iter().any(|s| s.loads),
            rounds: rounds(study),
            steps,
        }
    }

    /// Each round's order as contender names, when there is more than one round (what the
    /// manifest and `--check` show).
    pub fn orders(&self) -> Vec<Vec<String>> {
        if self.rounds.len() < 2 {
            return Vec::new();
        }
        self.rounds
            .iter()
            .map(|r| r.passes.iter().map(|p| p.name.clone()).collect())
            .collect()
    }
}

/// Which shard runs a step of `kind`.
fn share(kind: &str, shard: Option<Shard>) -> Share {
    match shard {
        None => Share::Whole,
        Some(_) if crate::workload::divides_clients(kind) => Share::Divided,
        Some(sh) if sh.leads() => Share::Alone,
        Some(_) => Share::Elsewhere,
    }
}

/// The rounds with their passes, in [`order`]'s order.
fn rounds(study: &Study) -> Vec<Round> {
    let orders = order(study);
    let several = orders.len() > 1;
    orders
        .into_iter()
        .enumerate()
        .map(|(r, order)| Round {
            number: r + 1,
            passes: order
                .into_iter()
                .map(|ci| pass(study, ci, r + 1, several))
                .collect(),
        })
        .collect()
}

/// Contender `ci`'s pass in round `r` (1-based). Round 1 writes where a single run does;
/// later rounds beside it in `round-N`.
fn pass(study: &Study, ci: usize, r: usize, several: bool) -> Pass {
    let name = study.contenders[ci].name.clone();
    let (rel_dir, data_dir) = if r > 1 {
        (
            format!("{name}/round-{r}"),
            // `.rounds` is no contender's name (names cannot start with a dot).
            Path::new(".rounds").join(r.to_string()).join(&name),
        )
    } else {
        (name.clone(), PathBuf::from(&name))
    };
    Pass {
        contender: ci,
        round: several.then_some(r),
        label: format!("round {r}"),
        rel_dir,
        data_dir,
        name,
    }
}

/// For each round, the order its contenders run in (indexes into the study's contenders).
/// One round runs them in study order. Repeated rounds rotate an order shuffled from the
/// dataset's seed, so drift on the machine falls on every contender alike, the lead passes
/// from one contender to the next each round (equally often when the rounds are a multiple
/// of the contenders), and the same seed gives the same plan.
pub fn order(study: &Study) -> Vec<Vec<usize>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::{Request, Source};

    /// A study of three SQLite contenders, a load and an OLTP step, repeated `repeat` times.
    fn study(repeat: u32, seed: u64) -> Study {
        let contenders: String = ["a", "b", "c"]
            .iter()
            .map(|n| format!("[[contender]]\nname = \"{n}\"\nengine = \"sqlite\"\n"))
            .collect();
        let text = format!(
            "[study]\nname = \"plan-t\"\ndescription = \"t\"\nrepeat = {repeat}\n\
             [dataset]\ngenerator = \"sbtest\"\nrows = 100\nseed = {seed}\n{contenders}\
             [[step]]\nname = \"load\"\nkind = \"load\"\n\
             [[step]]\nname = \"o\"\nkind = \"oltp\"\nworkload = \"point_select\"\nthreads = 2\nduration_s = 3\n"
        );
        crate::study::parse(&Source::new("t.toml", text), &Request::default())
            .unwrap_or_else(|e| panic!("test study: {e}"))
    }

    fn shard(index: u32, count: u32) -> Option<Shard> {
        Shard::new(index, count)
    }

    #[test]
    fn one_round_runs_the_contenders_in_study_order() {
        let p = Plan::new(&study(1, 42), None);
        assert_eq!(p.rounds.len(), 1);
        let r = &p.rounds[0];
        assert_eq!(r.number, 1);
        let names: Vec<&str> = r.passes.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(r.passes.iter().all(|p| p.round.is_none()));
        assert_eq!(r.passes[1].rel_dir, "b");
        assert_eq!(r.passes[1].data_dir, PathBuf::from("b"));
        assert_eq!(r.passes[1].label, "round 1");
        // One round: the manifest lists no rounds.
        assert!(p.orders().is_empty());
    }

    #[test]
    fn repeated_rounds_rotate_one_shuffled_order() {
        let p = Plan::new(&study(4, 42), None);
        assert_eq!(p.rounds.len(), 4);
        let base: Vec<usize> = p.rounds[0].passes.iter().map(|x| x.contender).collect();
        for (r, round) in p.rounds.iter().enumerate() {
            let mut want = base.clone();
            want.rotate_left(r % 3);
            let got: Vec<usize> = round.passes.iter().map(|x| x.contender).collect();
            assert_eq!(got, want, "round {}", r + 1);
            assert_eq!(round.number, r + 1);
            assert!(round.passes.iter().all(|x| x.round == Some(r + 1)));
        }
        // Every contender leads once in the first three rounds.
        let mut leads: Vec<usize> = p.rounds[..3]
            .iter()
            .map(|r| r.passes[0].contender)
            .collect();
        leads.sort();
        assert_eq!(leads, [0, 1, 2]);
        assert_eq!(p.orders().len(), 4);
    }

    #[test]
    fn the_same_seed_gives_the_same_plan_and_the_order_follows_the_seed() {
        assert_eq!(Plan::new(&study(3, 7), None), Plan::new(&study(3, 7), None));
        let orders: std::collections::BTreeSet<Vec<usize>> = (0..20)
            .map(|seed| order(&study(2, seed))[0].clone())
            .collect();
        assert!(orders.len() > 1, "the shuffle ignores the seed: {orders:?}");
    }

    #[test]
    fn later_rounds_keep_their_files_and_data_beside_round_one() {
        let p = Plan::new(&study(2, 42), None);
        let later = &p.rounds[1].passes[0];
        assert_eq!(later.rel_dir, format!("{}/round-2", later.name));
        assert_eq!(
            later.data_dir_in(Path::new("w")),
            Path::new("w/.rounds/2").join(&later.name)
        );
        let first = &p.rounds[0].passes[0];
        assert_eq!(first.rel_dir, first.name);
        assert_eq!(first.label, "round 1");
        assert_eq!(later.label, "round 2");
    }

    #[test]
    fn an_unsharded_run_loads_and_runs_every_step_whole() {
        let p = Plan::new(&study(1, 42), None);
        assert_eq!(p.label, "plan-t");
        // `plan-t`'s `-` is kept apart from a `plan_t` study's `_` by a hash.
        assert!(p.database.starts_with("dbduel_plan_t__"), "{}", p.database);
        assert!(p.needs_dataset);
        assert_eq!(p.steps.len(), 2);
        assert!(p.steps[0].loads && !p.steps[1].loads);
        assert!(p.steps.iter().all(|s| s.share == Share::Whole));
    }

    #[test]
    fn shard_zero_loads_and_runs_undivided_steps_alone() {
        let p = Plan::new(&study(1, 42), shard(0, 2));
        assert!(p.label.starts_with("plan-t-"));
        assert!(p.needs_dataset);
        assert_eq!(p.steps[0].share, Share::Alone);
        assert_eq!(p.steps[1].share, Share::Divided);
    }

    #[test]
    fn other_shards_skip_undivided_steps_and_need_no_dataset() {
        let p = Plan::new(&study(1, 42), shard(1, 2));
        assert!(!p.needs_dataset);
        assert_eq!(p.steps[0].share, Share::Elsewhere);
        assert_eq!(p.steps[1].share, Share::Divided);
        assert_ne!(p.label, Plan::new(&study(1, 42), shard(0, 2)).label);
    }
}
