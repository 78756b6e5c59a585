//! Argument values shared by the commands: comma lists of numbers (a
//! negative first value included: `--tip-force -0.5,0,0.2`), vectors and
//! triples with range checks.

use lab::observe::ObserverMode;
use lab::{Error, Result};
use std::str::FromStr;

/// A comma-separated list of finite numbers, e.g. `-1,0,2.5e-3`.
#[derive(Clone, Debug, PartialEq)]
pub struct Numbers(pub Vec<f64>);

/// A list value that is not a list of finite numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct NotNumbers(String);

impl std::fmt::Display for NotNumbers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotNumbers {}

impl FromStr for Numbers {
    type Err = NotNumbers;
    fn from_str(s: &str) -> std::result::Result<Numbers, NotNumbers> {
        if s.trim().is_empty() {
            return Ok(Numbers(vec![]));
        }
        s.split(',')
            .map(|x| match x.trim().parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(v),
                Ok(v) => Err(NotNumbers(format!("{v} is not a finite number"))),
                Err(_) => Err(NotNumbers(format!("{:?} is not a number", x.trim()))),
            })
            .collect::<std::result::Result<Vec<f64>, NotNumbers>>()
            .map(Numbers)
    }
}

impl Numbers {
    /// Exactly `n` numbers for `flag` (what they are: `what`).
    pub fn exactly<const N: usize>(&self, flag: &str, what: &str) -> Result<[f64; N]> {
        <[f64; N]>::try_from(self.0.clone()).map_err(|_| Error::input(format!("--{flag}: expected {N} numbers {what}, got {} values", self.0.len())))
    }
}

/// `X,Y,Z` of `flag`, zero when not given.
pub fn vec3(flag: &str, v: &Option<Numbers>) -> Result<lie::Vec3> {
    match v {
        None => Ok(lie::Vec3::zeros()),
        Some(n) => Ok(lie::Vec3::from(n.exactly::<3>(flag, "X,Y,Z")?)),
    }
}

/// A Gaussian prior flag: absent (off), bare (the rod file's), or `MEAN,SD`.
pub fn prior(flag: &str, v: &Option<Numbers>) -> Result<lab::identify::Prior> {
    use lab::identify::Prior;
    match v {
        None => Ok(Prior::Off),
        Some(n) if n.0.is_empty() => Ok(Prior::RodFile),
        Some(n) => {
            let [m, sd] = n.exactly::<2>(flag, "MEAN,SD")?;
            Ok(Prior::Given(m, sd))
        }
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum ModeArg {
    /// Markers are exact constraints (KKT Newton, the paper's observer).
    Hard,
    /// Markers pull with springs k = c / sigma^2 (robust to noise and missing markers).
    Weighted,
}

impl From<ModeArg> for ObserverMode {
    fn from(m: ModeArg) -> ObserverMode {
        match m {
            ModeArg::Hard => ObserverMode::Hard,
            ModeArg::Weighted => ObserverMode::Weighted,
        }
    }
}
