//! Typed decoding of TOML values with the key path of any failure, so errors can be located.

use serde::de::DeserializeOwned;
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
        DecodeError { path, message }
    })
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

    #[test]
    fn unknown_key_points_at_the_key() {
        let e = decode::<Outer>(parse("[[items]]\nrows = 1\nrwos = 2\n")).unwrap_err();
        assert_eq!(e.path.to_string(), "items[0].rwos");
        assert!(e.message.contains("unknown field `rwos`"), "{}", e.message);
    }
}
