//! pgbench's expression language for `\set`, `\if` and `\elif`: values, the syntax tree, its
//! parser (tokens located by column for errors) and its evaluation with pgbench's documented
//! semantics — 64-bit integers whose overflow is an error, doubles, booleans with SQL's
//! three-valued logic, NULL, `CASE`, and the documented functions (see `func.rs`).

use super::func::{self, Func};
use super::vars::{Names, Vars};
use crate::dataset::rng::SplitMix64;

/// A value an expression computes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Val {
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
}

impl std::fmt::Display for Val {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Val::Null => f.write_str("NULL"),
            Val::Bool(b) => write!(f, "{b}"),
            Val::Int(i) => write!(f, "{i}"),
            Val::Double(d) => write!(f, "{d}"),
        }
    }
}

/// Why an expression could not be computed: an error of that script run, as pgbench's.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    #[error("integer out of range (the result of {0} does not fit in 64 bits)")]
    Overflow(&'static str),
    #[error("division by zero")]
    DivisionByZero,
    #[error("variable `{0}` has no value yet (set it with \\set or \\gset before using it)")]
    Unset(String),
    #[error("{0}")]
    Bad(String),
}

/// Operators with two operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    BitOr,
    BitXor,
    BitAnd,
    Shl,
    Shr,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

/// Operators with one operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Plus,
    BitNot,
    Not,
    IsNull(bool),
    IsTrue(bool),
    IsFalse(bool),
}

/// An expression, variables resolved to their slots.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Const(Val),
    Var(usize),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `CASE WHEN c THEN v … [ELSE e] END`; no ELSE is NULL.
    Case(Vec<(Expr, Expr)>, Option<Box<Expr>>),
    Call(Func, Vec<Expr>),
}

/// What an expression reads while it runs: the client's variables and its random stream.
pub struct Env<'a> {
    pub vars: &'a Vars,
    pub names: &'a Names,
    pub rng: &'a mut SplitMix64,
}

impl Expr {
    /// The expression's value.
    pub fn eval(&self, env: &mut Env<'_>) -> Result<Val, EvalError> {
        match self {
            Expr::Const(v) => Ok(*v),
            Expr::Var(slot) => env.vars.number(*slot, env.names),
            Expr::Unary(op, e) => unary(*op, e.eval(env)?),
            Expr::Binary(BinOp::And, a, b) => {
                let l = truth(a.eval(env)?)?;
                if l == Some(false) {
                    return Ok(Val::Bool(false));
                }
                Ok(match (l, truth(b.eval(env)?)?) {
                    (_, Some(false)) => Val::Bool(false),
                    (Some(true), Some(true)) => Val::Bool(true),
                    _ => Val::Null,
                })
            }
            Expr::Binary(BinOp::Or, a, b) => {
                let l = truth(a.eval(env)?)?;
                if l == Some(true) {
                    return Ok(Val::Bool(true));
                }
                Ok(match (l, truth(b.eval(env)?)?) {
                    (_, Some(true)) => Val::Bool(true),
                    (Some(false), Some(false)) => Val::Bool(false),
                    _ => Val::Null,
                })
            }
            Expr::Binary(op, a, b) => binary(*op, a.eval(env)?, b.eval(env)?),
            Expr::Case(arms, otherwise) => {
                for (cond, v) in arms {
                    if truth(cond.eval(env)?)? == Some(true) {
                        return v.eval(env);
                    }
                }
                match otherwise {
                    Some(e) => e.eval(env),
                    None => Ok(Val::Null),
                }
            }
            Expr::Call(f, args) => func::call(*f, args, env),
        }
    }
}

/// A value as a truth value: NULL is unknown; numbers are true unless zero.
pub fn truth(v: Val) -> Result<Option<bool>, EvalError> {
    Ok(match v {
        Val::Null => None,
        Val::Bool(b) => Some(b),
        Val::Int(i) => Some(i != 0),
        Val::Double(d) => Some(d != 0.0),
    })
}

/// A value as an integer, for an operator or function that takes integers (`what`).
pub fn as_int(v: Val, what: &str) -> Result<i64, EvalError> {
    match v {
        Val::Int(i) => Ok(i),
        Val::Double(d) => double_to_int(d),
        Val::Bool(_) => Err(EvalError::Bad(format!(
            "{what} takes numbers, not a boolean"
        ))),
        Val::Null => Err(EvalError::Bad(format!("{what} takes numbers, not NULL"))),
    }
}

/// A double truncated to an integer (pgbench's `int()`), an error when it does not fit.
pub fn double_to_int(d: f64) -> Result<i64, EvalError> {
    // -2^63 is exact as a double, and 2^63 the first value above i64::MAX.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if !(-TWO_63..TWO_63).contains(&d) {
        return Err(EvalError::Overflow(
            "a conversion of a double to an integer",
        ));
    }
    Ok(d as i64)
}

/// A value as a double.
pub fn as_double(v: Val, what: &str) -> Result<f64, EvalError> {
    match v {
        Val::Int(i) => Ok(i as f64),
        Val::Double(d) => Ok(d),
        Val::Bool(_) => Err(EvalError::Bad(format!(
            "{what} takes numbers, not a boolean"
        ))),
        Val::Null => Err(EvalError::Bad(format!("{what} takes numbers, not NULL"))),
    }
}

fn unary(op: UnOp, v: Val) -> Result<Val, EvalError> {
    match op {
        UnOp::IsNull(want) => return Ok(Val::Bool((v == Val::Null) == want)),
        UnOp::IsTrue(want) => return Ok(Val::Bool((truth(v)? == Some(true)) == want)),
        UnOp::IsFalse(want) => return Ok(Val::Bool((truth(v)? == Some(false)) == want)),
        UnOp::Not => return Ok(truth(v)?.map_or(Val::Null, |b| Val::Bool(!b))),
        _ => {}
    }
    if v == Val::Null {
        return Ok(Val::Null);
    }
    match (op, v) {
        (UnOp::Neg, Val::Int(i)) => i
            .checked_neg()
            .map(Val::Int)
            .ok_or(EvalError::Overflow("a negation")),
        (UnOp::Neg, Val::Double(d)) => Ok(Val::Double(-d)),
        (UnOp::Plus, Val::Int(_) | Val::Double(_)) => Ok(v),
        (UnOp::BitNot, _) => Ok(Val::Int(!as_int(v, "~")?)),
        _ => Err(EvalError::Bad(format!("{op:?} takes a number, not {v}"))),
    }
}

fn binary(op: BinOp, a: Val, b: Val) -> Result<Val, EvalError> {
    if a == Val::Null || b == Val::Null {
        return Ok(Val::Null);
    }
    use BinOp::*;
    match op {
        Eq | Ne | Lt | Le | Gt | Ge => compare(op, a, b),
        BitOr | BitXor | BitAnd | Shl | Shr => bits(
            op,
            as_int(a, "a bitwise operator")?,
            as_int(b, "a bitwise operator")?,
        ),
        Add | Sub | Mul | Div => match (a, b) {
            (Val::Int(x), Val::Int(y)) => int_arith(op, x, y),
            _ => {
                let (x, y) = (as_double(a, "arithmetic")?, as_double(b, "arithmetic")?);
                Ok(Val::Double(match op {
                    Add => x + y,
                    Sub => x - y,
                    Mul => x * y,
                    _ => x / y,
                }))
            }
        },
        Mod => match (a, b) {
            (Val::Int(x), Val::Int(y)) => int_arith(Mod, x, y),
            _ => Err(EvalError::Bad("% takes integers".into())),
        },
        And | Or => unreachable_logic(),
    }
}

/// AND and OR are evaluated lazily in [`Expr::eval`]; never here.
fn unreachable_logic() -> Result<Val, EvalError> {
    Err(EvalError::Bad(
        "internal: logic operator evaluated eagerly".into(),
    ))
}

/// Integer `+ - * / %` (and `mod()`), overflow and division by zero as errors.
pub fn int_arith(op: BinOp, x: i64, y: i64) -> Result<Val, EvalError> {
    let r = match op {
        BinOp::Add => x.checked_add(y).ok_or(EvalError::Overflow("an addition"))?,
        BinOp::Sub => x
            .checked_sub(y)
            .ok_or(EvalError::Overflow("a subtraction"))?,
        BinOp::Mul => x
            .checked_mul(y)
            .ok_or(EvalError::Overflow("a multiplication"))?,
        BinOp::Div if y == 0 => return Err(EvalError::DivisionByZero),
        BinOp::Div => x.checked_div(y).ok_or(EvalError::Overflow("a division"))?,
        BinOp::Mod if y == 0 => return Err(EvalError::DivisionByZero),
        // i64::MIN % -1 is 0 arithmetically; Rust's `%` would trap.
        BinOp::Mod => x.checked_rem(y).unwrap_or(0),
        _ => return Err(EvalError::Bad(format!("{op:?} is not arithmetic"))),
    };
    Ok(Val::Int(r))
}

fn bits(op: BinOp, x: i64, y: i64) -> Result<Val, EvalError> {
    let shift = || {
        u32::try_from(y)
            .ok()
            .filter(|s| *s < 64)
            .ok_or_else(|| EvalError::Bad(format!("shift by {y} is out of range (0 to 63)")))
    };
    Ok(Val::Int(match op {
        BinOp::BitOr => x | y,
        BinOp::BitXor => x ^ y,
        BinOp::BitAnd => x & y,
        BinOp::Shl => x << shift()?,
        _ => x >> shift()?,
    }))
}

fn compare(op: BinOp, a: Val, b: Val) -> Result<Val, EvalError> {
    let ord = match (a, b) {
        (Val::Int(x), Val::Int(y)) => x.cmp(&y),
        (Val::Bool(x), Val::Bool(y)) => x.cmp(&y),
        _ => {
            let (x, y) = (as_double(a, "a comparison")?, as_double(b, "a comparison")?);
            match x.partial_cmp(&y) {
                Some(o) => o,
                None => return Ok(Val::Bool(op == BinOp::Ne)),
            }
        }
    };
    use std::cmp::Ordering::*;
    Ok(Val::Bool(match op {
        BinOp::Eq => ord == Equal,
        BinOp::Ne => ord != Equal,
        BinOp::Lt => ord == Less,
        BinOp::Le => ord != Greater,
        BinOp::Gt => ord == Greater,
        _ => ord != Less,
    }))
}
