//! A script's text into a [`Script`]: SQL statements (ended by `;`, possibly over several
//! lines, `:var` as bind slots) and meta-commands (`\set`, `\sleep`, `\if`, `\elif`,
//! `\else`, `\endif`, `\gset`), with `\if` blocks compiled to jumps. Every mistake is a
//! [`ScriptError`] at the script's line and column saying what to do.

use super::expr::Expr;
use super::exprparse;
use super::sql::{self, Bound, Lexical, Stop};
use super::vars::Names;

/// A mistake in a script, located.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}:{line}:{col}: {message}")]
pub struct ScriptError {
    /// The script as the study names it (a path, or `builtin:NAME`).
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub message: String,
}

/// One SQL statement of a script.
#[derive(Debug, Clone)]
pub struct Stmt {
    pub line: usize,
    pub col: usize,
    /// The statement as written (variables as `:name`), for the step's details.
    pub text: String,
    pub bound: Bound,
    /// `\gset`: the variable slot of each column of the one row it returns.
    pub gset: Option<Vec<usize>>,
}

/// What `\sleep` waits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Amount {
    Const(i64),
    Var(usize),
}

/// One command of a compiled script.
#[derive(Debug, Clone)]
pub enum Op {
    /// Run statement `n` of the script.
    Sql(usize),
    Set(usize, Expr),
    /// `\sleep`: an amount times this many microseconds.
    Sleep(Amount, u64),
    /// `\if`/`\elif`: go on when the condition is true, else jump to the command index.
    Branch(Expr, usize),
    /// End of a taken branch: jump past its `\endif`.
    Jump(usize),
}

/// A command and the line it came from.
#[derive(Debug, Clone)]
pub struct Cmd {
    pub line: usize,
    pub op: Op,
}

/// A script parsed once; each client interprets it with its own variables.
#[derive(Debug, Clone)]
pub struct Script {
    pub file: String,
    pub cmds: Vec<Cmd>,
    pub stmts: Vec<Stmt>,
}

/// An open `\if`: where it began, the branch to point at the next one, the jumps to point
/// past its `\endif`, and whether `\else` was seen.
struct Frame {
    line: usize,
    col: usize,
    branch: Option<usize>,
    jumps: Vec<usize>,
    seen_else: bool,
}

/// A statement being read.
struct Pending {
    text: String,
    line: usize,
    col: usize,
}

struct Parser<'a> {
    file: &'a str,
    script: usize,
    names: &'a mut Names,
    cmds: Vec<Cmd>,
    stmts: Vec<Stmt>,
    frames: Vec<Frame>,
    pending: Option<Pending>,
    lexical: Lexical,
}

/// Parse script number `script` (its text `text`, named `file` in errors), its variables
/// given slots in `names`.
pub fn parse(
    file: &str,
    script: usize,
    text: &str,
    names: &mut Names,
) -> Result<Script, ScriptError> {
    let mut p = Parser {
        file,
        script,
        names,
        cmds: Vec::new(),
        stmts: Vec::new(),
        frames: Vec::new(),
        pending: None,
        lexical: Lexical::Code,
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let lineno = i + 1;
        let indent = line.len() - line.trim_start().len();
        if p.pending.is_none() && p.lexical == Lexical::Code && line[indent..].starts_with('\\') {
            // A meta-command may go on over lines ending with `\`.
            let mut meta = line[indent..].trim_end().to_string();
            while meta.ends_with('\\') && i + 1 < lines.len() {
                meta.pop();
                i += 1;
                meta.push(' ');
                meta.push_str(lines[i].trim());
            }
            p.meta(&meta, lineno, char_col(line, indent))?;
        } else {
            p.sql_line(line, lineno)?;
        }
        i += 1;
    }
    p.finish(lines.len())
}

/// 1-based column (in characters) of byte `at` of `line`.
fn char_col(line: &str, at: usize) -> usize {
    line[..at.min(line.len())].chars().count() + 1
}

impl Parser<'_> {
    fn err<T>(
        &self,
        line: usize,
        col: usize,
        message: impl Into<String>,
    ) -> Result<T, ScriptError> {
        Err(ScriptError {
            file: self.file.to_string(),
            line,
            col,
            message: message.into(),
        })
    }

    /// Add SQL text from `line`, ending statements at `;` and at a `\gset`.
    fn sql_line(&mut self, line: &str, lineno: usize) -> Result<(), ScriptError> {
        let mut from = 0;
        loop {
            let start = from;
            let stop = sql::scan(line, from, &mut self.lexical);
            let end = match stop {
                Stop::End => line.len(),
                Stop::Comment(at) | Stop::Semicolon(at) | Stop::Backslash(at) => at,
            };
            self.append(&line[start..end], lineno, char_col(line, start));
            match stop {
                Stop::End | Stop::Comment(_) => {
                    if let Some(p) = self.pending.as_mut() {
                        p.text.push('\n');
                    }
                    return Ok(());
                }
                Stop::Semicolon(at) => {
                    self.end_statement(None)?;
                    from = at + 1;
                }
                Stop::Backslash(at) => {
                    let meta = line[at..].trim_end();
                    let col = char_col(line, at);
                    if !meta.starts_with("\\gset") {
                        let what = meta.split_whitespace().next().unwrap_or("\\");
                        let m = if what.starts_with("\\;") {
                            "`\\;` (several statements sent as one) is not supported: end each statement with `;`".to_string()
                        } else {
                            format!(
                                "{what} inside an SQL statement: end the statement with `;` first, and put each meta-command on its own line"
                            )
                        };
                        return self.err(lineno, col, m);
                    }
                    return self.gset(meta, lineno, col);
                }
            }
        }
    }

    fn append(&mut self, text: &str, line: usize, col: usize) {
        match self.pending.as_mut() {
            Some(p) => p.text.push_str(text),
            None if text.trim().is_empty() => {}
            None => {
                let lead = text.len() - text.trim_start().len();
                self.pending = Some(Pending {
                    text: text[lead..].to_string(),
                    line,
                    col: col + text[..lead].chars().count(),
                });
            }
        }
    }

    /// The statement read so far is complete; `gset` names its row's variables.
    fn end_statement(&mut self, gset: Option<(&str, usize, usize)>) -> Result<(), ScriptError> {
        let Some(p) = self.pending.take() else {
            return match gset {
                Some((_, line, col)) => {
                    self.err(line, col, "\\gset must follow a query that returns one row")
                }
                None => Ok(()),
            };
        };
        let text = p.text.trim_end().to_string();
        if sql::is_blank(&text) {
            return Ok(());
        }
        let bound = sql::bind(&text, self.names, self.script, p.line, p.col);
        let gset = match gset {
            None => None,
            Some((prefix, line, col)) => {
                let cols = sql::result_columns(&text).or_else(|m| self.err(line, col, m))?;
                Some(
                    cols.iter()
                        .map(|c| self.names.assign(&format!("{prefix}{c}")))
                        .collect(),
                )
            }
        };
        self.cmds.push(Cmd {
            line: p.line,
            op: Op::Sql(self.stmts.len()),
        });
        self.stmts.push(Stmt {
            line: p.line,
            col: p.col,
            text,
            bound,
            gset,
        });
        Ok(())
    }

    /// `\gset [prefix]` ending the statement being read, or after the last one.
    fn gset(&mut self, meta: &str, line: usize, col: usize) -> Result<(), ScriptError> {
        let mut words = meta.split_whitespace().skip(1);
        let prefix = words.next().unwrap_or("");
        if let Some(extra) = words.next() {
            return self.err(
                line,
                col,
                format!("\\gset takes one prefix at most; remove `{extra}`"),
            );
        }
        if !prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return self.err(
                line,
                col,
                format!("\\gset prefix `{prefix}` must be letters, digits and `_`"),
            );
        }
        if self.pending.is_none() {
            // `\gset` on the line after a statement ended by `;`.
            if let Some(Cmd { op: Op::Sql(n), .. }) = self.cmds.last()
                && let Some(s) = self.stmts.get(*n)
                && s.gset.is_none()
            {
                let n = *n;
                let text = s.text.clone();
                let cols = sql::result_columns(&text).or_else(|m| self.err(line, col, m))?;
                let slots = cols
                    .iter()
                    .map(|c| self.names.assign(&format!("{prefix}{c}")))
                    .collect();
                self.stmts[n].gset = Some(slots);
                return Ok(());
            }
        }
        self.end_statement(Some((prefix, line, col)))
    }

    /// One meta-command line (continuations joined), at column `col`.
    fn meta(&mut self, meta: &str, line: usize, col: usize) -> Result<(), ScriptError> {
        let name_end = meta.find(char::is_whitespace).unwrap_or(meta.len());
        let name = &meta[..name_end];
        let args = meta[name_end..].trim();
        let args_col = col
            + meta[..meta.len() - meta[name_end..].trim_start().len()]
                .chars()
                .count();
        match name.to_ascii_lowercase().as_str() {
            "\\set" => self.set(args, line, args_col),
            "\\sleep" => self.sleep(args, line, args_col),
            "\\if" => {
                let cond = self.expr(args, line, args_col)?;
                self.frames.push(Frame { line, col, branch: Some(self.cmds.len()), jumps: Vec::new(), seen_else: false });
                self.cmds.push(Cmd { line, op: Op::Branch(cond, 0) });
                Ok(())
            }
            "\\elif" => {
                let cond = self.expr(args, line, args_col)?;
                self.next_branch(line, col, "\\elif")?;
                if let Some(f) = self.frames.last_mut() {
                    f.branch = Some(self.cmds.len());
                }
                self.cmds.push(Cmd { line, op: Op::Branch(cond, 0) });
                Ok(())
            }
            "\\else" => {
                self.no_args(args, line, args_col, "\\else")?;
                self.next_branch(line, col, "\\else")?;
                if let Some(f) = self.frames.last_mut() {
                    f.branch = None;
                    f.seen_else = true;
                }
                Ok(())
            }
            "\\endif" => {
                self.no_args(args, line, args_col, "\\endif")?;
                let Some(f) = self.frames.pop() else {
                    return self.err(line, col, "\\endif without \\if");
                };
                let here = self.cmds.len();
                for at in f.branch.into_iter().chain(f.jumps) {
                    self.patch(at, here);
                }
                Ok(())
            }
            "\\gset" => self.gset(meta, line, col),
            "\\aset" => self.err(line, col, "\\aset is not supported: end a query returning one row with \\gset instead"),
            "\\startpipeline" | "\\endpipeline" | "\\syncpipeline" => self.err(
                line,
                col,
                format!("{name} is not supported: a dbduel client has one statement in flight, the same on every engine; remove the pipeline commands"),
            ),
            "\\shell" | "\\setshell" => self.err(
                line,
                col,
                format!("{name} is not supported: dbduel runs no shell commands from scripts; compute the value with \\set"),
            ),
            _ => self.err(
                line,
                col,
                format!("unknown meta-command {name}; scripts take \\set, \\sleep, \\if, \\elif, \\else, \\endif and \\gset"),
            ),
        }
    }

    fn no_args(&self, args: &str, line: usize, col: usize, what: &str) -> Result<(), ScriptError> {
        if args.is_empty() {
            Ok(())
        } else {
            self.err(
                line,
                col,
                format!("{what} takes no arguments; remove `{args}`"),
            )
        }
    }

    fn expr(&mut self, text: &str, line: usize, col: usize) -> Result<Expr, ScriptError> {
        exprparse::parse(text, self.names, self.script, line, col)
            .or_else(|e| self.err(line, e.col, e.message))
    }

    /// `\elif` or `\else`: close the branch that ran (a jump past `\endif`) and point the
    /// last condition here.
    fn next_branch(&mut self, line: usize, col: usize, what: &str) -> Result<(), ScriptError> {
        match self.frames.last() {
            None => return self.err(line, col, format!("{what} without \\if")),
            Some(f) if f.seen_else => {
                return self.err(
                    line,
                    col,
                    format!(
                        "{what} after \\else (the \\if at line {} already has its \\else)",
                        f.line
                    ),
                );
            }
            Some(_) => {}
        }
        let jump = self.cmds.len();
        self.cmds.push(Cmd {
            line,
            op: Op::Jump(0),
        });
        let here = self.cmds.len();
        if let Some(f) = self.frames.last_mut() {
            f.jumps.push(jump);
            if let Some(b) = f.branch.take() {
                self.patch(b, here);
            }
        }
        Ok(())
    }

    fn patch(&mut self, at: usize, to: usize) {
        if let Some(Cmd {
            op: Op::Branch(_, t) | Op::Jump(t),
            ..
        }) = self.cmds.get_mut(at)
        {
            *t = to;
        }
    }

    fn set(&mut self, args: &str, line: usize, col: usize) -> Result<(), ScriptError> {
        let name_end = args.find(char::is_whitespace).unwrap_or(args.len());
        let name = &args[..name_end];
        if name.is_empty() {
            return self.err(
                line,
                col,
                "\\set needs a variable name and an expression: \\set aid random(1, 100000)",
            );
        }
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return self.err(
                line,
                col,
                format!("`{name}` is no variable name: use letters, digits and `_`"),
            );
        }
        let rest = &args[name_end..];
        let expr_col = col + name.chars().count() + (rest.len() - rest.trim_start().len());
        if rest.trim().is_empty() {
            return self.err(
                line,
                expr_col,
                format!("\\set {name} needs an expression after the name"),
            );
        }
        let e = self.expr(rest.trim(), line, expr_col)?;
        let slot = self.names.assign(name);
        self.cmds.push(Cmd {
            line,
            op: Op::Set(slot, e),
        });
        Ok(())
    }

    fn sleep(&mut self, args: &str, line: usize, col: usize) -> Result<(), ScriptError> {
        let mut words = args.split_whitespace();
        let (Some(n), unit, None) = (words.next(), words.next(), words.next()) else {
            return self.err(line, col, "\\sleep takes an amount and an optional unit: \\sleep 10 ms (us, ms or s; s when left out)");
        };
        let amount = if let Some(var) = n.strip_prefix(':') {
            let place = super::vars::Place {
                script: self.script,
                line,
                col,
            };
            Amount::Var(self.names.read(var, place))
        } else {
            match n.parse::<i64>() {
                Ok(v) => Amount::Const(v),
                Err(_) => {
                    return self.err(
                        line,
                        col,
                        format!("\\sleep: `{n}` is not an integer or a :variable"),
                    );
                }
            }
        };
        let unit_us = match unit.map(str::to_ascii_lowercase).as_deref() {
            None | Some("s") => 1_000_000,
            Some("ms") => 1_000,
            Some("us") => 1,
            Some(u) => {
                return self.err(line, col, format!("\\sleep: unit `{u}` is not us, ms or s"));
            }
        };
        self.cmds.push(Cmd {
            line,
            op: Op::Sleep(amount, unit_us),
        });
        Ok(())
    }

    fn finish(mut self, last_line: usize) -> Result<Script, ScriptError> {
        if self.lexical != Lexical::Code {
            let (l, c) = self
                .pending
                .as_ref()
                .map_or((last_line, 1), |p| (p.line, p.col));
            return self.err(l, c, "this statement's quote or comment is never closed");
        }
        // A last statement may end without `;`, as pgbench allows.
        self.end_statement(None)?;
        if let Some(f) = self.frames.last() {
            return self.err(f.line, f.col, "\\if without \\endif: close it with \\endif");
        }
        Ok(Script {
            file: self.file.to_string(),
            cmds: self.cmds,
            stmts: self.stmts,
        })
    }
}
