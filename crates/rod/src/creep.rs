//! Creep of a viscoelastic rod under a held load: what modulus a static
//! hold sees after its loads have acted for a while. A generalised Maxwell
//! law relaxes every section stiffness alike (constant Poisson ratio), so
//! by the correspondence principle a hold's shape after `t` seconds under
//! constant loads is the elastic shape with the modulus `1 / J(t)`, J the
//! law's creep compliance.

use crate::config::PronyBranch;

/// The modulus a hold sees after its loads have acted `loaded_for_s`
/// seconds, over the relaxed modulus: `1 / (E_relaxed J(t))`. It is
/// `1 + sum ratio` at once and falls to 1 as the branches relax.
///
/// The branches' stresses under a constant total stress follow
/// `(I + r 1^T) ds/dt = -s / tau`, a linear system solved exactly by the
/// matrix exponential: its cost depends on the number of branches only,
/// not on how far apart a rod file puts their times.
pub fn hold_modulus_ratio(branches: &[PronyBranch], loaded_for_s: f64) -> f64 {
    let ratio_sum: f64 = branches.iter().map(|b| b.modulus_ratio).sum();
    let fast = 1.0 + ratio_sum;
    if branches.is_empty() || loaded_for_s <= 0.0 {
        return fast;
    }
    // Past 40 longest times every branch has relaxed to round-off.
    let longest = branches.iter().map(|b| b.time_constant_s).fold(0.0, f64::max);
    let t = loaded_for_s.min(40.0 * longest);
    // ds_i/dt = -s_i / tau_i + r_i sum_j (s_j / tau_j) / (1 + sum r)
    // ((I + r 1^T)^-1 by Sherman-Morrison).
    let n = branches.len();
    let rate = nalgebra::DMatrix::from_fn(n, n, |i, j| {
        let per_s = 1.0 / branches[j].time_constant_s;
        branches[i].modulus_ratio * per_s / fast - if i == j { per_s } else { 0.0 }
    });
    // Stress 1 at t = 0+: the strain is 1 / fast, each branch carries r_k / fast.
    let start = nalgebra::DVector::from_iterator(n, branches.iter().map(|b| b.modulus_ratio / fast));
    let stress = (rate * t).exp() * start;
    // The spring carries what the branches do not: strain = (1 - sum s) / E_relaxed.
    1.0 / (1.0 - stress.sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A standard linear solid (one branch) creeps in closed form:
    /// J(t) = 1/E_r - (1/E_r - 1/E_0) exp(-t / tau_r), with the
    /// retardation time tau_r = tau (1 + r).
    #[test]
    fn a_standard_linear_solid_creeps_as_its_closed_form() {
        let (r, tau) = (0.4, 0.05);
        let branch = [PronyBranch { modulus_ratio: r, time_constant_s: tau }];
        for t in [0.0, 0.01, 0.05, 0.1, 0.3, 1.0, 100.0] {
            let compliance = 1.0 - (1.0 - 1.0 / (1.0 + r)) * (-t / (tau * (1.0 + r))).exp();
            let ratio = hold_modulus_ratio(&branch, t);
            assert!((ratio - 1.0 / compliance).abs() < 1e-6, "at {t} s: {ratio} against {}", 1.0 / compliance);
        }
        assert_eq!(hold_modulus_ratio(&[], 3.0), 1.0);
    }

    /// Two branches far apart in time: at a time between them the fast
    /// one has relaxed and the slow one has not (the law of the slow one
    /// alone, seen from a spring of 1 + its ratio).
    #[test]
    fn between_two_far_branches_only_the_slow_one_holds() {
        let branches = [PronyBranch { modulus_ratio: 0.3, time_constant_s: 1e-3 }, PronyBranch { modulus_ratio: 0.2, time_constant_s: 100.0 }];
        let ratio = hold_modulus_ratio(&branches, 0.1);
        assert!((ratio - 1.2).abs() < 2e-3, "{ratio}");
        // Times twelve decades apart, a hold of 10^4 s (the stepped
        // integration it replaced needed 10^11 steps): the slow branch's
        // standard linear solid, the fast one long relaxed.
        let stiff = [PronyBranch { modulus_ratio: 0.3, time_constant_s: 1e-9 }, PronyBranch { modulus_ratio: 0.2, time_constant_s: 1e3 }];
        let want = 1.0 / (1.0 - (1.0 - 1.0 / 1.2) * (-1e4 / (1e3 * 1.2f64)).exp());
        let ratio = hold_modulus_ratio(&stiff, 1e4);
        assert!((ratio - want).abs() < 1e-6, "{ratio} against {want}");
    }
}
