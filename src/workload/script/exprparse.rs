//! Reading an expression's text into an [`Expr`]: tokens with their columns, then a
//! recursive-descent parser over pgbench's operator precedence, lowest first: `OR`, `AND`,
//! `NOT`, `IS`/`ISNULL`/`NOTNULL`, comparisons, bitwise `| # & << >>`, `+ -`, `* / %`, then
//! unary `- + ~`. Variables resolve to slots as they are read; functions are checked for
//! name and arity.

use super::expr::{BinOp, Expr, UnOp, Val};
use super::func;
use super::vars::{Names, Place};

/// A mistake in an expression: its column (1-based, in the line) and what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct ExprError {
    pub col: usize,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Int(i128),
    Double(f64),
    Word(String),
    Var(String),
    Op(&'static str),
    LParen,
    RParen,
    Comma,
}

/// Operators, longest first so `<=` is not read as `<`.
const OPS: &[&str] = &[
    "<=", ">=", "<>", "!=", "<<", ">>", "+", "-", "*", "/", "%", "=", "<", ">", "|", "#", "&", "~",
];

fn lex(text: &str, col0: usize) -> Result<Vec<(Tok, usize)>, ExprError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let word = |i: &mut usize| {
        let s = *i;
        while *i < chars.len() && (chars[*i].is_ascii_alphanumeric() || chars[*i] == '_') {
            *i += 1;
        }
        chars[s..*i].iter().collect::<String>()
    };
    while i < chars.len() {
        let c = chars[i];
        let col = col0 + i;
        let err = |m: String| ExprError { col, message: m };
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let tok = if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let s = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric()
                    || chars[i] == '.'
                    || ((chars[i] == '+' || chars[i] == '-') && matches!(chars[i - 1], 'e' | 'E')))
            {
                i += 1;
            }
            let t: String = chars[s..i].iter().collect();
            if let Ok(n) = t.parse::<i128>() {
                Tok::Int(n)
            } else if let Ok(d) = t.parse::<f64>() {
                Tok::Double(d)
            } else {
                return Err(err(format!("`{t}` is not a number")));
            }
        } else if c == ':' {
            i += 1;
            let name = word(&mut i);
            if name.is_empty() {
                return Err(err(
                    "`:` must be followed by a variable name, as in :aid".into()
                ));
            }
            Tok::Var(name)
        } else if c.is_ascii_alphabetic() || c == '_' {
            Tok::Word(word(&mut i))
        } else if c == '(' {
            i += 1;
            Tok::LParen
        } else if c == ')' {
            i += 1;
            Tok::RParen
        } else if c == ',' {
            i += 1;
            Tok::Comma
        } else {
            let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
            match OPS.iter().find(|op| rest.starts_with(**op)) {
                Some(op) => {
                    i += op.len();
                    Tok::Op(op)
                }
                None => return Err(err(format!("unexpected `{c}` in an expression"))),
            }
        };
        out.push((tok, col));
    }
    Ok(out)
}

/// Parse `text`, which starts at column `col0` (1-based) of `line` in script `script`.
pub fn parse(
    text: &str,
    names: &mut Names,
    script: usize,
    line: usize,
    col0: usize,
) -> Result<Expr, ExprError> {
    let toks = lex(text, col0)?;
    let end = col0 + text.chars().count();
    let mut p = Parser {
        toks,
        at: 0,
        names,
        script,
        line,
        end,
    };
    if p.toks.is_empty() {
        return Err(ExprError {
            col: col0,
            message: "an expression is missing here".into(),
        });
    }
    let e = p.or()?;
    match p.toks.get(p.at) {
        None => Ok(e),
        Some((t, col)) => Err(ExprError {
            col: *col,
            message: format!("unexpected {} after a complete expression", show(t)),
        }),
    }
}

fn show(t: &Tok) -> String {
    match t {
        Tok::Int(n) => format!("`{n}`"),
        Tok::Double(d) => format!("`{d}`"),
        Tok::Word(w) => format!("`{w}`"),
        Tok::Var(v) => format!("`:{v}`"),
        Tok::Op(o) => format!("`{o}`"),
        Tok::LParen => "`(`".into(),
        Tok::RParen => "`)`".into(),
        Tok::Comma => "`,`".into(),
    }
}

struct Parser<'a> {
    toks: Vec<(Tok, usize)>,
    at: usize,
    names: &'a mut Names,
    script: usize,
    line: usize,
    /// Column just past the text, for "missing at the end" errors.
    end: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at).map(|t| &t.0)
    }

    fn col(&self) -> usize {
        self.toks.get(self.at).map_or(self.end, |t| t.1)
    }

    fn err<T>(&self, message: impl Into<String>) -> Result<T, ExprError> {
        Err(ExprError {
            col: self.col(),
            message: message.into(),
        })
    }

    /// Is the next token the keyword `kw` (any case)? Consumes it if so.
    fn keyword(&mut self, kw: &str) -> bool {
        let yes = matches!(self.peek(), Some(Tok::Word(w)) if w.eq_ignore_ascii_case(kw));
        if yes {
            self.at += 1;
        }
        yes
    }

    fn op(&mut self, ops: &[(&str, BinOp)]) -> Option<BinOp> {
        let Some(Tok::Op(o)) = self.peek() else {
            return None;
        };
        let found = ops.iter().find(|(s, _)| s == o).map(|x| x.1);
        if found.is_some() {
            self.at += 1;
        }
        found
    }

    fn or(&mut self) -> Result<Expr, ExprError> {
        let mut e = self.and()?;
        while self.keyword("or") {
            e = Expr::Binary(BinOp::Or, Box::new(e), Box::new(self.and()?));
        }
        Ok(e)
    }

    fn and(&mut self) -> Result<Expr, ExprError> {
        let mut e = self.not()?;
        while self.keyword("and") {
            e = Expr::Binary(BinOp::And, Box::new(e), Box::new(self.not()?));
        }
        Ok(e)
    }

    fn not(&mut self) -> Result<Expr, ExprError> {
        if self.keyword("not") {
            return Ok(Expr::Unary(UnOp::Not, Box::new(self.not()?)));
        }
        self.is()
    }

    fn is(&mut self) -> Result<Expr, ExprError> {
        let e = self.compare()?;
        if self.keyword("isnull") {
            return Ok(Expr::Unary(UnOp::IsNull(true), Box::new(e)));
        }
        if self.keyword("notnull") {
            return Ok(Expr::Unary(UnOp::IsNull(false), Box::new(e)));
        }
        if !self.keyword("is") {
            return Ok(e);
        }
        let want = !self.keyword("not");
        let op = if self.keyword("null") {
            UnOp::IsNull(want)
        } else if self.keyword("true") {
            UnOp::IsTrue(want)
        } else if self.keyword("false") {
            UnOp::IsFalse(want)
        } else {
            return self.err("IS must be followed by NULL, TRUE or FALSE (or NOT and one of them)");
        };
        Ok(Expr::Unary(op, Box::new(e)))
    }

    fn compare(&mut self) -> Result<Expr, ExprError> {
        const CMP: &[(&str, BinOp)] = &[
            ("=", BinOp::Eq),
            ("<>", BinOp::Ne),
            ("!=", BinOp::Ne),
            ("<", BinOp::Lt),
            ("<=", BinOp::Le),
            (">", BinOp::Gt),
            (">=", BinOp::Ge),
        ];
        let e = self.bits()?;
        match self.op(CMP) {
            Some(op) => Ok(Expr::Binary(op, Box::new(e), Box::new(self.bits()?))),
            None => Ok(e),
        }
    }

    /// One left-associative level: `next` operands joined by `ops`.
    fn level(
        &mut self,
        ops: &[(&str, BinOp)],
        next: fn(&mut Self) -> Result<Expr, ExprError>,
    ) -> Result<Expr, ExprError> {
        let mut e = next(self)?;
        while let Some(op) = self.op(ops) {
            e = Expr::Binary(op, Box::new(e), Box::new(next(self)?));
        }
        Ok(e)
    }

    fn bits(&mut self) -> Result<Expr, ExprError> {
        const OPS: &[(&str, BinOp)] = &[
            ("|", BinOp::BitOr),
            ("#", BinOp::BitXor),
            ("&", BinOp::BitAnd),
            ("<<", BinOp::Shl),
            (">>", BinOp::Shr),
        ];
        self.level(OPS, Self::sum)
    }

    fn sum(&mut self) -> Result<Expr, ExprError> {
        self.level(&[("+", BinOp::Add), ("-", BinOp::Sub)], Self::product)
    }

    fn product(&mut self) -> Result<Expr, ExprError> {
        const OPS: &[(&str, BinOp)] = &[("*", BinOp::Mul), ("/", BinOp::Div), ("%", BinOp::Mod)];
        self.level(OPS, Self::unary)
    }

    fn unary(&mut self) -> Result<Expr, ExprError> {
        let op = match self.peek() {
            Some(Tok::Op("-")) => UnOp::Neg,
            Some(Tok::Op("+")) => UnOp::Plus,
            Some(Tok::Op("~")) => UnOp::BitNot,
            _ => return self.primary(),
        };
        self.at += 1;
        // -9223372036854775808 is a constant, though 9223372036854775808 alone is not.
        if op == UnOp::Neg
            && let Some(Tok::Int(n)) = self.peek()
        {
            let n = -*n;
            return match i64::try_from(n) {
                Ok(v) => {
                    self.at += 1;
                    Ok(Expr::Const(Val::Int(v)))
                }
                Err(_) => self.err(format!("integer constant {n} is out of range (64 bits)")),
            };
        }
        Ok(Expr::Unary(op, Box::new(self.unary()?)))
    }

    fn primary(&mut self) -> Result<Expr, ExprError> {
        let col = self.col();
        let Some(tok) = self.peek().cloned() else {
            return self.err("the expression ends where a value was expected");
        };
        self.at += 1;
        match tok {
            Tok::Int(n) => match i64::try_from(n) {
                Ok(v) => Ok(Expr::Const(Val::Int(v))),
                Err(_) => Err(ExprError {
                    col,
                    message: format!("integer constant {n} is out of range (64 bits)"),
                }),
            },
            Tok::Double(d) => Ok(Expr::Const(Val::Double(d))),
            Tok::Var(name) => {
                let place = Place {
                    script: self.script,
                    line: self.line,
                    col,
                };
                Ok(Expr::Var(self.names.read(&name, place)))
            }
            Tok::LParen => {
                let e = self.or()?;
                self.close()?;
                Ok(e)
            }
            Tok::Word(w) => self.word(&w, col),
            t => Err(ExprError {
                col,
                message: format!("unexpected {} where a value was expected", show(&t)),
            }),
        }
    }

    fn close(&mut self) -> Result<(), ExprError> {
        if self.peek() == Some(&Tok::RParen) {
            self.at += 1;
            Ok(())
        } else {
            self.err("a `)` is missing here")
        }
    }

    /// A keyword constant, `CASE`, or a function call.
    fn word(&mut self, w: &str, col: usize) -> Result<Expr, ExprError> {
        match w.to_ascii_lowercase().as_str() {
            "true" => return Ok(Expr::Const(Val::Bool(true))),
            "false" => return Ok(Expr::Const(Val::Bool(false))),
            "null" => return Ok(Expr::Const(Val::Null)),
            "case" => return self.case(),
            _ => {}
        }
        let Some((f, lo, hi)) = func::lookup(w) else {
            return Err(ExprError {
                col,
                message: format!("unknown function `{w}`; functions are: {}", func::names()),
            });
        };
        if self.peek() != Some(&Tok::LParen) {
            return self.err(format!("`{w}` is a function: call it as {w}(…)"));
        }
        self.at += 1;
        let mut args = Vec::new();
        if self.peek() == Some(&Tok::RParen) {
            self.at += 1;
        } else {
            loop {
                args.push(self.or()?);
                if self.peek() == Some(&Tok::Comma) {
                    self.at += 1;
                    continue;
                }
                self.close()?;
                break;
            }
        }
        if func::seeded(f) && args.len() + 1 == hi {
            let place = Place {
                script: self.script,
                line: self.line,
                col,
            };
            args.push(Expr::Var(
                self.names.read(super::default_seed_name(), place),
            ));
        }
        if args.len() < lo || args.len() > hi {
            let want = match (lo, hi) {
                (a, b) if a == b => format!("{a}"),
                (a, usize::MAX) => format!("at least {a}"),
                (a, b) => format!("{a} to {b}"),
            };
            return Err(ExprError {
                col,
                message: format!("{w}() takes {want} argument(s), not {}", args.len()),
            });
        }
        Ok(Expr::Call(f, args))
    }

    fn case(&mut self) -> Result<Expr, ExprError> {
        let mut arms = Vec::new();
        while self.keyword("when") {
            let cond = self.or()?;
            if !self.keyword("then") {
                return self.err("CASE WHEN … needs THEN here");
            }
            arms.push((cond, self.or()?));
        }
        if arms.is_empty() {
            return self.err("CASE needs at least one WHEN … THEN …");
        }
        let otherwise = if self.keyword("else") {
            Some(Box::new(self.or()?))
        } else {
            None
        };
        if !self.keyword("end") {
            return self.err("CASE must end with END");
        }
        Ok(Expr::Case(arms, otherwise))
    }
}
