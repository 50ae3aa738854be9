//! The HTML pages in a real browser: headless Chromium lays out the report of the fixture run
//! and a comparison, at desktop and phone widths. A probe script, added to a copy of the page
//! (the page itself has none), checks that every chart has a real size and that each of its
//! data points was laid out inside it; the browser's own log must hold no console message
//! from the page (a blocked request would be one); and a screenshot is taken.
//!
//! `scripts/install-browser` (run by `make test`) installs Debian's `chromium`. Without it the
//! test is skipped with a message, except with DBDUEL_REQUIRE_SERVERS=1 (CI), where it fails.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUN_A: &str = "tests/fixtures/runs/shootout-20261122-034526";
const RUN_HEAVY: &str = "tests/fixtures/runs/shootout-20261122-035745";
const RUN_SWEEP: &str = "tests/fixtures/runs/oltp-20261122-041115";

/// The policy every page carries, and the one the instrumented copy gets instead.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'";
const CSP_PROBE: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'";

/// Runs after the page is parsed; writes its findings to `<body data-probe>` and the log.
const PROBE: &str = r#"(function () {
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message)); });
  var charts = document.querySelectorAll('svg.chart');
  var bad = [];
  var vw = window.innerWidth;
  for (var i = 0; i < charts.length; i++) {
    var svg = charts[i];
    var box = svg.getBoundingClientRect();
    var want = Number(svg.getAttribute('data-points'));
    var pts = svg.querySelectorAll('.pt');
    var drawn = 0;
    for (var j = 0; j < pts.length; j++) {
      var r = pts[j].getBoundingClientRect();
      if ((r.width > 0 || r.height > 0) && r.left >= box.left - 2 && r.right <= box.right + 2 &&
          r.top >= box.top - 2 && r.bottom <= box.bottom + 2) { drawn++; }
    }
    svg.setAttribute('data-drawn', String(drawn));
    if (drawn !== want || want === 0 || box.width < 150 || box.height < 20 || box.right > vw + 1) {
      bad.push(i + ':' + drawn + '/' + want + '@' + Math.round(box.width) + 'x' + Math.round(box.height));
    }
  }
  var overflow = document.documentElement.scrollWidth > vw + 1;
  var result = charts.length + ' charts; bad: [' + bad.join(' ') + ']; page overflows: ' + overflow +
    '; errors: [' + errors.join(' | ') + ']';
  document.body.setAttribute('data-probe', result);
  console.log('dbduel-probe: ' + result);
})();"#;

/// The browser, if installed.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| [d.join("chromium"), d.join("chromium-browser")])
        .find(|p| p.is_file())
}

/// The browser, or `None` after saying why the test is skipped; panics in CI.
fn browser_or_skip() -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        let msg = "chromium is not installed: run scripts/install-browser (make test does)";
        if std::env::var("DBDUEL_REQUIRE_SERVERS").is_ok_and(|v| v == "1") {
            panic!("{msg}; DBDUEL_REQUIRE_SERVERS=1 makes a missing browser a failure");
        }
        eprintln!("skipping the browser test: {msg}");
    }
    found
}

/// What one browser run printed.
struct Shown {
    dom: String,
    log: String,
}

/// Run headless Chromium on `page` with `extra` arguments, in a fresh profile, with no
/// network use of its own; kill it after five minutes.
fn chromium_run(browser: &Path, work: &Path, page: &Path, width: u32, extra: &[String]) -> Shown {
    let profile = tempfile::tempdir_in(work).expect("profile dir");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--window-size={width},2000"))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        match child.try_wait().expect("wait for chromium") {
            Some(_) => break,
            None if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium did not finish within five minutes");
            }
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    Shown {
        dom: reader.join().unwrap_or_default(),
        log: err_reader.join().unwrap_or_default(),
    }
}

/// Console messages in the browser's log other than the probe's own.
fn console_messages(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains(":CONSOLE") && !l.contains("dbduel-probe:"))
        .collect()
}

/// Load `html` with the probe at `width`: what the probe found, the DOM, console messages.
fn probe(browser: &Path, work: &Path, name: &str, html: &str, width: u32) -> (String, Shown) {
    assert!(html.contains(CSP), "{name}: the page carries its policy");
    let instrumented = html
        .replace(CSP, CSP_PROBE)
        .replace("</body>", &format!("<script>{PROBE}</script>\n</body>"));
    let page = work.join(format!("{name}-{width}.html"));
    std::fs::write(&page, instrumented).expect("write page");
    let shown = chromium_run(browser, work, &page, width, &["--dump-dom".to_string()]);
    let found = shown
        .dom
        .split("data-probe=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("{name}: the probe did not run; browser log:\n{}", shown.log))
        .to_string();
    (found, shown)
}

/// Check every chart of `html` and the log at `width`.
fn check_in_browser(browser: &Path, work: &Path, name: &str, html: &str, width: u32) {
    let (found, shown) = probe(browser, work, name, html, width);
    let charts = html.matches("<svg class=\"chart").count();
    assert!(charts > 0, "{name}: no charts");
    assert_eq!(
        found,
        format!("{charts} charts; bad: []; page overflows: false; errors: []"),
        "{name} at {width} px"
    );
    // Each chart reports what it drew, and that is what it declared.
    let drawn = shown.dom.matches(" data-drawn=\"").count();
    assert_eq!(drawn, charts, "{name}: every chart was probed");
    let messages = console_messages(&shown.log);
    assert!(
        messages.is_empty(),
        "{name}: the page logged:\n{}",
        messages.join("\n")
    );
}

#[test]
fn report_and_comparison_render_in_a_real_browser() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let work = tmp.path();
    let (code, report, err) = common::run(&["report", RUN_A, "--format", "html"]);
    assert_eq!(code, 0, "{err}");
    let (code, compare, err) = common::run(&["compare", RUN_A, RUN_HEAVY, "--format", "html"]);
    assert_eq!(code, 0, "{err}");
    for width in [1280, 390] {
        check_in_browser(&browser, work, "report", &report, width);
        check_in_browser(&browser, work, "compare", &compare, width);
    }
    let (code, sweep, err) = common::run(&["report", RUN_SWEEP, "--format", "html"]);
    assert_eq!(code, 0, "{err}");
    check_in_browser(&browser, work, "sweep", &sweep, 1280);
    // The checks can fail: a chart missing a point, and a page that asks for a resource.
    let broken = report.replacen("class=\"pt\"", "class=\"gone\"", 1);
    let (found, _) = probe(&browser, work, "broken", &broken, 1280);
    assert!(
        found.contains("bad: [0:"),
        "the probe saw the missing point: {found}"
    );
    let fetching = report.replace("<main>", "<main><img src=\"https://example.com/x.png\">");
    let (_, shown) = probe(&browser, work, "fetching", &fetching, 1280);
    assert!(
        !console_messages(&shown.log).is_empty(),
        "the policy's refusal shows in the log"
    );
    // The page as written, untouched: a screenshot, and not one message in the log.
    let page = work.join("report.html");
    std::fs::write(&page, &report).expect("write report");
    let shot = work.join("report.png");
    let shown = chromium_run(
        &browser,
        work,
        &page,
        1280,
        &[format!("--screenshot={}", shot.display())],
    );
    let messages = console_messages(&shown.log);
    assert!(
        messages.is_empty(),
        "the report logged:\n{}",
        messages.join("\n")
    );
    let png = std::fs::read(&shot)
        .unwrap_or_else(|e| panic!("no screenshot ({e}); browser log:\n{}", shown.log));
    assert!(png.starts_with(b"\x89PNG"), "the screenshot is a PNG");
    // A blank 1280×2000 page compresses to a few kilobytes; charts and text do not.
    assert!(
        png.len() > 40_000,
        "the screenshot looks empty: {} bytes",
        png.len()
    );
}
