//! The reports of a fixed run: text, Markdown and HTML against golden files; `dbduel compare`
//! of real runs (the same settings twice, and a heavier query) with its exit codes; and a
//! fresh run writing a self-contained `report.html` with a chart for every step.
//!
//! The fixtures under `tests/fixtures/runs/` are real runs on SQLite (the shootout at 20,000
//! rows, the oltp study, the tpcc study at its `functional` scale), copied without their
//! `work/` directory. To regenerate the golden files after a
//! deliberate change of the renderers, run `DBDUEL_UPDATE_GOLDEN=1 cargo test --test reports`
//! and review the diff.

mod common;

use std::path::{Path, PathBuf};

/// The fixed run the goldens render.
const RUN_A: &str = "tests/fixtures/runs/shootout-20261122-034526";
/// The same study and settings, run again later.
const RUN_B: &str = "tests/fixtures/runs/shootout-20261122-035729";
/// The same study with a heavier first range query (and fewer queries per client).
const RUN_HEAVY: &str = "tests/fixtures/runs/shootout-20261122-035745";
/// The oltp study on SQLite, each step sweeping 1 and 4 clients (1 table of 2,000 rows).
const RUN_SWEEP: &str = "tests/fixtures/runs/oltp-20261122-041115";

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Compare `actual` with the golden file, or rewrite it when DBDUEL_UPDATE_GOLDEN=1.
fn golden(name: &str, actual: &str) {
    let path = fixture("tests/fixtures/golden").join(name);
    if std::env::var("DBDUEL_UPDATE_GOLDEN").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().expect("golden dir")).expect("mkdir golden");
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; create it with DBDUEL_UPDATE_GOLDEN=1 cargo test --test reports",
            path.display()
        )
    });
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
        panic!(
            "{} differs from the output at line {}:\n  golden: {:?}\n  actual: {:?}\n\
             If the change is intended, regenerate with DBDUEL_UPDATE_GOLDEN=1 cargo test --test reports",
            path.display(),
            line + 1,
            expected.lines().nth(line).unwrap_or("(end)"),
            actual.lines().nth(line).unwrap_or("(end)")
        );
    }
}

fn report(dir: &str, format: &str) -> String {
    let (code, out, err) = common::run(&["report", dir, "--format", format]);
    assert_eq!(code, 0, "report {format} failed: {err}");
    out
}

/// Every `<svg class="chart …">` with its declared and marked points.
fn charts(html: &str) -> Vec<(usize, usize)> {
    html.split("<svg class=\"chart")
        .skip(1)
        .map(|rest| {
            let body = &rest[..rest.find("</svg>").expect("closed svg")];
            let declared = body
                .split("data-points=\"")
                .nth(1)
                .and_then(|s| s.split('"').next())
                .and_then(|s| s.parse().ok())
                .expect("data-points");
            (declared, body.matches("class=\"pt").count())
        })
        .collect()
}

/// Self-contained: nothing loaded from anywhere, no script, and a policy that forbids both.
fn assert_self_contained(html: &str) {
    for banned in [
        "<script", "<link", "<img", "<iframe", "src=", "url(", "@import",
    ] {
        assert!(!html.contains(banned), "the page contains {banned}");
    }
    for scheme in ["http://", "https://", "//fonts", "file:"] {
        assert!(!html.contains(scheme), "the page refers to {scheme}");
    }
    assert!(
        html.contains("content=\"default-src 'none'; style-src 'unsafe-inline'\""),
        "the page has its content security policy"
    );
}

/// The step sections of a report, each with its charts.
fn sections(html: &str) -> Vec<(String, Vec<(usize, usize)>)> {
    html.split("<section class=\"step\" id=\"step-")
        .skip(1)
        .map(|s| {
            let id = s.split('"').next().unwrap_or_default().to_string();
            let body = &s[..s.find("</section>").expect("closed section")];
            (id, charts(body))
        })
        .collect()
}

#[test]
fn text_report_matches_golden() {
    golden("report.txt", &report(RUN_A, "text"));
}

#[test]
fn markdown_report_matches_golden() {
    let md = report(RUN_A, "markdown");
    assert!(md.contains("### Verdict"), "{md}");
    assert!(
        md.contains("|:--|:--|--:|--:|:--|"),
        "numbers right-aligned: {md}"
    );
    golden("report.md", &md);
}

#[test]
fn html_report_matches_golden_and_is_self_contained() {
    let html = report(RUN_A, "html");
    assert_self_contained(&html);
    let steps = sections(&html);
    assert_eq!(steps.len(), 10, "one section per step of the shootout");
    for (id, charts) in &steps {
        assert!(!charts.is_empty(), "step {id} has no chart");
        for (declared, marked) in charts {
            assert!(*declared > 0, "step {id}: a chart without points");
            assert_eq!(declared, marked, "step {id}: declared vs drawn points");
        }
    }
    // The client step has its timelines (throughput, p99, CPU, disk reads and writes, each in
    // MB/s and IOPS) and its percentile plot beside its bars.
    let (_, q) = steps
        .iter()
        .find(|(id, _)| id == "range-queries")
        .expect("range-queries section");
    assert!(q.len() >= 7, "range queries: {} charts", q.len());
    for caption in [
        "throughput",
        "p99 latency",
        "host CPU",
        "disk reads",
        "disk writes",
        "read IOPS",
        "write IOPS",
        "latency percentiles",
    ] {
        assert!(
            html.contains(&format!("<figcaption>{caption} ")),
            "no {caption} chart"
        );
    }
    // Context: versions, effective settings, dataset, seed, host.
    for needle in [
        "sqlite 3.54.1",
        "journal_mode=wal",
        "<dt>seed</dt><dd>42</dd>",
        "AMD EPYC",
    ] {
        assert!(html.contains(needle), "context lacks {needle}");
    }
    assert!(
        html.len() < 120_000,
        "the page stays small: {} bytes",
        html.len()
    );
    golden("report.html", &html);
}

/// A step whose intervals carry a client level gets curves against the level, with no
/// renderer change for its step kind.
#[test]
fn sweeps_get_curves_against_the_client_count() {
    let html = report(RUN_SWEEP, "html");
    assert_self_contained(&html);
    let steps = sections(&html);
    assert_eq!(steps.len(), 4, "load and three oltp steps");
    for part in html.split("<section class=\"step\" id=\"step-").skip(1) {
        let id = part.split('"').next().unwrap_or_default();
        let body = &part[..part.find("</section>").expect("closed section")];
        let curves: Vec<(usize, usize)> = body
            .split("<figcaption>")
            .skip(1)
            .filter(|f| {
                f.starts_with("throughput by clients") || f.starts_with("p99 latency by clients")
            })
            .flat_map(charts)
            .collect();
        if id == "load" {
            assert!(curves.is_empty(), "the load does not sweep");
        } else {
            // Two contenders × two levels, on both curves.
            assert_eq!(curves, vec![(4, 4), (4, 4)], "step {id}");
            // p99 is each level's own (its merged histogram), not a mean of seconds' p99s.
            assert!(
                body.contains(
                    "each level&#39;s p99 over its measured window (its merged histogram)"
                ),
                "step {id}"
            );
        }
        if id == "read-write" {
            // sqlite-wal's one-client level: p99 221 µs in read-write.json's details.levels.
            assert!(body.contains(">sqlite-wal: 1 clients: 221 µs<"), "{body}");
        }
    }
    for (id, charts) in steps {
        assert!(!charts.is_empty(), "step {id} has no chart");
    }
}

#[test]
fn json_report_is_the_summary() {
    let out = report(RUN_A, "json");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["study"], "shootout");
}

#[test]
fn compare_runs_with_the_same_settings() {
    let (code, out, err) = common::run(&["compare", RUN_A, RUN_B]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("not judged (too few measurements)"), "{out}");
    assert!(
        out.contains("measured once: --repeat 5 would judge it"),
        "{out}"
    );
    golden("compare.txt", &out);
}

#[test]
fn a_run_against_itself_has_no_change_and_passes() {
    let (code, out, err) = common::run(&["compare", RUN_A, RUN_A, "--fail-on-regression"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("verdict: 0 significant regressions, 0 significant improvements"));
    assert!(out.contains("the runs' context is the same"), "{out}");
}

#[test]
fn a_heavier_query_is_a_significant_regression() {
    let (code, out, _) = common::run(&["compare", RUN_A, RUN_HEAVY]);
    assert_eq!(code, 0, "without --fail-on-regression the exit code is 0");
    assert!(
        out.contains("regressed: sqlite-wal · range queries, 1000 clients · queries/s"),
        "{out}"
    );
    assert!(
        out.contains("study step.range-queries.per_client: 800 → 300"),
        "{out}"
    );
    let (code, _, _) = common::run(&["compare", RUN_A, RUN_HEAVY, "--fail-on-regression"]);
    assert_eq!(code, 1, "--fail-on-regression exits 1 on a regression");
    let (code, json, _) = common::run(&["compare", RUN_A, RUN_HEAVY, "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).expect("compare json");
    let regressed = v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["verdict"] == "regressed")
        .count();
    assert!(regressed > 0, "{json}");
    // The same verdicts as CSV: a row per figure, the JSON's verdict names.
    let (code, csv, err) = common::run(&["compare", RUN_A, RUN_HEAVY, "--format", "csv"]);
    assert_eq!(code, 0, "{err}");
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("study,contender,step,figure,label,unit,better,a,b,change,noise,verdict,why")
    );
    assert_eq!(lines.count(), v["rows"].as_array().map_or(0, Vec::len));
    assert_eq!(
        csv.lines().filter(|l| l.contains(",regressed,")).count(),
        regressed,
        "{csv}"
    );
    // With a threshold beyond every change, nothing counts.
    let (code, out, _) = common::run(&[
        "compare",
        RUN_A,
        RUN_HEAVY,
        "--fail-on-regression",
        "--threshold",
        "1000000%",
    ]);
    assert_eq!(code, 0, "{out}");
    golden(
        "compare-heavier.md",
        &common::run(&["compare", RUN_A, RUN_HEAVY, "--format", "markdown"]).1,
    );
    let html = common::run(&["compare", RUN_A, RUN_HEAVY, "--format", "html"]).1;
    assert_self_contained(&html);
    for (declared, marked) in charts(&html) {
        assert_eq!(declared, marked);
    }
    golden("compare-heavier.html", &html);
}

#[test]
fn a_step_run_on_a_busy_machine_is_shown_not_judged() {
    // The heavier run again, its range-query step recorded while other processes used 48%
    // of the machine: the regression is no longer a verdict, and says why.
    let dir = tempfile::tempdir().expect("tmp");
    let copy = dir.path().join("shootout-busy");
    copy_with_steps_edited(RUN_HEAVY, &copy, |s| {
        if s["name"] == "range-queries" {
            s["machine"] = serde_json::json!({
                "others_cpu_pct": 48.0, "steal_pct": 0.0,
                "min_available_mem_pct": 60.0, "span_s": 11.0
            });
        }
    });
    let busy = copy.to_str().unwrap();
    let (code, out, err) = common::run(&["compare", RUN_A, busy, "--fail-on-regression"]);
    assert_eq!(code, 0, "a disturbed step is no regression: {out}{err}");
    assert!(
        !out.contains("regressed: sqlite-wal · range queries"),
        "{out}"
    );
    assert!(out.contains("not judged (the machine was busy)"), "{out}");
    assert!(
        out.contains("B: other processes used 48% of the machine's CPU during this step"),
        "{out}"
    );
}

#[test]
fn compare_names_a_version_change_and_nothing_else_when_only_the_version_changed() {
    // The same run, its sqlite-wal contender recorded as another SQLite: an upgrade, and the
    // one difference between the two runs' context.
    let dir = tempfile::tempdir().expect("tmp");
    let copy = dir.path().join("shootout-upgraded");
    copy_dir(Path::new(RUN_A), &copy);
    let path = copy.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for c in manifest["contenders"].as_array_mut().unwrap() {
        if c["name"] == "sqlite-wal" {
            c["version"] = "3.99.0".into();
        }
    }
    std::fs::write(&path, manifest.to_string()).unwrap();
    let (code, out, err) = common::run(&["compare", RUN_A, copy.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let differs: Vec<&str> = out
        .lines()
        .skip_while(|l| l.trim() != "what differs:")
        .skip(1)
        .take_while(|l| l.starts_with("    "))
        .map(str::trim)
        .collect();
    assert_eq!(
        differs,
        ["sqlite-wal version: sqlite 3.54.1 → sqlite 3.99.0"],
        "{out}"
    );
}

#[test]
fn compare_rejects_bad_input() {
    let (code, _, err) = common::run(&["compare", RUN_A, RUN_B, "--threshold", "lots"]);
    assert_eq!(code, 2);
    assert!(err.contains("expected a percentage"), "{err}");
    let (code, _, err) = common::run(&["compare", RUN_A, "tests/fixtures"]);
    assert_eq!(code, 2);
    assert!(err.contains("is this a dbduel run directory?"), "{err}");
}

#[test]
fn a_corrupt_series_line_is_left_out_not_fatal() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("run");
    copy_dir(&fixture(RUN_A), &dir);
    let f = dir.join("sqlite-wal/range-queries.intervals.ndjson");
    let mut text = std::fs::read_to_string(&f).expect("read");
    text.push_str("{\"tick\": 9, this is not json\n");
    std::fs::write(&f, text).expect("write");
    let dir_s = dir.to_string_lossy().to_string();
    let html = report(&dir_s, "html");
    assert!(
        html.contains("1 unreadable line(s) in range-queries.intervals.ndjson were left out"),
        "the page says what it left out"
    );
}

/// The run directory `from` copied to `to`, each step of its summary.json passed to `edit`.
fn copy_with_steps_edited(from: &str, to: &Path, mut edit: impl FnMut(&mut serde_json::Value)) {
    copy_dir(Path::new(from), to);
    let path = to.join("summary.json");
    let mut summary = common::read_json(&path);
    for c in summary["contenders"].as_array_mut().expect("contenders") {
        for s in c["steps"].as_array_mut().expect("steps") {
            edit(s);
        }
    }
    std::fs::write(&path, summary.to_string()).expect("write");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("ls").flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).expect("copy");
        }
    }
}

/// Two fresh runs of the shootout each write a self-contained report.html with a chart for
/// every step, and comparing them works.
#[test]
fn every_run_writes_its_html_report() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().to_string_lossy().to_string();
    let mut dirs = Vec::new();
    for _ in 0..2 {
        let (code, _, err) = common::run(&[
            "-q",
            "run",
            "shootout",
            "--set",
            "dataset.rows=2000",
            "--set",
            "step.range-queries.clients=20",
            "--set",
            "step.range-queries.per_client=50",
            "--set",
            "step.slap-count.clients=20",
            "--set",
            "step.slap-content.clients=20",
            "--out",
            &out,
        ]);
        assert_eq!(code, 0, "{err}");
        let dir = common::run_dir(&err);
        let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
        assert_self_contained(&html);
        let steps = sections(&html);
        assert_eq!(steps.len(), 14);
        for (id, charts) in steps {
            // The forced-COPY schema changes are skipped on SQLite (it has no algorithms):
            // their sections say so instead of drawing a chart.
            if id.ends_with("-copy") {
                assert!(charts.is_empty(), "skipped step {id} drew a chart");
                let section = html
                    .split(&format!("id=\"step-{id}\""))
                    .nth(1)
                    .unwrap_or_default();
                let section = &section[..section.find("</section>").unwrap_or(section.len())];
                assert!(section.contains("skipped"), "step {id}: {section}");
            } else {
                assert!(!charts.is_empty(), "step {id} has no chart");
            }
        }
        // `dbduel report --format html` renders the same page.
        assert_eq!(report(&dir.to_string_lossy(), "html"), html);
        dirs.push(dir.to_string_lossy().to_string());
    }
    let (code, out, err) = common::run(&["compare", &dirs[0], &dirs[1]]);
    assert_eq!(code, 0, "{err}");
    // Any figure whose change lies within its noise band is reported as no change.
    assert!(out.contains("verdict: "), "{out}");
}

/// A reader that stops early (`dbduel report … | head`) ends the output quietly: no panic on
/// the broken pipe, and the exit code still says how the command went.
#[test]
fn a_reader_that_goes_away_is_no_panic() {
    use std::io::Read;
    let mut child = common::bin()
        .args(["report", RUN_SWEEP, "--format", "html"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("dbduel starts");
    // Bigger than a pipe's buffer, or the test could not fail.
    let (_, whole, _) = common::run(&["report", RUN_SWEEP, "--format", "html"]);
    assert!(whole.len() > 2 * 65_536, "{} bytes", whole.len());
    let mut first = [0u8; 16];
    child
        .stdout
        .take()
        .expect("stdout")
        .read_exact(&mut first)
        .expect("some output");
    // The pipe is closed here, before the page (130 KB, twice a pipe's buffer) is written.
    let out = child.wait_with_output().expect("dbduel ends");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

/// `report --format csv` read back by a CSV reader: every figure of the JSON report, with
/// the same value, unit and better direction, once; steps without figures as one row.
#[test]
fn csv_report_round_trips_with_the_json_figures() {
    for run in [RUN_A, RUN_SWEEP] {
        let json: serde_json::Value =
            serde_json::from_str(&report(run, "json")).expect("json report");
        let text = report(run, "csv");
        let mut rdr = csv::Reader::from_reader(text.as_bytes());
        let header: Vec<String> = rdr
            .headers()
            .expect("header")
            .iter()
            .map(String::from)
            .collect();
        let col = |name: &str| header.iter().position(|h| h == name).expect(name);
        let rows: Vec<csv::StringRecord> = rdr.records().map(|r| r.expect("record")).collect();
        let mut expected = 0;
        for c in json["contenders"].as_array().expect("contenders") {
            for st in c["steps"].as_array().expect("steps") {
                let metrics = st["metrics"].as_array().cloned().unwrap_or_default();
                expected += metrics.len().max(1);
                for m in &metrics {
                    let found: Vec<_> = rows
                        .iter()
                        .filter(|r| {
                            r[col("contender")] == c["name"]
                                && r[col("step")] == st["name"]
                                && r[col("figure")] == m["key"]
                        })
                        .collect();
                    assert_eq!(found.len(), 1, "{} {} {}", c["name"], st["name"], m["key"]);
                    let r = found[0];
                    let value: f64 = r[col("value")].parse().expect("value");
                    assert_eq!(Some(value), m["value"].as_f64(), "{run}: {r:?}");
                    assert_eq!(r[col("unit")], m["unit"], "{r:?}");
                    assert_eq!(r[col("better")], m["better"], "{r:?}");
                    assert_eq!(r[col("engine")], c["engine"], "{r:?}");
                    assert_eq!(r[col("status")], st["status"], "{r:?}");
                    assert_eq!(&r[col("n")], "1", "a single round: {r:?}");
                }
            }
        }
        assert_eq!(rows.len(), expected, "{run}: one row a figure\n{text}");
    }
}

/// `report --series`: one CSV row a second of every client step, its operations those of the
/// step's `intervals.ndjson`.
#[test]
fn series_csv_has_every_second() {
    let (code, text, err) = common::run(&["report", RUN_SWEEP, "--series"]);
    assert_eq!(code, 0, "{err}");
    let mut rdr = csv::Reader::from_reader(text.as_bytes());
    let rows: Vec<csv::StringRecord> = rdr.records().map(|r| r.expect("record")).collect();
    let file = fixture(RUN_SWEEP).join("sqlite-wal/point-select.intervals.ndjson");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&file)
        .expect("intervals")
        .lines()
        .map(|l| serde_json::from_str(l).expect("line"))
        .collect();
    let mine: Vec<_> = rows
        .iter()
        .filter(|r| &r[0] == "sqlite-wal" && &r[1] == "point-select")
        .collect();
    assert_eq!(mine.len(), lines.len());
    for (r, l) in mine.iter().zip(&lines) {
        assert_eq!(r[2].parse::<u64>().ok(), l["tick"].as_u64(), "{r:?}");
        assert_eq!(r[6].parse::<u64>().ok(), l["ops"].as_u64(), "{r:?}");
        assert_eq!(r[11].parse::<f64>().ok(), l["latency_us"]["p99"].as_f64());
    }
    let (code, _, err) = common::run(&["report", RUN_SWEEP, "--series", "--format", "html"]);
    assert_eq!(code, 2, "--series is CSV only: {err}");
}

/// The tpcc study on SQLite at its `functional` scale (1 warehouse; 1 and 4 terminals).
const RUN_TPCC: &str = "tests/fixtures/runs/tpcc-20261127-224153";

/// A TPC-C sweep is drawn as the 2012 original drew it: New-Order transactions per 10 s
/// (vertical) against the client count (horizontal), a point per level and contender, each
/// the level's New-Orders a second times 10 — its tpmC over 6.
#[test]
fn a_tpcc_sweep_draws_new_orders_per_10_s_against_the_client_count() {
    const CAPTION: &str = "New-Order transactions per 10 s by clients";
    let html = report(RUN_TPCC, "html");
    assert_self_contained(&html);
    let part = html
        .split("<section class=\"step\" id=\"step-tpcc\"")
        .nth(1)
        .expect("the tpcc step's section");
    let body = &part[..part.find("</section>").expect("closed section")];
    let figure = body
        .split("<figure>")
        .find(|f| f.starts_with(&format!("<figcaption>{CAPTION} ")))
        .unwrap_or_else(|| panic!("no chart {CAPTION:?} in the tpcc step"));
    // One contender × two levels, on a client axis.
    assert_eq!(charts(figure), vec![(2, 2)]);
    assert!(figure.contains(">clients<"), "{figure}");
    // Each point is the level's tpmC / 6 (the step's own figure, within its measured window).
    let details =
        common::read_json(&fixture(RUN_TPCC).join("sqlite-wal/tpcc.json"))["details"].clone();
    for level in details["levels"].as_array().expect("levels") {
        let threads = level["threads"].as_u64().expect("threads");
        let tpmc = level["tpmc"].as_f64().expect("tpmc");
        let tip = format!(">sqlite-wal: {threads} clients: ");
        let at = figure
            .find(&tip)
            .unwrap_or_else(|| panic!("no point at {threads} clients in {figure}"));
        let shown: String = figure[at + tip.len()..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',' || *c == '.')
            .filter(|c| *c != ',')
            .collect();
        let shown: f64 = shown.parse().expect("a count");
        assert!(
            (shown - tpmc / 6.0).abs() <= tpmc / 6.0 * 0.05,
            "{threads} clients: {shown} against tpmC {tpmc} / 6"
        );
    }
}

/// A figure's role comes from a run directory's summary.json, which someone else may have
/// written: the names it gives a chart are text on the page, never markup.
#[test]
fn a_role_from_the_summary_is_text_on_the_page_not_markup() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("run");
    copy_with_steps_edited(RUN_TPCC, &dir, |st| {
        for m in st["metrics"].as_array_mut().expect("metrics") {
            if m["key"] == "tpmc" {
                m["role"] = serde_json::json!({
                    "is": "per10s",
                    "op": "new_order",
                    "name": "<script>alert(1)</script>",
                    "short": "<b onclick=alert(2)>"
                });
            }
        }
    });
    let html = report(dir.to_str().unwrap(), "html");
    assert_self_contained(&html);
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt; per 10 s"),
        "the planted name is shown as text"
    );
    assert!(html.contains("&lt;b onclick=alert(2)&gt;") && !html.contains("<b onclick"));
}
