//! The contact paper's experiments (Sec. X) replicated with the shipped
//! scenes: the stick test keeps its tip stuck inside the friction cone, the
//! slide test goes from stick to slide with friction on the cone; the
//! quasi-static and dynamic modes agree for a slow base; halving the step
//! barely changes the slide distance.

use rod::Rod;
use sim::{BaseMotion, ContactState, Mode, Scene, Simulator, StepRecord};
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rod() -> Rod {
    Rod::from_file(&root().join("configs/rod/contact-paper-steel-core.toml")).unwrap()
}

fn scene(name: &str) -> Scene {
    Scene::from_file(&root().join(format!("configs/scene/contact-paper-{name}.toml"))).unwrap()
}

fn run(scene: &Scene) -> Vec<StepRecord> {
    let rod = rod();
    let motion = BaseMotion::from_scene(scene, &rod).unwrap().unwrap();
    Simulator::new(&rod, scene, motion).unwrap().run(|_, _| {}).unwrap()
}

fn tip_state(r: &StepRecord) -> ContactState {
    r.contacts.last().unwrap().state
}

#[test]
fn stick_test_tip_stays_stuck_inside_the_cone() {
    let s = scene("stick");
    let records = run(&s);
    let mu = s.table.unwrap().mu;
    let touched: Vec<&StepRecord> = records.iter().filter(|r| tip_state(r) != ContactState::Free).collect();
    assert!(touched.len() > records.len() / 2, "the tip must touch for most of the test");
    let mut worst_ratio = 0.0f64;
    for r in &touched {
        let tip = r.contacts.last().unwrap();
        assert_eq!(tip.state, ContactState::Stick, "t {}: tip {:?}", r.t_s, tip.state);
        let ratio = tip.tangential_force_n.norm() / tip.normal_force_n;
        assert!(ratio <= mu * (1.0 + 1e-9), "t {}: |Lambda_t| / Lambda_n = {ratio} > mu", r.t_s);
        worst_ratio = worst_ratio.max(ratio);
    }
    let last = records.last().unwrap();
    println!(
        "stick test: tip slip {:.2e} m, largest |Lambda_t|/Lambda_n {worst_ratio:.3} (mu {mu}), final normal force {:.4} N",
        last.tip_slip_m, last.normal_force_n
    );
    assert!(last.tip_slip_m < 1e-6, "tip slipped {} m", last.tip_slip_m);
    assert!(last.normal_force_n > 0.5, "the rod must really be pressed");
}

#[test]
fn slide_test_goes_from_stick_to_slide_on_the_cone() {
    let s = scene("slide");
    let records = run(&s);
    let mu = s.table.unwrap().mu;
    let states: Vec<ContactState> = records.iter().map(tip_state).collect();
    let first_stick = states.iter().position(|s| *s == ContactState::Stick).expect("sticks");
    let first_slide = states.iter().position(|s| *s == ContactState::Slide).expect("slides");
    assert!(first_stick < first_slide, "stick first, then slide");
    let mut slides = 0;
    for r in &records {
        let tip = r.contacts.last().unwrap();
        if tip.state == ContactState::Slide {
            slides += 1;
            let rel = (tip.tangential_force_n.norm() - mu * tip.normal_force_n).abs() / (mu * tip.normal_force_n);
            assert!(rel < 1e-6, "t {}: |Lambda_t| = {} vs mu Lambda_n = {} (rel {rel:.2e})", r.t_s, tip.tangential_force_n.norm(), mu * tip.normal_force_n);
        }
    }
    let last = records.last().unwrap();
    println!(
        "slide test: stick from t = {:.3} s, slide from t = {:.3} s, {slides} sliding steps, tip slid {:.4} m (contact path {:.4} m)",
        records[first_stick].t_s, records[first_slide].t_s, last.tip_slide_m, last.tip_slip_m
    );
    assert!(last.tip_slip_m > 0.01, "the tip must really slide");
}

/// Largest difference between two runs' nodal strains at common times
/// (those `keep` accepts), per kind of strain (curvatures `[Kx, Ky, Kz]`,
/// stretch and shear `[Qx, Qy, Qz]`), as a fraction of run `a`'s range of
/// that kind, with the range itself.
fn strain_difference(a: &[StepRecord], b: &[StepRecord], keep: impl Fn(f64) -> bool) -> [(f64, f64); 2] {
    let mut lo = [f64::INFINITY; 6];
    let mut hi = [f64::NEG_INFINITY; 6];
    for r in a {
        for s in &r.node_strain {
            for c in 0..6 {
                lo[c] = lo[c].min(s[c]);
                hi[c] = hi[c].max(s[c]);
            }
        }
    }
    let range = |g: usize| (3 * g..3 * g + 3).map(|k| hi[k] - lo[k]).fold(0.0, f64::max);
    let mut worst = [0.0f64; 2];
    for (ra, rb) in a.iter().zip(b).filter(|(r, _)| keep(r.t_s)) {
        assert!((ra.t_s - rb.t_s).abs() < 1e-9);
        for (sa, sb) in ra.node_strain.iter().zip(&rb.node_strain) {
            for c in 0..6 {
                worst[c / 3] = worst[c / 3].max((sa[c] - sb[c]).abs());
            }
        }
    }
    [(worst[0] / range(0), range(0)), (worst[1] / range(1), range(1))]
}

fn first_touch_s(records: &[StepRecord]) -> f64 {
    records.iter().find(|r| tip_state(r) != ContactState::Free).expect("touches").t_s
}

/// Slow base, same strains: everywhere but around the tip's touchdown,
/// which the two modes see a few milliseconds apart (the dynamic rod
/// arrives with the small vibration the base's start left in it).
#[test]
fn quasi_static_and_dynamic_agree_for_a_slow_base() {
    let dynamic = scene("stick");
    let quasi = Scene { mode: Mode::QuasiStatic, ..dynamic.clone() };
    let a = run(&dynamic);
    let b = run(&quasi);
    let (ta, tb) = (first_touch_s(&a), first_touch_s(&b));
    let window = (ta.min(tb) - 0.05, ta.max(tb) + 0.15);
    let outside = |t: f64| t < window.0 || t > window.1;
    let [(curv, curv_range), (stretch, stretch_range)] = strain_difference(&a, &b, outside);
    let [(curv_all, _), _] = strain_difference(&a, &b, |_| true);
    println!(
        "stick test, quasi-static vs dynamic: touchdown at {ta:.3} s / {tb:.3} s; outside [{:.3}, {:.3}] s curvature within {:.3} % of its range ({curv_range:.3} 1/m) ({:.2} % including the touchdown), stretch/shear within {:.1} % of its range ({stretch_range:.1e})",
        window.0,
        window.1,
        100.0 * curv,
        100.0 * curv_all,
        100.0 * stretch
    );
    assert!(curv < 0.01, "curvature differs by {:.3} % of range", 100.0 * curv);
    // The steel core keeps stretch and shear below 2e-4: what differs there
    // is the core's axial vibration in the dynamic run (1e-5), far below
    // anything a camera resolves; asserted only when they matter.
    if stretch_range > 1e-3 {
        assert!(stretch < 0.01, "stretch/shear differ by {:.3} % of range", 100.0 * stretch);
    }
}

#[test]
fn halving_the_step_barely_changes_the_slide_distance() {
    let s = scene("slide");
    let half = Scene { step_s: s.step_s / 2.0, ..s.clone() };
    let a = run(&s).last().unwrap().tip_slip_m;
    let b = run(&half).last().unwrap().tip_slip_m;
    let rel = (a - b).abs() / b;
    println!("slide test: tip slid {a:.5} m at h = {} s, {b:.5} m at h/2 ({:.2} %)", s.step_s, 100.0 * rel);
    assert!(rel < 0.02, "{:.2} %", 100.0 * rel);
}
