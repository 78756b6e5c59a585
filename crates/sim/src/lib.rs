//! `sim`: simulates a lab experiment — stage "simulate" of
//! record -> track -> observe -> identify -> simulate -> report. The rod of
//! `rod` (PLS Cosserat), held at its base by the robot (a prescribed pose
//! over time, e.g. a session's flange log) or lying free, its tip free or
//! held (the scene's `[tip]`, exactly: the hold's multipliers are unknowns
//! of each step, [`rod::held::HoldRows`]), touching a table
//! with Coulomb friction, stepped in time by implicit Euler (dynamic mode)
//! or as a sequence of equilibria (quasi-static mode).
//!
//! Every physical effect is a [`rod::terms::Term`]: inertia
//! ([`inertia::Inertia`]), damping, applied loads ([`loads`]) and contact
//! forces join the rod's elastic energy and gravity; the contact law
//! ([`contact`]) adds its rows, and [`rod::newton`] solves each step.

pub mod benchmarks;
pub mod contact;
pub mod inertia;
pub mod loads;
pub mod scene;
pub mod simulator;

pub use contact::{ContactState, Law, Plane};
pub use inertia::Integrator;
pub use scene::{BaseSpec, LoadSpec, Mode, NormalCompliance, Scene, Start};
pub use simulator::{BaseMotion, ContactRecord, SimError, Simulator, StepRecord};
