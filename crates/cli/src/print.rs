//! Summaries of results as lines on standard output.

use lab::identify::{angles_deg, offsets_mm, scale_text, Identification, IdentifyRequest};

/// The identification: parameters with intervals, errors per experiment,
/// the alternative fit, variants and warnings.
pub fn identification(id: &Identification, req: &IdentifyRequest) {
    for s in &id.sessions {
        println!("{}: {} still intervals, {} used as holds", s.session, s.still_intervals, s.used);
    }
    for line in lab::identify::rejected_holds(&id.holds) {
        println!("  {line}");
    }
    let f = &id.study.fit;
    let rod = &id.rod;
    let reference = req.reference.as_ref();
    println!("identified from {} experiments ({}):", id.experiments.len(), id.source);
    let line = |n: &str, e: &identify::fit::Estimate, u: &str, pv: Option<f64>| {
        let r = pv.map_or(String::new(), |pv| format!("   reference {pv:.4e}"));
        if e.held() || e.determined() {
            println!("  {n:<4} = {:>11.4e} {u:<7} 95 % CI [{:.4e}, {:.4e}]{r}", e.value, e.ci95_low, e.ci95_high);
        } else {
            println!("  {n:<4} = {:>11.4e} {u:<7} 95 % CI: {}{r}", e.value, identify::fit::NOT_DETERMINED);
        }
    };
    line("E", &f.e_pa, "Pa", reference.map(|r| r.e_pa));
    line("G", &f.g_pa, "Pa", reference.map(|r| r.g_pa));
    line("rho", &f.rho_kg_m3, "kg/m^3", reference.map(|r| r.rho_kg_m3));
    let p = &id.file.parameters;
    if f.layout.cable_offset {
        let c = p.cable_offset_ci95_m;
        println!(
            "  cable offset = {:>9.3} mm     95 % CI [{:.3}, {:.3}] mm (outwards from the rod file's cables)",
            1e3 * f.values.cable_offset_m,
            1e3 * c[0],
            1e3 * c[1]
        );
    }
    for (c, (d, ci)) in p.cable_offsets_m.iter().zip(&p.cable_offsets_ci95_m).enumerate() {
        println!("  {:<12} = {:>9.3} mm     95 % CI [{:.3}, {:.3}] mm (outwards)", rod.cables[c].name, 1e3 * d, 1e3 * ci[0], 1e3 * ci[1]);
    }
    for (k, (a, ci)) in p.clamp_angles_rad.iter().zip(&p.clamp_angles_ci95_rad).enumerate() {
        println!(
            "  clamp {:<6} = {:>+9.3} deg    95 % CI [{:+.3}, {:+.3}] deg (tip clamp's turn about world y, experiment {})",
            k + 1,
            a.to_degrees(),
            ci[0].to_degrees(),
            ci[1].to_degrees(),
            k + 1
        );
    }
    for (c, (a, ci)) in p.cable_angles_rad.iter().zip(&p.cable_angles_ci95_rad).enumerate() {
        println!(
            "  {:<12} = {:>+9.3} deg    95 % CI [{:+.3}, {:+.3}] deg (turn about the axis from {} deg)",
            rod.cables[c].name,
            a.to_degrees(),
            ci[0].to_degrees(),
            ci[1].to_degrees(),
            rod.cables[c].angle_rad.to_degrees()
        );
    }
    if let (Some(mu), Some(c)) = (p.friction_mu, p.friction_mu_ci95) {
        println!("  friction mu  = {mu:>9.4}        95 % CI [{:.4}, {:.4}] (every cable in its channel)", c[0], c[1]);
    }
    if f.layout.radius_scale {
        let c = p.radius_scale_ci95;
        println!("  radius scale = {:>9.4}        95 % CI [{:.4}, {:.4}] (of the rod file's section)", f.values.radius_scale, c[0], c[1]);
    }
    if let Some(j) = &id.study.jackknife {
        println!(
            "  jackknife 95 % (spread of the {} leave-one-out fits): E [{:.4e}, {:.4e}] Pa, G [{:.4e}, {:.4e}] Pa, rho [{:.4e}, {:.4e}] kg/m^3",
            j.fits, j.e_pa_ci95[0], j.e_pa_ci95[1], j.g_pa_ci95[0], j.g_pa_ci95[1], j.rho_kg_m3_ci95[0], j.rho_kg_m3_ci95[1]
        );
    }
    println!(
        "  rms error {:.2} mm{}; {} iterations, {} static solves, {:.3} s",
        f.rms_error_mm,
        id.study.reference.as_ref().map_or(String::new(), |r| format!(" (reference parameters: {:.2} mm)", r.rms_error_mm)),
        f.iterations,
        f.static_solves,
        f.wall_time_s
    );
    if let Some(n) = &id.noise_test {
        println!("  chi-square test of the residuals against the declared noise: {}", n.summary());
    }
    let rms = identify::fit::rms;
    for (i, e) in id.experiments.iter().enumerate() {
        let loo = id.study.loo.get(i).map_or(f64::NAN, |l| rms(&l.errors_mm));
        println!("  experiment {:<4} error {:>6.2} mm   leave-one-out {:>6.2} mm  (RMS over {} points)", e.id, rms(&f.errors_mm[i]), loo, e.measurements.len());
    }
    if let Some(alt) = &id.study.with_nuisance {
        println!(
            "  alternative fit ({}nuisance): E {:.4e} Pa, G {:.4e} Pa, rho {:.4e} kg/m^3, rms {:.2} mm",
            if alt.layout.translation || alt.layout.pitch { "with " } else { "without " },
            alt.e_pa.value,
            alt.g_pa.value,
            alt.rho_kg_m3.value,
            alt.rms_error_mm
        );
    }
    match &id.reference_geometry {
        Some(Ok(g)) => {
            let worst = g.errors_mm.iter().map(|e| rms(e)).fold(0.0, f64::max);
            println!(
                "  reference material held, geometry fitted: cable offset {:+.2} mm, radius scale {:.4}, frame {:.2?} mm, pitch {:.2} deg: RMS {:.2} mm, worst experiment {:.2} mm",
                1e3 * g.values.cable_offset_m,
                g.values.radius_scale,
                [g.values.translation_m.x * 1e3, g.values.translation_m.y * 1e3, g.values.translation_m.z * 1e3],
                g.values.pitch_rad.to_degrees(),
                g.rms_error_mm,
                worst
            );
        }
        Some(Err(e)) => println!("  reference material held, geometry fitted: no fit ({e})"),
        None => {}
    }
    if let Some(r) = id.study.reference.as_ref().filter(|r| r.failures > 0) {
        println!("  note: with the reference parameters the model finds no equilibrium for {} experiment(s) (NaN above):", r.failures);
        for why in &r.failure_reasons {
            println!("    {why}");
        }
    }
    if !id.variants.is_empty() {
        println!("  model variants by cross-validated prediction error (+- its standard error; model error: what the bands add for what the model misses):");
        let (lowest_cv, lowest_other) = (identify::output::lowest_cv(&id.variants, false), identify::output::lowest_cv(&id.variants, true));
        let width = id.variants.iter().map(|v| v.name.len()).max().unwrap_or(0);
        for (i, v) in id.variants.iter().enumerate() {
            let geometry: Vec<String> =
                [offsets_mm(v).map(|t| format!("offset {t} mm")), angles_deg(v).map(|t| format!("angle {t} deg")), scale_text(v).map(|t| format!("scale {t}"))]
                    .into_iter()
                    .flatten()
                    .collect();
            let lowest = if lowest_cv == Some(i) {
                "  (lowest CV)"
            } else if lowest_other == Some(i) {
                "  (lowest CV under the other law)"
            } else {
                ""
            };
            println!(
                "    {:<width$} E {:.4e} Pa  {:<64}  {:>2} parameters  fit RMS {:>6.2} mm  CV RMS {:>6.2} +- {:.2} mm  worst {:>6.2} mm  model error {:.2} mm{}{}",
                v.name,
                v.e_pa,
                geometry.join("  "),
                v.parameters.len(),
                v.rms_error_mm,
                v.loo_rms_mm,
                v.loo_rms_se_mm,
                v.loo_worst_mm,
                1e3 * v.model_error_m,
                lowest,
                if id.recommended == Some(i) { "  <- recommended (the simplest within one standard error of the lowest)" } else { "" }
            );
        }
        if let Some(law) = identify::output::law_comparison(&id.variants) {
            println!("  {law}");
        }
    }
    for w in &id.file.warnings {
        println!("  warning: {w}");
    }
    for c in &id.file.critical {
        println!("  experiment {}: {} measured {:.4} +- {:.4}, fitted {:.4}", c.experiment, c.quantity, c.measured, c.sigma, c.fitted);
    }
    for b in &id.file.sensor_bias {
        println!(
            "  flange sensor bias ({}, fitted from {} holds): force [{:.4}, {:.4}, {:.4}] N, moment [{:.5}, {:.5}, {:.5}] N m",
            b.session, b.holds, b.force_n[0], b.force_n[1], b.force_n[2], b.moment_nm[0], b.moment_nm[1], b.moment_nm[2]
        );
    }
    if id.file.parameters_from != "requested" {
        println!(
            "  [parameters] of identified.toml hold the recommended variant, {:?} (E {:.4e} Pa); FILE:requested or FILE:<variant> selects another",
            id.file.parameters_from, id.file.parameters.e_pa.value
        );
    }
    println!("wrote {}, {} and {}", id.identified_toml.display(), id.report.html.display(), id.report.json.display());
}

/// The friction and damping fitted from recorded motion.
pub fn dynamic(fit: &lab::dynamic::DynamicFit) {
    let o = &fit.out;
    let interval = |c: [f64; 2]| if c[0].is_finite() { format!("95 % CI [{:.4}, {:.4}]", c[0], c[1]) } else { "held".into() };
    println!("friction and damping from {} session(s) ({}):", o.sessions.len(), o.sessions.join(", "));
    match o.mu_at_least {
        _ if o.no_table => println!("  mu            not a parameter: the scene has no table"),
        Some(b) => println!("  mu            not determined by these data: at least {b:.4} (the tip never slides)"),
        None => println!("  mu            = {:.4}      {}", o.mu, interval(o.mu_ci95)),
    }
    if o.branches.is_empty() || o.damping_ratio > 0.0 {
        println!("  damping ratio = {:.4}      {}", o.damping_ratio, interval(o.damping_ratio_ci95));
    }
    if let Some(c) = &o.constant_loss {
        println!("  constant loss {}", c.text());
    }
    for (i, b) in o.branches.iter().enumerate().filter(|_| o.constant_loss.is_none()) {
        println!(
            "  branch {}      modulus ratio {:.4} {}, time constant {:.5} s {}",
            i + 1,
            b.modulus_ratio,
            interval(b.modulus_ratio_ci95),
            b.time_constant_s,
            interval(b.time_constant_ci95_s)
        );
    }
    if let (Some(e), Some(c)) = (o.e_pa, o.e_pa_ci95) {
        println!("  E             = {e:.4e} Pa  95 % CI [{:.4e}, {:.4e}] (relaxed; G scaled alike; [parameters] carry them)", c[0], c[1]);
    }
    if let (Some(rho), Some(c)) = (o.rho_kg_m3, o.rho_kg_m3_ci95) {
        println!("  rho           = {rho:.4e} kg/m^3  95 % CI [{:.4e}, {:.4e}] ([parameters] carry it)", c[0], c[1]);
    }
    if let Some(r) = o.hook_friction_radius_m {
        match o.hook_friction_radius_ci95_m {
            Some(c) => println!(
                "  hook friction {r:.4e} m  95 % CI [{:.4e}, {:.4e}] (a moment of this times each hung weight; replays take it from the loads file's hook_friction_radius_m)",
                c[0], c[1]
            ),
            None => println!("  hook friction {r:.4e} m (held: the loads file's)"),
        }
    }
    if let Some(h) = &o.static_holds {
        println!("  static holds  {}", h.text());
    }
    for v in &o.variants {
        let mark = if o.recommended_law.as_deref() == Some(v.law.as_str()) { "  <- recommended" } else { "" };
        println!("  law compared  {:<28} held out: markers {:.3} mm, ring-down miss {:.2} sigmas{mark}", v.law, v.marker_rms_m * 1e3, v.ring_down_score);
    }
    if o.correlation_mu_damping.is_finite() {
        println!("  correlation (ln mu, ln damping ratio) {:+.3}", o.correlation_mu_damping);
    }
    if !o.marker_delay_s.is_empty() {
        println!("  markers' delay behind the base's clock [ms]: {} (per session)", o.delays_text());
    }
    if let Some(t) = &o.noise_test {
        let verdict = if t.passed() { "passed" } else { "FAILED" };
        println!(
            "  chi-square {:.1} on {} degrees of freedom, {:.2} x the declared noise, p = {:.2e}: {verdict} at {:.0e}",
            t.chi_square, t.dof, t.scale, t.p, t.level
        );
    }
    for r in &o.ring_downs {
        println!(
            "  ring-down {}: {:.3} Hz recorded, {:.3} Hz replayed ({:+.1} %); log decrement {:.3} recorded, {:.3} replayed ({:+.0} %; first {} cycles)",
            r.session,
            r.recorded_hz,
            r.replayed_hz,
            100.0 * r.frequency_error(),
            r.recorded_log_decrement,
            r.replayed_log_decrement,
            100.0 * r.decrement_error(),
            r.cycles
        );
        let (recorded, replayed) = r.envelope_decrements();
        if !recorded.is_empty() {
            let list = |v: &[f64]| v.iter().map(|d| format!("{d:.2}")).collect::<Vec<_>>().join(" ");
            println!("    envelope, decrement cycle by cycle: recorded {}, replayed {}", list(&recorded), list(&replayed));
        }
    }
    let force = o.force_rms_n.map_or(String::new(), |f| format!(", flange force RMS {f:.3} N (bias left out; {})", o.force_streams.join(", ")));
    println!(
        "  markers RMS {:.3} mm at the start, {:.3} mm fitted{force}; {} iterations, {} simulations, {:.1} s",
        o.marker_rms_start_m * 1e3,
        o.marker_rms_m * 1e3,
        o.iterations,
        o.simulations,
        o.wall_time_s
    );
    for w in &fit.warnings {
        println!("  warning: {w}");
    }
    println!("wrote {} ([dynamic]: validate and simulate --params use it) and {}", fit.identified_toml.display(), fit.report.display());
}
