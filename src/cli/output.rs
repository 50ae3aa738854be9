//! Writing a command's result to stdout: [`emit`] and the `out!`/`outln!` macros every command
//! prints through, so a reader that went away ends the output, not the program.

use super::failure::exit;

/// Write to stdout. A reader that went away (`dbduel report … | head`) ends the output, not
/// the program: without this, `print!` panics on the broken pipe. Other write errors (a full
/// disk behind a redirect) are said on stderr.
pub(super) fn emit(s: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(s.as_bytes()).and_then(|()| o.flush())
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        // A cut-off result (a full disk behind `> file`) must not pass for a whole one; the
        // run's own files are written by then.
        let _ = writeln!(std::io::stderr(), "dbduel: writing the output: {e}");
        std::process::exit(exit::FAILED);
    }
}

/// `print!` through [`emit`].
macro_rules! out {
    ($($t:tt)*) => { $crate::cli::output::emit(&format!($($t)*)) };
}

/// `println!` through [`emit`].
macro_rules! outln {
    () => { $crate::cli::output::emit("\n") };
    ($($t:tt)*) => { $crate::cli::output::emit(&format!("{}\n", format_args!($($t)*))) };
}

pub(super) use {out, outln};
