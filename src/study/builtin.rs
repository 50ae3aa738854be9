//! Built-in studies: ordinary TOML files under `studies/`, embedded in the binary so that
//! `dbduel studies show NAME > my.toml` gives a user a file to copy and edit.

/// (name, file text) of every built-in study.
pub const BUILTINS: &[(&str, &str)] = &[
    ("shootout", include_str!("../../studies/shootout.toml")),
    ("oltp", include_str!("../../studies/oltp.toml")),
    (
        "replication",
        include_str!("../../studies/replication.toml"),
    ),
    (
        "point-lookups",
        include_str!("../../studies/point-lookups.toml"),
    ),
    (
        "storage-tiers",
        include_str!("../../studies/storage-tiers.toml"),
    ),
    ("tpcc", include_str!("../../studies/tpcc.toml")),
    ("tpch", include_str!("../../studies/tpch.toml")),
    (
        "tpch-validation",
        include_str!("../../studies/tpch-validation.toml"),
    ),
    ("ycsb", include_str!("../../studies/ycsb.toml")),
    ("durability", include_str!("../../studies/durability.toml")),
    ("upgrade", include_str!("../../studies/upgrade.toml")),
    (
        "upgrade-tpcc",
        include_str!("../../studies/upgrade-tpcc.toml"),
    ),
    ("cluster", include_str!("../../studies/cluster.toml")),
    ("harness", include_str!("../../studies/harness.toml")),
];

/// The text of a built-in study.
pub fn get(name: &str) -> Option<&'static str> {
    BUILTINS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Names of the built-in studies.
pub fn names() -> Vec<&'static str> {
    BUILTINS.iter().map(|(n, _)| *n).collect()
}

/// The one-line description of a built-in study (its `[study] description`).
pub fn description(text: &str) -> String {
    toml::from_str::<toml::Table>(text)
        .ok()
        .and_then(|t| {
            t.get("study")?
                .get("description")?
                .as_str()
                .map(|s| s.lines().next().unwrap_or("").to_string())
        })
        .unwrap_or_default()
}
