//! How a command fails: the exit codes, the [`Failure`] a command returns (a message that says
//! what to do, with its code), and the code a run's status earns.

use crate::results::Status;

/// Exit codes.
pub mod exit {
    pub const OK: i32 = 0;
    pub const FAILED: i32 = 1;
    pub const BAD_INPUT: i32 = 2;
    pub const PREREQUISITE: i32 = 3;
    pub const INTERRUPTED: i32 = 130;
}

/// A failure with its exit code.
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl Failure {
    pub(super) fn new(code: i32, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// Bad input or usage (exit 2).
    pub(super) fn bad_input(message: impl Into<String>) -> Self {
        Failure::new(exit::BAD_INPUT, message)
    }
}

/// The exit code of a run's status.
pub(super) fn status_code(s: Status) -> i32 {
    match s {
        Status::Ok | Status::Skipped => exit::OK,
        Status::Failed => exit::FAILED,
        Status::Interrupted => exit::INTERRUPTED,
        // A run that returned without its end written did not finish.
        Status::Running => exit::FAILED,
    }
}

/// Refuse a run that never finished (its summary still says `running`): its figures are
/// whatever its steps had written when dbduel stopped, so comparing, merging or rerunning it
/// would pass a part for the whole (exit 2).
pub(super) fn finished(dir: &std::path::Path, s: &Status) -> Result<(), Failure> {
    if *s != Status::Running {
        return Ok(());
    }
    Err(Failure::bad_input(format!(
        "{}: this run did not finish (its summary.json still says `running`): dbduel was killed or the machine went down before its end, or it is still running. Wait for it to end, or run its study again; `dbduel report` still shows the steps it finished",
        dir.display()
    )))
}

/// `a, b, c`: the names an error message offers instead.
pub(super) fn join_names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}
