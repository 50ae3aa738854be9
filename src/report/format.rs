//! How the report writes figures: the results' own way of writing a value in its unit
//! (`results::format`), and Markdown's table cells.

pub use crate::results::format::*;

/// A Markdown table cell: pipes escaped, no line breaks.
pub fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}
