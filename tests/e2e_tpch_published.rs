//! TPC-H's own validation on a real server: the built-in `tpch-validation` study loads the
//! specification's data at SF 1 (dbgen's rows, made by the `tpchgen` crate) into PostgreSQL
//! and runs the 22 queries with the validation parameters; every answer agrees with the one
//! the specification publishes. A drift in the generator, a query template, a parameter or
//! the answer comparison fails it.

mod common;

use common::{read_json, step};

#[test]
fn postgres_answers_every_query_as_the_specification_publishes() {
    if !common::have_postgres() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let (code, stdout, stderr) = common::run(&[
        "run",
        "tpch-validation",
        "--contender",
        "postgres",
        "--out",
        tmp.path().to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let dir = common::run_dir(&stderr);
    let summary = read_json(&dir.join("summary.json"));
    let s = step(&summary, "postgres", "validation");
    assert_eq!(s["status"], "ok", "{s:#}");
    let note = s["note"].as_str().expect("note");
    assert!(
        note.contains("SF 1; 22 queries;")
            && note
                .contains("validation parameters: 22 of 22 answers agree with its published ones"),
        "{note}"
    );
    let d = &read_json(&dir.join("postgres").join("validation.json"))["details"];
    assert_eq!(d["published_answers_agreed"], 22, "{d:#}");
    let qs = d["queries"].as_array().expect("queries");
    assert_eq!(qs.len(), 22);
    for q in qs {
        assert_eq!(q["status"], "ok", "{q:#}");
    }
    let q1 = qs.iter().find(|q| q["query"] == 1).expect("Q1");
    assert_eq!(q1["params"]["DELTA"], "90", "{q1:#}");
    assert_eq!(q1["answer"]["rows"][0][9], "1478493.0000", "{q1:#}");
}
