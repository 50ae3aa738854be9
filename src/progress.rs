//! Progress for long work, on stderr: a live spinner line on a terminal, plain timestamped
//! lines otherwise (at most one status line every 10 s), nothing with `--quiet`. Shared by
//! reference: a run's event consumer prints its lines while a step reports its status.
//! Nothing here panics when stderr's reader is gone (`dbduel run … 2>&1 | head`): every
//! line goes through [`line`], which drops what cannot be written, as the [`errln!`] macro
//! does for the rest of dbduel.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Write one line to stderr. A reader that went away (or a full disk behind `2>file`) loses
/// the line and nothing else: `eprintln!` would panic instead, mid-run.
pub fn line(args: std::fmt::Arguments) {
    let _ = writeln!(std::io::stderr().lock(), "{args}");
}

/// `eprintln!` that never panics: see [`line`].
#[macro_export]
macro_rules! errln {
    ($($t:tt)*) => { $crate::progress::line(format_args!($($t)*)) };
}

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Tty,
    Lines,
    Quiet,
}

/// Progress reporter. Called from the thread that runs steps.
pub struct Progress {
    mode: Mode,
    /// The live line of the current step (terminal mode).
    bar: Mutex<Option<ProgressBar>>,
    started: Instant,
    /// Step label and when a status line was last printed (plain-lines mode).
    current: Mutex<(String, Instant)>,
}

impl Progress {
    /// Choose the mode: quiet when asked, a live line when stderr is a terminal, else lines.
    pub fn new(quiet: bool) -> Self {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            Mode::Tty
        } else {
            Mode::Lines
        };
        Self::with_mode(mode)
    }

    pub fn with_mode(mode: Mode) -> Self {
        Progress {
            mode,
            bar: Mutex::new(None),
            started: Instant::now(),
            current: Mutex::new((String::new(), Instant::now())),
        }
    }

    fn stamp(&self) -> String {
        format!("[{:>6.1}s]", self.started.elapsed().as_secs_f64())
    }

    /// A step begins.
    pub fn begin(&self, label: &str) {
        if let Ok(mut c) = self.current.lock() {
            *c = (label.to_string(), Instant::now());
        }
        match self.mode {
            Mode::Quiet => {}
            Mode::Lines => crate::errln!("{} {label} ...", self.stamp()),
            Mode::Tty => {
                let bar = ProgressBar::new_spinner();
                bar.set_style(
                    ProgressStyle::with_template("{spinner} [{elapsed:>4}] {prefix} {wide_msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar.set_prefix(label.to_string());
                bar.enable_steady_tick(Duration::from_millis(120));
                self.set_bar(Some(bar));
            }
        }
    }

    /// What the current step is doing now.
    pub fn status(&self, msg: &str) {
        match self.mode {
            Mode::Quiet => {}
            Mode::Tty => {
                if let Ok(bar) = self.bar.lock()
                    && let Some(b) = bar.as_ref()
                {
                    b.set_message(msg.to_string());
                }
            }
            Mode::Lines => {
                if let Ok(mut c) = self.current.lock()
                    && c.1.elapsed() >= Duration::from_secs(10)
                {
                    crate::errln!("{} {}: {msg}", self.stamp(), c.0);
                    c.1 = Instant::now();
                }
            }
        }
    }

    /// The current step ended; `line` says how.
    pub fn end(&self, line: &str) {
        self.clear_bar();
        if self.mode != Mode::Quiet {
            crate::errln!("{} {line}", self.stamp());
        }
    }

    /// A failure: shown even with `--quiet`, since errors are not progress.
    pub fn fail(&self, line: &str) {
        self.clear_bar();
        crate::errln!("{} {line}", self.stamp());
    }

    /// A line outside any step.
    pub fn note(&self, line: &str) {
        if self.mode != Mode::Quiet {
            let bar = self.bar.lock().ok().and_then(|b| b.clone());
            match bar {
                Some(b) => b.suspend(|| crate::errln!("{} {line}", self.stamp())),
                None => crate::errln!("{} {line}", self.stamp()),
            }
        }
    }

    /// Replace the live line (a step begins).
    fn set_bar(&self, bar: Option<ProgressBar>) {
        if let Ok(mut b) = self.bar.lock() {
            *b = bar;
        }
    }

    /// Take the live line down, if there is one.
    fn clear_bar(&self) {
        let bar = self.bar.lock().ok().and_then(|mut b| b.take());
        if let Some(b) = bar {
            b.finish_and_clear();
        }
    }
}
