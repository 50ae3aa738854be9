//! The 22 TPC-H queries (specification clause 2.4) as templates, their substitution
//! parameters drawn from a seed by the specification's rules (clause 2.4.x.3), and their
//! rendering in each engine's dialect.
//!
//! Date arithmetic (`date 'X' + interval 'n' month`) is done here, on the drawn parameters,
//! and each query receives plain date literals: SQLite has no `INTERVAL`, and the three
//! dialects then differ only in how a date literal and a year are written. Q15's view is
//! written as a derived table, named twice, which every engine here accepts (MySQL 5.x has
//! no common table expressions).

use crate::dataset::rng::SplitMix64;
use crate::dataset::tpch::{
    COLORS, CONTAINER_S1, CONTAINER_S2, NATIONS, REGIONS, TYPE_S1, TYPE_S2, TYPE_S3,
};
use crate::engine::Dialect;
use serde::Serialize;
use std::collections::BTreeMap;

/// The queries' numbers, 1 to 22.
pub const QUERIES: std::ops::RangeInclusive<u8> = 1..=22;

// The word lists the parameters draw from are the generator's (crate::dataset::tpch); these
// are listed here in the order of the specification's substitution rules (clause 2.4), which
// the parameters drawn from a seed follow.
const SEGMENTS: [&str; 5] = [
    "AUTOMOBILE",
    "BUILDING",
    "FURNITURE",
    "MACHINERY",
    "HOUSEHOLD",
];
const SHIP_MODES: [&str; 7] = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"];
const Q13_WORD1: [&str; 4] = ["special", "pending", "unusual", "express"];
const Q13_WORD2: [&str; 4] = ["packages", "requests", "accounts", "deposits"];

/// A calendar date (proleptic Gregorian), for parameter arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date {
    pub y: i32,
    pub m: u32,
    pub d: u32,
}

impl Date {
    pub const fn new(y: i32, m: u32, d: u32) -> Self {
        Date { y, m, d }
    }

    fn days_in_month(y: i32, m: u32) -> u32 {
        match m {
            4 | 6 | 9 | 11 => 30,
            2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
            2 => 28,
            _ => 31,
        }
    }

    /// `n` months later (the day kept; every date here is a month's first or in March).
    pub fn plus_months(self, n: u32) -> Self {
        let m0 = self.m - 1 + n;
        let y = self.y + (m0 / 12) as i32;
        let m = m0 % 12 + 1;
        Date::new(y, m, self.d.min(Self::days_in_month(y, m)))
    }

    /// `n` days earlier.
    pub fn minus_days(self, n: u32) -> Self {
        let mut d = self;
        for _ in 0..n {
            if d.d > 1 {
                d.d -= 1;
            } else {
                if d.m > 1 {
                    d.m -= 1;
                } else {
                    d.m = 12;
                    d.y -= 1;
                }
                d.d = Self::days_in_month(d.y, d.m);
            }
        }
        d
    }

    pub fn iso(self) -> String {
        format!("{:04}-{:02}-{:02}", self.y, self.m, self.d)
    }
}

/// One value a query template takes: text put in as it is (already quoted where SQL needs
/// quotes), or a date written as the dialect writes date literals.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Param {
    Sql(String),
    Date(String),
}

/// The substitution parameters of one query: name to value, in the order the specification
/// lists them for the record.
pub type Params = BTreeMap<&'static str, Param>;

fn text(s: impl Into<String>) -> Param {
    Param::Sql(s.into())
}

fn date(d: Date) -> Param {
    Param::Date(d.iso())
}

/// Uniform in `lo..=hi`.
fn between(rng: &mut SplitMix64, lo: u32, hi: u32) -> u32 {
    lo + rng.below(hi - lo + 1)
}

/// `k` distinct values of `0..n`, in the order drawn.
fn distinct(rng: &mut SplitMix64, n: u32, k: usize) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::with_capacity(k);
    while out.len() < k {
        let v = rng.below(n);
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// The first day of a month drawn uniformly from `from` to `to` (both firsts of months).
fn month_between(rng: &mut SplitMix64, from: Date, to: Date) -> Date {
    let months = (to.y - from.y) as u32 * 12 + to.m - from.m;
    from.plus_months(rng.below(months + 1))
}

fn brand(rng: &mut SplitMix64) -> Param {
    text(format!(
        "Brand#{}{}",
        between(rng, 1, 5),
        between(rng, 1, 5)
    ))
}

/// The parameters of query `q` for scale factor `sf`, drawn from `seed` by clause 2.4's
/// rules: the same seed, query and scale always give the same parameters.
pub fn params(q: u8, seed: u64, sf: f64) -> Params {
    let mut rng = SplitMix64::stream(seed, 0x7C0_0000 + u64::from(q));
    let r = &mut rng;
    let mut p = Params::new();
    let year = |r: &mut SplitMix64| Date::new(between(r, 1993, 1997) as i32, 1, 1);
    let nation = |r: &mut SplitMix64| NATIONS[r.below(25) as usize].0;
    let region = |r: &mut SplitMix64| REGIONS[r.below(5) as usize];
    let color = |r: &mut SplitMix64| COLORS[r.below(92) as usize];
    let window = |p: &mut Params, start: Date, months: u32| {
        p.insert("DATE", date(start));
        p.insert("DATE_END", date(start.plus_months(months)));
    };
    match q {
        1 => {
            let delta = between(r, 60, 120);
            p.insert("DELTA", text(delta.to_string()));
            p.insert("DATE", date(Date::new(1998, 12, 1).minus_days(delta)));
        }
        2 => {
            p.insert("SIZE", text(between(r, 1, 50).to_string()));
            p.insert("TYPE", text(r.pick(&TYPE_S3)));
            p.insert("REGION", text(region(r)));
        }
        3 => {
            p.insert("SEGMENT", text(r.pick(&SEGMENTS)));
            p.insert("DATE", date(Date::new(1995, 3, between(r, 1, 31))));
        }
        4 => window(
            &mut p,
            month_between(r, Date::new(1993, 1, 1), Date::new(1997, 10, 1)),
            3,
        ),
        5 => {
            p.insert("REGION", text(region(r)));
            window(&mut p, year(r), 12);
        }
        6 => {
            window(&mut p, year(r), 12);
            let disc = between(r, 2, 9);
            p.insert("DISCOUNT", text(format!("0.{disc:02}")));
            p.insert("DISC_LO", text(format!("0.{:02}", disc - 1)));
            p.insert("DISC_HI", text(format!("0.{:02}", disc + 1)));
            p.insert("QUANTITY", text(between(r, 24, 25).to_string()));
        }
        7 => {
            let two = distinct(r, 25, 2);
            p.insert("NATION1", text(NATIONS[two[0] as usize].0));
            p.insert("NATION2", text(NATIONS[two[1] as usize].0));
        }
        8 => {
            let (n, reg) = NATIONS[r.below(25) as usize];
            p.insert("NATION", text(n));
            p.insert("REGION", text(REGIONS[reg as usize]));
            let t = format!(
                "{} {} {}",
                r.pick(&TYPE_S1),
                r.pick(&TYPE_S2),
                r.pick(&TYPE_S3)
            );
            p.insert("TYPE", text(t));
        }
        9 => {
            p.insert("COLOR", text(color(r)));
        }
        10 => window(
            &mut p,
            month_between(r, Date::new(1993, 2, 1), Date::new(1995, 1, 1)),
            3,
        ),
        11 => {
            p.insert("NATION", text(nation(r)));
            p.insert("FRACTION", text(fraction(sf)));
        }
        _ => later_params(q, r, &mut p),
    }
    p
}

/// [`params`] of queries 12 to 22.
fn later_params(q: u8, r: &mut SplitMix64, p: &mut Params) {
    let year = |r: &mut SplitMix64| Date::new(between(r, 1993, 1997) as i32, 1, 1);
    let nation = |r: &mut SplitMix64| NATIONS[r.below(25) as usize].0;
    let color = |r: &mut SplitMix64| COLORS[r.below(92) as usize];
    let window = |p: &mut Params, start: Date, months: u32| {
        p.insert("DATE", date(start));
        p.insert("DATE_END", date(start.plus_months(months)));
    };
    match q {
        12 => {
            let two = distinct(r, 7, 2);
            p.insert("SHIPMODE1", text(SHIP_MODES[two[0] as usize]));
            p.insert("SHIPMODE2", text(SHIP_MODES[two[1] as usize]));
            window(p, year(r), 12);
        }
        13 => {
            p.insert("WORD1", text(r.pick(&Q13_WORD1)));
            p.insert("WORD2", text(r.pick(&Q13_WORD2)));
        }
        14 => window(
            p,
            month_between(r, Date::new(1993, 1, 1), Date::new(1997, 12, 1)),
            1,
        ),
        15 => window(
            p,
            month_between(r, Date::new(1993, 1, 1), Date::new(1997, 10, 1)),
            3,
        ),
        16 => {
            p.insert("BRAND", brand(r));
            p.insert(
                "TYPE",
                text(format!("{} {}", r.pick(&TYPE_S1), r.pick(&TYPE_S2))),
            );
            let sizes: Vec<String> = distinct(r, 50, 8)
                .iter()
                .map(|s| (s + 1).to_string())
                .collect();
            p.insert("SIZES", text(sizes.join(", ")));
        }
        17 => {
            p.insert("BRAND", brand(r));
            let c = format!("{} {}", r.pick(&CONTAINER_S1), r.pick(&CONTAINER_S2));
            p.insert("CONTAINER", text(c));
        }
        18 => {
            p.insert("QUANTITY", text(between(r, 312, 315).to_string()));
        }
        19 => {
            p.insert("QUANTITY1", text(between(r, 1, 10).to_string()));
            p.insert("QUANTITY2", text(between(r, 10, 20).to_string()));
            p.insert("QUANTITY3", text(between(r, 20, 30).to_string()));
            p.insert("BRAND1", brand(r));
            p.insert("BRAND2", brand(r));
            p.insert("BRAND3", brand(r));
        }
        20 => {
            p.insert("COLOR", text(color(r)));
            window(p, year(r), 12);
            p.insert("NATION", text(nation(r)));
        }
        21 => {
            p.insert("NATION", text(nation(r)));
        }
        _ => {
            let codes: Vec<String> = distinct(r, 25, 7)
                .iter()
                .map(|c| format!("'{}'", c + 10))
                .collect();
            p.insert("CODES", text(codes.join(", ")));
        }
    }
}

/// The parameters of query `q` the specification validates answers with (the values its
/// clause 2.4.x.3 lists for query validation), at scale factor `sf` (Q11's fraction follows
/// it): with them, and dbgen's rows at SF 1, the answers are the specification's published
/// ones ([`super::published`]).
pub fn validation_params(q: u8, sf: f64) -> Params {
    let mut p = Params::new();
    let mut put = |pairs: &[(&'static str, &str)]| {
        for (k, v) in pairs {
            p.insert(k, text(*v));
        }
    };
    let day = |y, m, d| date(Date::new(y, m, d));
    let window = |p: &mut Params, start: Date, months: u32| {
        p.insert("DATE", date(start));
        p.insert("DATE_END", date(start.plus_months(months)));
    };
    match q {
        1 => put(&[("DELTA", "90")]),
        2 => put(&[("SIZE", "15"), ("TYPE", "BRASS"), ("REGION", "EUROPE")]),
        3 => put(&[("SEGMENT", "BUILDING")]),
        5 => put(&[("REGION", "ASIA")]),
        6 => put(&[
            ("DISCOUNT", "0.06"),
            ("DISC_LO", "0.05"),
            ("DISC_HI", "0.07"),
            ("QUANTITY", "24"),
        ]),
        7 => put(&[("NATION1", "FRANCE"), ("NATION2", "GERMANY")]),
        8 => put(&[
            ("NATION", "BRAZIL"),
            ("REGION", "AMERICA"),
            ("TYPE", "ECONOMY ANODIZED STEEL"),
        ]),
        9 => put(&[("COLOR", "green")]),
        11 => put(&[("NATION", "GERMANY")]),
        12 => put(&[("SHIPMODE1", "MAIL"), ("SHIPMODE2", "SHIP")]),
        13 => put(&[("WORD1", "special"), ("WORD2", "requests")]),
        16 => put(&[
            ("BRAND", "Brand#45"),
            ("TYPE", "MEDIUM POLISHED"),
            ("SIZES", "49, 14, 23, 45, 19, 3, 36, 9"),
        ]),
        17 => put(&[("BRAND", "Brand#23"), ("CONTAINER", "MED BOX")]),
        18 => put(&[("QUANTITY", "300")]),
        19 => put(&[
            ("QUANTITY1", "1"),
            ("QUANTITY2", "10"),
            ("QUANTITY3", "20"),
            ("BRAND1", "Brand#12"),
            ("BRAND2", "Brand#23"),
            ("BRAND3", "Brand#34"),
        ]),
        20 => put(&[("COLOR", "forest"), ("NATION", "CANADA")]),
        21 => put(&[("NATION", "SAUDI ARABIA")]),
        22 => put(&[("CODES", "'13', '31', '23', '29', '30', '18', '17'")]),
        _ => {}
    }
    match q {
        1 => {
            p.insert("DATE", date(Date::new(1998, 12, 1).minus_days(90)));
        }
        3 => {
            p.insert("DATE", day(1995, 3, 15));
        }
        4 => window(&mut p, Date::new(1993, 7, 1), 3),
        5 | 6 | 12 | 20 => window(&mut p, Date::new(1994, 1, 1), 12),
        10 => window(&mut p, Date::new(1993, 10, 1), 3),
        11 => {
            p.insert("FRACTION", text(fraction(sf)));
        }
        14 => window(&mut p, Date::new(1995, 9, 1), 1),
        15 => window(&mut p, Date::new(1996, 1, 1), 3),
        _ => {}
    }
    p
}

/// Q11's FRACTION, 0.0001 / SF, as a decimal literal.
fn fraction(sf: f64) -> String {
    let f = 0.0001 / sf.max(1e-9);
    let s = format!("{f:.12}");
    let s = s.trim_end_matches('0');
    s.strip_suffix('.').unwrap_or(s).to_string()
}

/// The template of query `q`: `{NAME}` takes a parameter, `{date:NAME}` a date parameter or
/// a fixed ISO date as a date literal, `{year:COLUMN}` the year of a date column.
pub fn template(q: u8) -> &'static str {
    match q {
        1 => include_str!("sql/q01.sql"),
        2 => include_str!("sql/q02.sql"),
        3 => include_str!("sql/q03.sql"),
        4 => include_str!("sql/q04.sql"),
        5 => include_str!("sql/q05.sql"),
        6 => include_str!("sql/q06.sql"),
        7 => include_str!("sql/q07.sql"),
        8 => include_str!("sql/q08.sql"),
        9 => include_str!("sql/q09.sql"),
        10 => include_str!("sql/q10.sql"),
        11 => include_str!("sql/q11.sql"),
        12 => include_str!("sql/q12.sql"),
        13 => include_str!("sql/q13.sql"),
        14 => include_str!("sql/q14.sql"),
        15 => include_str!("sql/q15.sql"),
        16 => include_str!("sql/q16.sql"),
        17 => include_str!("sql/q17.sql"),
        18 => include_str!("sql/q18.sql"),
        19 => include_str!("sql/q19.sql"),
        20 => include_str!("sql/q20.sql"),
        21 => include_str!("sql/q21.sql"),
        _ => include_str!("sql/q22.sql"),
    }
}

/// A template that names a parameter the query was not given.
#[derive(Debug, Clone, thiserror::Error)]
#[error("query {query}: the template names `{name}`, which has no value")]
pub struct RenderError {
    pub query: u8,
    pub name: String,
}

/// Query `q` with `params`, in `dialect`'s words, as one line-broken statement without its
/// trailing semicolon.
pub fn render(q: u8, params: &Params, dialect: Dialect) -> Result<String, RenderError> {
    let t = template(q);
    let mut out = String::with_capacity(t.len() + 64);
    let mut rest = t;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let key = &after[..close];
        let missing = || RenderError {
            query: q,
            name: key.to_string(),
        };
        if let Some(col) = key.strip_prefix("year:") {
            out.push_str(&dialect.year_of(col));
        } else if let Some(name) = key.strip_prefix("date:") {
            let iso = match params.get(name) {
                Some(Param::Date(d)) => d.clone(),
                Some(Param::Sql(_)) => return Err(missing()),
                None if is_iso_date(name) => name.to_string(),
                None => return Err(missing()),
            };
            out.push_str(&dialect.date_literal(&iso));
        } else {
            match params.get(key) {
                Some(Param::Sql(s)) => out.push_str(s),
                Some(Param::Date(d)) => out.push_str(&dialect.date_literal(d)),
                None => return Err(missing()),
            }
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out.trim().trim_end_matches(';').trim_end().to_string())
}

fn is_iso_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_renders_in_every_dialect_with_no_template_left() {
        for q in QUERIES {
            let p = params(q, 42, 0.01);
            for d in [Dialect::Sqlite, Dialect::Mysql, Dialect::Postgres] {
                let sql = render(q, &p, d).expect("renders");
                assert!(
                    !sql.contains('{') && !sql.contains('}'),
                    "Q{q} {d:?}: {sql}"
                );
                assert!(
                    sql.to_ascii_lowercase().starts_with("select"),
                    "Q{q}: {sql}"
                );
                if d == Dialect::Sqlite {
                    assert!(
                        !sql.contains("DATE '") && !sql.contains("EXTRACT"),
                        "Q{q}: {sql}"
                    );
                }
            }
        }
    }

    /// The validation parameters name exactly what the drawn ones do, so every template
    /// renders with them; Q1's date is 90 days before 1998-12-01.
    #[test]
    fn validation_parameters_fill_every_template() {
        for q in QUERIES {
            let v = validation_params(q, 1.0);
            let keys = |p: &Params| p.keys().copied().collect::<Vec<_>>();
            assert_eq!(keys(&v), keys(&params(q, 42, 1.0)), "Q{q}");
            render(q, &v, Dialect::Postgres).expect("renders");
        }
        assert_eq!(
            validation_params(1, 1.0).get("DATE"),
            Some(&Param::Date("1998-09-02".into()))
        );
        assert_eq!(
            validation_params(11, 10.0).get("FRACTION"),
            Some(&Param::Sql("0.00001".into()))
        );
    }

    #[test]
    fn parameters_are_deterministic_from_the_seed_and_follow_the_rules() {
        for q in QUERIES {
            assert_eq!(params(q, 7, 1.0), params(q, 7, 1.0), "Q{q}");
        }
        let differ = QUERIES
            .filter(|q| params(*q, 7, 1.0) != params(*q, 8, 1.0))
            .count();
        assert!(differ >= 18, "only {differ} queries changed with the seed");
        for seed in 0..200 {
            let p1 = params(1, seed, 1.0);
            let Some(Param::Sql(delta)) = p1.get("DELTA") else {
                panic!("Q1 DELTA")
            };
            let delta: u32 = delta.parse().expect("a number");
            assert!((60..=120).contains(&delta));
            let p4 = params(4, seed, 1.0);
            let Some(Param::Date(d)) = p4.get("DATE") else {
                panic!("Q4 DATE")
            };
            assert!(
                d.as_str() >= "1993-01-01" && d.as_str() <= "1997-10-01" && d.ends_with("-01"),
                "{d}"
            );
            let p22 = params(22, seed, 1.0);
            let Some(Param::Sql(codes)) = p22.get("CODES") else {
                panic!("Q22")
            };
            let mut c: Vec<&str> = codes.split(", ").collect();
            c.sort_unstable();
            c.dedup();
            assert_eq!(c.len(), 7, "{codes}");
            assert!(c.iter().all(|x| ("'10'"..="'34'").contains(x)), "{codes}");
            let p8 = params(8, seed, 1.0);
            let (Some(Param::Sql(n)), Some(Param::Sql(r))) = (p8.get("NATION"), p8.get("REGION"))
            else {
                panic!("Q8")
            };
            let (_, reg) = NATIONS.iter().find(|(x, _)| x == n).expect("a nation");
            assert_eq!(REGIONS[*reg as usize], r.as_str());
        }
        assert_eq!(
            params(11, 1, 0.01).get("FRACTION"),
            Some(&Param::Sql("0.01".into()))
        );
        assert_eq!(
            params(11, 1, 1.0).get("FRACTION"),
            Some(&Param::Sql("0.0001".into()))
        );
    }

    #[test]
    fn date_arithmetic_crosses_months_and_years() {
        assert_eq!(Date::new(1998, 12, 1).minus_days(90).iso(), "1998-09-02");
        assert_eq!(Date::new(1997, 10, 1).plus_months(3).iso(), "1998-01-01");
        assert_eq!(Date::new(1996, 3, 1).minus_days(1).iso(), "1996-02-29");
        assert_eq!(Date::new(1995, 1, 1).plus_months(12).iso(), "1996-01-01");
    }

    #[test]
    fn a_missing_parameter_is_an_error_not_a_panic() {
        let e = render(3, &Params::new(), Dialect::Postgres).expect_err("no params");
        assert_eq!(e.query, 3);
    }

    #[test]
    fn there_are_92_distinct_colors() {
        let mut c = COLORS.to_vec();
        c.sort_unstable();
        c.dedup();
        assert_eq!(c.len(), 92);
    }
}
