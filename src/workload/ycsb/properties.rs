//! YCSB workload files (`workloads/workloada` … `workloadf`, and a user's own): Java
//! properties text read into a [`Workload`] of `CoreWorkload`'s settings. Every property
//! is either one dbduel implements, taken with YCSB's meaning and default, or refused at
//! its line and column with its name — never ignored, so a run never silently differs from
//! the file. The six core workloads are also built in by name.

use super::keys::RequestDistribution;

/// A mistake in a workload file, located.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}:{line}:{col}: {message}")]
pub struct PropertiesError {
    /// The file as the study names it (a path, or `builtin:workloada`).
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub message: String,
}

/// Operation shares (`readproportion` …): YCSB's weights, not necessarily summing to 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Proportions {
    pub read: f64,
    pub update: f64,
    pub insert: f64,
    pub scan: f64,
    pub read_modify_write: f64,
}

impl Proportions {
    /// The shares as fractions of their sum, in the order read, update, insert, scan,
    /// read-modify-write.
    pub fn normalized(&self) -> [f64; 5] {
        let all = [
            self.read,
            self.update,
            self.insert,
            self.scan,
            self.read_modify_write,
        ];
        let sum: f64 = all.iter().sum();
        all.map(|p| if sum > 0.0 { p / sum } else { 0.0 })
    }
}

/// `scanlengthdistribution`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanLengthDistribution {
    Uniform,
    Zipfian,
}

/// A workload as `CoreWorkload` reads it, with YCSB's defaults where the file is silent.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// `recordcount`: records loaded before the run; `None` when the file does not say.
    pub record_count: Option<u64>,
    /// `operationcount`: operations in the run; `None` when the file does not say.
    pub operation_count: Option<u64>,
    /// `fieldcount` (10) fields of `fieldlength` (100) bytes.
    pub field_count: u32,
    pub field_length: u32,
    /// `readallfields` (true): a read returns every field, else one chosen at random.
    pub read_all_fields: bool,
    /// `writeallfields` (false): an update writes every field, else one.
    pub write_all_fields: bool,
    pub proportions: Proportions,
    /// `requestdistribution` (uniform), with `hotspotdatafraction` (0.2) and
    /// `hotspotopnfraction` (0.8) for `hotspot`.
    pub request_distribution: RequestDistribution,
    /// `maxscanlength` (1000) and `scanlengthdistribution` (uniform).
    pub max_scan_length: u64,
    pub scan_length_distribution: ScanLengthDistribution,
    /// `insertorder` (hashed): key numbers hashed into key names, or in order.
    pub hashed_inserts: bool,
    /// `zeropadding` (1): digits a key's number is padded to.
    pub zero_padding: usize,
    /// `table` (usertable).
    pub table: String,
}

impl Default for Workload {
    /// `CoreWorkload`'s defaults.
    fn default() -> Workload {
        Workload {
            record_count: None,
            operation_count: None,
            field_count: 10,
            field_length: 100,
            read_all_fields: true,
            write_all_fields: false,
            proportions: Proportions {
                read: 0.95,
                update: 0.05,
                insert: 0.0,
                scan: 0.0,
                read_modify_write: 0.0,
            },
            request_distribution: RequestDistribution::Uniform,
            max_scan_length: 1000,
            scan_length_distribution: ScanLengthDistribution::Uniform,
            hashed_inserts: true,
            zero_padding: 1,
            table: "usertable".to_string(),
        }
    }
}

/// The workload classes a file may name: YCSB's `CoreWorkload`, under its old and new
/// package names.
const CORE_WORKLOAD: &[&str] = &[
    "site.ycsb.workloads.CoreWorkload",
    "com.yahoo.ycsb.workloads.CoreWorkload",
];

/// Every property dbduel reads, for the refusal of any other.
const KNOWN: &[&str] = &[
    "workload",
    "recordcount",
    "operationcount",
    "fieldcount",
    "fieldlength",
    "fieldlengthdistribution",
    "readallfields",
    "writeallfields",
    "readproportion",
    "updateproportion",
    "insertproportion",
    "scanproportion",
    "readmodifywriteproportion",
    "requestdistribution",
    "hotspotdatafraction",
    "hotspotopnfraction",
    "maxscanlength",
    "scanlengthdistribution",
    "insertorder",
    "zeropadding",
    "table",
];

/// The six core workloads as YCSB ships them (`workloads/workloada` …): the properties each
/// file sets (besides `recordcount = operationcount = 1000`, which a study sizes itself).
const BUILT_IN: &[(&str, &str)] = &[
    (
        "workloada",
        "readproportion=0.5\nupdateproportion=0.5\nscanproportion=0\ninsertproportion=0\nrequestdistribution=zipfian\n",
    ),
    (
        "workloadb",
        "readproportion=0.95\nupdateproportion=0.05\nscanproportion=0\ninsertproportion=0\nrequestdistribution=zipfian\n",
    ),
    (
        "workloadc",
        "readproportion=1\nupdateproportion=0\nscanproportion=0\ninsertproportion=0\nrequestdistribution=zipfian\n",
    ),
    (
        "workloadd",
        "readproportion=0.95\nupdateproportion=0\nscanproportion=0\ninsertproportion=0.05\nrequestdistribution=latest\n",
    ),
    (
        "workloade",
        "readproportion=0\nupdateproportion=0\nscanproportion=0.95\ninsertproportion=0.05\nrequestdistribution=zipfian\nmaxscanlength=100\nscanlengthdistribution=uniform\n",
    ),
    (
        "workloadf",
        "readproportion=0.5\nupdateproportion=0\nscanproportion=0\ninsertproportion=0\nreadmodifywriteproportion=0.5\nrequestdistribution=zipfian\n",
    ),
];

/// The names of the built-in workloads.
pub fn built_in_names() -> impl Iterator<Item = &'static str> {
    BUILT_IN.iter().map(|(n, _)| *n)
}

/// A built-in core workload by name (`workloada` … `workloadf`, or `a` … `f`).
pub fn built_in(name: &str) -> Option<Workload> {
    let long = if name.len() == 1 {
        format!("workload{name}")
    } else {
        name.to_string()
    };
    let (n, text) = BUILT_IN.iter().find(|(n, _)| *n == long)?;
    let head = "workload=site.ycsb.workloads.CoreWorkload\nreadallfields=true\n";
    parse(&format!("builtin:{n}"), &format!("{head}{text}")).ok()
}

/// One `key=value` of the file, with where its key and value start (1-based).
struct Property {
    key: String,
    value: String,
    line: usize,
    key_col: usize,
    value_col: usize,
}

/// The properties of `text` as `java.util.Properties.load` reads them: `#` and `!` start
/// comment lines; a key ends at the first unescaped `=`, `:` or white space; blanks around
/// the separator are skipped; a line ending in an odd number of backslashes continues on
/// the next. (Unicode escapes, which no YCSB file uses, are refused as a bad key or value.)
fn properties(file: &str, text: &str) -> Result<Vec<Property>, PropertiesError> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((i, raw)) = lines.next() {
        let mut logical = raw.to_string();
        let first_line = i + 1;
        while ends_in_continuation(&logical) {
            logical.pop();
            match lines.next() {
                Some((_, next)) => logical.push_str(next.trim_start()),
                None => break,
            }
        }
        let body = logical.trim_start();
        let indent = logical.len() - body.len();
        if body.is_empty() || body.starts_with('#') || body.starts_with('!') {
            continue;
        }
        let mut key = String::new();
        let mut chars = body.char_indices().peekable();
        let mut end = body.len();
        while let Some((at, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, e)) = chars.next() {
                        key.push(unescape(e));
                    }
                }
                '=' | ':' | ' ' | '\t' | '\x0c' => {
                    end = at;
                    break;
                }
                c => key.push(c),
            }
        }
        let rest = &body[end..];
        let rest = rest.trim_start_matches([' ', '\t', '\x0c']);
        let rest = rest
            .strip_prefix(['=', ':'])
            .unwrap_or(rest)
            .trim_start_matches([' ', '\t', '\x0c']);
        let value_col = indent + body.len() - rest.len() + 1;
        if key.contains("\\u") || rest.contains("\\u") {
            return Err(PropertiesError {
                file: file.to_string(),
                line: first_line,
                col: indent + 1,
                message: "Unicode escapes (\\uXXXX) are not read here: write the character itself"
                    .into(),
            });
        }
        let value: String = unescape_all(rest);
        out.push(Property {
            key,
            value: value.trim_end().to_string(),
            line: first_line,
            key_col: indent + 1,
            value_col,
        });
    }
    Ok(out)
}

fn ends_in_continuation(line: &str) -> bool {
    line.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
}

fn unescape(c: char) -> char {
    match c {
        't' => '\t',
        'n' => '\n',
        'r' => '\r',
        'f' => '\x0c',
        c => c,
    }
}

fn unescape_all(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(e) = chars.next() {
                out.push(unescape(e));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// One property's value, where it stands, for reading it and saying what is wrong with it.
struct At<'a> {
    file: &'a str,
    p: &'a Property,
}

impl At<'_> {
    fn v(&self) -> &str {
        &self.p.value
    }

    fn err(&self, message: String) -> PropertiesError {
        PropertiesError {
            file: self.file.to_string(),
            line: self.p.line,
            col: self.p.value_col,
            message,
        }
    }

    fn count(&self, what: &str) -> Result<u64, PropertiesError> {
        let v = self.v();
        v.parse::<u64>()
            .map_err(|_| self.err(format!("{} = {v:?}: {what} is a whole number", self.p.key)))
    }

    /// A count from 1 to `most`.
    fn count_to<T: TryFrom<u64>>(&self, what: &str, most: u64) -> Result<T, PropertiesError> {
        let n = self.count(what)?;
        (1..=most)
            .contains(&n)
            .then(|| T::try_from(n).ok())
            .flatten()
            .ok_or_else(|| self.err(format!("{} = {n}: give 1 to {most}", self.p.key)))
    }

    fn share(&self) -> Result<f64, PropertiesError> {
        let v = self.v();
        v.parse::<f64>()
            .ok()
            .filter(|x| (0.0..=1.0).contains(x))
            .ok_or_else(|| self.err(format!("{} = {v:?}: give a share from 0 to 1", self.p.key)))
    }

    fn flag(&self) -> Result<bool, PropertiesError> {
        match self.v() {
            "true" => Ok(true),
            "false" => Ok(false),
            v => Err(self.err(format!("{} = {v:?}: give true or false", self.p.key))),
        }
    }

    /// One of `names`, as the matching value of `values`.
    fn one_of<T: Copy>(
        &self,
        names: &[&str],
        values: &[T],
        say: &str,
    ) -> Result<T, PropertiesError> {
        let v = self.v();
        names
            .iter()
            .position(|n| *n == v)
            .map(|i| values[i])
            .ok_or_else(|| self.err(format!("{} = {v}: {say}", self.p.key)))
    }
}

/// A workload as its properties are read, and what is decided only at the end.
struct Reading {
    w: Workload,
    distribution: &'static str,
    distribution_at: Option<usize>,
    hot: (f64, f64),
}

impl Reading {
    /// The sizes and the shape of the records; `false` for a key that is none of them.
    fn shape(&mut self, at: &At<'_>) -> Result<bool, PropertiesError> {
        let w = &mut self.w;
        match at.p.key.as_str() {
            "recordcount" => w.record_count = Some(at.count("the number of records")?),
            "operationcount" => w.operation_count = Some(at.count("the number of operations")?),
            "fieldcount" => w.field_count = at.count_to("the number of fields", 1000)?,
            "fieldlength" => w.field_length = at.count_to("a length in bytes", 65_535)?,
            "fieldlengthdistribution" if at.v() == "constant" => {}
            "fieldlengthdistribution" => {
                return Err(at.err(format!(
                    "fieldlengthdistribution = {}: only constant (YCSB's default) is implemented; every field is fieldlength bytes",
                    at.v()
                )));
            }
            "insertorder" => {
                w.hashed_inserts = at.one_of(
                    &["hashed", "ordered"],
                    &[true, false],
                    "give hashed or ordered",
                )?
            }
            "zeropadding" => w.zero_padding = at.count_to("a number of digits", 64)?,
            "table" => {
                let v = at.v();
                if v.is_empty()
                    || v.len() > 64
                    || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    return Err(at.err(format!("table = {v:?}: give 1-64 letters, digits or _")));
                }
                w.table = v.to_string();
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// What the operations are and which records they touch; `false` for a key that is none
    /// of them.
    fn mix(&mut self, at: &At<'_>) -> Result<bool, PropertiesError> {
        let w = &mut self.w;
        match at.p.key.as_str() {
            "workload" if CORE_WORKLOAD.contains(&at.v()) => {}
            "workload" => {
                return Err(at.err(format!(
                    "workload = {}: only YCSB's core workload ({}) runs here",
                    at.v(),
                    CORE_WORKLOAD[0]
                )));
            }
            "readallfields" => w.read_all_fields = at.flag()?,
            "writeallfields" => w.write_all_fields = at.flag()?,
            "readproportion" => w.proportions.read = at.share()?,
            "updateproportion" => w.proportions.update = at.share()?,
            "insertproportion" => w.proportions.insert = at.share()?,
            "scanproportion" => w.proportions.scan = at.share()?,
            "readmodifywriteproportion" => w.proportions.read_modify_write = at.share()?,
            "requestdistribution" => {
                const NAMES: [&str; 4] = ["uniform", "zipfian", "latest", "hotspot"];
                self.distribution = at.one_of(&NAMES, &NAMES, "give uniform, zipfian, latest or hotspot (YCSB's exponential and sequential are not implemented)")?;
                self.distribution_at = Some(at.p.line);
            }
            "hotspotdatafraction" => self.hot.0 = at.share()?,
            "hotspotopnfraction" => self.hot.1 = at.share()?,
            "maxscanlength" => {
                w.max_scan_length = at.count("a number of records")?;
                if w.max_scan_length == 0 {
                    return Err(at.err("maxscanlength = 0: give at least 1".into()));
                }
            }
            "scanlengthdistribution" => {
                w.scan_length_distribution = at.one_of(
                    &["uniform", "zipfian"],
                    &[
                        ScanLengthDistribution::Uniform,
                        ScanLengthDistribution::Zipfian,
                    ],
                    "give uniform or zipfian",
                )?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The workload, once every property is read: its request distribution, and at least one
    /// operation.
    fn finish(self, file: &str) -> Result<Workload, PropertiesError> {
        let mut w = self.w;
        w.request_distribution = match self.distribution {
            "zipfian" => RequestDistribution::Zipfian,
            "latest" => RequestDistribution::Latest,
            "hotspot" => RequestDistribution::Hotspot {
                data_fraction: self.hot.0,
                op_fraction: self.hot.1,
            },
            _ => RequestDistribution::Uniform,
        };
        if w.proportions.normalized().iter().all(|&p| p == 0.0) {
            return Err(PropertiesError {
                file: file.to_string(),
                line: self.distribution_at.unwrap_or(1),
                col: 1,
                message: "every operation's proportion is 0: give readproportion, updateproportion, insertproportion, scanproportion or readmodifywriteproportion above 0".into(),
            });
        }
        Ok(w)
    }
}

/// The refusal of a key dbduel does not read. The key is shown only when it looks like a
/// property name: a file that is not a workload file (a study may name any path) is refused
/// without its text going into a terminal or a result file.
fn unknown(file: &str, p: &Property) -> PropertiesError {
    let named = p.key.len() <= 64
        && p.key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    let what = if named {
        format!("property `{}` is not implemented", p.key)
    } else {
        "this line is no property dbduel reads".to_string()
    };
    PropertiesError {
        file: file.to_string(),
        line: p.line,
        col: p.key_col,
        message: format!(
            "{what}, and a workload is never run without one of its properties; remove it, or use the properties dbduel reads: {}",
            KNOWN.join(", ")
        ),
    }
}

/// Read a workload file's text (`file` names it in errors).
pub fn parse(file: &str, text: &str) -> Result<Workload, PropertiesError> {
    let mut r = Reading {
        w: Workload::default(),
        distribution: "uniform",
        distribution_at: None,
        hot: (0.2, 0.8),
    };
    for p in properties(file, text)? {
        let at = At { file, p: &p };
        if !(r.shape(&at)? || r.mix(&at)?) {
            return Err(unknown(file, &p));
        }
    }
    r.finish(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workload file as YCSB ships them: its license header and description as comments,
    /// then the properties (here workload E's).
    const WORKLOAD_E_FILE: &str = "# A header of comment lines\n#\n# Workload E: short ranges\n\nrecordcount=1000\noperationcount=1000\nworkload=com.yahoo.ycsb.workloads.CoreWorkload\n\nreadallfields=true\n\nreadproportion=0\nupdateproportion=0\nscanproportion=0.95\ninsertproportion=0.05\n\nrequestdistribution=zipfian\n\nmaxscanlength=100\n\nscanlengthdistribution=uniform\n\n\n";

    #[test]
    fn the_six_core_workloads_read_with_ycsb_s_mixes() {
        let mix = |n: &str| built_in(n).expect(n).proportions.normalized();
        assert_eq!(mix("a"), [0.5, 0.5, 0.0, 0.0, 0.0]);
        assert_eq!(mix("b"), [0.95, 0.05, 0.0, 0.0, 0.0]);
        assert_eq!(mix("c"), [1.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(mix("d"), [0.95, 0.0, 0.05, 0.0, 0.0]);
        assert_eq!(mix("e"), [0.0, 0.0, 0.05, 0.95, 0.0]);
        assert_eq!(mix("f"), [0.5, 0.0, 0.0, 0.0, 0.5]);
        assert_eq!(
            built_in("workloadd").unwrap().request_distribution,
            RequestDistribution::Latest
        );
        let e = built_in("e").unwrap();
        assert_eq!(e.max_scan_length, 100);
        assert_eq!((e.field_count, e.field_length), (10, 100));
        assert_eq!(built_in_names().count(), 6);
        assert!(built_in("g").is_none());
    }

    #[test]
    fn a_shipped_file_reads_like_its_built_in_twin() {
        let w = parse("workloads/workloade", WORKLOAD_E_FILE).expect("read");
        assert_eq!(w.record_count, Some(1000));
        assert_eq!(w.operation_count, Some(1000));
        let twin = built_in("workloade").unwrap();
        assert_eq!(
            Workload {
                record_count: None,
                operation_count: None,
                ..w
            },
            twin
        );
    }

    #[test]
    fn an_unknown_property_is_refused_at_its_line_and_column_with_its_name() {
        let text = "recordcount=1000\n  # a comment\n  threadcount = 8\n";
        let e = parse("my/workload", text).unwrap_err();
        assert_eq!((e.line, e.col), (3, 3), "{e}");
        assert!(e.to_string().starts_with("my/workload:3:3: "), "{e}");
        assert!(
            e.message.contains("`threadcount` is not implemented"),
            "{e}"
        );
        assert!(e.message.contains("readproportion"), "{e}");
    }

    #[test]
    fn a_file_that_is_no_workload_is_refused_without_its_text() {
        let e = parse("/etc/some-secret", "hunter2$secret!token:rest of it\n").unwrap_err();
        assert_eq!((e.line, e.col), (1, 1), "{e}");
        assert!(e.message.starts_with("this line is no property"), "{e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }

    #[test]
    fn a_bad_value_is_refused_at_the_value() {
        let e = parse("w", "readproportion = 1.5\n").unwrap_err();
        assert_eq!((e.line, e.col), (1, 18), "{e}");
        assert!(e.message.contains("share from 0 to 1"), "{e}");
        let e = parse("w", "requestdistribution=exponential\n").unwrap_err();
        assert!(e.message.contains("not implemented"), "{e}");
        let e = parse("w", "workload=site.ycsb.workloads.RestWorkload\n").unwrap_err();
        assert!(e.message.contains("only YCSB's core workload"), "{e}");
        let e = parse("w", "readproportion=0\nupdateproportion=0\n").unwrap_err();
        assert!(
            e.message.contains("every operation's proportion is 0"),
            "{e}"
        );
    }

    #[test]
    fn java_properties_syntax_is_read_as_java_reads_it() {
        let text = "! bang comment\nreadproportion: 0.25\nupdateproportion 0.75\ntable=user\\\n  table\nhotspotdatafraction=0.1\nrequestdistribution=hotspot\n";
        let w = parse("w", text).expect("read");
        assert_eq!(w.proportions.read, 0.25);
        assert_eq!(w.proportions.update, 0.75);
        assert_eq!(w.table, "usertable");
        assert_eq!(
            w.request_distribution,
            RequestDistribution::Hotspot {
                data_fraction: 0.1,
                op_fraction: 0.8
            }
        );
        // YCSB's defaults where the file is silent
        let d = parse("w", "readproportion=1\n").unwrap();
        assert!(d.read_all_fields && !d.write_all_fields && d.hashed_inserts);
        assert_eq!(d.max_scan_length, 1000);
    }
}
