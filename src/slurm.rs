//! `dbduel slurm`: the `sbatch` script that runs a study's shards as one Slurm array job. Task
//! I of the array `0-(N-1)` is shard I of N (dbduel reads `SLURM_ARRAY_TASK_ID`), the run
//! group is `slurm-` and the array's job id, every task writes its run directory under
//! `RESULTS/JOBID` on a directory every node shares (with the study file as it ran, as
//! `study.toml`), and the first task submits the merge: a
//! job that starts once every task has ended (`--dependency=afterany`, so that a shard that
//! was cancelled or failed is reported by the merge instead of leaving it pending for ever)
//! and writes `RESULTS/JOBID/merged`. Target passwords come from the tasks' environment or
//! from files the nodes see, checked before anything runs; the script never holds one.

use std::fmt::Write;

/// Which study the tasks run.
#[derive(Debug, Clone)]
pub enum StudyText {
    /// A built-in study, by name (every dbduel has it).
    Builtin(String),
    /// A study file's text, written by each task to a private file.
    File(String),
}

/// What to launch.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The job's name (the merge's is this and `-merge`).
    pub name: String,
    /// The study's name, for the script's first comment.
    pub study_name: String,
    pub shards: u32,
    /// The command that runs dbduel on the nodes.
    pub dbduel: String,
    pub study: StudyText,
    /// Further `dbduel run` arguments (`--scale`, `--set`, `--contender`).
    pub run_args: Vec<String>,
    /// The shared directory the tasks write to (absolute).
    pub results: String,
    /// Environment variables the study reads target passwords from.
    pub password_envs: Vec<String>,
    /// Files the study reads target passwords from (as the study names them).
    pub password_files: Vec<String>,
    pub partition: Option<String>,
    /// Each task's time limit, as `sbatch --time` takes it.
    pub time: Option<String>,
    /// Seconds a shard waits for the others at a meeting (`run --barrier-timeout-s`).
    pub barrier_timeout_s: Option<u64>,
    /// Task I serves its live metrics at this address's port plus I (the unspecified
    /// address: every address of its node), and writes where to Prometheus's file discovery
    /// (`RESULTS/JOBID/prometheus/`).
    pub metrics: Option<std::net::SocketAddr>,
}

/// `s` as one word of a POSIX shell, quoted only when it needs to be.
pub fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// `s` written inside a shell's double quotes so that it stays as it is.
fn in_double_quotes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | '"' | '$' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Is `s` a name Slurm and a file name both take (the job's name)?
pub fn check_name(s: &str) -> Result<(), String> {
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "--name {s:?}: a job name is 1 to 64 letters, digits, '-', '_' and '.'"
        ))
    }
}

/// The end-of-text line of the study's here-document: one no line of the study is.
fn delimiter(text: &str) -> String {
    let mut d = "DBDUEL_STUDY".to_string();
    while text.lines().any(|l| l == d) {
        d.push('_');
    }
    d
}

/// The script, from `#!/bin/bash` to its last line.
pub fn script(l: &Launch) -> Result<String, String> {
    check_name(&l.name)?;
    if !l.results.starts_with('/') || l.results.contains(char::is_whitespace) {
        return Err(format!(
            "--results {:?}: give the shared directory as an absolute path without spaces (sbatch's options cannot hold one), the same on every node",
            l.results
        ));
    }
    check_shell_words(l)?;
    let n = l.shards;
    let mut s = String::new();
    let _ = writeln!(s, "#!/bin/bash");
    let _ = writeln!(
        s,
        "# dbduel slurm: study `{}` as {n} shards, one task of this array job each, all at once.",
        l.study_name
    );
    let _ = writeln!(
        s,
        "# Submit it with `sbatch FILE`. Task I is shard I, under run group slurm-JOBID; each writes\n\
         # its run directory under {results}/JOBID, and task 0 submits the merge, which starts once\n\
         # every task has ended and writes {results}/JOBID/merged (its exit code: the merged run's).",
        results = l.results
    );
    if !l.password_envs.is_empty() || !l.password_files.is_empty() {
        s.push_str("# Target passwords are never in this script.\n");
    }
    if !l.password_envs.is_empty() {
        let _ = writeln!(
            s,
            "# Export {} before sbatch: each task gets the submitting shell's environment.",
            l.password_envs.join(", ")
        );
    }
    if !l.password_files.is_empty() {
        let _ = writeln!(
            s,
            "# Every node reads {} (relative to the submit directory).",
            l.password_files.join(", ")
        );
    }
    s.push_str(
        "# Make the results directory before sbatch: Slurm writes the tasks' output there.\n",
    );
    let _ = writeln!(s, "#SBATCH --job-name={}", l.name);
    let _ = writeln!(s, "#SBATCH --array=0-{}", n - 1);
    let _ = writeln!(s, "#SBATCH --ntasks=1");
    let _ = writeln!(s, "#SBATCH --output={}/slurm-%A_%a.out", l.results);
    if let Some(p) = &l.partition {
        let _ = writeln!(s, "#SBATCH --partition={p}");
    }
    if let Some(t) = &l.time {
        let _ = writeln!(s, "#SBATCH --time={t}");
    }
    s.push_str(&body(l));
    Ok(s)
}

/// Every value the script writes where a shell or sbatch reads it as it stands (a variable's
/// name in `${NAME+set}`, a comment, an `#SBATCH` line): a password variable must be a
/// shell name, and no value may hold a line break or another control character, which would
/// start a command of its own on every node.
fn check_shell_words(l: &Launch) -> Result<(), String> {
    for var in &l.password_envs {
        let mut chars = var.chars();
        let name_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !name_ok {
            return Err(format!(
                "password_env {var:?} is not a shell variable's name (letters, digits and _, not starting with a digit): the script reads it on every node"
            ));
        }
    }
    let values = l
        .password_files
        .iter()
        .map(|f| ("password_file", f.as_str()))
        .chain(l.partition.iter().map(|p| ("--partition", p.as_str())))
        .chain(l.time.iter().map(|t| ("--time", t.as_str())))
        .chain([("the study's name", l.study_name.as_str())]);
    for (what, v) in values {
        if v.chars().any(char::is_control) {
            return Err(format!(
                "{what} {v:?} holds a line break or another control character, which the script's shell would run as a command: rename it"
            ));
        }
    }
    Ok(())
}

/// What each task runs: the checks, task 0's submission of the merge, then its shard.
fn body(l: &Launch) -> String {
    let n = l.shards;
    let dbduel = quote(&l.dbduel);
    let results = quote(&l.results);
    let mut s = String::from("set -euo pipefail\n");
    s.push_str(
        "job=\"${SLURM_ARRAY_JOB_ID:?submit this script with sbatch: it runs as a Slurm array job}\"\n",
    );
    let _ = writeln!(s, "out={results}/\"$job\"");
    s.push_str("mkdir -p \"$out\"\n");
    for var in &l.password_envs {
        let _ = writeln!(
            s,
            "if [ -z \"${{{var}+set}}\" ]; then echo \"task $SLURM_ARRAY_TASK_ID on $(hostname): {var} is not set; export it before sbatch\" >&2; exit 3; fi"
        );
    }
    for file in &l.password_files {
        let f = quote(file);
        let _ = writeln!(
            s,
            "if [ ! -r {f} ]; then echo \"task $SLURM_ARRAY_TASK_ID on $(hostname): cannot read the password file \"{f} >&2; exit 3; fi"
        );
    }
    let partition = l
        .partition
        .as_ref()
        .map(|p| format!(" --partition={}", quote(p)))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "if [ \"$SLURM_ARRAY_TASK_ID\" = \"${{SLURM_ARRAY_TASK_MIN:-0}}\" ]; then\n  \
         sbatch --parsable --job-name={name}-merge --dependency=afterany:\"$job\"{partition} \\\n    \
         --output=\"$out/merge.out\" \\\n    \
         --wrap=\"exec {dbduel_q} merge $(printf %q \"$out\")/*-shard-*-of-{n}-* --out $(printf %q \"$out\")/merged\" >\"$out/merge.jobid\"\n\
         fi",
        name = l.name,
        dbduel_q = in_double_quotes(&dbduel),
    );
    let study = match &l.study {
        StudyText::Builtin(b) => quote(b),
        StudyText::File(text) => {
            let d = delimiter(text);
            // Beside the runs, as they ran it; each task writes its own copy and renames it
            // over the one file, so that no task reads another's half-written one.
            s.push_str("study=\"$out/study.toml\"\n");
            let _ = write!(s, "cat >\"$study.$SLURM_ARRAY_TASK_ID\" <<'{d}'\n{text}");
            if !text.ends_with('\n') {
                s.push('\n');
            }
            let _ = writeln!(s, "{d}");
            s.push_str("mv -f \"$study.$SLURM_ARRAY_TASK_ID\" \"$study\"\n");
            "\"$study\"".to_string()
        }
    };
    if let Some(addr) = l.metrics {
        // Tasks may share a node, so each takes its own port; Prometheus finds them by the
        // files (file_sd_configs), since which node runs which task is known only now.
        let host = match addr.ip() {
            ip if ip.is_unspecified() => "$(hostname)".to_string(),
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
            ip => ip.to_string(),
        };
        let _ = write!(
            s,
            "metrics_port=$(({port} + SLURM_ARRAY_TASK_ID))\n\
             targets=\"$out/prometheus/shard-$SLURM_ARRAY_TASK_ID.json\"\n\
             mkdir -p \"$out/prometheus\"\n\
             printf '[{{\"targets\": [\"%s:%s\"], \"labels\": {{\"dbduel_run\": \"slurm-%s\"}}}}]\\n' \\\n  \
             \"{host}\" \"$metrics_port\" \"$job\" >\"$targets.tmp\"\n\
             mv -f \"$targets.tmp\" \"$targets\"\n",
            port = addr.port(),
        );
    }
    // dbduel is the task's process, not a child of this shell: `scancel` signals it, and it
    // tells the other shards it stopped before it ends (a shell ending first would have Slurm
    // kill it at once).
    let mut run = format!(
        "exec {dbduel} run {study} -q --out \"$out\" --shards {n} --run-group \"slurm-$job\""
    );
    if let Some(t) = l.barrier_timeout_s {
        let _ = write!(run, " --barrier-timeout-s {t}");
    }
    if let Some(addr) = l.metrics {
        let host = match addr.ip() {
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
            ip => ip.to_string(),
        };
        let _ = write!(run, " --metrics-listen \"{host}:$metrics_port\"");
        if !addr.ip().is_loopback() {
            run.push_str(" --metrics-allow-remote");
        }
    }
    for a in &l.run_args {
        run.push(' ');
        run.push_str(&quote(a));
    }
    let _ = writeln!(s, "{run}");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch() -> Launch {
        Launch {
            name: "dbduel-sharded".into(),
            study_name: "sharded".into(),
            shards: 4,
            dbduel: "/opt/dbduel/bin/dbduel".into(),
            study: StudyText::File(
                "[study]\nname = \"sharded\"\n# DBDUEL_STUDY\nDBDUEL_STUDY\n".into(),
            ),
            run_args: vec!["--set".into(), "step.q.per_client=10".into()],
            results: "/shared/dbduel-results".into(),
            password_envs: vec!["BENCH_PW".into()],
            password_files: vec!["secrets/db pw".into()],
            partition: Some("bench".into()),
            time: Some("00:30:00".into()),
            barrier_timeout_s: Some(120),
            metrics: Some("0.0.0.0:9464".parse().unwrap()),
        }
    }

    #[test]
    fn no_value_can_start_a_command_of_its_own() {
        let refused = |change: &dyn Fn(&mut Launch)| {
            let mut l = launch();
            change(&mut l);
            script(&l).expect_err("refused")
        };
        let e = refused(&|l| l.password_envs = vec!["X}\nrm -rf /tmp/x\n${Y".into()]);
        assert!(e.contains("not a shell variable's name"), "{e}");
        let e = refused(&|l| l.password_envs = vec!["1PW".into()]);
        assert!(e.contains("not a shell variable's name"), "{e}");
        let e = refused(&|l| l.password_files = vec!["pw\ntouch /tmp/owned".into()]);
        assert!(
            e.contains("password_file") && e.contains("line break"),
            "{e}"
        );
        let e = refused(&|l| l.partition = Some("bench\n#SBATCH --uid=0".into()));
        assert!(e.contains("--partition"), "{e}");
        let e = refused(&|l| l.time = Some("1:00\rx".into()));
        assert!(e.contains("--time"), "{e}");
    }

    #[test]
    fn the_script_is_as_printed() {
        // DBDUEL_UPDATE_GOLDEN=1 writes it again, as for the reports' golden files
        let s = script(&launch()).unwrap();
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/golden/slurm.sh");
        if std::env::var("DBDUEL_UPDATE_GOLDEN").is_ok_and(|v| v == "1") {
            std::fs::write(&path, &s).unwrap();
        }
        let golden = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            s, golden,
            "the script changed: check it, then update the golden"
        );
    }

    #[test]
    fn the_study_text_ends_at_a_line_it_does_not_hold() {
        let s = script(&launch()).unwrap();
        assert!(s.contains("<<'DBDUEL_STUDY_'\n"), "{s}");
        assert!(s.contains("\nDBDUEL_STUDY\nDBDUEL_STUDY_\n"), "{s}");
    }

    #[test]
    fn words_are_quoted_for_the_shell() {
        assert_eq!(quote("plain/path-1.toml"), "plain/path-1.toml");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("$HOME"), "'$HOME'");
    }

    #[test]
    fn a_relative_results_directory_and_a_bad_name_are_refused() {
        let mut l = launch();
        l.results = "results".into();
        assert!(script(&l).unwrap_err().contains("absolute"));
        l.results = "/shared/with space".into();
        assert!(script(&l).unwrap_err().contains("without spaces"));
        let mut l = launch();
        l.name = "a job".into();
        assert!(script(&l).unwrap_err().contains("job name"));
    }
}
