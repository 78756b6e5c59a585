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
/// `(I + r 1^T) ds/dt = -s / tau`; integrated by the classical
/// Runge-Kutta scheme at a tenth of the shortest time (to 1e-6 here).
pub fn hold_modulus_ratio(branches: &[PronyBranch], loaded_for_s: f64) -> f64 {
    let fast = 1.0 + branches.iter().map(|b| b.modulus_ratio).sum::<f64>();
    if branches.is_empty() || loaded_for_s <= 0.0 {
        return fast;
    }
    // Stress 1 at t = 0+: the strain is 1 / fast, each branch carries r_k / fast.
    let mut stress: Vec<f64> = branches.iter().map(|b| b.modulus_ratio / fast).collect();
    let shortest = branches.iter().map(|b| b.time_constant_s).fold(f64::INFINITY, f64::min);
    // Past 40 longest times every branch has relaxed to round-off.
    let longest = branches.iter().map(|b| b.time_constant_s).fold(0.0, f64::max);
    let horizon = loaded_for_s.min(40.0 * longest);
    let steps = (horizon / (0.1 * shortest)).ceil().max(1.0) as usize;
    let h = horizon / steps as f64;
    // (I + r 1^T)^-1 v = v - r (1^T v) / (1 + 1^T r) (Sherman-Morrison).
    let ratio_sum: f64 = branches.iter().map(|b| b.modulus_ratio).sum();
    let rate = |s: &[f64]| -> Vec<f64> {
        let v: Vec<f64> = s.iter().zip(branches).map(|(s, b)| -s / b.time_constant_s).collect();
        let sum_v: f64 = v.iter().sum();
        v.iter().zip(branches).map(|(v, b)| v - b.modulus_ratio * sum_v / (1.0 + ratio_sum)).collect()
    };
    let along = |s: &[f64], k: &[f64], f: f64| -> Vec<f64> { s.iter().zip(k).map(|(s, k)| s + f * k).collect() };
    for _ in 0..steps {
        let k1 = rate(&stress);
        let k2 = rate(&along(&stress, &k1, 0.5 * h));
        let k3 = rate(&along(&stress, &k2, 0.5 * h));
        let k4 = rate(&along(&stress, &k3, h));
        for (i, s) in stress.iter_mut().enumerate() {
            *s += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
        }
    }
    // The spring carries what the branches do not: strain = (1 - sum s) / E_relaxed.
    1.0 / (1.0 - stress.iter().sum::<f64>())
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
    }
}
