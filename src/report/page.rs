//! The chrome of every dbduel HTML page (report and comparison): the styles and the page
//! around a body, with a Content Security Policy that forbids loading anything.

use super::svg::esc;

/// Styles of every dbduel page (report and comparison).
pub const CSS: &str = r#":root{--fg:#1b2130;--muted:#5a6374;--line:#dde1e8;--soft:#f4f6f9}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:#fff}
main{max-width:1180px;margin:0 auto;padding:24px 24px 48px}
h1{font-size:1.7rem;line-height:1.2;margin:0 0 6px}
h2{font-size:1.3rem;line-height:1.25;margin:0 0 4px}
h3{font-size:1rem;margin:18px 0 6px}
.muted,.kind{color:var(--muted);font-weight:400}
.kind{font-size:.85rem;margin-left:6px}
.meta{margin:0;color:var(--muted)}
.badge{display:inline-block;padding:0 8px;border-radius:9px;background:#e4f4ea;color:#14532d;font-weight:600}
.badge.bad{background:#fde8e4;color:#7f1d1d}
.legend{list-style:none;padding:0;margin:10px 0 0;display:flex;flex-wrap:wrap;gap:2px 18px}
.legend li{display:flex;align-items:center;gap:6px}
.sw{display:inline-block;width:12px;height:12px;border-radius:3px;-webkit-print-color-adjust:exact;print-color-adjust:exact}
.glance{margin:8px 0 0;padding-left:20px}
.glance li{margin:4px 0}
section{border-top:1px solid var(--line);padding:22px 0 10px}
.verdict{font-size:1.08rem;margin:6px 0 14px;max-width:62rem}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,420px),1fr));gap:18px 28px;margin-bottom:14px}
figure{margin:0;break-inside:avoid}
figcaption{font-size:.88rem;font-weight:600;margin-bottom:4px}
figcaption span{font-weight:400;color:var(--muted)}
svg.chart{display:block;width:100%;height:auto;overflow:visible}
svg.bars{max-width:480px}
svg.changes{max-width:760px}
svg text{font-size:11px;fill:#2c3342}
svg .tick{fill:var(--muted)}
svg .val.none{fill:var(--muted);font-style:italic}
svg .gl{stroke:#e6e9ee}
svg .axis{stroke:#9aa2b1}
svg .line{fill:none;stroke-width:1.8;stroke-linejoin:round}
svg .shade{fill:#eef1f5}
svg .mark rect{fill:#f2b84b;opacity:.45}
svg .mark text{font-size:9px;fill:#8a5a00}
svg .whisker{stroke-width:2.5;stroke-linecap:round;opacity:.55}
svg .hollow{fill:#fff;stroke-width:2}
svg .ci{stroke:#1b2130;stroke-width:1.5;opacity:.7}
svg .sample{fill:#fff;stroke:#1b2130;stroke-width:1.2}
.tablewrap{overflow-x:auto;margin:6px 0 10px}
table{border-collapse:collapse;font-size:.9rem;font-variant-numeric:tabular-nums}
th,td{padding:4px 12px 4px 0;border-bottom:1px solid var(--line);text-align:right;vertical-align:top}
th{font-weight:600;border-bottom-color:#b9c0cc;white-space:nowrap}
td{white-space:nowrap}
td.wrap{white-space:normal;min-width:16rem}
th:first-child,td:first-child,.left{text-align:left}
td.best{font-weight:600}
th.published,td.published{color:var(--muted);font-style:italic}
.notes{margin:4px 0;padding-left:20px;color:var(--muted);font-size:.88rem}
.warn{color:#7f1d1d}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:0}
dt{color:var(--muted)}
dd{margin:0}
code{font:.85em ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--soft);padding:0 3px;border-radius:3px;overflow-wrap:anywhere}
pre{background:var(--soft);padding:10px;overflow-x:auto;font-size:.8rem}
.v-worse{color:#9f1c1c;font-weight:600}.v-better{color:#166534;font-weight:600}.v-same{color:var(--muted)}
footer{margin-top:28px;color:var(--muted);font-size:.85rem}
@media (max-width:640px){svg text{font-size:12.5px}body{font-size:14px}main{padding:16px 12px 32px}h1{font-size:1.4rem}dl{grid-template-columns:1fr}dt{margin-top:6px}}
@media print{body{font-size:10pt}main{max-width:none;padding:0}section.step{break-inside:avoid-page}h2,h3,.verdict,figcaption,.legend{break-after:avoid}.grid{grid-template-columns:repeat(2,1fr)}.tablewrap{overflow:visible}.grid .tablewrap{grid-column:1/-1}th,td{white-space:normal}a{color:inherit;text-decoration:none}pre{white-space:pre-wrap}}
"#;

/// A whole page around `body`. The policy allows inline styles and nothing else: no script,
/// no fonts, no images, no requests.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <meta name=\"generator\" content=\"dbduel\">\n<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n\
         <body>\n<main>\n{body}</main>\n</body>\n</html>\n",
        esc(title)
    )
}
