//! The writers on a topology's primary: sysbench's `oltp_insert` on the sbtest tables, or the
//! seed's bitmap rows (a compressed bitmap of a few KB to a few MB, hex-encoded, inserted and
//! updated), run by the common runner so their rate and latency are measured like any step's.

use super::{ReplicationParams, Writes};
use crate::dataset::rng::SplitMix64;
use crate::engine::{self, Dialect, Session, StmtId, Value};
use crate::results::IntervalRecord;
use crate::runner::{self, Bound, Pacing, RunOutcome, RunSpec, Worker};
use crate::workload::ctx::{StepCtx, StepError};
use crate::workload::oltp::OltpParams;
use std::time::Duration;

/// The table the bitmap writers fill; the step creates it.
pub const BITMAP_TABLE: &str = "repl_bitmaps";

/// Ids of one client's bitmap rows start at `client << CLIENT_SHIFT`, so each client knows
/// the ids it may update without asking the server.
const CLIENT_SHIFT: u32 = 40;

/// A step's summary of its writers' run: `written` transactions (as the primary counted
/// them) over `elapsed_s`, the writers' rate and latency, and the primary's writes a second.
pub fn summary(
    title: String,
    out: &RunOutcome,
    written: u64,
    elapsed_s: f64,
) -> crate::results::StepSummary {
    use crate::results::{Better, Metric, Unit};
    let writes_s = out.measured_s.max(1e-9);
    let mut s = crate::workload::ctx::summary(title);
    s.elapsed_s = Some(elapsed_s);
    s.rows = Some(written);
    s.ops_per_s = Some(out.ops as f64 / writes_s);
    s.latency_us = crate::metrics::Latency::of(&out.all);
    s.errors = Some(out.error_count());
    s.metrics.push(Metric::new(
        "primary_tps",
        "primary writes/s",
        out.ops as f64 / writes_s,
        Unit::PerSecond,
        Better::Higher,
    ));
    s
}

/// Make what the writers need: the bitmap table (the insert writers use the loaded sbtest
/// tables).
pub fn prepare(ctx: &StepCtx<'_>, p: &ReplicationParams) -> Result<(), StepError> {
    if p.writes != Writes::Bitmaps {
        if ctx.tables.is_empty() {
            return Err(StepError::Check(
                "the insert writers need the sbtest tables: load them first".into(),
            ));
        }
        return Ok(());
    }
    let text = ctx.engine.dialect().long_text_type();
    let mut s = ctx.engine.connect()?;
    s.execute(&format!(
        "CREATE TABLE IF NOT EXISTS {BITMAP_TABLE} (id BIGINT NOT NULL PRIMARY KEY, owner INTEGER NOT NULL, version INTEGER NOT NULL, bits {text} NOT NULL)"
    ))?;
    // A step run again starts from an empty table: ids restart at each client's base.
    s.execute(&format!("DELETE FROM {BITMAP_TABLE}"))?;
    Ok(())
}

/// Run the writers for `duration_s` (at `rate` transactions/s in all, when given), calling
/// `on_interval` each second on this thread. Each operation is one transaction. Each second
/// goes to the step's per-second file as the `tick_base`-th and later seconds of the step.
pub fn run(
    ctx: &StepCtx<'_>,
    p: &ReplicationParams,
    duration_s: u64,
    stream: u64,
    tick_base: u64,
    mut on_interval: impl FnMut(&IntervalRecord),
) -> Result<RunOutcome, StepError> {
    let on_interval = |iv: &IntervalRecord| {
        ctx.seconds.append_shifted(iv, tick_base, None);
        on_interval(iv)
    };
    let spec = RunSpec {
        clients: p.writers as usize,
        bound: Bound::Duration(Duration::from_secs(duration_s)),
        warmup_s: 0,
        pacing: match p.rate {
            Some(r) => Pacing::fixed(r),
            None => Pacing::Closed,
        },
        seed: stream,
        team: None,
        threads: None,
    };
    let engine = ctx.engine;
    let out = match p.writes {
        Writes::Insert => {
            let tables: Vec<String> = ctx.tables.iter().map(|t| t.name.clone()).collect();
            let op = OltpParams::insert(p.writers, duration_s);
            let names = vec!["insert".to_string()];
            let make = |client: usize| {
                crate::workload::oltp::worker(
                    engine,
                    &tables,
                    ctx.dataset_rows,
                    &op,
                    0x7e_91ca ^ stream,
                    client,
                    None,
                )
            };
            runner::run_closed(&spec, &names, make, ctx.stop, on_interval)?
        }
        Writes::Bitmaps => {
            let names = vec!["insert bitmap".to_string(), "update bitmap".to_string()];
            let make = |client: usize| -> engine::Result<Box<dyn Worker + '_>> {
                let mut session = engine.connect()?;
                if let Some(n) = p.gtid_domains {
                    session.execute(&format!(
                        "SET SESSION gtid_domain_id = {}",
                        domain_of(client, n)
                    ))?;
                }
                Ok(Box::new(BitmapWriter::new(
                    session,
                    engine.dialect(),
                    p,
                    stream,
                    client,
                )?))
            };
            runner::run_closed(&spec, &names, make, ctx.stop, on_interval)?
        }
    };
    if let Some((errors, first)) = out.all_failed() {
        return Err(StepError::Check(format!(
            "every write on the primary failed ({errors} errors); first: {first}"
        )));
    }
    Ok(out)
}

/// The GTID domain writer `client` writes in when the writers are spread over `domains`.
pub fn domain_of(client: usize, domains: u64) -> u64 {
    client as u64 % domains.max(1)
}

/// One client writing bitmap rows: its first write inserts, later ones insert or update one
/// of its own rows, half and half.
struct BitmapWriter {
    session: Box<dyn Session>,
    insert: StmtId,
    update: StmtId,
    rng: SplitMix64,
    base: i64,
    rows: i64,
    min_bytes: u64,
    max_bytes: u64,
    /// Reused parameters of each statement (id, owner, version, bits / version, bits, id,
    /// owner): a bitmap is written into its statement's text in place, never reallocated
    /// once grown.
    ins: [Value; 4],
    upd: [Value; 4],
}

impl BitmapWriter {
    fn new(
        mut session: Box<dyn Session>,
        dialect: Dialect,
        p: &ReplicationParams,
        stream: u64,
        client: usize,
    ) -> engine::Result<Self> {
        let sql = |s: String| crate::workload::oltp::placeholders(&s, dialect);
        let insert = session.prepare(&sql(format!(
            "INSERT INTO {BITMAP_TABLE} (id, owner, version, bits) VALUES (?, ?, ?, ?)"
        )))?;
        let update = session.prepare(&sql(format!(
            "UPDATE {BITMAP_TABLE} SET version = ?, bits = ? WHERE id = ? AND owner = ?"
        )))?;
        let owner = Value::Int(client as i64);
        let text = || Value::Text(String::new());
        Ok(BitmapWriter {
            session,
            insert,
            update,
            rng: SplitMix64::stream(0xb17_3a95 ^ stream, client as u64),
            base: (client as i64) << CLIENT_SHIFT,
            rows: 0,
            min_bytes: p.bitmap_min_bytes,
            max_bytes: p.bitmap_max_bytes,
            ins: [Value::Int(0), owner.clone(), Value::Int(1), text()],
            upd: [Value::Int(0), text(), Value::Int(0), owner],
        })
    }

    /// A bitmap size drawn log-uniformly between the smallest and the largest, bytes.
    fn size(&mut self) -> usize {
        let (lo, hi) = (self.min_bytes as f64, self.max_bytes as f64);
        let u = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        (lo * (hi / lo).powf(u)) as usize
    }
}

/// `bytes` bytes of a compressed bitmap's look (dense random words: compression has already
/// taken the redundancy out), as hex text written into `v`.
fn bitmap_hex(rng: &mut SplitMix64, bytes: usize, v: &mut Value) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    if !matches!(v, Value::Text(_)) {
        *v = Value::Text(String::new());
    }
    let Value::Text(s) = v else { return };
    s.clear();
    s.reserve(bytes * 2);
    let mut left = bytes;
    while left > 0 {
        let w = rng.next_u64();
        for i in 0..8.min(left) {
            let b = (w >> (i * 8)) as u8;
            s.push(HEX[usize::from(b >> 4)] as char);
            s.push(HEX[usize::from(b & 15)] as char);
        }
        left = left.saturating_sub(8);
    }
}

impl Worker for BitmapWriter {
    fn op(&mut self, _seq: u64) -> (usize, engine::Result<u64>) {
        let bytes = self.size();
        if self.rows > 0 && self.rng.next_u64() & 1 == 1 {
            let id = self.base + self.rng.below_u64(self.rows as u64) as i64;
            self.upd[0] = Value::Int((self.rng.next_u64() >> 33) as i64);
            bitmap_hex(&mut self.rng, bytes, &mut self.upd[1]);
            self.upd[2] = Value::Int(id);
            (1, self.session.run(self.update, &self.upd))
        } else {
            self.ins[0] = Value::Int(self.base + self.rows);
            bitmap_hex(&mut self.rng, bytes, &mut self.ins[3]);
            let r = self.session.run(self.insert, &self.ins);
            if r.is_ok() {
                self.rows += 1;
            }
            (0, r)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmaps_are_hex_of_the_size_asked_and_reuse_their_buffer() {
        let mut rng = SplitMix64(7);
        let mut v = Value::Text(String::new());
        bitmap_hex(&mut rng, 13, &mut v);
        let Value::Text(s) = &v else { panic!("text") };
        assert_eq!(s.len(), 26);
        assert!(s.bytes().all(|b| b.is_ascii_hexdigit()));
        bitmap_hex(&mut rng, 4096, &mut v);
        let Value::Text(s) = &v else { panic!("text") };
        let cap = s.capacity();
        assert_eq!(s.len(), 8192);
        bitmap_hex(&mut rng, 100, &mut v);
        let Value::Text(s) = &v else { panic!("text") };
        assert_eq!((s.len(), s.capacity()), (200, cap));
    }
}
