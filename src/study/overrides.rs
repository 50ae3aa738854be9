//! Overrides (`--set KEY=VALUE` and `[scale.*]` tables): parsing them and applying them to a
//! study document before it is decoded, remembering which document paths each one changed.

use crate::decode::{KeyPath, Seg};

/// Where an override came from, so an error in its value can say so.
#[derive(Debug, Clone)]
pub enum Origin {
    /// `--set KEY=VALUE` on the command line (the text as given).
    CommandLine(String),
    /// A key of `[scale.NAME]` in the study file, at this document path.
    Scale { scale: String, path: KeyPath },
}

/// One override: a user-facing key (`dataset.rows`, `contender.NAME.KEY`, `step.NAME.KEY`) and a value.
#[derive(Debug, Clone)]
pub struct Override {
    pub key: String,
    pub value: toml::Value,
    pub origin: Origin,
}

/// Parse `KEY=VALUE`. VALUE is a TOML value (`20000`, `true`, `"x"`, `[1, 2]`); anything that
/// is not valid TOML is taken as a bare string, so `--set contender.a.journal_mode=wal` works.
pub fn parse_set(arg: &str) -> Result<Override, String> {
    let Some((key, raw)) = arg.split_once('=') else {
        return Err(format!(
            "--set {arg}: expected KEY=VALUE, e.g. --set dataset.rows=20000"
        ));
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(format!("--set {arg}: the key before `=` is empty"));
    }
    let raw = raw.trim();
    let value = match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(raw.to_string())),
        Err(_) => toml::Value::String(raw.to_string()),
    };
    Ok(Override {
        key: key.to_string(),
        value,
        origin: Origin::CommandLine(format!("--set {arg}")),
    })
}

/// Flatten a `[scale.NAME]` table into overrides: nested tables become dotted keys.
pub fn scale_overrides(scale: &str, table: &toml::Table) -> Vec<Override> {
    fn walk(scale: &str, prefix: &[String], t: &toml::Table, out: &mut Vec<Override>) {
        for (k, v) in t {
            let mut keys = prefix.to_vec();
            keys.push(k.clone());
            match v {
                toml::Value::Table(inner) => walk(scale, &keys, inner, out),
                _ => {
                    let mut path = KeyPath::root().key("scale").key(scale);
                    for k in &keys {
                        path = path.key(k);
                    }
                    out.push(Override {
                        key: join_key(&keys),
                        value: v.clone(),
                        origin: Origin::Scale {
                            scale: scale.to_string(),
                            path,
                        },
                    });
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(scale, &[], table, &mut out);
    out
}

/// Keys of a contender table itself; any other key under `contender.NAME.` is an engine option.
const CONTENDER_KEYS: &[&str] = &[
    "name",
    "engine",
    "description",
    "options",
    "target",
    "password_env",
    "password_file",
    "restart_command",
    "version",
    "basedir",
];

/// A key's parts as TOML writes a dotted key: split at `.` outside double quotes, so
/// `contender."mysql-5.6".buffer_pool_mb` has three.
fn split_key(key: &str) -> Result<Vec<String>, String> {
    let mut parts = vec![String::new()];
    let mut quoted = false;
    for c in key.chars() {
        match c {
            '"' => quoted = !quoted,
            '.' if !quoted => parts.push(String::new()),
            c => parts.last_mut().expect("one part at least").push(c),
        }
    }
    if quoted {
        return Err(format!("override key `{key}` has an unclosed `\"`"));
    }
    Ok(parts)
}

/// Parts joined into a key [`split_key`] reads back: a part with a `.` is quoted.
fn join_key(parts: &[String]) -> String {
    let quoted: Vec<String> = parts
        .iter()
        .map(|p| {
            if p.contains('.') {
                format!("\"{p}\"")
            } else {
                p.clone()
            }
        })
        .collect();
    quoted.join(".")
}

/// Which entry of `names` the parts after the section name, and how many parts its name
/// takes: a name with a `.` (`mysql-5.6`) spans parts when written unquoted. At least one
/// part is left for the key; two names that both fit (`a` and `a.b` in `a.b.x`) are an error
/// that says to quote the one meant.
fn find_named(
    names: &[String],
    after: &[String],
    key: &str,
    section: &str,
) -> Result<(usize, usize), String> {
    let fits: Vec<(usize, usize)> = (1..after.len())
        .filter_map(|k| {
            let name = after[..k].join(".");
            names.iter().position(|n| *n == name).map(|i| (i, k))
        })
        .collect();
    match fits.as_slice() {
        [one] => Ok(*one),
        [] => Err(format!(
            "override `{key}`: no {section} named `{}`; {section}s are: {}",
            after[0],
            names.join(", ")
        )),
        many => Err(format!(
            "override `{key}` could name the {section} {}; quote the one meant, e.g. {section}.\"{}\".KEY",
            many.iter()
                .map(|(i, _)| format!("`{}`", names[*i]))
                .collect::<Vec<_>>()
                .join(" or "),
            names[many[many.len() - 1].0]
        )),
    }
}

/// Map a user-facing override key to the document path it changes.
pub fn resolve(doc: &toml::Table, key: &str) -> Result<KeyPath, String> {
    let parts = split_key(key)?;
    if parts.iter().any(|p| p.is_empty()) {
        return Err(format!("override key `{key}` has an empty part"));
    }
    match parts[0].as_str() {
        "study" | "dataset" if parts.len() >= 2 => {
            let mut p = KeyPath::root();
            for part in &parts {
                p = p.key(part);
            }
            Ok(p)
        }
        section @ ("contender" | "step") if parts.len() >= 3 => {
            let names = named_entries(doc, section);
            let (index, used) = find_named(&names, &parts[1..], key, section)?;
            let mut p = KeyPath::root().key(section).index(index);
            let rest = &parts[1 + used..];
            if section == "contender" && !CONTENDER_KEYS.contains(&rest[0].as_str()) {
                p = p.key("options");
            }
            for part in rest {
                p = p.key(part);
            }
            Ok(p)
        }
        _ => Err(format!(
            "override key `{key}` is not one of dataset.KEY, study.KEY, contender.NAME.KEY, step.NAME.KEY"
        )),
    }
}

/// The `name` values of an array of tables (`contender` or `step`).
fn named_entries(doc: &toml::Table, section: &str) -> Vec<String> {
    match doc.get(section) {
        Some(toml::Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.get("name")
                    .and_then(|n| n.as_str())
                    .unwrap_or("?")
                    .to_string()
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Set the value at `path`, creating missing tables on the way.
pub fn set(doc: &mut toml::Table, path: &KeyPath, value: toml::Value) -> Result<(), String> {
    let Some((last, parents)) = path.0.split_last() else {
        return Err("empty override path".to_string());
    };
    let mut table = doc;
    for seg in parents {
        table = match seg {
            Seg::Key(k) => {
                let entry = table
                    .entry(k.clone())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                match entry {
                    toml::Value::Table(t) => t,
                    _ => return Err(format!("`{k}` is a value, not a table")),
                }
            }
            Seg::Index(_) => return Err("unexpected index in override path".to_string()),
        };
    }
    match last {
        Seg::Key(k) => {
            table.insert(k.clone(), value);
            Ok(())
        }
        Seg::Index(_) => Err("cannot override a list element".to_string()),
    }
}

/// Apply `value` at `path`, walking through arrays of tables by index.
pub fn apply(doc: &mut toml::Table, path: &KeyPath, value: toml::Value) -> Result<(), String> {
    // Split at the first index: everything after it lives in one table of the array.
    if let Some(pos) = path.0.iter().position(|s| matches!(s, Seg::Index(_))) {
        let (Some(Seg::Key(section)), Some(Seg::Index(i))) =
            (path.0.get(pos.wrapping_sub(1)), path.0.get(pos))
        else {
            return Err("malformed override path".to_string());
        };
        let Some(toml::Value::Array(items)) = doc.get_mut(section) else {
            return Err(format!("`{section}` is not a list of tables"));
        };
        let Some(toml::Value::Table(entry)) = items.get_mut(*i) else {
            return Err(format!("`{section}[{i}]` is not a table"));
        };
        let rest = KeyPath(path.0[pos + 1..].to_vec());
        return apply(entry, &rest, value);
    }
    set(doc, path, value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> toml::Table {
        toml::from_str(
            "[dataset]\nrows = 5\n[[contender]]\nname = 'a'\nengine = 'sqlite'\n[[step]]\nname = 'q'\nkind = 'queries'\n",
        )
        .expect("doc")
    }

    #[test]
    fn parse_set_values() {
        assert_eq!(
            parse_set("dataset.rows=20000").unwrap().value,
            toml::Value::Integer(20000)
        );
        assert_eq!(
            parse_set("contender.a.journal_mode=wal").unwrap().value,
            toml::Value::String("wal".into())
        );
        assert!(parse_set("dataset.rows").is_err());
    }

    #[test]
    fn resolves_and_applies_named_entries() {
        let mut d = doc();
        let p = resolve(&d, "contender.a.journal_mode").unwrap();
        assert_eq!(p.to_string(), "contender[0].options.journal_mode");
        apply(&mut d, &p, toml::Value::String("wal".into())).unwrap();
        assert_eq!(
            d["contender"][0]["options"]["journal_mode"].as_str(),
            Some("wal")
        );
        let p = resolve(&d, "step.q.clients").unwrap();
        apply(&mut d, &p, toml::Value::Integer(3)).unwrap();
        assert_eq!(d["step"][0]["clients"].as_integer(), Some(3));
        let p = resolve(&d, "dataset.rows").unwrap();
        apply(&mut d, &p, toml::Value::Integer(9)).unwrap();
        assert_eq!(d["dataset"]["rows"].as_integer(), Some(9));
        assert!(
            resolve(&d, "contender.zz.x")
                .unwrap_err()
                .contains("contenders are: a")
        );
        assert!(resolve(&d, "bogus.x").is_err());
    }

    #[test]
    fn a_contender_name_with_dots_is_found_quoted_or_not() {
        let mut d: toml::Table = toml::from_str(
            "[[contender]]\nname = 'mysql-5.6'\nengine = 'mysql'\n[[contender]]\nname = 'a'\n[[contender]]\nname = 'a.b'\n",
        )
        .expect("doc");
        for key in [
            "contender.mysql-5.6.buffer_pool_mb",
            "contender.\"mysql-5.6\".buffer_pool_mb",
        ] {
            let p = resolve(&d, key).unwrap();
            assert_eq!(
                p.to_string(),
                "contender[0].options.buffer_pool_mb",
                "{key}"
            );
        }
        let p = resolve(&d, "contender.mysql-5.6.version").unwrap();
        apply(&mut d, &p, toml::Value::String("8.0".into())).unwrap();
        assert_eq!(d["contender"][0]["version"].as_str(), Some("8.0"));
        // `a` with option `b.x`, or `a.b` with option `x`: the user says which
        let e = resolve(&d, "contender.a.b.x").unwrap_err();
        assert!(
            e.contains("`a` or `a.b`") && e.contains("contender.\"a.b\".KEY"),
            "{e}"
        );
        let p = resolve(&d, "contender.\"a.b\".x").unwrap();
        assert_eq!(p.to_string(), "contender[2].options.x");
        assert!(
            resolve(&d, "contender.\"a.b.x")
                .unwrap_err()
                .contains("unclosed")
        );
        assert!(
            resolve(&d, "contender.mysql-5.7.x")
                .unwrap_err()
                .contains("mysql-5.6")
        );
    }

    #[test]
    fn scale_tables_name_a_contender_with_dots_either_way() {
        let d: toml::Table =
            toml::from_str("[[contender]]\nname = 'mysql-5.6'\nengine = 'mysql'\n").expect("doc");
        let t: toml::Table = toml::from_str(
            "contender.mysql-5.6.buffer_pool_mb = 1\ncontender.\"mysql-5.6\".memory_limit_mb = 2\n",
        )
        .unwrap();
        let o = scale_overrides("quick", &t);
        let mut paths: Vec<String> = o
            .iter()
            .map(|o| resolve(&d, &o.key).unwrap().to_string())
            .collect();
        paths.sort();
        assert_eq!(
            paths,
            [
                "contender[0].options.buffer_pool_mb",
                "contender[0].options.memory_limit_mb"
            ]
        );
    }

    #[test]
    fn scale_tables_flatten_to_dotted_keys() {
        let t: toml::Table = toml::from_str("dataset.rows = 1\nstep.q.clients = 2\n").unwrap();
        let o = scale_overrides("quick", &t);
        let keys: Vec<_> = o.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(keys, ["dataset.rows", "step.q.clients"]);
    }
}
