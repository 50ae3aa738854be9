//! The script language against pgbench's documented semantics: expressions and their
//! values (overflow and division by zero as errors), the random functions' laws, scripts'
//! structure and their located errors.

use super::expr::{Env, EvalError, Val};
use super::parse::{Op, ScriptError, parse};
use super::vars::{Names, Vars};
use super::*;
use crate::dataset::rng::SplitMix64;

/// Evaluate `text` with `:x` = 10 and `:s` = text "7".
fn eval(text: &str) -> Result<Val, String> {
    let mut names = Names::default();
    for n in PREDEFINED {
        names.assign(n);
    }
    names.assign("x");
    names.assign("s");
    let e =
        exprparse::parse(text, &mut names, 0, 1, 1).map_err(|e| format!("parse: {}", e.message))?;
    let mut vars = Vars::new(names.len());
    vars.set(names.get("x").expect("x"), Val::Int(10));
    vars.set_text(names.get("s").expect("s"), "7");
    vars.set(names.get("default_seed").expect("seed"), Val::Int(5432));
    let mut rng = SplitMix64::stream(1, 2);
    let mut env = Env {
        vars: &vars,
        names: &names,
        rng: &mut rng,
    };
    e.eval(&mut env).map_err(|e| e.to_string())
}

#[test]
fn expressions_have_pgbench_documented_values() {
    use Val::*;
    let table: &[(&str, Val)] = &[
        // operators, as pgbench's table of operators shows them
        ("5 + 4", Int(9)),
        ("3 - 2.0", Double(1.0)),
        ("2 * 3", Int(6)),
        ("5 / 3", Int(1)),
        ("-5 / 3", Int(-1)),
        ("5 % 3", Int(2)),
        ("-5 % 3", Int(-2)),
        ("5.0 / 2", Double(2.5)),
        ("-(-9223372036854775807)", Int(9223372036854775807)),
        ("-9223372036854775808", Int(i64::MIN)),
        ("-9223372036854775808 % -1", Int(0)),
        ("1 + 2 * 3", Int(7)),
        ("(1 + 2) * 3", Int(9)),
        ("8 - 3 - 2", Int(3)),
        ("1 | 2", Int(3)),
        ("5 # 1", Int(4)),
        ("5 & 3", Int(1)),
        ("~ 5", Int(-6)),
        ("1 << 2", Int(4)),
        ("8 >> 2", Int(2)),
        ("5 = 4", Bool(false)),
        ("5 <> 4", Bool(true)),
        ("5 != 5", Bool(false)),
        ("5 < 4", Bool(false)),
        ("5 <= 4", Bool(false)),
        ("5 > 4", Bool(true)),
        ("5 >= 5", Bool(true)),
        ("1 < 1.5", Bool(true)),
        ("true AND false", Bool(false)),
        ("true OR false", Bool(true)),
        ("NOT false", Bool(true)),
        ("NULL AND false", Bool(false)),
        ("NULL OR true", Bool(true)),
        ("NULL AND true", Null),
        ("1 is null", Bool(false)),
        ("null is not null", Bool(false)),
        ("1 isnull", Bool(false)),
        ("1 notnull", Bool(true)),
        ("1 is true", Bool(true)),
        ("0 is false", Bool(true)),
        ("null is not true", Bool(true)),
        ("NULL + 1", Null),
        (
            "CASE WHEN 1 > 2 THEN 1 WHEN 2 > 1 THEN 2 ELSE 3 END",
            Int(2),
        ),
        ("CASE WHEN false THEN 1 END", Null),
        // functions, as pgbench's table of functions shows them
        ("abs(-17)", Int(17)),
        ("abs(-1.5)", Double(1.5)),
        ("double(5432)", Double(5432.0)),
        ("exp(1.0)", Double(std::f64::consts::E)),
        ("greatest(5, 4, 3, 2)", Int(5)),
        ("greatest(5, 4.5)", Double(5.0)),
        ("least(5, 4, 3, 2.1)", Double(2.1)),
        ("least(5, 4, 3, 2)", Int(2)),
        ("hash(10, 5432)", Int(-5817877081768721676)),
        ("hash_murmur2(10, 5432)", Int(-5817877081768721676)),
        ("hash_fnv1a(10, 5432)", Int(-7793829335365542153)),
        ("hash(10)", Int(-5817877081768721676)), // :default_seed is 5432 here
        ("int(5.4 + 3.8)", Int(9)),
        ("int(-5.9)", Int(-5)),
        ("ln(1.0)", Double(0.0)),
        ("mod(54, 32)", Int(22)),
        ("pi()", Double(std::f64::consts::PI)),
        ("pow(2.0, 10)", Double(1024.0)),
        ("power(2.0, 10)", Double(1024.0)),
        ("sqrt(2.0)", Double(std::f64::consts::SQRT_2)),
        ("random(7, 7)", Int(7)),
        // variables, text read as a number
        (":x * 2", Int(20)),
        (":s + 1", Int(8)),
        ("10 * :x % 7", Int(2)),
    ];
    for (text, want) in table {
        assert_eq!(eval(text).as_ref(), Ok(want), "{text}");
    }
}

#[test]
fn integer_overflow_and_division_by_zero_are_errors() {
    let overflow = |t: &str| {
        let e = eval(t).expect_err(t);
        assert!(e.starts_with("integer out of range"), "{t}: {e}");
    };
    overflow("9223372036854775807 + 1");
    overflow("-9223372036854775808 - 1");
    overflow("9223372036854775807 * 2");
    overflow("-(-9223372036854775808)");
    overflow("-9223372036854775808 / -1");
    overflow("abs(-9223372036854775808)");
    overflow("int(1e30)");
    for t in ["1 / 0", "1 % 0", "mod(5, 0)", ":x / (:x - 10)"] {
        assert_eq!(eval(t), Err(EvalError::DivisionByZero.to_string()), "{t}");
    }
    // doubles divide as IEEE doubles do
    assert_eq!(eval("1.0 / 0"), Ok(Val::Double(f64::INFINITY)));
    assert!(
        eval("9223372036854775808")
            .expect_err("too big")
            .contains("out of range")
    );
    assert!(
        eval("random(5, 1)")
            .expect_err("empty")
            .contains("empty range")
    );
    assert!(
        eval("random_gaussian(1, 10, 1.5)")
            .expect_err("p")
            .contains("at least 2")
    );
    assert!(
        eval("random_exponential(1, 10, 0)")
            .expect_err("p")
            .contains("greater than 0")
    );
    assert!(
        eval("random_zipfian(1, 10, 1.0)")
            .expect_err("p")
            .contains("1.001")
    );
    assert!(eval("1 % 2.0").expect_err("mod").contains("integers"));
}

#[test]
fn bad_expressions_are_located() {
    let err = |t: &str| eval(t).expect_err(t);
    assert!(err("1 +").contains("ends where a value"), "{}", err("1 +"));
    assert!(err("nope(1)").contains("unknown function `nope`"));
    assert!(err("abs(1, 2)").contains("takes 1 argument(s), not 2"));
    assert!(err("(1 + 2").contains("`)` is missing"));
    assert!(err("1 2").contains("unexpected `2`"));
    assert!(err("'yes'").contains("unexpected `'`"));
    assert!(err("CASE 1 END").contains("WHEN"));
    let mut names = Names::default();
    let e = exprparse::parse("1 + $", &mut names, 0, 3, 10).expect_err("bad char");
    assert_eq!(e.col, 14);
}

/// Mean and variance of `n` draws.
fn moments(n: usize, mut draw: impl FnMut(&mut SplitMix64) -> i64) -> (f64, f64) {
    let mut rng = SplitMix64::stream(7, 11);
    let xs: Vec<f64> = (0..n).map(|_| draw(&mut rng) as f64).collect();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0);
    (mean, var)
}

/// The sample mean is within 5 standard errors of the law's, and the sample variance
/// within 5 of its own standard errors (for a variance `v` with fourth central moment
/// `m4`, the error of the sample variance is about sqrt((m4 - v^2) / n)).
fn within_5_sigma(
    what: &str,
    n: usize,
    (mean, var): (f64, f64),
    law_mean: f64,
    law_var: f64,
    law_m4: f64,
) {
    let se_mean = (law_var / n as f64).sqrt();
    assert!(
        (mean - law_mean).abs() < 5.0 * se_mean,
        "{what}: mean {mean} vs {law_mean} ± {se_mean}"
    );
    let se_var = ((law_m4 - law_var * law_var) / n as f64).sqrt();
    assert!(
        (var - law_var).abs() < 5.0 * se_var,
        "{what}: variance {var} vs {law_var} ± {se_var}"
    );
}

/// Mean, variance and fourth central moment of a law over the integers `lb..=ub` with
/// weights `w`.
fn law(lb: i64, ub: i64, w: impl Fn(i64) -> f64) -> (f64, f64, f64) {
    let total: f64 = (lb..=ub).map(&w).sum();
    let p = |x: i64| w(x) / total;
    let mean: f64 = (lb..=ub).map(|x| x as f64 * p(x)).sum();
    let var: f64 = (lb..=ub).map(|x| (x as f64 - mean).powi(2) * p(x)).sum();
    let m4: f64 = (lb..=ub).map(|x| (x as f64 - mean).powi(4) * p(x)).sum();
    (mean, var, m4)
}

#[test]
fn random_draws_follow_their_laws_within_5_sigma() {
    let n = 200_000;
    let (lb, ub) = (1i64, 100i64);
    let (m, v, m4) = law(lb, ub, |_| 1.0);
    within_5_sigma(
        "uniform",
        n,
        moments(n, |r| func::uniform(r, lb, ub).expect("draw")),
        m,
        v,
        m4,
    );

    // exponential: each integer's cell [x, x+1) of the truncated density
    // exp(-p t / (ub - lb + 1)) on [lb, ub + 1)
    let p = 5.0;
    let width = (ub - lb + 1) as f64;
    let cdf = |t: f64| 1.0 - (-p * t / width).exp();
    let (m, v, m4) = law(lb, ub, |x| cdf((x - lb + 1) as f64) - cdf((x - lb) as f64));
    within_5_sigma(
        "exponential",
        n,
        moments(n, |r| func::exponential(r, lb, ub, p).expect("draw")),
        m,
        v,
        m4,
    );

    // gaussian: a standard normal truncated at ±p over the range, by cells
    let p = 2.5;
    let phi = |z: f64| 0.5 * (1.0 + erf(z / std::f64::consts::SQRT_2));
    let z = |t: f64| 2.0 * p * t / width - p;
    let (m, v, m4) = law(lb, ub, |x| {
        phi(z((x - lb + 1) as f64)) - phi(z((x - lb) as f64))
    });
    within_5_sigma(
        "gaussian",
        n,
        moments(n, |r| func::gaussian(r, lb, ub, p).expect("draw")),
        m,
        v,
        m4,
    );

    // zipfian: P(k) ∝ 1 / k^s
    let s = 1.5;
    let (m, v, m4) = law(lb, ub, |x| 1.0 / ((x - lb + 1) as f64).powf(s));
    within_5_sigma(
        "zipfian",
        n,
        moments(n, |r| func::zipfian(r, lb, ub, s).expect("draw")),
        m,
        v,
        m4,
    );
}

/// The error function (Abramowitz and Stegun 7.1.26 is too coarse for 5 sigma at these
/// sample sizes, so a series and a continued fraction).
fn erf(x: f64) -> f64 {
    if x < 0.0 {
        return -erf(-x);
    }
    if x < 3.0 {
        // Maclaurin series
        let mut sum = 0.0;
        let mut term = x;
        let mut k = 0.0;
        while term.abs() > 1e-17 {
            sum += term / (2.0 * k + 1.0);
            k += 1.0;
            term *= -x * x / k;
        }
        return 2.0 / std::f64::consts::PI.sqrt() * sum;
    }
    1.0 - (-x * x).exp() / (x * std::f64::consts::PI.sqrt()) * (1.0 - 1.0 / (2.0 * x * x))
}

#[test]
fn permute_is_a_permutation() {
    let mut seen = [false; 50];
    for i in 0..50 {
        let Ok(Val::Int(v)) = eval(&format!("permute({i}, 50, 3)")) else {
            panic!("permute")
        };
        assert!((0..50).contains(&v) && !seen[v as usize], "{v}");
        seen[v as usize] = true;
    }
    assert_eq!(eval("permute(7, 50, 3)"), eval("permute(57, 50, 3)"));
}

fn parse_one(text: &str) -> Result<super::parse::Script, ScriptError> {
    let mut names = Names::default();
    for n in PREDEFINED {
        names.assign(n);
    }
    let s = parse("t.sql", 0, text, &mut names)?;
    match names.never_assigned() {
        Some((name, p)) => Err(ScriptError {
            file: "t.sql".into(),
            line: p.line,
            col: p.col,
            message: format!("unknown variable `{name}`"),
        }),
        None => Ok(s),
    }
}

fn error_of(text: &str) -> String {
    parse_one(text).expect_err(text).to_string()
}

#[test]
fn statements_span_lines_and_bind_their_variables() {
    let s = parse_one(
        "-- a comment\n\\set aid random(1, 100000 * :scale)\nUPDATE t\n  SET a = a + :aid, b = ':aid', c = x::int\n  WHERE aid = :aid; SELECT 1;\n",
    )
    .expect("parses");
    assert_eq!(s.stmts.len(), 2);
    assert_eq!(s.stmts[0].line, 3);
    assert_eq!(s.stmts[0].bound.binds.len(), 2);
    assert_eq!(
        s.stmts[0].bound.render(crate::engine::Dialect::Postgres),
        "UPDATE t\n  SET a = a + $1, b = ':aid', c = x::int\n  WHERE aid = $2"
    );
    assert_eq!(
        s.stmts[0].bound.render(crate::engine::Dialect::Sqlite),
        "UPDATE t\n  SET a = a + ?, b = ':aid', c = x::int\n  WHERE aid = ?"
    );
    assert_eq!(s.stmts[1].line, 5);
    assert!(matches!(s.cmds[0].op, Op::Set(..)));
}

#[test]
fn if_blocks_compile_to_jumps() {
    let s = parse_one("\\set x 1\n\\if :x = 1\nSELECT 1;\n\\elif :x = 2\nSELECT 2;\n\\else\nSELECT 3;\n\\endif\nSELECT 4;\n")
        .expect("parses");
    let ops: Vec<String> = s
        .cmds
        .iter()
        .map(|c| match &c.op {
            Op::Set(..) => "set".into(),
            Op::Branch(_, t) => format!("br{t}"),
            Op::Jump(t) => format!("j{t}"),
            Op::Sql(n) => format!("sql{n}"),
            Op::Sleep(..) => "sleep".into(),
        })
        .collect();
    assert_eq!(
        ops,
        [
            "set", "br4", "sql0", "j8", "br7", "sql1", "j8", "sql2", "sql3"
        ]
    );
}

#[test]
fn gset_names_come_from_the_select_list() {
    let s = parse_one("SELECT abalance, t.bid, count(*) AS n FROM a AS t WHERE aid = 1 \\gset p_\nSELECT :p_abalance + :p_n, :p_bid;\n")
        .expect("parses");
    assert_eq!(s.stmts.len(), 2);
    assert_eq!(s.stmts[0].gset.as_ref().map(Vec::len), Some(3));
    let e = error_of("SELECT count(*) FROM a \\gset\n");
    assert!(
        e.starts_with("t.sql:1:24: \\gset needs a name for the column") && e.contains("AS name"),
        "{e}"
    );
    // `\gset` alone on the line after a query ended by `;` takes that query's row
    let s = parse_one("SELECT 1 AS one;\n\\gset\nSELECT :one;\n").expect("parses");
    assert!(s.stmts[0].gset.is_some());
}

#[test]
fn bad_scripts_are_located_errors() {
    let cases: &[(&str, &str)] = &[
        (
            "SELECT 1;\n  \\frobnicate 3\n",
            "t.sql:2:3: unknown meta-command \\frobnicate",
        ),
        ("\\if 1\nSELECT 1;\n", "t.sql:1:1: \\if without \\endif"),
        ("SELECT 1;\n\\endif\n", "t.sql:2:1: \\endif without \\if"),
        (
            "\\if 1\n\\else\n\\else\n\\endif\n",
            "t.sql:3:1: \\else after \\else",
        ),
        ("\\elif 1\n", "t.sql:1:1: \\elif without \\if"),
        (
            "SELECT 1\n\n  FROM t WHERE a = :nope;\n",
            "t.sql:3:20: unknown variable `nope`",
        ),
        ("\\set a 1 +* 2\n", "t.sql:1:11: unexpected `*`"),
        ("\\set a abs(1\n", "t.sql:1:13: a `)` is missing"),
        ("\\set\n", "t.sql:1:5: \\set needs a variable name"),
        ("\\sleep 10 hours\n", "t.sql:1:8: \\sleep: unit `hours`"),
        (
            "\\startpipeline\n",
            "t.sql:1:1: \\startpipeline is not supported",
        ),
        (
            "\\setshell x echo 1\n",
            "t.sql:1:1: \\setshell is not supported",
        ),
        ("\\shell ls\n", "t.sql:1:1: \\shell is not supported"),
        (
            "SELECT 1\n\\set x 1\n",
            "t.sql:2:1: \\set inside an SQL statement",
        ),
        (
            "SELECT 'abc;\n",
            "t.sql:1:1: this statement's quote or comment is never closed",
        ),
        ("\\gset\n", "t.sql:1:1: \\gset must follow a query"),
    ];
    for (text, want) in cases {
        let e = error_of(text);
        assert!(e.starts_with(want), "{text:?}:\n got  {e}\n want {want}");
    }
}

#[test]
fn builtin_scripts_parse() {
    for name in builtin::NAMES {
        let text = builtin::get(name).expect("builtin");
        parse_one(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let s = parse_one(&builtin::get("tpcb-like").expect("tpcb")).expect("tpcb");
    assert_eq!(s.stmts.len(), 7);
    assert_eq!(s.stmts[0].bound.txn, sql::Txn::Begin);
    assert_eq!(s.stmts[6].bound.txn, sql::Txn::End);
}

#[test]
fn step_parameters_are_checked() {
    let p = |t: &str| {
        let p = crate::workload::kind::params_of::<ScriptParams>(t)?;
        p.validate().map(|_| p)
    };
    assert!(p("scripts = [\"builtin:tpcb-like\"]\nclients = 2\nper_client = 10").is_ok());
    assert!(p("scripts = [\"a.sql@5\", \"b.sql@1\"]\nclients = [1, 4]\nduration_s = 5").is_ok());
    let err = |t: &str| {
        p(t).map(|_| ())
            .map_err(|e| format!("{}: {}", e.path, e.message))
            .expect_err(t)
    };
    assert!(err("scripts = []\nclients = 1\nper_client = 1").starts_with("scripts: "));
    assert!(
        err("scripts = [\"builtin:nope\"]\nclients = 1\nper_client = 1")
            .starts_with("scripts[0]: no built-in script")
    );
    assert!(err("scripts = [\"a.sql@0\"]\nclients = 1\nper_client = 1").contains("weight 0"));
    assert!(err("scripts = [\"a.sql\"]\nclients = [1, 2]\nper_client = 1").contains("sweep"));
    assert!(err("scripts = [\"a.sql\"]\nclients = 1").starts_with("per_client: give exactly one"));
    assert_eq!(split_weight("x@y.sql"), Ok(("x@y.sql", 1)));
    assert_eq!(split_weight("new_order.sql@5"), Ok(("new_order.sql", 5)));
}
