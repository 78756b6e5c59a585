//! `identify`: material parameters (E, G, rho) from static experiments.
//! Stage "identify" in record -> track -> observe -> identify -> simulate ->
//! report: it reads experiments (known loads, measured points), solves the
//! PLS static model of every experiment, and fits the parameters by
//! least squares with argmin (Levenberg-Marquardt on log-parameters, exact
//! sensitivities), with confidence intervals and identifiability checks.

pub mod data;
pub mod fit;
pub mod lm;
pub mod output;
pub mod problem;
pub mod sensor_bias;
pub mod sessions;
pub mod windings;

pub mod hold_table;
mod step;
pub use step::Step;

pub use data::{read_experiments, CriticalQuantity, CriticalValue, DataError, Experiment, Measurement, WrenchMeasurement};
pub use fit::{fit, leave_one_out, predict, predict_with_band, Fit, FitError, FitOptions, LooResult, Prediction, Uncertainty};
pub use problem::{Geometry, Layout, ModelError, Problem, Values};
