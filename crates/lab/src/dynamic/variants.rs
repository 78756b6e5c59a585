//! `identify --dynamic --compare-variants`: which law of the rod's
//! material predicts a release it was not fitted to. Each candidate law
//! (elastic with a damping ratio, one Maxwell branch, the constant-loss
//! law, and the rod file's own when it is none of these) is fitted to all
//! sessions but one, then replays the one left out; the law whose
//! held-out replays miss least is recommended.

use super::{identify_dynamic, read_cases, ring_downs, rms_parts, DynamicRequest, Point, Replay, RingDownReading, RING_DOWN_SIGMA};
use crate::{Error, Progress, Result};
use identify::output::{DynamicOut, DynamicVariantOut, HeldOutOut};
use rod::{ConstantLoss, Damping, PronyBranch, Rod};

/// A candidate law: its name and the rod it starts from.
struct Law {
    name: String,
    rod: Rod,
}

/// The laws compared, each from the rod file's values where it gives
/// them: Kelvin-Voigt (its damping ratio, else 0.05), one branch (its
/// first, else 0.2 at 0.05 s), the constant-loss law (its, else 0.1 over
/// two steps to 0.3 s), and the rod file's law when it is another.
fn laws(rod: &Rod, step_s: f64) -> Vec<Law> {
    let elastic = Rod { damping: None, viscoelastic: vec![], constant_loss: None, ..rod.clone() };
    let zeta = match rod.damping {
        Some(Damping::Ratio(z)) if z > 0.0 => z,
        _ => 0.05,
    };
    let branch = match (rod.constant_loss, rod.viscoelastic.first()) {
        (None, Some(b)) => *b,
        _ => PronyBranch { modulus_ratio: 0.2, time_constant_s: 0.05 },
    };
    let constant_loss = rod.constant_loss.unwrap_or_else(|| ConstantLoss::new(0.1, (2.0 * step_s).max(1e-3), 0.3));
    let mut out = vec![
        Law { name: "elastic + damping ratio".into(), rod: Rod { damping: Some(Damping::Ratio(zeta)), ..elastic.clone() } },
        Law { name: "one Maxwell branch".into(), rod: Rod { viscoelastic: vec![branch], ..elastic.clone() } },
        Law { name: "constant loss".into(), rod: Rod { viscoelastic: constant_loss.prony_branches(), constant_loss: Some(constant_loss), ..elastic } },
    ];
    let own = rod.constant_loss.is_none() && (rod.viscoelastic.len() > 1 || (!rod.viscoelastic.is_empty() && rod.damping.is_some()));
    if own {
        out.push(Law {
            name: format!("the rod file's ({} branches{})", rod.viscoelastic.len(), if rod.damping.is_some() { " and a damping ratio" } else { "" }),
            rod: rod.clone(),
        });
    }
    out
}

/// The point a fit's output replays at.
fn point_of(out: &DynamicOut, rod: &Rod) -> Point {
    Point {
        mu: if out.no_table || !out.mu.is_finite() { super::MU_STICKS } else { out.mu_at_least.unwrap_or(out.mu) },
        zeta: out.damping_ratio,
        stiffness: out.e_pa.map_or(1.0, |e| e / rod.cross_section.body.e_pa),
        density: out.rho_kg_m3.map_or(1.0, |rho| rho / rod.cross_section.body.rho_kg_m3),
        branches: out.branches.iter().map(|b| b.branch()).collect(),
        constant_loss: out.constant_loss.as_ref().map(|c| c.law()),
        hook_friction_radius_m: out.hook_friction_radius_m.unwrap_or(0.0),
    }
}

/// Session `held_out` replayed with `fit`'s values (no marker delay): its
/// markers' RMS and its ring-down against the recording's.
fn predict(req: &DynamicRequest, law: &Rod, fit: &DynamicOut, held_out: &crate::SessionDir) -> Result<HeldOutOut> {
    let one = DynamicRequest { sessions: vec![held_out.clone()], rod: law.clone(), ..req.clone() };
    let rod = one.params.rod(&one.rod);
    let replay = Replay::new(rod.clone(), &one.scene_path, read_cases(&one, &rod, &one.scene)?);
    let at = point_of(fit, &rod);
    let delays = replay.no_delays();
    let (marker_rms_m, _) = rms_parts(&replay.cases, &replay.residual(&at, &delays)?);
    let ring = ring_downs(&replay, &RingDownReading::of(&replay, req.ring_down_cycles), &at, &delays)?.into_iter().next();
    Ok(HeldOutOut {
        session: held_out.name(),
        marker_rms_m,
        frequency_error: ring.as_ref().map_or(f64::NAN, |r| r.frequency_error()),
        decrement_error: ring.as_ref().map_or(f64::NAN, |r| r.decrement_error()),
    })
}

/// A held-out release's miss in the ring-down rows' sigmas (the RMS of
/// its frequency's and decrement's relative errors over
/// [`RING_DOWN_SIGMA`]); NaN when it does not ring.
fn ring_down_score(h: &HeldOutOut) -> f64 {
    ((h.frequency_error / RING_DOWN_SIGMA.0).powi(2) + (h.decrement_error / RING_DOWN_SIGMA.1).powi(2)).sqrt() / std::f64::consts::SQRT_2
}

/// Every law fitted with each session left out in turn and judged on it;
/// the variants and the recommended one (the least held-out miss: the
/// ring-downs' with `--match-ring-down`, else the markers' RMS).
pub fn compare_laws(req: &DynamicRequest, progress: &dyn Progress) -> Result<(Vec<DynamicVariantOut>, Option<usize>)> {
    if req.sessions.len() < 2 {
        return Err(Error::input("--compare-variants with --dynamic: two or more sessions are needed (each law is judged on a session it was not fitted to)"));
    }
    let laws = laws(&req.rod, req.scene.step_s);
    let task = progress.task("comparing laws", Some((laws.len() * req.sessions.len()) as u64));
    let (mut variants, mut done) = (vec![], 0);
    for law in &laws {
        let mut held_out = vec![];
        for (i, session) in req.sessions.iter().enumerate() {
            task.message(&format!("{}: without {}", law.name, session.name()));
            let others: Vec<crate::SessionDir> = req.sessions.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, s)| s.clone()).collect();
            let slug: String = law.name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
            let fold = DynamicRequest {
                sessions: others,
                rod: law.rod.clone(),
                damping_start: None,
                hold_damping: false,
                hold_branches: false,
                compare_laws: false,
                out: req.out.join("variants").join(slug).join(format!("without-{}", session.name())),
                ..req.clone()
            };
            let fit = identify_dynamic(&fold, &crate::Silent)?;
            held_out.push(predict(req, &law.rod, &fit.out, session)?);
            done += 1;
            task.set(done);
        }
        let n = held_out.len() as f64;
        let marker_rms_m = (held_out.iter().map(|h| h.marker_rms_m.powi(2)).sum::<f64>() / n).sqrt();
        // Over the sessions that ring (NaN when none does).
        let rings: Vec<f64> = held_out.iter().map(ring_down_score).filter(|s| s.is_finite()).collect();
        let ring_down_score = (rings.iter().map(|s| s * s).sum::<f64>() / rings.len() as f64).sqrt();
        variants.push(DynamicVariantOut { law: law.name.clone(), held_out, marker_rms_m, ring_down_score });
    }
    let score = |v: &DynamicVariantOut| if req.match_ring_down { v.ring_down_score } else { v.marker_rms_m };
    let best = (0..variants.len()).filter(|i| score(&variants[*i]).is_finite()).min_by(|a, b| score(&variants[*a]).total_cmp(&score(&variants[*b])));
    Ok((variants, best))
}

/// The report's rows: per law, the held-out misses and each session's.
pub(super) fn rows(variants: &[DynamicVariantOut]) -> Vec<Vec<String>> {
    variants
        .iter()
        .map(|v| {
            let per: Vec<String> =
                v.held_out.iter().map(|h| format!("{}: {:+.1} %, {:+.0} %", h.session, 100.0 * h.frequency_error, 100.0 * h.decrement_error)).collect();
            vec![v.law.clone(), format!("{:.3}", v.marker_rms_m * 1e3), format!("{:.2}", v.ring_down_score), per.join("; ")]
        })
        .collect()
}
