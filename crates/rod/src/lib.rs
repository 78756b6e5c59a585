//! `rod`: the soft rod itself — geometry, materials, the piecewise linear
//! strain (PLS) Cosserat kinematics and statics. Stage "simulate" in
//! record -> track -> observe -> identify -> simulate -> report; the observer
//! and identification stand on its kinematics, Jacobians and static solver.

pub mod branch;
pub mod config;
pub mod creep;
pub mod factors;
pub mod fibre;
pub mod geometry;
pub mod held;
pub mod memory;
pub mod model;
pub mod newton;
pub mod shape;
pub mod sighting;
pub mod statics;
pub mod terms;
pub mod validity;

pub use config::{
    Cable, ConfigError, ConstantLoss, Damping, GuideReaction, IdentifyPriors, Marker, MaterialRanges, PathRadius, PronyBranch, Rod, StrainBasis, StrainModes,
    TipCondition,
};
pub use fibre::ElasticLaw;
pub use geometry::{CrossSection, GivenSection, Material, Profile, Shape};
pub use held::{solve_held, HeldSolution, TipHold};
pub use model::{CableHole, Frames, Kinematics, Model};
pub use sighting::Sighting;
pub use statics::{Loads, NewtonOptions, PointLoad, StaticSolution, StaticsError};
