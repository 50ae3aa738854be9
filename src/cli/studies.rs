//! `dbduel studies`: list the built-in studies with their descriptions, or print one's TOML.

use super::failure::Failure;
use super::output::{out, outln};
use crate::study::builtin;

#[derive(clap::Subcommand, Debug)]
pub enum StudiesAction {
    /// Print a built-in study's TOML, or a template's (`custom`: your own schema, data and
    /// transactions; `dbduel init` writes it with its files).
    Show { name: String },
}

/// List the built-ins, or print the one asked for.
pub(super) fn exec(action: Option<StudiesAction>) -> Result<(), Failure> {
    match action {
        None => {
            for (name, text) in builtin::BUILTINS {
                outln!("{name:<12} {}", builtin::description(text));
            }
            Ok(())
        }
        Some(StudiesAction::Show { name }) => show(&name),
    }
}

/// Print a built-in study's TOML (`dbduel studies show NAME > my.toml`).
fn show(name: &str) -> Result<(), Failure> {
    if let Some(t) = crate::study::template::get(name) {
        out!("{}", t.study());
        return Ok(());
    }
    match builtin::get(name) {
        Some(text) => {
            out!("{text}");
            Ok(())
        }
        None => Err(Failure::bad_input(format!(
            "no built-in study `{name}`; built-ins: {}; templates: {} (`dbduel init DIR` writes one with its files)",
            builtin::names().join(", "),
            crate::study::template::TEMPLATES
                .iter()
                .map(|t| t.name)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}
