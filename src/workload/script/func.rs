//! pgbench's built-in functions: their names and arities (checked at parse time) and what
//! they compute, random draws included (uniform, exponential, Gaussian and Zipfian over an
//! integer range, by the laws pgbench documents).

use super::expr::{BinOp, Env, EvalError, Expr, Val, as_double, as_int, double_to_int, int_arith};
use crate::dataset::permutation::Permutation;
use crate::dataset::rng::SplitMix64;

/// A built-in function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Abs,
    Debug,
    Double,
    Exp,
    Greatest,
    HashFnv1a,
    HashMurmur2,
    Int,
    Least,
    Ln,
    Mod,
    Permute,
    Pi,
    Pow,
    Random,
    RandomExponential,
    RandomGaussian,
    RandomZipfian,
    Sqrt,
}

/// Every function by its names, with its fewest and most arguments (`usize::MAX`: any).
const FUNCS: &[(&str, Func, usize, usize)] = &[
    ("abs", Func::Abs, 1, 1),
    ("debug", Func::Debug, 1, 1),
    ("double", Func::Double, 1, 1),
    ("exp", Func::Exp, 1, 1),
    ("greatest", Func::Greatest, 1, usize::MAX),
    // `hash` is `hash_murmur2`; one argument takes the seed from `:default_seed`.
    ("hash", Func::HashMurmur2, 1, 2),
    ("hash_fnv1a", Func::HashFnv1a, 1, 2),
    ("hash_murmur2", Func::HashMurmur2, 1, 2),
    ("int", Func::Int, 1, 1),
    ("least", Func::Least, 1, usize::MAX),
    ("ln", Func::Ln, 1, 1),
    ("mod", Func::Mod, 2, 2),
    ("permute", Func::Permute, 2, 3),
    ("pi", Func::Pi, 0, 0),
    ("pow", Func::Pow, 2, 2),
    ("power", Func::Pow, 2, 2),
    ("random", Func::Random, 2, 2),
    ("random_exponential", Func::RandomExponential, 3, 3),
    ("random_gaussian", Func::RandomGaussian, 3, 3),
    ("random_zipfian", Func::RandomZipfian, 3, 3),
    ("sqrt", Func::Sqrt, 1, 1),
];

/// The function called `name` (any case) with its arity, or `None`.
pub fn lookup(name: &str) -> Option<(Func, usize, usize)> {
    FUNCS
        .iter()
        .find(|(n, ..)| n.eq_ignore_ascii_case(name))
        .map(|&(_, f, lo, hi)| (f, lo, hi))
}

/// The names, for an error that lists them.
pub fn names() -> String {
    FUNCS.iter().map(|f| f.0).collect::<Vec<_>>().join(", ")
}

/// Does the function take a seed from `:default_seed` when given one argument fewer?
pub fn seeded(f: Func) -> bool {
    matches!(f, Func::HashFnv1a | Func::HashMurmur2 | Func::Permute)
}

/// Call `f` on `args` (arity already checked). Any NULL argument makes NULL, except for
/// `debug`.
pub fn call(f: Func, args: &[Expr], env: &mut Env<'_>) -> Result<Val, EvalError> {
    // At most three arguments take a fixed buffer; the variadic ones fold as they go.
    if matches!(f, Func::Greatest | Func::Least) {
        return extreme(f == Func::Greatest, args, env);
    }
    let mut v = [Val::Null; 3];
    for (slot, a) in v.iter_mut().zip(args) {
        *slot = a.eval(env)?;
    }
    let n = args.len().min(3);
    if f == Func::Debug {
        crate::errln!("debug: {}", v[0]);
        return Ok(v[0]);
    }
    if v[..n].contains(&Val::Null) {
        return Ok(Val::Null);
    }
    let name = FUNCS.iter().find(|x| x.1 == f).map_or("?", |x| x.0);
    let d = |x: Val| as_double(x, name);
    let i = |x: Val| as_int(x, name);
    Ok(match f {
        Func::Abs => match v[0] {
            Val::Int(x) => Val::Int(x.checked_abs().ok_or(EvalError::Overflow("abs()"))?),
            x => Val::Double(d(x)?.abs()),
        },
        Func::Double => Val::Double(d(v[0])?),
        Func::Exp => Val::Double(d(v[0])?.exp()),
        Func::Ln => Val::Double(d(v[0])?.ln()),
        Func::Sqrt => Val::Double(d(v[0])?.sqrt()),
        Func::Pi => Val::Double(std::f64::consts::PI),
        Func::Pow => Val::Double(d(v[0])?.powf(d(v[1])?)),
        Func::Int => match v[0] {
            Val::Int(x) => Val::Int(x),
            x => Val::Int(double_to_int(d(x)?)?),
        },
        Func::Mod => int_arith(BinOp::Mod, i(v[0])?, i(v[1])?)?,
        Func::HashMurmur2 => Val::Int(murmur2(i(v[0])?, i(v[1])?)),
        Func::HashFnv1a => Val::Int(fnv1a(i(v[0])?, i(v[1])?)),
        Func::Permute => Val::Int(permute(i(v[0])?, i(v[1])?, i(v[2])?)?),
        Func::Random => Val::Int(uniform(env.rng, i(v[0])?, i(v[1])?)?),
        Func::RandomExponential => Val::Int(exponential(env.rng, i(v[0])?, i(v[1])?, d(v[2])?)?),
        Func::RandomGaussian => Val::Int(gaussian(env.rng, i(v[0])?, i(v[1])?, d(v[2])?)?),
        Func::RandomZipfian => Val::Int(zipfian(env.rng, i(v[0])?, i(v[1])?, d(v[2])?)?),
        Func::Debug | Func::Greatest | Func::Least => v[0],
    })
}

/// `greatest`/`least`: an integer when every argument is one, else a double.
fn extreme(greatest: bool, args: &[Expr], env: &mut Env<'_>) -> Result<Val, EvalError> {
    let mut best: Option<Val> = None;
    for a in args {
        let x = a.eval(env)?;
        if x == Val::Null {
            return Ok(Val::Null);
        }
        best = Some(match (best, x) {
            (None, x) => {
                as_double(x, "greatest/least")?;
                x
            }
            (Some(Val::Int(p)), Val::Int(q)) => {
                Val::Int(if greatest { p.max(q) } else { p.min(q) })
            }
            (Some(p), x) => {
                let (p, q) = (
                    as_double(p, "greatest/least")?,
                    as_double(x, "greatest/least")?,
                );
                Val::Double(if greatest { p.max(q) } else { p.min(q) })
            }
        });
    }
    Ok(best.unwrap_or(Val::Null))
}

/// The size of `[lb, ub]`, or an error naming the function.
fn span(lb: i64, ub: i64, what: &str) -> Result<u64, EvalError> {
    if lb > ub {
        return Err(EvalError::Bad(format!("{what}: empty range [{lb}, {ub}]")));
    }
    (ub as i128 - lb as i128 + 1)
        .try_into()
        .ok()
        .filter(|n: &u64| *n <= i64::MAX as u64)
        .ok_or_else(|| EvalError::Bad(format!("{what}: range [{lb}, {ub}] is too large")))
}

/// `lb` plus `n * fraction` (fraction in [0, 1)), kept inside the range.
fn scaled(lb: i64, n: u64, fraction: f64) -> i64 {
    let off = ((n as f64 * fraction) as u64).min(n - 1);
    lb + off as i64
}

/// `random(lb, ub)`: uniform over the integers of `[lb, ub]`.
pub fn uniform(rng: &mut SplitMix64, lb: i64, ub: i64) -> Result<i64, EvalError> {
    let n = span(lb, ub, "random")?;
    Ok(lb + rng.below_u64(n) as i64)
}

/// `random_exponential(lb, ub, parameter)`: integer `x` of `[lb, ub]` with probability
/// proportional to `exp(-parameter * (x - lb) / (ub - lb + 1))` over its unit cell, as
/// pgbench documents it — drawn by inverting the truncated exponential's distribution.
pub fn exponential(rng: &mut SplitMix64, lb: i64, ub: i64, p: f64) -> Result<i64, EvalError> {
    let n = span(lb, ub, "random_exponential")?;
    if p.is_nan() || p <= 0.0 {
        return Err(EvalError::Bad(format!(
            "random_exponential: parameter must be greater than 0, not {p}"
        )));
    }
    let cut = (-p).exp();
    let u = 1.0 - rng.unit(); // in (0, 1]
    let fraction = -(cut + (1.0 - cut) * u).ln() / p;
    Ok(scaled(lb, n, fraction))
}

/// Least parameter `random_gaussian` takes (pgbench's documented bound).
pub const GAUSSIAN_MIN: f64 = 2.0;

/// `random_gaussian(lb, ub, parameter)`: a standard normal draw truncated to
/// `[-parameter, parameter)` mapped onto `[lb, ub]`, so the mean is the range's middle and
/// `parameter` standard deviations span each half.
pub fn gaussian(rng: &mut SplitMix64, lb: i64, ub: i64, p: f64) -> Result<i64, EvalError> {
    let n = span(lb, ub, "random_gaussian")?;
    if p.is_nan() || p < GAUSSIAN_MIN {
        return Err(EvalError::Bad(format!(
            "random_gaussian: parameter must be at least {GAUSSIAN_MIN}, not {p}"
        )));
    }
    let z = loop {
        let z: f64 = rand_distr::Distribution::sample(&rand_distr::StandardNormal, rng);
        if (-p..p).contains(&z) {
            break z;
        }
    };
    Ok(scaled(lb, n, (z + p) / (2.0 * p)))
}

/// Bounds of `random_zipfian`'s parameter (pgbench's documented ones).
pub const ZIPF_MIN: f64 = 1.001;
pub const ZIPF_MAX: f64 = 1000.0;

/// `random_zipfian(lb, ub, parameter)`: `lb + k - 1` where `k` in `1..=n` has probability
/// proportional to `1 / k^parameter` — `rand_distr`'s `Zipf` (rejection-inversion).
pub fn zipfian(rng: &mut SplitMix64, lb: i64, ub: i64, s: f64) -> Result<i64, EvalError> {
    let n = span(lb, ub, "random_zipfian")?;
    if !(ZIPF_MIN..=ZIPF_MAX).contains(&s) {
        return Err(EvalError::Bad(format!(
            "random_zipfian: parameter must be from {ZIPF_MIN} to {ZIPF_MAX}, not {s}"
        )));
    }
    let z = rand_distr::Zipf::new(n as f64, s)
        .map_err(|e| EvalError::Bad(format!("random_zipfian: {e}")))?;
    let k = rand_distr::Distribution::sample(&z, rng) as u64;
    Ok(lb + (k.clamp(1, n) - 1) as i64)
}

/// `permute(i, size, seed)`: the position of `i mod size` in a pseudorandom permutation of
/// `0..size` chosen by `seed`. A permutation as pgbench's is (each value once), not the same
/// one: dbduel's seeded Feistel permutation.
fn permute(i: i64, size: i64, seed: i64) -> Result<i64, EvalError> {
    if size <= 0 {
        return Err(EvalError::Bad(format!(
            "permute: size must be positive, not {size}"
        )));
    }
    let p = Permutation::new(seed as u64, size as u64);
    Ok(p.key(i.rem_euclid(size) as u64) as i64 - 1)
}

/// MurmurHash64A (Austin Appleby) of the integer's 8 bytes with `seed`, as pgbench's
/// `hash_murmur2` documents: one 8-byte block, no tail.
pub fn murmur2(value: i64, seed: i64) -> i64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = (seed as u64) ^ 8u64.wrapping_mul(M);
    let mut k = value as u64;
    k = k.wrapping_mul(M);
    k ^= k >> R;
    k = k.wrapping_mul(M);
    h ^= k;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h as i64
}

/// 64-bit FNV-1a of the integer's 8 bytes, least significant first, its offset basis mixed
/// with `seed`, as pgbench's `hash_fnv1a`.
pub fn fnv1a(value: i64, seed: i64) -> i64 {
    const BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = BASIS ^ seed as u64;
    for b in value.to_le_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(PRIME);
    }
    h as i64
}
