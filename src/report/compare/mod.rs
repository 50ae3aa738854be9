//! `dbduel compare RUN_A RUN_B`: the same study run twice (before and after a change of
//! configuration, machine or version), per contender per step per figure, how B differs
//! from A — and whether that difference is more than noise.
//!
//! Noise comes from each step's per-second series: the relative standard error of the
//! step's mean, corrected for the correlation of neighbouring seconds
//! ([`series::relative_standard_error`]). A change counts only when it is beyond both the
//! threshold and two standard errors of the difference (about 95 %); so a 2 % change inside
//! 10 % noise is "no significant change". Rates and durations use the throughput series,
//! latency figures the matching per-second quantile. Sizes do not jitter and are judged by the
//! threshold alone. A figure without a usable series (a single statement, a step shorter than
//! three seconds) is shown but *not judged*: one measurement cannot tell a change from noise.
//! A step that ran in A and failed in B is a regression.
//!
//! Figures measured over repeated rounds (`--repeat`, or several runs a side pooled) are
//! judged from their samples instead, every kind alike: a change counts when it is beyond the
//! threshold and the two intervals for the median ([`Spread`]) are apart; fewer than
//! [`MIN_SAMPLES`] a side are not judged, and the row says how many more rounds it needs.

//!
//! [`judge`] makes the [`Comparison`]; [`view`] turns it into the words and numbers shown, once;
//! [`render`] lays that out as text, Markdown, JSON or HTML.

pub mod judge;
pub mod render;
pub mod view;

pub use judge::{Comparison, Kind, MIN_SECONDS, Row, SIGMAS, compare, parse_threshold};
