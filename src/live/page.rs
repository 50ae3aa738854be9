//! The live page the endpoint serves at `/`: one self-contained file (no external asset, as
//! the report) whose script asks `/live.json` each second for the running step's latest seconds
//! and redraws its throughput and p99 per contender as SVG lines, one point a second. Each
//! chart is an `<svg class="chart">` whose `data-points` says how many points it draws, each
//! point an element of class `pt`, as in the report.

/// The page.
pub const PAGE: &str = r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>dbduel · live</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.2em; } .muted { color: #777; }
svg.chart { width: 100%; max-width: 760px; height: 220px; border: 1px solid #ddd; display: block; margin: .5em 0 1.5em; }
.legend span { margin-right: 1em; }
</style></head>
<body>
<h1>dbduel · live <span id="study" class="muted"></span></h1>
<p id="now" class="muted">waiting for the first second of a step…</p>
<div class="legend" id="legend"></div>
<h2>throughput (operations/s)</h2>
<svg class="chart" id="rate" data-points="0" viewBox="0 0 760 220" preserveAspectRatio="none"></svg>
<h2>p99 latency (µs)</h2>
<svg class="chart" id="p99" data-points="0" viewBox="0 0 760 220" preserveAspectRatio="none"></svg>
<script>
(function () {
  var NS = 'http://www.w3.org/2000/svg';
  var COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b'];
  var series = {}; // contender -> [{t, rate, p99}]
  var step = null;
  function el(name, attrs) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }
  function draw(id, key) {
    var svg = document.getElementById(id);
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var names = Object.keys(series).sort();
    var tmax = 1, ymax = 1, n = 0;
    names.forEach(function (c) {
      series[c].forEach(function (p) { tmax = Math.max(tmax, p.t); if (p[key] != null) ymax = Math.max(ymax, p[key]); });
    });
    names.forEach(function (c, i) {
      var color = COLORS[i % COLORS.length];
      var pts = series[c].filter(function (p) { return p[key] != null; }).map(function (p) {
        return [10 + 740 * p.t / tmax, 210 - 200 * p[key] / ymax, p];
      });
      if (pts.length > 1) {
        svg.appendChild(el('polyline', { points: pts.map(function (q) { return q[0] + ',' + q[1]; }).join(' '),
          fill: 'none', stroke: color, 'stroke-width': 2, 'vector-effect': 'non-scaling-stroke' }));
      }
      pts.forEach(function (q) {
        var dot = el('circle', { cx: q[0], cy: q[1], r: 3, fill: color, 'class': 'pt' });
        var title = el('title', {});
        title.textContent = c + ' · ' + q[2].t.toFixed(0) + ' s: ' + Math.round(q[2][key]);
        dot.appendChild(title);
        svg.appendChild(dot);
        n++;
      });
    });
    svg.setAttribute('data-points', String(n));
  }
  function legend() {
    var box = document.getElementById('legend');
    box.textContent = '';
    Object.keys(series).sort().forEach(function (c, i) {
      var s = document.createElement('span');
      s.style.color = COLORS[i % COLORS.length];
      s.textContent = '● ' + c;
      box.appendChild(s);
    });
  }
  function tick() {
    fetch('live.json', { cache: 'no-store' }).then(function (r) { return r.json(); }).then(function (d) {
      document.getElementById('study').textContent = d.study;
      var running = d.steps;
      if (!running.length) return;
      var name = running[0].step;
      if (name !== step) { step = name; series = {}; }
      running.filter(function (s) { return s.step === step; }).forEach(function (s) {
        var c = s.contender + (s.round ? ' round ' + s.round : '');
        series[c] = s.seconds.map(function (x) { return { t: x[0], rate: x[1], p99: x[2] }; });
      });
      document.getElementById('now').textContent = 'step ' + step;
      legend();
      draw('rate', 'rate');
      draw('p99', 'p99');
    }).catch(function () {});
  }
  tick();
  setInterval(tick, 1000);
})();
</script>
</body></html>
"##;
