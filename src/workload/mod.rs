//! Step kinds: each decodes its own parameters and runs against an `Engine`, producing a
//! summary with its own metrics. One file per kind, registered in the kinds table here; this
//! module is the registry and its dispatch (the step's context is `ctx`, what steps do to
//! their engine around their work is `restart`).

pub mod checksums;
pub mod cluster;
pub mod count;
pub mod crash;
pub mod ctx;
pub mod ddl;
pub mod flight;
pub mod footprint;
pub mod hot_ddl;
pub mod kind;
pub mod load;
pub mod loading;
pub mod lookups;
pub mod oltp;
pub mod pacing;
pub mod queries;
pub mod replication;
pub mod restart;
pub mod script;
pub mod slo;
pub mod sql_file;
pub mod sql_lex;
pub mod sql_reach;
pub mod sql_text;
pub mod sweep;
pub mod tiers;
pub mod tpcc;
pub mod tpch;
pub mod update;
pub mod user_files;
pub mod ycsb;

use crate::decode::{DecodeError, KeyPath};
pub use ctx::{Kept, StepCtx, StepError, StepOutput, summary};
pub use kind::StepKind;
pub use restart::{
    ColdRestart, SweepStart, Unthrottled, cold_restart, restart_note, timed_execute,
};

/// Declares the step kinds: each line maps the names studies use (`kind = "..."`) to the
/// `StepParams` variant and the parameter type (a [`StepKind`]) that decodes and runs it. From
/// it come [`STEP_KINDS`], [`StepParams`] (an enum, so matches on it stay exhaustive), the
/// decoding by name, [`divides_clients`], and the dispatch of every [`StepKind`] question.
macro_rules! kinds {
    ($( $($name:literal)|+ => $variant:ident($ty:ty), )+) => {
        /// Step kinds this build can run.
        pub const STEP_KINDS: &[&str] = &[$($($name,)+)+];

        /// A step's parameters, decoded for its kind.
        #[derive(Debug, Clone)]
        pub enum StepParams {
            $($variant($ty),)+
        }

        impl StepParams {
            /// The kind's own answers (see [`StepKind`]).
            pub fn kind(&self) -> &dyn StepKind {
                match self {
                    $(StepParams::$variant(p) => p,)+
                }
            }

            /// The kind's own answers, to change (see [`StepKind::read_beside`]).
            pub fn kind_mut(&mut self) -> &mut dyn StepKind {
                match self {
                    $(StepParams::$variant(p) => p,)+
                }
            }

            /// Decode a step of `kind`, or `None` for a name that is no kind.
            fn decode_kind(
                kind: &str,
                v: toml::Value,
            ) -> Option<Result<Self, DecodeError>> {
                match kind {
                    $($($name)|+ => Some(
                        <$ty as StepKind>::decode(kind, v).map(StepParams::$variant),
                    ),)+
                    _ => None,
                }
            }
        }

        /// Is a step of this kind divided among clients (see [`StepKind::divides_clients`])?
        pub fn divides_clients(kind: &str) -> bool {
            match kind {
                $($($name)|+ => <$ty as StepKind>::divides_clients(),)+
                _ => false,
            }
        }
    };
}

kinds! {
    "load" => Load(load::LoadParams),
    "footprint" => Footprint(footprint::FootprintParams),
    "count" => Count(count::CountParams),
    "queries" => Queries(queries::QueriesParams),
    "update" => Update(update::UpdateParams),
    "ddl" => Ddl(ddl::DdlParams),
    "oltp" => Oltp(oltp::OltpParams),
    "lookups" => Lookups(lookups::LookupsParams),
    "ycsb" => Ycsb(ycsb::step::YcsbParams),
    "crash" | "failover" => Crash(crash::CrashParams),
    "insert-trickle" => Trickle(tiers::TrickleParams),
    "select-triple" => Triple(tiers::TripleParams),
    "catch-up" | "commit-wait" | "replica-lag" => Replication(replication::ReplicationParams),
    "tpcc" => Tpcc(tpcc::TpccParams),
    "tpcc-check" => TpccCheck(tpcc::check::CheckParams),
    "checksums" => Checksums(checksums::ChecksumsParams),
    "script" => Script(script::ScriptParams),
    "sql" => Sql(sql_file::SqlParams),
    "tpch-power" => TpchPower(tpch::PowerParams),
    "tpch-throughput" => TpchThroughput(tpch::throughput::ThroughputParams),
}

impl StepParams {
    /// Is the step's work SQL statements (so a document engine cannot run it)?
    pub fn is_sql(&self) -> bool {
        self.kind().is_sql()
    }

    /// Decode the parameters of a step of `kind`. Paths in errors are relative to the step.
    pub fn decode(kind: &str, params: &toml::Table) -> Result<Self, DecodeError> {
        let v = toml::Value::Table(params.clone());
        let Some(p) = Self::decode_kind(kind, v) else {
            return Err(DecodeError::at(
                KeyPath::root().key("kind"),
                format!(
                    "unknown step kind `{kind}`; kinds are: {}",
                    STEP_KINDS.join(", ")
                ),
            ));
        };
        let p = p?;
        p.kind().validate()?;
        Ok(p)
    }

    /// Does the step restart the server (a cold count, a cold start before a sweep)? The key
    /// that asks for it.
    pub fn restarts(&self) -> Option<&'static str> {
        self.kind().restarts()
    }

    /// Clients this step opens at once (for sizing servers' connection limits).
    pub fn clients(&self) -> u64 {
        self.kind().clients()
    }
}

/// Run one step.
pub fn run(params: &StepParams, ctx: &StepCtx<'_>) -> Result<StepOutput, StepError> {
    if params.is_sql() && ctx.engine.documents().is_some() {
        return Err(StepError::Skipped(format!(
            "{} speaks no SQL, and this step's work is SQL statements",
            ctx.engine.kind()
        )));
    }
    params.kind().run(ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_kind_decodes_by_its_name() {
        for kind in STEP_KINDS {
            let none = toml::Table::new();
            if let Err(e) = StepParams::decode(kind, &none) {
                assert!(!e.message.contains("unknown step kind"), "{kind}: {e:?}");
            }
        }
        let e = StepParams::decode("sleep", &toml::Table::new()).expect_err("no such kind");
        assert!(
            e.message
                .starts_with("unknown step kind `sleep`; kinds are: load, ")
        );
    }

    #[test]
    fn the_client_steps_are_the_divided_ones() {
        let divided: Vec<&str> = STEP_KINDS
            .iter()
            .copied()
            .filter(|k| divides_clients(k))
            .collect();
        assert_eq!(
            divided,
            ["queries", "oltp", "lookups", "ycsb", "tpcc", "script"]
        );
        assert!(!divides_clients("no-such-kind"));
    }
}
