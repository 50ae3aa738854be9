//! A study file's text and its locations: turns key paths and byte spans into file:line:col.

use crate::decode::{KeyPath, Seg};
use std::fmt;
use std::ops::Range;
use toml_edit::{Item, Value};

/// A user-facing study error: where (file:line:col, or the override that caused it) and what.
#[derive(Debug, Clone, thiserror::Error)]
pub struct StudyError {
    /// The file name (or `--set KEY=VALUE`) the error is about.
    pub origin: String,
    /// 1-based line and column, when the error has a place in a file.
    pub line_col: Option<(usize, usize)>,
    pub message: String,
}

impl fmt::Display for StudyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line_col {
            Some((l, c)) => write!(f, "{}:{l}:{c}: {}", self.origin, self.message),
            None => write!(f, "{}: {}", self.origin, self.message),
        }
    }
}

/// The text of a study file with a span-preserving parse of it, for locating errors.
pub struct Source {
    /// How the file is named in errors (the path as the user gave it, or `builtin:NAME`).
    pub name: String,
    pub text: String,
    doc: Option<toml_edit::Document<String>>,
}

impl Source {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        let text = text.into();
        let doc = toml_edit::Document::parse(text.clone()).ok();
        Source {
            name: name.into(),
            text,
            doc,
        }
    }

    /// An error at a byte span of this file.
    pub fn error_at(&self, span: Option<Range<usize>>, message: impl Into<String>) -> StudyError {
        StudyError {
            origin: self.name.clone(),
            line_col: span.map(|s| self.line_col(s.start)),
            message: message.into(),
        }
    }

    /// An error about the value at `path`, located at the deepest part of the path that exists
    /// in the file (the key itself for an unknown key, the value for a bad value).
    pub fn error_at_path(&self, path: &KeyPath, message: impl Into<String>) -> StudyError {
        self.error_at(self.locate(path), message)
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let before = &self.text[..floor_char_boundary(&self.text, offset)];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        let col = before[line_start..].chars().count() + 1;
        (line, col)
    }

    /// Byte span of the deepest existing element along `path`.
    pub fn locate(&self, path: &KeyPath) -> Option<Range<usize>> {
        let doc = self.doc.as_ref()?;
        let mut best: Option<Range<usize>> = None;
        let mut node = Node::Item(doc.as_item());
        for (i, seg) in path.0.iter().enumerate() {
            let last = i + 1 == path.0.len();
            let next = match (seg, node) {
                (Seg::Key(k), Node::Item(Item::Table(t))) => {
                    t.get_key_value(k).map(|(key, item)| {
                        let span = if last {
                            key.span()
                        } else {
                            item.span().or(key.span())
                        };
                        (span, Node::Item(item))
                    })
                }
                (Seg::Key(k), Node::Item(Item::Value(Value::InlineTable(t))))
                | (Seg::Key(k), Node::Value(Value::InlineTable(t))) => {
                    t.get_key_value(k).map(|(key, item)| {
                        let span = if last {
                            key.span()
                        } else {
                            item.span().or(key.span())
                        };
                        (span, Node::Item(item))
                    })
                }
                (Seg::Index(n), Node::Item(Item::ArrayOfTables(a))) => {
                    a.get(*n).map(|t| (t.span(), Node::Table(t)))
                }
                (Seg::Index(n), Node::Item(Item::Value(Value::Array(a))))
                | (Seg::Index(n), Node::Value(Value::Array(a))) => {
                    a.get(*n).map(|v| (v.span(), Node::Value(v)))
                }
                (Seg::Key(k), Node::Table(t)) => t.get_key_value(k).map(|(key, item)| {
                    let span = if last {
                        key.span()
                    } else {
                        item.span().or(key.span())
                    };
                    (span, Node::Item(item))
                }),
                _ => None,
            };
            match next {
                Some((span, n)) => {
                    if span.is_some() {
                        best = span;
                    }
                    node = n;
                }
                None => break,
            }
        }
        best
    }
}

#[derive(Clone, Copy)]
enum Node<'a> {
    Item(&'a Item),
    Table(&'a toml_edit::Table),
    Value(&'a Value),
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_keys_in_arrays_of_tables() {
        let text =
            "[study]\nname = 'x'\n\n[[step]]\nname = 'a'\n\n[[step]]\nname = 'b'\nclients = 5\n";
        let src = Source::new("s.toml", text);
        let p = KeyPath::root().key("step").index(1).key("clients");
        let span = src.locate(&p).expect("span");
        assert_eq!(src.line_col(span.start), (9, 1));
        // a missing key falls back to its table header
        let p = KeyPath::root().key("step").index(1).key("nope");
        let span = src.locate(&p).expect("span");
        assert_eq!(src.line_col(span.start).0, 7);
    }

    #[test]
    fn line_col_counts_characters() {
        let src = Source::new("s", "a\nåb = 1\n");
        assert_eq!(src.line_col(5), (2, 3));
    }
}
