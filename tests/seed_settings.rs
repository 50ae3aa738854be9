//! The built-in studies carry their originals' settings: storage-tiers commits without a log
//! flush as the 2010 study's MySQL and CUBRID did, runs INSERT FULL on a database of its own
//! and puts each engine on the original's two arrays; oltp and tpcc at `full` run in the
//! TokuDB post's regime (its memory, its caches' shares, its disks, its thread levels). The
//! servers' own read-back of these settings is in `e2e_tiers`.

mod common;

use dbduel::study::{Request, Study, load};

fn study(name: &str, scale: &str) -> Study {
    let req = Request {
        study: name.into(),
        scale: Some(scale.into()),
        all_contenders: true,
        ..Request::default()
    };
    load(&req).unwrap_or_else(|e| panic!("{name} {scale}: {e}"))
}

/// The contender's option `key` as written (after the scale's overrides), as TOML text.
fn option(s: &Study, contender: &str, key: &str) -> Option<String> {
    let c = s
        .contenders
        .iter()
        .find(|c| c.name == contender)
        .unwrap_or_else(|| panic!("no contender {contender}"));
    c.options.get(key).map(|v| v.to_string())
}

/// The TOML of step `name`'s parameters, as the chosen scale leaves them.
fn step_param(s: &Study, name: &str, key: &str) -> Option<String> {
    let st = s
        .file
        .steps
        .iter()
        .find(|st| st.name == name)
        .unwrap_or_else(|| panic!("no step {name}"));
    st.params.get(key).map(|v| v.to_string())
}

#[test]
fn storage_tiers_commits_without_a_flush_as_the_original_did() {
    for scale in ["functional", "quick", "full"] {
        let s = study("storage-tiers", scale);
        assert_eq!(s.contenders.len(), 12, "{scale}");
        for disk in ["ssd", "hdd"] {
            let profile = Some(format!("\"raid10-{disk}\""));
            for c in ["innodb", "mysql-5.6", "myrocks", "innodb-durable"] {
                let name = format!("{c}-{disk}");
                let flush = if c == "innodb-durable" { "1" } else { "0" };
                assert_eq!(
                    option(&s, &name, "flush_log_at_trx_commit").as_deref(),
                    Some(flush),
                    "{scale} {name}"
                );
                assert_eq!(option(&s, &name, "device_profile"), profile, "{name}");
            }
            // the original's MySQL: the binary log on, never synced at commit
            for c in ["innodb", "mysql-5.6"] {
                let server = option(&s, &format!("{c}-{disk}"), "server").unwrap();
                assert!(
                    server.contains("log_bin = \"binlog\"") && server.contains("sync_binlog = 0"),
                    "{c}: {server}"
                );
            }
            let pg = format!("postgres-{disk}");
            assert_eq!(
                option(&s, &pg, "synchronous_commit").as_deref(),
                Some("\"off\"")
            );
            assert_eq!(option(&s, &pg, "device_profile"), profile);
            let lite = format!("sqlite-{disk}");
            assert_eq!(
                option(&s, &lite, "synchronous").as_deref(),
                Some("\"normal\"")
            );
            assert_eq!(
                option(&s, &lite, "journal_mode").as_deref(),
                Some("\"wal\"")
            );
        }
        // The durable twins are extra: the default run is the original's setting.
        let defaults = s.file.study.default_contenders.clone().unwrap_or_default();
        assert_eq!(defaults.len(), 8, "{defaults:?}");
        assert!(
            defaults.iter().all(|c| !c.contains("durable")),
            "{defaults:?}"
        );
    }
}

#[test]
fn storage_tiers_inserts_into_a_fresh_database_of_the_originals_share() {
    let names = |s: &Study| -> Vec<String> { s.steps.iter().map(|st| st.name.clone()).collect() };
    for (scale, rows, preload) in [
        ("full", 1_600_000u64, 625_000u64),
        ("quick", 10_000, 3_906),
        ("functional", 200, 78),
    ] {
        let s = study("storage-tiers", scale);
        assert_eq!(s.file.dataset.rows, rows, "{scale}");
        assert_eq!(
            step_param(&s, "insert-preload", "rows"),
            Some(preload.to_string()),
            "{scale}"
        );
        // 625 k of 1.6 M, the original's 25 M of 64 M, at every scale
        let share = preload as f64 / rows as f64;
        assert!((share - 0.390625).abs() < 0.002, "{scale}: {share}");
        assert_eq!(
            step_param(&s, "insert-preload", "unthrottled").as_deref(),
            Some("true")
        );
        let n = names(&s);
        let at = |x: &str| n.iter().position(|m| m == x).unwrap();
        // after the select runs, right before the inserts
        assert!(
            at("io-bound") < at("insert-preload") && at("insert-preload") + 1 == at("insert-full")
        );
    }
}

#[test]
fn the_disk_bound_scales_give_the_originals_memory_caches_disks_and_threads() {
    for name in ["oltp", "tpcc"] {
        let s = study(name, "full");
        for c in ["innodb", "mysql-5.6", "myrocks", "postgres"] {
            // the original's 72 GB of RAM for its 800 M rows / 5000 warehouses
            assert_eq!(
                option(&s, c, "memory_limit_mb").as_deref(),
                Some("73728"),
                "{name} {c}"
            );
            assert_eq!(
                option(&s, c, "device_profile").as_deref(),
                Some("\"raid10-hdd\""),
                "{name} {c}"
            );
        }
        assert_eq!(
            option(&s, "sqlite-wal", "device_profile").as_deref(),
            Some("\"raid10-hdd\"")
        );
        // InnoDB 52 GB and TokuDB 36 GB of 72
        for c in ["innodb", "mysql-5.6"] {
            assert_eq!(option(&s, c, "buffer_pool_share").as_deref(), Some("0.72"));
        }
        assert_eq!(
            option(&s, "myrocks", "block_cache_share").as_deref(),
            Some("0.5")
        );
        for c in ["innodb", "mysql-5.6", "myrocks"] {
            let server = option(&s, c, "server").unwrap();
            assert!(
                server.contains("max_connections = 400"),
                "{name} {c}: {server}"
            );
        }
        // max_connections=400: no level above 256
        let sweep = if name == "oltp" {
            vec!["point-select", "read-only", "read-write"]
        } else {
            vec!["tpcc"]
        };
        for st in sweep {
            assert_eq!(
                step_param(&s, st, "threads").as_deref(),
                Some("[1, 2, 4, 8, 16, 32, 64, 128, 256]"),
                "{name} {st}"
            );
        }
    }
}

/// The full scales validate as `dbduel run … --check` reads them (all contenders; the
/// machine's disk is not asked for the original's sizes).
#[test]
fn the_full_scales_validate() {
    for name in ["storage-tiers", "oltp", "tpcc"] {
        let (code, plan, stderr) = common::run(&[
            "run",
            name,
            "--scale",
            "full",
            "--check",
            "--all-contenders",
            "--skip-resource-check",
        ]);
        assert_eq!(code, 0, "{name}: {stderr}");
        if name == "storage-tiers" {
            assert!(plan.contains("insert-preload"), "{plan}");
        }
    }
    // and memory-wise they fit this machine: the caches are shares of the smaller of it and
    // the 72 GB limit
    for name in ["oltp", "tpcc"] {
        let (code, _, stderr) = common::run(&[
            "run",
            name,
            "--scale",
            "full",
            "--check",
            "--all-contenders",
            "--out",
            "/nonexistent-dbduel-out",
        ]);
        // the disk may be too small for the original's sizes; memory must not be the reason
        assert!(
            code == 0 || stderr.contains("of disk"),
            "{name}: {code} {stderr}"
        );
    }
}
