//! Steps that need the dataset's tables before they run. Only a `load` step creates them, so
//! a study whose step would find no table on a contender that starts empty is refused before
//! anything runs, with the step to add; so is a step that needs tables the dataset never has.
//!
//! A contender with a `target` may already hold the tables on its server, and the `dry`
//! engine holds none and needs none: neither starts empty in this sense.

use super::Step;
use super::model::StudyFile;
use crate::dataset::Generator;
use crate::decode::{DecodeError, KeyPath};
use crate::workload::StepParams;
use crate::workload::replication::Writes;

/// What a step does with the dataset's tables, and the key of the step that says so.
struct Need {
    key: KeyPath,
    /// "counts the rows of table user_logs", for `step "NAME" ...`.
    what: String,
    /// Whether the object is one table ("it") or several ("them").
    one: bool,
}

/// Check every step's tables against the contenders the study runs them on (all of the
/// study's contenders, whichever are chosen for a run). Paths are from the document root.
pub fn check(f: &StudyFile, steps: &[Step]) -> Result<(), DecodeError> {
    let Some(generator) = Generator::parse(&f.dataset.generator) else {
        return Ok(());
    };
    let tables: Vec<String> = generator
        .tables(
            &f.dataset.table,
            f.dataset.tables,
            f.dataset.scale(),
            f.dataset.seed,
        )
        .into_iter()
        .map(|t| t.name)
        .collect();
    let real = f
        .contenders
        .iter()
        .find(|c| crate::engines::keeps_rows(&c.engine));
    let empty = f
        .contenders
        .iter()
        .find(|c| crate::engines::keeps_rows(&c.engine) && c.target.is_none());
    let load = steps
        .iter()
        .position(|s| matches!(s.params, StepParams::Load(_)));
    for (i, s) in steps.iter().enumerate() {
        let at = KeyPath::root().key("step").index(i);
        if sysbench_inserts(&s.params) && generator != Generator::Sbtest && real.is_some() {
            return Err(DecodeError::at(
                at.key("kind"),
                format!(
                    "step {:?} runs sysbench's statements, which need the sbtest tables; \
                     dataset.generator = {:?} makes {} instead; use generator = \"sbtest\"",
                    s.name,
                    f.dataset.generator,
                    describe(&tables)
                ),
            ));
        }
        if matches!(s.params, StepParams::Trickle(_) | StepParams::Triple(_))
            && generator != Generator::Tiers40
            && real.is_some()
        {
            return Err(DecodeError::at(
                at.key("kind"),
                format!(
                    "step {:?} works on the storage study's 40-table schema; dataset.generator = \
                     {:?} makes {} instead; use generator = \"tiers40\"",
                    s.name,
                    f.dataset.generator,
                    describe(&tables)
                ),
            ));
        }
        if matches!(s.params, StepParams::Tpcc(_) | StepParams::TpccCheck(_))
            && generator != Generator::Tpcc
            && real.is_some()
        {
            return Err(DecodeError::at(
                at.key("kind"),
                format!(
                    "step {:?} runs TPC-C's transactions, which need its nine tables; \
                     dataset.generator = {:?} makes {} instead; use generator = \"tpcc\" \
                     with warehouses = N",
                    s.name,
                    f.dataset.generator,
                    describe(&tables)
                ),
            ));
        }
        if let (StepParams::Update(u), Some(c)) = (&s.params, empty)
            && let Some(t) = updated_table(&u.sql)
            && !tables.iter().any(|n| n.eq_ignore_ascii_case(t))
        {
            return Err(DecodeError::at(
                at.key("sql"),
                format!(
                    "sql updates table {t}, which nothing creates on contender `{}` (it has no \
                     target); the dataset's tables are: {}",
                    c.name,
                    tables.join(", ")
                ),
            ));
        }
        let (Some(c), Some(need)) = (empty, need(s, &tables)) else {
            continue;
        };
        match load {
            Some(l) if l < i => {}
            later => {
                let fix = match later {
                    Some(l) => format!("move step {:?} before it", steps[l].name),
                    None => "add a step with kind = \"load\" before it".to_string(),
                };
                return Err(DecodeError::at(
                    at.join(&need.key),
                    format!(
                        "step {:?} {}, but no step before it creates {}: contender `{}` starts \
                         empty (it has no target); {fix}",
                        s.name,
                        need.what,
                        if need.one { "it" } else { "them" },
                        c.name,
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Does the step run sysbench's statements (which need the sbtest tables)?
fn sysbench_inserts(p: &StepParams) -> bool {
    match p {
        StepParams::Oltp(_) => true,
        StepParams::Replication(r) => r.writes == Writes::Insert,
        _ => false,
    }
}

/// What `step` needs of `tables` (the dataset's, in order), if anything.
fn need(step: &Step, tables: &[String]) -> Option<Need> {
    let kind = KeyPath::root().key("kind");
    // A dataset has at least one table; `user_logs` has exactly one, and DDL changes the first.
    let first = tables.first().map_or("", String::as_str);
    let all = |what: &str| Need {
        key: kind.clone(),
        what: format!("{what} {}", describe(tables)),
        one: tables.len() == 1,
    };
    match &step.params {
        StepParams::Load(_) => None,
        StepParams::Footprint(_) => Some(all("measures the bytes of")),
        StepParams::Count(_) => Some(all("counts the rows of")),
        StepParams::Oltp(_) => Some(all("runs sysbench's statements on")),
        StepParams::Trickle(_) => Some(all("inserts rows into")),
        StepParams::Triple(_) => Some(all("reads rows of")),
        StepParams::Lookups(_) => Some(Need {
            key: kind.clone(),
            what: format!("looks keys up in table {first}"),
            one: true,
        }),
        StepParams::Replication(r) if r.writes == Writes::Insert => {
            Some(all("inserts (as sysbench's oltp_insert) into"))
        }
        StepParams::Replication(_) => None,
        StepParams::Tpcc(_) => Some(all("runs TPC-C's transactions on")),
        StepParams::TpccCheck(_) => Some(all("checks the consistency of")),
        StepParams::Checksums(_) => Some(all("compares every copy of")),
        StepParams::Ddl(_) => Some(Need {
            key: KeyPath::root().key("action"),
            what: format!("changes table {first}"),
            one: true,
        }),
        StepParams::Update(u) => Some(Need {
            key: KeyPath::root().key("sql"),
            what: format!("updates table {}", updated_table(&u.sql).unwrap_or(first)),
            one: true,
        }),
        // A query may read no table at all (`SELECT 1`): only one that names one needs it.
        StepParams::Queries(q) => q.queries.iter().enumerate().find_map(|(j, sql)| {
            let t = named_table(sql, tables)?;
            Some(Need {
                key: KeyPath::root().key("queries").index(j),
                what: format!("reads table {t}"),
                one: true,
            })
        }),
    }
}

/// `table user_logs`, `tables sbtest1 and sbtest2`, `tables sbtest1 to sbtest16`.
fn describe(tables: &[String]) -> String {
    match tables {
        [one] => format!("table {one}"),
        [a, b] => format!("tables {a} and {b}"),
        [first, .., last] => format!("tables {first} to {last}"),
        [] => "the dataset's tables".to_string(),
    }
}

/// The words of a statement outside string literals and `--` comments: identifiers with
/// their qualifiers (`main.user_logs`), quotes around identifiers removed.
fn words(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut chars = sql.chars().peekable();
    let mut flush = |word: &mut String| {
        if !word.is_empty() {
            out.push(std::mem::take(word));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                flush(&mut word);
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                }
            }
            '-' if chars.peek() == Some(&'-') => {
                flush(&mut word);
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '"' | '`' => {}
            c if c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '$' => word.push(c),
            _ => flush(&mut word),
        }
    }
    flush(&mut word);
    out
}

/// The first of `tables` that `sql` names (in any case, alone or qualified).
fn named_table<'a>(sql: &str, tables: &'a [String]) -> Option<&'a str> {
    words(sql).iter().find_map(|w| {
        w.split('.').find_map(|part| {
            tables
                .iter()
                .find(|t| t.eq_ignore_ascii_case(part))
                .map(String::as_str)
        })
    })
}

/// The table an `UPDATE` statement changes (its first, unqualified), if it can be told.
fn updated_table(sql: &str) -> Option<&str> {
    let start = sql.trim_start();
    let rest = start
        .get(..7)?
        .eq_ignore_ascii_case("UPDATE ")
        .then(|| &start[7..])?;
    let mut tokens = rest.split_whitespace();
    let name = tokens.find(|t| {
        !["LOW_PRIORITY", "IGNORE", "ONLY"]
            .iter()
            .any(|m| t.eq_ignore_ascii_case(m))
    })?;
    let name = name.split(',').next()?.rsplit('.').next()?;
    let name = name.trim_matches(|c| c == '"' || c == '`');
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn queries_name_tables_outside_literals_and_comments() {
        let t = tables(&["user_logs"]);
        assert_eq!(
            named_table("SELECT COUNT(*) FROM User_Logs WHERE id > 5", &t),
            Some("user_logs")
        );
        assert_eq!(
            named_table("SELECT x FROM \"main\".\"user_logs\"", &t),
            Some("user_logs")
        );
        assert_eq!(named_table("SELECT 1", &t), None);
        assert_eq!(named_table("SELECT 'user_logs'", &t), None);
        assert_eq!(named_table("SELECT 1 -- from user_logs", &t), None);
        assert_eq!(named_table("SELECT user_logs_id FROM other", &t), None);
        let t = tables(&["sbtest1", "sbtest2"]);
        assert_eq!(
            named_table("SELECT c FROM sbtest2 WHERE id = $1", &t),
            Some("sbtest2")
        );
    }

    #[test]
    fn update_statements_name_their_table() {
        assert_eq!(
            updated_table("UPDATE user_logs SET a = 1"),
            Some("user_logs")
        );
        assert_eq!(
            updated_table("  update LOW_PRIORITY IGNORE `db`.`t` SET a = 1"),
            Some("t")
        );
        assert_eq!(updated_table("UPDATE ONLY \"t\" SET a = 1"), Some("t"));
        assert_eq!(updated_table("UPDATE a, b SET a.x = b.x"), Some("a"));
        assert_eq!(updated_table("DELETE FROM t"), None);
    }

    #[test]
    fn table_lists_read_as_text() {
        assert_eq!(describe(&tables(&["user_logs"])), "table user_logs");
        assert_eq!(
            describe(&tables(&["sbtest1", "sbtest2"])),
            "tables sbtest1 and sbtest2"
        );
        assert_eq!(
            describe(&tables(&["sbtest1", "sbtest2", "sbtest3"])),
            "tables sbtest1 to sbtest3"
        );
    }
}
