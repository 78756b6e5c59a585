//! What a fit reports while it runs: a stage beginning, or one item of a
//! counted stage (starts, leave-one-out folds, variants), so that a
//! progress display can show a total and an ETA.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step<'a> {
    /// A stage begins ("input noise into the weights").
    Stage(&'a str),
    /// Item `done` (from 1) of `total` of a counted stage ("leave-one-out").
    Counted { stage: &'a str, done: usize, total: usize },
}

impl fmt::Display for Step<'_> {
    /// "input noise into the weights", "leave-one-out 3/15".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Stage(s) => f.write_str(s),
            Step::Counted { stage, done, total } => write!(f, "{stage} {done}/{total}"),
        }
    }
}
