//! The prediction band of a replay (validate): how far the simulated
//! series move within the identified parameters' uncertainty. The fit's
//! covariance (`[fit]` of identified.toml) of the parameters a replay
//! depends on (ln E, ln G, ln rho, the cables' friction) is split into its
//! principal directions; the replay is simulated once more at one standard
//! deviation along each, and a series' variance is the sum of the squared
//! moves (first order: exact for a series linear in the parameters, as the
//! static fit's own bands are). Three or four simulations more. Where the
//! replay is far from linear in them (a slide's onset), `samples` draws a
//! Monte Carlo cloud from the same covariance instead: the variance is then
//! the samples' mean squared move from the fitted parameters' replay.

use crate::error::Result;
use crate::progress::Task;
use crate::simulate::{at_records, Replay};
use identify::output::IdentifiedFile;
use nalgebra::{DMatrix, SVector, SymmetricEigen};
use rod::Rod;
use session::SessionDir;
use sim::StepRecord;
use std::sync::Arc;

/// The parameters a replay depends on, by their names in `[fit]`.
const REPLAYED: [&str; 4] = ["ln_e", "ln_g", "ln_rho", "friction_mu"];

/// A change of the replayed parameters: natural logarithms of E, G and
/// rho, and the cables' friction coefficient added.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Perturbation {
    /// ln E, ln G, ln rho and the friction coefficient, in that order.
    pub delta: [f64; 4],
}

impl Perturbation {
    /// The rod with its material and its cables' friction moved by this.
    pub fn apply(&self, rod: &Rod) -> Rod {
        let body = rod.cross_section.body;
        let [ln_e, ln_g, ln_rho, mu] = self.delta;
        let mut out = rod.with_material(rod::Material { e_pa: body.e_pa * ln_e.exp(), g_pa: body.g_pa * ln_g.exp(), rho_kg_m3: body.rho_kg_m3 * ln_rho.exp() });
        for c in &mut out.cables {
            c.friction_mu = (c.friction_mu + mu).max(0.0);
        }
        out
    }
}

/// The identified parameters' spread as it reaches a replay.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParameterSpread {
    /// The parameters the band covers, by their names in `[fit]`.
    pub parameters: Vec<String>,
    /// One standard deviation along each principal direction of their
    /// covariance (a direction of zero variance left out).
    pub directions: Vec<Perturbation>,
    /// Replayed parameters the fit left undetermined (no finite variance,
    /// a prior alone, or an interval the data do not bound, as
    /// identified.toml's `determined = false`): not in the band (their
    /// draws would be any value), and named on the page.
    pub unbounded: Vec<String>,
}

impl ParameterSpread {
    /// The spread of `file`'s fit; empty when the file has no covariance
    /// (the rod file's material, or a file older than the bands).
    pub fn of(file: &IdentifiedFile) -> ParameterSpread {
        let fit = &file.fit;
        let n = fit.parameter_names.len();
        if fit.covariance.len() != n || fit.covariance.iter().any(|r| r.len() != n) {
            return ParameterSpread::default();
        }
        let p = &file.parameters;
        let determined = [p.e_pa.determined, p.g_pa.determined, p.rho_kg_m3.determined, p.friction_mu_ci95.is_some_and(|c| c.iter().all(|x| x.is_finite()))];
        let mut used = vec![];
        let mut unbounded = vec![];
        for (slot, name) in REPLAYED.iter().enumerate() {
            let Some(i) = fit.parameter_names.iter().position(|p| p == name) else { continue };
            let v = fit.covariance[i][i];
            if v.is_finite() && determined[slot] && !fit.prior_only.iter().any(|p| p == name) {
                used.push((slot, i));
            } else {
                unbounded.push(name.to_string());
            }
        }
        let cov = DMatrix::from_fn(used.len(), used.len(), |a, b| fit.covariance[used[a].1][used[b].1]);
        let directions = principal_directions(&cov)
            .into_iter()
            .map(|d| {
                let mut delta = [0.0; 4];
                for (k, (slot, _)) in used.iter().enumerate() {
                    delta[*slot] = d[k];
                }
                Perturbation { delta }
            })
            .collect();
        ParameterSpread { parameters: used.iter().map(|(slot, _)| REPLAYED[*slot].to_string()).collect(), directions, unbounded }
    }

    pub fn is_empty(&self) -> bool {
        self.directions.is_empty()
    }

    /// `n` draws from the covariance (normal, seeded: the same bands on
    /// every run): each a sum of the principal directions, each direction
    /// times a standard normal number.
    pub fn samples(&self, n: usize, seed: u64) -> Vec<Perturbation> {
        let mut normal = crate::synth::Noise::new(seed);
        (0..n)
            .map(|_| {
                let mut delta = [0.0; 4];
                for d in &self.directions {
                    let z = normal.sample(1.0);
                    for (x, dx) in delta.iter_mut().zip(d.delta) {
                        *x += z * dx;
                    }
                }
                Perturbation { delta }
            })
            .collect()
    }
}

/// One standard deviation along each principal direction of the symmetric
/// `cov`: vectors `d_k` with `sum_k d_k d_k^T = cov` (eigenvalues at or
/// below 1e-14 of the largest, or not finite, left out).
pub fn principal_directions(cov: &DMatrix<f64>) -> Vec<Vec<f64>> {
    if cov.is_empty() || cov.iter().any(|v| !v.is_finite()) {
        return vec![];
    }
    let eig = SymmetricEigen::new(cov.clone());
    let largest = eig.eigenvalues.iter().cloned().fold(0.0, f64::max);
    (0..cov.nrows())
        .filter(|&k| eig.eigenvalues[k] > 1e-14 * largest && eig.eigenvalues[k] > 0.0)
        .map(|k| eig.eigenvectors.column(k).iter().map(|v| v * eig.eigenvalues[k].sqrt()).collect())
        .collect()
}

/// Who runs a session's band replays elsewhere: an executor (Python's
/// process pools, a Dask cluster), one task a replay, each task made by
/// [`crate::validate::band_replay`] from the validation's request alone.
pub trait BandRunner: Send + Sync {
    /// Replays `0..count` of `session`'s band, in that order, telling
    /// `task` how many are back.
    fn replay(&self, session: &SessionDir, count: usize, task: &dyn Task) -> Result<Vec<Replay>>;
}

/// Where a validation's band replays run: here, in parallel (the
/// default), or by a [`BandRunner`].
#[derive(Clone, Default)]
pub struct BandExecutor(pub Option<Arc<dyn BandRunner>>);

impl BandExecutor {
    pub fn on(runner: Arc<dyn BandRunner>) -> BandExecutor {
        BandExecutor(Some(runner))
    }
}

impl std::fmt::Debug for BandExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "an executor" } else { "here" })
    }
}

/// The same runner (or both here).
impl PartialEq for BandExecutor {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (a, b) => a.is_none() && b.is_none(),
        }
    }
}

/// The replays at the perturbed parameters, each with its step times.
#[derive(Default)]
pub struct PerturbedRuns {
    pub runs: Vec<(Vec<f64>, Vec<StepRecord>)>,
    /// Each run's squared move counts this much in the variance: 1 for a
    /// principal direction's, 1/n for one of n Monte Carlo draws.
    pub weight: f64,
}

impl PerturbedRuns {
    /// Replays along the principal directions (the first-order variance).
    pub fn new(runs: Vec<Vec<StepRecord>>) -> PerturbedRuns {
        PerturbedRuns { runs: runs.into_iter().map(|r| (r.iter().map(|x| x.t_s).collect(), r)).collect(), weight: 1.0 }
    }

    /// Replays of Monte Carlo draws (the variance their mean squared move).
    pub fn drawn(runs: Vec<Vec<StepRecord>>) -> PerturbedRuns {
        let weight = 1.0 / runs.len().max(1) as f64;
        PerturbedRuns { weight, ..PerturbedRuns::new(runs) }
    }

    /// Per component, the standard deviation that the parameters give
    /// `f` at `t` about its value `nominal` (zeros without runs; a run
    /// that does not reach `t` adds nothing).
    pub fn sd<const N: usize>(&self, t: f64, nominal: &SVector<f64, N>, f: impl Fn(&StepRecord) -> SVector<f64, N>) -> SVector<f64, N> {
        let mut var = SVector::<f64, N>::zeros();
        for (t_rec, records) in &self.runs {
            if let Some(y) = at_records(t_rec, records, t, &f) {
                var += (y - nominal).component_mul(&(y - nominal)) * self.weight;
            }
        }
        var.map(f64::sqrt)
    }

    /// As [`PerturbedRuns::sd`] for each of a series' samples `(t,
    /// nominal)` after the filter `smooth` (which the compared series
    /// went through, e.g. a moving average over the sample times).
    pub fn sd_filtered<const N: usize>(
        &self,
        samples: &[(f64, SVector<f64, N>)],
        f: impl Fn(&StepRecord) -> SVector<f64, N>,
        smooth: impl Fn(&[f64], &[SVector<f64, N>]) -> Vec<SVector<f64, N>>,
    ) -> Vec<SVector<f64, N>> {
        let times: Vec<f64> = samples.iter().map(|s| s.0).collect();
        let nominal: Vec<SVector<f64, N>> = samples.iter().map(|s| s.1).collect();
        let nominal = smooth(&times, &nominal);
        let mut var = vec![SVector::<f64, N>::zeros(); samples.len()];
        for (t_rec, records) in &self.runs {
            let raw: Vec<SVector<f64, N>> = samples.iter().map(|(t, y0)| at_records(t_rec, records, *t, &f).unwrap_or(*y0)).collect();
            for (v, (y, y0)) in var.iter_mut().zip(smooth(&times, &raw).iter().zip(&nominal)) {
                *v += (y - y0).component_mul(&(y - y0)) * self.weight;
            }
        }
        var.into_iter().map(|v| v.map(f64::sqrt)).collect()
    }
}

/// The two-sided 95 % normal quantile: a band of +- this many standard deviations.
pub const Z95: f64 = 1.959_963_984_540_054;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directions_rebuild_the_covariance_and_give_a_linear_maps_variance() {
        let cov = DMatrix::from_row_slice(3, 3, &[4e-4, 1e-4, 0.0, 1e-4, 9e-4, -2e-4, 0.0, -2e-4, 1e-4]);
        let d = principal_directions(&cov);
        assert_eq!(d.len(), 3);
        let rebuilt = DMatrix::from_fn(3, 3, |a, b| d.iter().map(|v| v[a] * v[b]).sum::<f64>());
        assert!((rebuilt - &cov).abs().max() < 1e-15);
        // y = a . p: its variance a^T C a, the sum of the squared moves along each direction.
        let a = [3.0, -1.0, 2.0];
        let y = |p: &[f64]| p.iter().zip(a).map(|(x, k)| x * k).sum::<f64>();
        let sd = d.iter().map(|v| y(v).powi(2)).sum::<f64>().sqrt();
        let exact = (0..3).map(|i| (0..3).map(|j| a[i] * cov[(i, j)] * a[j]).sum::<f64>()).sum::<f64>().sqrt();
        assert!((sd - exact).abs() < 1e-12 * exact, "{sd} vs {exact}");
    }

    #[test]
    fn monte_carlo_draws_have_the_covariance() {
        let cov = DMatrix::from_row_slice(2, 2, &[4e-4, 1e-4, 1e-4, 9e-4]);
        let directions = principal_directions(&cov).into_iter().map(|d| Perturbation { delta: [d[0], d[1], 0.0, 0.0] }).collect();
        let spread = ParameterSpread { parameters: vec!["ln_e".into(), "ln_g".into()], directions, unbounded: vec![] };
        let draws = spread.samples(20_000, 5);
        let n = draws.len() as f64;
        for (a, b) in [(0, 0), (0, 1), (1, 1)] {
            let c = draws.iter().map(|d| d.delta[a] * d.delta[b]).sum::<f64>() / n;
            assert!((c - cov[(a, b)]).abs() < 0.05 * cov[(1, 1)], "({a}, {b}): {c} vs {}", cov[(a, b)]);
        }
        assert_eq!(spread.samples(3, 5), spread.samples(3, 5), "seeded");
    }

    #[test]
    fn e_and_g_tied_move_as_one_direction() {
        // G tied to E by a Poisson ratio: ln G = ln E + const, correlation +1.
        let v = 2.5e-3;
        let d = principal_directions(&DMatrix::from_row_slice(2, 2, &[v, v, v, v]));
        assert_eq!(d.len(), 1);
        assert!((d[0][0].abs() - v.sqrt()).abs() < 1e-12 && (d[0][0] - d[0][1]).abs() < 1e-12, "{:?}", d);
        assert!(principal_directions(&DMatrix::from_row_slice(1, 1, &[f64::INFINITY])).is_empty());
    }
}
