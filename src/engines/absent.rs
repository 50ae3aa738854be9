//! The server families in a build without them (`--no-default-features`, as `make demo`
//! builds): each keeps its name, its SQL file variants and its URL schemes, so a study naming
//! one still reads (the built-in studies name them all) and its `sql` files are checked as in
//! a full build; a contender of one is refused before anything runs (exit 3), saying how to
//! build it. Its options are not checked: their decoders are what the build left out.

use crate::decode::DecodeError;
use crate::engine::{Engine, EngineError, EngineKind, OpenCtx, Result, target};
use crate::engines::{Family, WITHOUT_SERVERS, versions::BinaryChoice};

/// A contender of a family this build lacks.
#[derive(Debug)]
struct Absent {
    name: &'static str,
}

impl Absent {
    fn refusal(&self) -> EngineError {
        EngineError::new(
            "missing",
            format!(
                "engine {} is not in this build: {WITHOUT_SERVERS}",
                self.name
            ),
        )
    }
}

impl EngineKind for Absent {
    fn name(&self) -> &'static str {
        self.name
    }

    fn preflight(&self) -> Result<()> {
        Err(self.refusal())
    }

    fn open(&self, _ctx: &OpenCtx<'_>) -> Result<Box<dyn Engine>> {
        Err(self.refusal())
    }
}

/// A family of `name` whose every contender is refused: `decode` cannot take the name as an
/// argument, so each family has its own.
macro_rules! absent_family {
    ($konst:ident, $name:literal, $variants:expr, $schemes:expr, $shards_meet:expr) => {
        pub const $konst: Family = Family {
            name: $name,
            decode: |_options: &toml::Table,
                     _target: Option<&target::TargetSpec<'_>>,
                     _binary: &BinaryChoice|
             -> std::result::Result<Box<dyn EngineKind>, DecodeError> {
                Ok(Box::new(Absent { name: $name }))
            },
            keeps_rows: true,
            shards_meet: $shards_meet,
            sandbox: None,
            sql_variants: $variants,
            url_schemes: $schemes,
        };
    };
}

absent_family!(
    MARIADB,
    "mariadb",
    &["mariadb", "mysql", ""],
    &["mysql", "mariadb"],
    true
);
absent_family!(MYSQL, "mysql", &["mysql", ""], &["mysql"], false);
absent_family!(
    POSTGRES,
    "postgres",
    &["postgres", ""],
    &["postgres", "postgresql"],
    true
);
absent_family!(MONGODB, "mongodb", &[], &["mongodb"], false);

#[cfg(test)]
mod tests {
    #[test]
    fn a_contender_of_an_absent_family_is_refused_as_missing_with_the_way_to_build_it() {
        let kind = (super::POSTGRES.decode)(
            &toml::Table::new(),
            None,
            &crate::engines::versions::BinaryChoice::default(),
        )
        .expect("decoded");
        assert_eq!(kind.name(), "postgres");
        let e = kind.preflight().unwrap_err();
        assert_eq!(e.kind, "missing");
        assert!(e.message.contains("make build"), "{e}");
    }

    /// A study reads the same in both builds: each stand-in says what its family says.
    #[cfg(feature = "servers")]
    #[test]
    fn each_stand_in_says_what_its_family_says() {
        for a in [
            &super::MARIADB,
            &super::MYSQL,
            &super::POSTGRES,
            &super::MONGODB,
        ] {
            let real = crate::engines::family(a.name).expect("in the registry");
            assert_eq!(a.sql_variants, real.sql_variants, "{}", a.name);
            assert_eq!(a.url_schemes, real.url_schemes, "{}", a.name);
            assert_eq!(a.shards_meet, real.shards_meet, "{}", a.name);
            assert_eq!(a.keeps_rows, real.keeps_rows, "{}", a.name);
        }
        let servers = crate::engines::REGISTRY
            .iter()
            .filter(|f| f.sandbox.is_some() || !f.url_schemes.is_empty());
        assert_eq!(
            servers.count(),
            4,
            "a new server family needs its stand-in here"
        );
    }
}
