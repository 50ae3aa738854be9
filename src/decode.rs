//! Typed decoding of TOML values with the key path of any failure, so errors can be located.

use serde::de::DeserializeOwned;
use serde::de::value::StringDeserializer;
use serde::{Deserialize, Deserializer};
use std::fmt;

/// One step of a key path: a table key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// A key path inside a study document, e.g. `step[2].clients`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPath(pub Vec<Seg>);

impl KeyPath {
    pub fn root() -> Self {
        KeyPath(Vec::new())
    }

    /// This path extended by a key.
    pub fn key(&self, k: &str) -> Self {
        let mut p = self.clone();
        p.0.push(Seg::Key(k.to_string()));
        p
    }

    /// This path extended by an array index.
    pub fn index(&self, i: usize) -> Self {
        let mut p = self.clone();
        p.0.push(Seg::Index(i));
        p
    }

    /// This path followed by `rest`.
    pub fn join(&self, rest: &KeyPath) -> Self {
        let mut p = self.clone();
        p.0.extend(rest.0.iter().cloned());
        p
    }

    /// Whether `self` starts with `prefix`.
    pub fn starts_with(&self, prefix: &KeyPath) -> bool {
        self.0.len() >= prefix.0.len() && self.0[..prefix.0.len()] == prefix.0[..]
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for seg in &self.0 {
            match seg {
                Seg::Key(k) => {
                    if !first {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                Seg::Index(i) => write!(f, "[{i}]")?,
            }
            first = false;
        }
        Ok(())
    }
}

/// A decoding or validation failure at a key path (relative to whatever was decoded).
#[derive(Debug, Clone)]
pub struct DecodeError {
    pub path: KeyPath,
    pub message: String,
}

impl DecodeError {
    pub fn at(path: KeyPath, message: impl Into<String>) -> Self {
        DecodeError {
            path,
            message: message.into(),
        }
    }

    /// The same error with `prefix` put in front of its path.
    pub fn under(self, prefix: &KeyPath) -> Self {
        DecodeError {
            path: prefix.join(&self.path),
            message: self.message,
        }
    }
}

/// Decode a TOML value into `T`, reporting the key path of the first failure.
///
/// For an unknown key, serde reports the error at the containing table; the key's name is
/// recovered from the message so the location points at the key itself.
pub fn decode<T: DeserializeOwned>(value: toml::Value) -> Result<T, DecodeError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let mut path = KeyPath::root();
        for seg in e.path().iter() {
            match seg {
                serde_path_to_error::Segment::Seq { index } => path.0.push(Seg::Index(*index)),
                serde_path_to_error::Segment::Map { key } => path.0.push(Seg::Key(key.clone())),
                serde_path_to_error::Segment::Enum { .. }
                | serde_path_to_error::Segment::Unknown => {}
            }
        }
        // toml appends "in `path`" on later lines; the path is reported separately.
        let full = e.inner().to_string();
        let message = full.lines().next().unwrap_or("").trim().to_string();
        if let Some(field) = unknown_field_name(&message)
            && path.0.last() != Some(&Seg::Key(field.to_string()))
        {
            path = path.key(field);
        }
        let key = match path.0.last() {
            Some(Seg::Key(k)) => Some(k.as_str()),
            _ => None,
        };
        let message = in_toml_terms(&message, key);
        DecodeError { path, message }
    })
}

/// Decode a table whose keys two types share out: the keys in `shared_keys` into `S`, the
/// rest into `O`, each with its own `deny_unknown_fields`. serde's `flatten` would do this,
/// but it does not mix with `deny_unknown_fields`. A key neither takes is refused by `O`,
/// naming every key both take (`O`'s, then `shared_keys`). Errors' paths are relative to the
/// table, as [`decode`]'s.
pub fn split<O, S>(table: &toml::Table, shared_keys: &[&str]) -> Result<(O, S), DecodeError>
where
    O: DeserializeOwned,
    S: DeserializeOwned,
{
    let mut shared = toml::Table::new();
    let mut own = toml::Table::new();
    for (k, v) in table {
        let half = if shared_keys.contains(&k.as_str()) {
            &mut shared
        } else {
            &mut own
        };
        half.insert(k.clone(), v.clone());
    }
    let o: O = decode(toml::Value::Table(own)).map_err(|mut e| {
        if e.message.starts_with("unknown field `") {
            let keys: Vec<String> = shared_keys.iter().map(|k| format!("`{k}`")).collect();
            e.message = format!("{}, {}", e.message, keys.join(", "));
        }
        e
    })?;
    let s: S = decode(toml::Value::Table(shared))?;
    Ok((o, s))
}

/// Deserialize a field of a unit-only enum from its name, for `#[serde(deserialize_with)]`.
///
/// A derived enum read straight from TOML takes an inline table as a variant and answers a
/// number with toml's internals ("invalid type: unit variant, expected string only"); read
/// through this, anything but a string is "expected a string", and an unknown name lists the
/// allowed ones (see [`in_toml_terms`]).
pub fn by_name<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let name = String::deserialize(deserializer)?;
    T::deserialize(StringDeserializer::<D::Error>::new(name))
}

/// serde's words for what it expected (Rust types, its data model) in a study's words.
const EXPECTED: &[(&str, &str)] = &[
    ("u8", "an integer from 0 to 255"),
    ("u16", "an integer from 0 to 65535"),
    ("u32", "an integer from 0 to 4294967295"),
    ("u64", "a non-negative integer"),
    ("usize", "a non-negative integer"),
    ("i8", "an integer"),
    ("i16", "an integer"),
    ("i32", "an integer"),
    ("i64", "an integer"),
    ("f32", "a number"),
    ("f64", "a number"),
    ("a boolean", "true or false"),
    ("a sequence", "an array"),
    ("a map", "a table"),
    ("path string", "a string (a file path)"),
];

/// serde's words for the value it found, in TOML's (string, integer, float, boolean, array,
/// table).
const FOUND: &[(&str, &str)] = &[
    ("floating point", "float"),
    ("map", "table"),
    ("sequence", "array"),
];

/// Restate a serde message without the parser's internals: Rust type names (`u64`,
/// `struct IntRange`, `enum Threads`) and serde's data model (map, sequence, variant) become
/// what a study file holds; an unknown name of an enum becomes `KEY = "x" is not allowed;
/// use one of: ...`. Other messages are returned as they are.
pub fn in_toml_terms(message: &str, key: Option<&str>) -> String {
    if let Some(rest) = message.strip_prefix("unknown variant `") {
        let (name, allowed) = match rest.rsplit_once("`, expected ") {
            // serde quotes each name in backticks: `a` or `b`, one of `a`, `b`, `c`
            Some((name, list)) => (name, list.split('`').skip(1).step_by(2).collect()),
            None => (rest.split('`').next().unwrap_or(rest), Vec::new()),
        };
        let what = match key {
            Some(k) => format!("{k} = {name:?}"),
            None => format!("{name:?}"),
        };
        return if allowed.is_empty() {
            format!("{what} is not allowed")
        } else {
            format!("{what} is not allowed; use one of: {}", allowed.join(", "))
        };
    }
    for head in ["invalid type: ", "invalid value: "] {
        let Some(rest) = message.strip_prefix(head) else {
            continue;
        };
        let Some((found, expected)) = rest.rsplit_once(", expected ") else {
            break;
        };
        let found = FOUND
            .iter()
            .find_map(|(serde, toml)| {
                let tail = found.strip_prefix(serde)?;
                (tail.is_empty() || tail.starts_with(' ')).then(|| format!("{toml}{tail}"))
            })
            .unwrap_or_else(|| found.to_string());
        let expected = EXPECTED
            .iter()
            .find(|(serde, _)| *serde == expected)
            .map(|(_, plain)| plain.to_string())
            .unwrap_or_else(|| {
                if expected.starts_with("struct ") {
                    "a table".to_string()
                } else if expected.starts_with("enum ") {
                    "a string".to_string()
                } else {
                    expected.to_string()
                }
            });
        return format!("{head}{found}, expected {expected}");
    }
    message.to_string()
}

/// The field name in serde's "unknown field `x`, expected ..." message.
fn unknown_field_name(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split('`').next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        #[allow(dead_code)]
        rows: u64,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        #[allow(dead_code)]
        items: Vec<Inner>,
    }

    fn parse(s: &str) -> toml::Value {
        toml::Value::Table(toml::from_str(s).expect("test toml"))
    }

    #[test]
    fn wrong_type_names_full_path() {
        let e = decode::<Outer>(parse("[[items]]\nrows = 1\n[[items]]\nrows = 'x'\n")).unwrap_err();
        assert_eq!(e.path.to_string(), "items[1].rows");
        assert!(e.message.contains("invalid type"), "{}", e.message);
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Fast,
        Slow,
    }

    #[derive(Debug, Deserialize)]
    struct Named {
        #[allow(dead_code)]
        #[serde(deserialize_with = "by_name")]
        mode: Mode,
    }

    #[test]
    fn enums_by_name_say_what_is_allowed() {
        let e = decode::<Named>(parse("mode = 'quick'")).unwrap_err();
        assert_eq!(e.path.to_string(), "mode");
        assert_eq!(
            e.message,
            "mode = \"quick\" is not allowed; use one of: fast, slow"
        );
        // a number or a table is not taken as a variant (toml would say "unit variant")
        let e = decode::<Named>(parse("mode = 1")).unwrap_err();
        assert_eq!(e.message, "invalid type: integer `1`, expected a string");
        let e = decode::<Named>(parse("mode = { fast = 1 }")).unwrap_err();
        assert_eq!(e.message, "invalid type: table, expected a string");
        assert!(decode::<Named>(parse("mode = 'slow'")).is_ok());
    }

    #[test]
    fn serde_words_become_toml_words() {
        let cases = [
            (
                "invalid value: integer `-5`, expected u64",
                "invalid value: integer `-5`, expected a non-negative integer",
            ),
            (
                "invalid type: floating point `1.5`, expected u8",
                "invalid type: float `1.5`, expected an integer from 0 to 255",
            ),
            (
                "invalid type: map, expected a sequence",
                "invalid type: table, expected an array",
            ),
            (
                "invalid type: sequence, expected struct IntRange",
                "invalid type: array, expected a table",
            ),
            (
                "invalid type: string \"a, expected b\", expected f64",
                "invalid type: string \"a, expected b\", expected a number",
            ),
            (
                "invalid type: integer `1`, expected enum Mode",
                "invalid type: integer `1`, expected a string",
            ),
            ("missing field `max`", "missing field `max`"),
        ];
        for (serde, plain) in cases {
            assert_eq!(in_toml_terms(serde, None), plain);
        }
        assert_eq!(
            in_toml_terms("unknown variant `x`, expected `a` or `b`", Some("k")),
            "k = \"x\" is not allowed; use one of: a, b"
        );
        assert_eq!(
            in_toml_terms("unknown variant `x`, expected `a`", None),
            "\"x\" is not allowed; use one of: a"
        );
        assert_eq!(
            in_toml_terms("unknown variant `x`, there are no variants", None),
            "\"x\" is not allowed"
        );
    }

    #[test]
    fn unknown_key_points_at_the_key() {
        let e = decode::<Outer>(parse("[[items]]\nrows = 1\nrwos = 2\n")).unwrap_err();
        assert_eq!(e.path.to_string(), "items[0].rwos");
        assert!(e.message.contains("unknown field `rwos`"), "{}", e.message);
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Own {
        name: String,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Shared {
        rows: u64,
        #[serde(default)]
        seed: u64,
    }

    #[test]
    fn split_shares_the_keys_out_and_names_both_halves_keys_for_a_stranger() {
        let t: toml::Table = toml::from_str("name = \"a\"\nrows = 5\n").unwrap();
        let (own, shared): (Own, Shared) = split(&t, &["rows", "seed"]).unwrap();
        assert_eq!((own.name.as_str(), shared.rows, shared.seed), ("a", 5, 0));

        let t: toml::Table = toml::from_str("name = \"a\"\nrows = 5\nrwos = 1\n").unwrap();
        let e = split::<Own, Shared>(&t, &["rows", "seed"]).unwrap_err();
        assert_eq!(e.path.to_string(), "rwos");
        assert!(
            e.message.ends_with("`name`, `rows`, `seed`"),
            "{}",
            e.message
        );

        let t: toml::Table = toml::from_str("name = \"a\"\nrows = -1\n").unwrap();
        let e = split::<Own, Shared>(&t, &["rows", "seed"]).unwrap_err();
        assert_eq!(e.path.to_string(), "rows");
    }
}
