//! TPC-H's queries on real engines: every query runs on SQLite, MariaDB (InnoDB) and
//! PostgreSQL over the same small hand-made data and their answers agree; a query past its
//! timeout is cancelled on the server, which then lists it no more.

mod common;

use dbduel::engine::{Engine, OpenCtx, TIMEOUT};
use dbduel::engines::EngineConfig;
use dbduel::workload::tpch::{self, PowerParams, answer::Answer};
use dbduel::workload::{StepCtx, StepOutput};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

fn have_postgres() -> bool {
    common::have_server(
        "PostgreSQL",
        dbduel::engines::postgres::recipe::bin_dir().is_some(),
    )
}

fn engine(root: &Path, kind: &str, options: &str) -> Box<dyn Engine> {
    let options: toml::Table = toml::from_str(options).expect("options");
    let config = EngineConfig::decode(kind, &options, None, &Default::default()).expect("options");
    config
        .open(&OpenCtx {
            contender: kind,
            dir: &root.join(kind),
            database: "dbduel_tpch_test",
            max_clients: 4,
        })
        .expect("engine")
}

/// A small LCG, so the hand-made rows are the same on every engine and every run.
struct Lcg(u64);
impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
}

const SCHEMA: &[&str] = &[
    "CREATE TABLE region (r_regionkey INTEGER PRIMARY KEY, r_name CHAR(25), r_comment VARCHAR(152))",
    "CREATE TABLE nation (n_nationkey INTEGER PRIMARY KEY, n_name CHAR(25), n_regionkey INTEGER, n_comment VARCHAR(152))",
    "CREATE TABLE supplier (s_suppkey INTEGER PRIMARY KEY, s_name CHAR(25), s_address VARCHAR(40), s_nationkey INTEGER, s_phone CHAR(15), s_acctbal DECIMAL(15,2), s_comment VARCHAR(101))",
    "CREATE TABLE customer (c_custkey INTEGER PRIMARY KEY, c_name VARCHAR(25), c_address VARCHAR(40), c_nationkey INTEGER, c_phone CHAR(15), c_acctbal DECIMAL(15,2), c_mktsegment CHAR(10), c_comment VARCHAR(117))",
    "CREATE TABLE part (p_partkey INTEGER PRIMARY KEY, p_name VARCHAR(55), p_mfgr CHAR(25), p_brand CHAR(10), p_type VARCHAR(25), p_size INTEGER, p_container CHAR(10), p_retailprice DECIMAL(15,2), p_comment VARCHAR(23))",
    "CREATE TABLE partsupp (ps_partkey INTEGER, ps_suppkey INTEGER, ps_availqty INTEGER, ps_supplycost DECIMAL(15,2), ps_comment VARCHAR(199), PRIMARY KEY (ps_partkey, ps_suppkey))",
    "CREATE TABLE orders (o_orderkey INTEGER PRIMARY KEY, o_custkey INTEGER, o_orderstatus CHAR(1), o_totalprice DECIMAL(15,2), o_orderdate DATE, o_orderpriority CHAR(15), o_clerk CHAR(15), o_shippriority INTEGER, o_comment VARCHAR(79))",
    "CREATE TABLE lineitem (l_orderkey INTEGER, l_partkey INTEGER, l_suppkey INTEGER, l_linenumber INTEGER, l_quantity DECIMAL(15,2), l_extendedprice DECIMAL(15,2), l_discount DECIMAL(15,2), l_tax DECIMAL(15,2), l_returnflag CHAR(1), l_linestatus CHAR(1), l_shipdate DATE, l_commitdate DATE, l_receiptdate DATE, l_shipinstruct CHAR(25), l_shipmode CHAR(10), l_comment VARCHAR(44), PRIMARY KEY (l_orderkey, l_linenumber))",
];

const WORDS: &[&str] = &[
    "special",
    "pending",
    "unusual",
    "express",
    "packages",
    "requests",
    "accounts",
    "deposits",
    "Customer",
    "Complaints",
    "final",
    "ironic",
];

fn date(r: &mut Lcg, from_year: u64, years: u64) -> (u64, String) {
    let day = r.below(years * 365);
    (day, day_iso(from_year, day))
}

fn day_iso(from_year: u64, day: u64) -> String {
    let y = from_year + day / 365;
    let d = day % 365;
    let m = (d / 31).min(11) + 1;
    let dd = (d % 31).min(27) + 1;
    format!("{y:04}-{m:02}-{dd:02}")
}

fn comment(r: &mut Lcg, n: usize) -> String {
    (0..n).map(|_| r.pick(WORDS)).collect::<Vec<_>>().join(" ")
}

/// Rows in the specification's value domains, few enough for a test: 40 suppliers, 150
/// customers, 200 parts, 800 part suppliers, 1500 orders, about 6000 line items.
fn rows() -> Vec<String> {
    use tpch::queries::{COLORS, NATIONS, REGIONS};
    let mut r = Lcg(2024);
    let mut out = Vec::new();
    for (i, n) in REGIONS.iter().enumerate() {
        out.push(format!("INSERT INTO region VALUES ({i}, '{n}', 'r')"));
    }
    for (i, (n, reg)) in NATIONS.iter().enumerate() {
        out.push(format!(
            "INSERT INTO nation VALUES ({i}, '{n}', {reg}, 'n')"
        ));
    }
    for s in 1..=40u64 {
        let nk = r.below(25);
        let c = comment(&mut r, 4);
        let bal = r.below(1_100_000) as f64 / 100.0 - 999.99;
        out.push(format!("INSERT INTO supplier VALUES ({s}, 'Supplier#{s:09}', 'addr {s}', {nk}, '{}-{:03}-{:03}-{:04}', {bal:.2}, '{c}')", nk + 10, s, s, s));
    }
    let segs = [
        "AUTOMOBILE",
        "BUILDING",
        "FURNITURE",
        "MACHINERY",
        "HOUSEHOLD",
    ];
    for c in 1..=150u64 {
        let nk = r.below(25);
        let bal = r.below(1_100_000) as f64 / 100.0 - 999.99;
        let seg = r.pick(&segs);
        out.push(format!("INSERT INTO customer VALUES ({c}, 'Customer#{c:09}', 'addr {c}', {nk}, '{}-{:03}-{:03}-{:04}', {bal:.2}, '{seg}', 'c')", nk + 10, c, c, c));
    }
    let (s1, s2, s3) = (
        ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"],
        ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"],
        ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"],
    );
    let (c1, c2) = (
        ["SM", "LG", "MED", "JUMBO", "WRAP"],
        ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"],
    );
    for p in 1..=200u64 {
        let name = (0..5)
            .map(|_| r.pick(&COLORS))
            .collect::<Vec<_>>()
            .join(" ");
        let m = r.below(5) + 1;
        let ty = format!("{} {} {}", r.pick(&s1), r.pick(&s2), r.pick(&s3));
        let size = r.below(50) + 1;
        let cont = format!("{} {}", r.pick(&c1), r.pick(&c2));
        out.push(format!("INSERT INTO part VALUES ({p}, '{name}', 'Manufacturer#{m}', 'Brand#{m}{}', '{ty}', {size}, '{cont}', {}.00, 'p')", r.below(5) + 1, 900 + p));
        for k in 0..4 {
            let s = (p + k * 10) % 40 + 1;
            let cost = (r.below(99_900) + 100) as f64 / 100.0;
            out.push(format!(
                "INSERT INTO partsupp VALUES ({p}, {s}, {}, {cost:.2}, 'ps')",
                r.below(9999) + 1
            ));
        }
    }
    let prios = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"];
    let modes = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"];
    let instr = [
        "DELIVER IN PERSON",
        "COLLECT COD",
        "NONE",
        "TAKE BACK RETURN",
    ];
    for o in 1..=1500u64 {
        let cust = r.below(150) + 1;
        if cust.is_multiple_of(3) {
            continue; // a third of the customers never order (Q13, Q22)
        }
        let (day, od) = date(&mut r, 1992, 7);
        let c = comment(&mut r, 3);
        let lines = r.below(7) + 1;
        let mut status = String::new();
        for l in 1..=lines {
            let p = r.below(200) + 1;
            let s = (p + r.below(4) * 10) % 40 + 1;
            let q = r.below(50) + 1;
            let price = q * (900 + p);
            let ship = day + r.below(121) + 1;
            let commit = day + r.below(61) + 30;
            let receipt = ship + r.below(30) + 1;
            let flag = if receipt < 1200 {
                r.pick(&["R", "A"])
            } else {
                "N"
            };
            let ls = if ship > 2000 { "O" } else { "F" };
            status.push_str(ls);
            out.push(format!(
                "INSERT INTO lineitem VALUES ({o}, {p}, {s}, {l}, {q}, {price}.00, 0.0{}, 0.0{}, '{flag}', '{ls}', '{}', '{}', '{}', '{}', '{}', 'l')",
                r.below(11).min(9), r.below(9), day_iso(1992, ship), day_iso(1992, commit), day_iso(1992, receipt),
                r.pick(&instr), r.pick(&modes)
            ));
        }
        let os = if !status.contains('O') {
            "F"
        } else if !status.contains('F') {
            "O"
        } else {
            "P"
        };
        out.push(format!("INSERT INTO orders VALUES ({o}, {cust}, '{os}', {}.00, '{od}', '{}', 'Clerk#000000001', 0, '{c}')", 1000 + o, r.pick(&prios)));
    }
    out
}

/// Create and fill the tables on `engine`, in one transaction where the engine has them.
fn fill(engine: &dyn Engine, rows: &[String]) {
    let mut s = engine.connect().expect("connect");
    for t in [
        "lineitem", "orders", "partsupp", "part", "customer", "supplier", "nation", "region",
    ] {
        s.execute(&format!("DROP TABLE IF EXISTS {t}"))
            .expect("drop");
    }
    for sql in SCHEMA {
        s.execute(sql).expect("create");
    }
    s.execute("BEGIN").expect("begin");
    for sql in rows {
        s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    s.execute("COMMIT").expect("commit");
}

fn power(engine: &dyn Engine, params: &PowerParams) -> StepOutput {
    let progress = dbduel::progress::Progress::new(true);
    let stop = AtomicBool::new(false);
    let seconds = dbduel::results::SecondsLog::discard();
    let ctx = StepCtx {
        contender: engine.kind(),
        step: "tpch-power",
        title: None,
        engine,
        tables: &[],
        dataset_files: &[],
        dataset_rows: 0,
        dataset_seed: 42,
        data_device: None,
        progress: &progress,
        stop: &stop,
        team: None,
        seconds: &seconds,
        originals: None,
        earlier: &[],
    };
    match tpch::run(params, &ctx) {
        Ok(out) => out,
        Err(e) => panic!("{}: {e}", engine.kind()),
    }
}

fn answers(out: &StepOutput) -> Vec<(u64, Option<Answer>)> {
    out.details["queries"]
        .as_array()
        .expect("queries")
        .iter()
        .map(|q| {
            let a = serde_json::from_value(q["answer"].clone()).ok();
            (q["query"].as_u64().expect("query"), a)
        })
        .collect()
}

/// Every query runs on SQLite, MariaDB and PostgreSQL, cold then hot, and each engine's
/// answer agrees with SQLite's (the first contender, the reference) within the tolerance.
#[test]
fn every_query_answers_alike_on_sqlite_mariadb_and_postgres() {
    let root = tempfile::tempdir().expect("tmp");
    let rows = rows();
    let mut engines = vec![engine(root.path(), "sqlite", "")];
    if common::have_mariadb() {
        engines.push(engine(root.path(), "mariadb", "buffer_pool_mb = 64"));
    }
    if have_postgres() {
        engines.push(engine(root.path(), "postgres", ""));
    }
    let params: PowerParams = toml::from_str("hot_runs = 1\ntimeout_s = 60").expect("params");
    let mut reference: Option<Vec<(u64, Option<Answer>)>> = None;
    let mut non_empty = 0;
    for e in &engines {
        fill(e.as_ref(), &rows);
        let out = power(e.as_ref(), &params);
        let note = out.summary.note.clone().unwrap_or_default();
        assert!(note.starts_with("TPC-H-like, not audited"), "{note}");
        assert!(
            note.contains("cold: ") || note.contains("warm-restart: "),
            "{note}"
        );
        assert!(
            out.details["explain_worst"]["plan"]
                .as_array()
                .is_some_and(|p| !p.is_empty()),
            "{}",
            out.details["explain_worst"]
        );
        let got = answers(&out);
        assert_eq!(got.len(), 22);
        for (q, a) in &got {
            let a = a
                .as_ref()
                .unwrap_or_else(|| panic!("{} Q{q}: no answer", e.kind()));
            non_empty += usize::from(a.row_count > 0);
            if let Some(r) = &reference {
                let want = r[(*q - 1) as usize].1.as_ref().expect("reference answer");
                if let Some(why) = a.differs_from(want) {
                    panic!("{} Q{q} differs from sqlite's: {why}", e.kind());
                }
            }
        }
        reference.get_or_insert(got);
        eprintln!("{}: geomean hot {}", e.kind(), out.details["geomean_hot_s"]);
    }
    assert!(
        non_empty >= 15 * engines.len(),
        "{non_empty} non-empty answers"
    );
    for e in engines {
        e.finish(false).expect("finish");
    }
}

/// A statement slower than its timeout fails as `timeout` soon after the limit, and the
/// server no longer runs it: MariaDB's process list and PostgreSQL's pg_stat_activity show
/// it no more; SQLite's interrupt stops it in dbduel's own process.
#[test]
fn a_query_past_its_timeout_is_cancelled_on_the_server() {
    let root = tempfile::tempdir().expect("tmp");
    let slow_sqlite =
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT COUNT(*) FROM n";
    let mut cases: Vec<(Box<dyn Engine>, &str, &str)> =
        vec![(engine(root.path(), "sqlite", ""), slow_sqlite, "")];
    if common::have_mariadb() {
        cases.push((
            engine(root.path(), "mariadb", "buffer_pool_mb = 64"),
            "SELECT /* tpch-slow */ SLEEP(30)",
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%tpch-slow%' AND INFO NOT LIKE '%PROCESSLIST%'",
        ));
    }
    if have_postgres() {
        cases.push((
            engine(root.path(), "postgres", ""),
            "SELECT /* tpch-slow */ pg_sleep(30)",
            "SELECT COUNT(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%tpch-slow%' AND query NOT LIKE '%pg_stat_activity%'",
        ));
    }
    for (e, slow, listed) in cases {
        let mut s = e.connect().expect("connect");
        assert!(
            s.statement_timeout(Some(Duration::from_millis(500)))
                .expect("set")
        );
        let t = Instant::now();
        let st = s.prepare(slow).expect("prepare");
        let err = s.run_rows(st, &[], &mut Vec::new()).expect_err("cancelled");
        let took = t.elapsed();
        assert_eq!(err.kind, TIMEOUT, "{}: {err}", e.kind());
        assert!(took < Duration::from_secs(10), "{}: {took:?}", e.kind());
        // the session still works, and the server lists the statement no more
        s.statement_timeout(None).expect("unset");
        if !listed.is_empty() {
            let mut other = e.connect().expect("connect");
            assert_eq!(other.query_i64(listed).expect("list"), 0, "{}", e.kind());
        }
        assert_eq!(s.query_i64("SELECT 1").expect("after"), 1);
        drop(s);
        e.finish(false).expect("finish");
    }
}

/// Through the step, a query made to time out is recorded `timed out`, with no seconds.
#[test]
fn the_step_records_a_timed_out_query() {
    let root = tempfile::tempdir().expect("tmp");
    let e = engine(root.path(), "sqlite", "");
    fill(e.as_ref(), &rows());
    // Q9 joins six tables on LIKE; a microsecond is too little for it
    let params: PowerParams =
        toml::from_str("queries = [9, 6]\ntimeout_s = 0.000001\nhot_runs = 1").expect("params");
    assert!(params.timeout_s > 0.0);
    let out = power(e.as_ref(), &params);
    let qs = out.details["queries"].as_array().expect("queries");
    assert_eq!(qs[0]["status"], "timed out", "{:#}", qs[0]);
    assert!(qs[0]["cold_s"].is_null());
    assert!(
        out.summary
            .note
            .unwrap_or_default()
            .contains("timed out after")
    );
    assert!(out.details["geomean_hot_s"].is_null());
}
