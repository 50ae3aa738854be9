//! Variables: the names a step's scripts use, each given a slot once at parse time
//! ([`Names`]), and one client's values in those slots ([`Vars`]), kept across its script
//! runs as pgbench keeps a client's variables.

use super::expr::{EvalError, Val};
use std::collections::HashMap;

/// Where a name first appears: script, line and column (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub script: usize,
    pub line: usize,
    pub col: usize,
}

/// Every variable name of a step's scripts, by slot.
#[derive(Debug, Clone, Default)]
pub struct Names {
    names: Vec<String>,
    slots: HashMap<String, usize>,
    /// Given a value somewhere: by `\set`, `\gset` or before any script runs.
    assigned: Vec<bool>,
    /// Where each is first read, if it is.
    first_read: Vec<Option<Place>>,
}

impl Names {
    /// The slot of `name`, made if new.
    pub fn slot(&mut self, name: &str) -> usize {
        if let Some(&s) = self.slots.get(name) {
            return s;
        }
        let s = self.names.len();
        self.names.push(name.to_string());
        self.slots.insert(name.to_string(), s);
        self.assigned.push(false);
        self.first_read.push(None);
        s
    }

    /// A variable is given a value (`\set`, `\gset`, predefined).
    pub fn assign(&mut self, name: &str) -> usize {
        let s = self.slot(name);
        self.assigned[s] = true;
        s
    }

    /// A variable is read at `place`.
    pub fn read(&mut self, name: &str, place: Place) -> usize {
        let s = self.slot(name);
        if self.first_read[s].is_none() {
            self.first_read[s] = Some(place);
        }
        s
    }

    /// The slot of a name, if any script uses it.
    pub fn get(&self, name: &str) -> Option<usize> {
        self.slots.get(name).copied()
    }

    pub fn name(&self, slot: usize) -> &str {
        self.names.get(slot).map_or("?", String::as_str)
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The first variable read but never given a value anywhere, with where it is read.
    pub fn never_assigned(&self) -> Option<(&str, &Place)> {
        (0..self.names.len())
            .filter(|&s| !self.assigned[s])
            .filter_map(|s| {
                self.first_read[s]
                    .as_ref()
                    .map(|p| (self.names[s].as_str(), p))
            })
            .min_by_key(|(_, p)| (p.script, p.line, p.col))
    }
}

/// One variable's value in a client.
#[derive(Debug, Clone, PartialEq)]
pub enum Var {
    Unset,
    Val(Val),
    /// Text a query returned (`\gset`) or the study gave; read as a number where one is due.
    Text(String),
}

/// One client's variables, by slot.
#[derive(Debug, Clone)]
pub struct Vars(pub Vec<Var>);

impl Vars {
    pub fn new(n: usize) -> Self {
        Vars(vec![Var::Unset; n])
    }

    pub fn set(&mut self, slot: usize, v: Val) {
        if let Some(x) = self.0.get_mut(slot) {
            *x = Var::Val(v);
        }
    }

    /// Set a slot to text, reusing its buffer.
    pub fn set_text(&mut self, slot: usize, text: &str) {
        if let Some(x) = self.0.get_mut(slot) {
            match x {
                Var::Text(buf) => {
                    buf.clear();
                    buf.push_str(text);
                }
                _ => *x = Var::Text(text.to_string()),
            }
        }
    }

    pub fn get(&self, slot: usize) -> &Var {
        self.0.get(slot).unwrap_or(&Var::Unset)
    }

    /// A variable's value in an expression: text is read as an integer, else as a double,
    /// as pgbench reads it.
    pub fn number(&self, slot: usize, names: &Names) -> Result<Val, EvalError> {
        match self.get(slot) {
            Var::Unset => Err(EvalError::Unset(names.name(slot).to_string())),
            Var::Val(v) => Ok(*v),
            Var::Text(t) => parse_number(t.trim()).ok_or_else(|| {
                EvalError::Bad(format!(
                    "variable `{}` holds {t:?}, which is not a number",
                    names.name(slot)
                ))
            }),
        }
    }
}

/// Text as pgbench reads a variable: an integer, a double, `true`/`false`, or `NULL`.
pub fn parse_number(t: &str) -> Option<Val> {
    if let Ok(i) = t.parse::<i64>() {
        return Some(Val::Int(i));
    }
    match t.to_ascii_lowercase().as_str() {
        "true" => return Some(Val::Bool(true)),
        "false" => return Some(Val::Bool(false)),
        "null" => return Some(Val::Null),
        _ => {}
    }
    t.parse::<f64>().ok().map(Val::Double)
}
