//! `run --metrics-listen`: a non-loopback address refused without its flag; and a real
//! Prometheus (Debian's, started here on loopback with its own configuration and storage)
//! scraping a running dbduel, whose operation counter, queried from Prometheus's HTTP API
//! after the run, ends at the step's count — so the text also parsed as OpenMetrics in
//! Prometheus's own parser.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const STUDY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/studies/metrics_sqlite.toml"
);

#[test]
fn a_non_loopback_address_is_refused_without_the_flag() {
    let out = tempfile::tempdir().expect("tmp");
    let root = out.path().join("res");
    let (code, _, err) = common::run(&[
        "run",
        STUDY,
        "--out",
        &root.to_string_lossy(),
        "--metrics-listen",
        "0.0.0.0:0",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("not a loopback address") && err.contains("--metrics-allow-remote"),
        "{err}"
    );
    assert!(!root.exists(), "nothing ran");
}

/// A free loopback port (free now; taken again at once by whoever is given it).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A plain HTTP GET on loopback: the status line's code and the body.
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let code = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, body.to_string()))
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// An instant query's one value, from Prometheus's HTTP API.
fn query(port: u16, promql: &str) -> Option<f64> {
    let (code, body) = get(
        port,
        &format!("/api/v1/query?query={}", percent_encode(promql)),
    )?;
    assert_eq!(code, 200, "{promql}: {body}");
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    let r = v["data"]["result"].as_array()?;
    assert!(r.len() <= 1, "{promql}: one series expected: {body}");
    r.first()?["value"][1].as_str()?.parse().ok()
}

/// Prometheus, stopped and waited for when dropped.
struct Prometheus(Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_prometheus(dir: &Path, web: u16, target: u16) -> Prometheus {
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: dbduel\n    static_configs:\n      - targets: ['127.0.0.1:{target}']\n"
        ),
    )
    .expect("config");
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{web}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("prometheus.log")).expect("log"))
        .spawn()
        .expect("prometheus starts");
    let p = Prometheus(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    while get(web, "/-/ready").map(|r| r.0) != Some(200) {
        assert!(
            Instant::now() < deadline,
            "prometheus not ready: {}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    p
}

#[test]
fn prometheus_scrapes_the_operation_count_of_a_running_step() {
    let installed = Command::new("prometheus")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !common::have_server("prometheus", installed) {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let (web, target) = (free_port(), free_port());
    let _prom = start_prometheus(tmp.path(), web, target);
    let root = tmp.path().join("res");
    let (code, _, err) = common::run(&[
        "run",
        STUDY,
        "--out",
        &root.to_string_lossy(),
        "--metrics-listen",
        &target.to_string(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!("metrics: http://127.0.0.1:{target}/metrics")),
        "{err}"
    );
    let run = common::run_dir(&err);
    let summary = common::read_json(&run.join("summary.json"));
    let step = common::step(&summary, "sqlite-wal", "point-select");
    let count = step["rows"].as_f64().expect("the step's count");
    assert!(count > 0.0, "{step}");
    let series = r#"dbduel_operations_total{job="dbduel",study="live",contender="sqlite-wal",step="point-select",op="point_select"}"#;
    // The last scrapes (the run ends between two) may still be stored: allow a few seconds.
    let deadline = Instant::now() + Duration::from_secs(20);
    let last = loop {
        let v = query(web, &format!("last_over_time({series}[10m])"));
        if v == Some(count) || Instant::now() > deadline {
            break v;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(last, Some(count), "the scraped counter's final value");
    // A scrape whose text Prometheus could not parse counts as down: the run's seconds were
    // scraped up (the scrapes after the run ended are down, as the endpoint is gone).
    let up = query(web, r#"sum_over_time(up{job="dbduel"}[10m])"#);
    assert!(up.is_some_and(|n| n >= 5.0), "scrapes that parsed: {up:?}");
    let p99 = query(
        web,
        r#"histogram_quantile(0.99, last_over_time(dbduel_latency_seconds_bucket{step="point-select"}[10m]))"#,
    );
    assert!(p99.is_some_and(|v| v > 0.0 && v <= 10.0), "p99 {p99:?}");
}

/// The value of the sample whose line starts with `name{` and holds every one of `labels`.
fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .find(|l| labels.iter().all(|x| l.contains(x)))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// While a paced step on a failing engine runs, the endpoint shows its errors by op kind and
/// error kind, its rate target, and the sampler's latest host, device and process figures;
/// once it has ended, its error counter stays at the step's own count of failed events.
#[test]
fn the_endpoint_shows_errors_by_kind_the_rate_target_and_the_machine() {
    let tmp = tempfile::tempdir().expect("tmp");
    let port = free_port();
    let study = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/studies/metrics_dry_failing.toml"
    );
    let dbduel = live_run(study, &tmp.path().join("res"), port);
    let scrape = || get(port, "/metrics").map(|r| r.1).unwrap_or_default();
    let paced = r#"step="paced""#;
    let deadline = Instant::now() + Duration::from_secs(60);
    let during = loop {
        let text = scrape();
        if sample(&text, "dbduel_server_cpu_cores", &[paced]).is_some()
            && sample(&text, "dbduel_target_rate", &[paced]).is_some()
        {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "the paced step never showed: {text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(
        sample(&during, "dbduel_target_rate", &[paced]),
        Some(2000.0),
        "{during}"
    );
    for family in [
        "dbduel_host_cpu_ratio",
        "dbduel_host_memory_used_bytes",
        "dbduel_device_read_iops",
        "dbduel_device_busy_ratio",
        "dbduel_server_resident_memory_bytes",
    ] {
        assert!(
            during.contains(&format!("# TYPE {family} gauge")),
            "{family}: {during}"
        );
    }
    // What a plain GET gets is Prometheus's classic text, clean by Prometheus's own linter;
    // a scraper that asks for OpenMetrics gets that.
    let promtool = std::path::Path::new("/usr/bin/promtool");
    if common::have_server("promtool (Debian's prometheus)", promtool.exists()) {
        let mut lint = Command::new(promtool)
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("promtool runs");
        lint.stdin
            .take()
            .expect("stdin")
            .write_all(during.as_bytes())
            .expect("the scrape to promtool");
        let out = lint.wait_with_output().expect("promtool ends");
        assert!(
            out.status.success() && out.stdout.is_empty(),
            "promtool check metrics: {}{}\n{during}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n\r\n"
    )
    .expect("write");
    let mut open = String::new();
    s.read_to_string(&mut open).expect("read");
    assert!(
        open.contains("application/openmetrics-text")
            && open.contains("# TYPE dbduel_operations counter")
            && open.ends_with("# EOF\n"),
        "{open}"
    );
    let user = sample(&during, "dbduel_host_cpu_ratio", &[paced, r#"mode="user""#]);
    assert!(user.is_some_and(|v| (0.0..=1.0).contains(&v)), "{during}");
    // Wait for the step after it, when the paced step's counts are final.
    let errors = [paced, r#"op="point_select""#, r#"kind="injected""#];
    let deadline = Instant::now() + Duration::from_secs(60);
    let after = loop {
        let text = scrape();
        if text
            .contains(r#"dbduel_clients{study="live-failing",contender="flaky",step="afterwards""#)
        {
            break text;
        }
        assert!(Instant::now() < deadline, "the next step never ran: {text}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let scraped = sample(&after, "dbduel_errors_total", &errors).expect("errors by kind");
    assert!(
        sample(&after, "dbduel_target_rate", &[paced]).is_none(),
        "a finished step has no target: {after}"
    );
    // The run's summary, once it is final.
    let deadline = Instant::now() + Duration::from_secs(60);
    let summary = loop {
        let done = std::fs::read_dir(tmp.path().join("res"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join("summary.json"))
            .filter(|p| p.is_file())
            .map(|p| common::read_json(&p))
            .find(|s| s["status"] != "running");
        if let Some(s) = done {
            break s;
        }
        assert!(Instant::now() < deadline, "the run never finished");
        std::thread::sleep(Duration::from_millis(200));
    };
    drop(dbduel);
    assert_eq!(summary["status"], "ok", "{summary}");
    let step = common::step(&summary, "flaky", "paced");
    assert_eq!(Some(scraped), step["errors"].as_f64(), "{step}");
    assert!(scraped > 0.0, "{step}");
}

/// `dbduel -q run STUDY --out OUT --metrics-listen PORT`, started.
fn live_run(study: &str, out: &Path, port: u16) -> Reaped {
    Reaped(
        common::bin()
            .args(["-q", "run", study, "--out"])
            .arg(out)
            .args(["--metrics-listen", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("dbduel starts"),
    )
}

/// A child process killed and waited for when dropped (a test that fails leaves none).
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The `data-points` of the chart `id` in a dumped DOM.
fn points(dom: &str, id: &str) -> Option<usize> {
    let at = dom.find(&format!("id=\"{id}\""))?;
    let tag_end = at + dom[at..].find('>')?;
    let tag_start = dom[..at].rfind('<')?;
    let tag = &dom[tag_start..tag_end];
    let v = tag.split("data-points=\"").nth(1)?;
    v[..v.find('"')?].parse().ok()
}

/// The live page at `/` of the same listener, in headless Chromium while a step runs: it
/// fetched the step's seconds and drew them as points of both charts.
#[test]
fn the_live_page_draws_points_while_a_step_runs() {
    let browser = ["chromium", "chromium-browser"].into_iter().find(|b| {
        Command::new(b)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !common::have_server("chromium", browser.is_some()) {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let port = free_port();
    let dbduel = live_run(STUDY, &tmp.path().join("res"), port);
    // Once the long step has a second or two on record, open the page.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let live = get(port, "/live.json").map(|r| r.1).unwrap_or_default();
        if live.contains("\"step\":\"point-select\"") && live.contains("[2.0,") {
            break;
        }
        assert!(Instant::now() < deadline, "the step never ran: {live}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let profile = tempfile::tempdir().expect("profile");
    let shown = Command::new(browser.expect("a browser"))
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=4000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("http://127.0.0.1:{port}/"))
        .stdin(Stdio::null())
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&shown.stdout);
    let (rate, p99) = (points(&dom, "rate"), points(&dom, "p99"));
    assert!(
        rate.is_some_and(|n| n >= 2) && p99.is_some_and(|n| n >= 2),
        "points drawn: throughput {rate:?}, p99 {p99:?}\n{dom}"
    );
    assert!(dom.contains("step point-select"), "{dom}");
    assert!(dom.matches("class=\"pt\"").count() >= 4, "{dom}");
    drop(dbduel);
}
