//! Any bytes given as a study file, with any `--set` overrides, give a study or an error —
//! never a panic, a hang or an error without a place.
#![no_main]

use dbduel::study::{Request, Source, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first line (if any) is an override, the rest the study, as a user could give them.
    let text = String::from_utf8_lossy(data);
    let (set, body) = match text.split_once('\n') {
        Some((first, rest)) if first.contains('=') && !first.starts_with('[') => (vec![first.to_string()], rest.to_string()),
        _ => (Vec::new(), text.to_string()),
    };
    let src = Source::new("fuzz.toml", body);
    let req = Request {
        study: "fuzz.toml".into(),
        sets: set,
        ..Request::default()
    };
    if let Err(e) = parse(&src, &req) {
        let line = e.to_string();
        assert!(!line.is_empty());
        if e.origin == "fuzz.toml" {
            assert!(e.line_col.is_some(), "an error in the file without a place: {line}");
        }
    }
});
