//! Hold detection's table work as polars expressions. What a sample's
//! speed is stays typed Rust (line fits of SE(3) poses about a window's
//! middle, of marker points that may be rays: [`super::sessions`]); which
//! frames are still, the runs they make, what each run keeps after its
//! edges are trimmed, and a channel's statistics over a hold are frame
//! work: an as-of join, a run id, a group-by. (The speeds as polars'
//! centred rolling group-by with the line fits as expressions took 596 s
//! for 60 s of a 500 Hz flange in the test profile, against under 1.2 s by
//! the loops: docs/results.md, "Hold detection by polars".)

use polars::prelude::*;

use crate::sessions::HoldOptions;

/// A run of still frames: its first and last frame's times, and how many
/// of its frames lie in `[start_s, end_s]`, the run with half a window
/// trimmed at each end and the settling after its start.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StillRun {
    pub t0_s: f64,
    pub t1_s: f64,
    pub start_s: f64,
    pub end_s: f64,
    pub frames: usize,
}

/// `frames` given column `name`: the flag `still` of the robot sample
/// nearest each frame's `t_s` (`robot_t_s` sorted; of two equally near the
/// earlier); `robot_t_s` is not empty.
fn nearest_still(frames: LazyFrame, robot_t_s: &[f64], still: &[bool], name: &str) -> PolarsResult<LazyFrame> {
    let samples = df!("t_s" => robot_t_s, "robot_t_s" => robot_t_s, "still" => still)?.lazy();
    let asof = |backward: bool| AsOfOptions {
        strategy: if backward { AsofStrategy::Backward } else { AsofStrategy::Forward },
        allow_eq: backward,
        check_sortedness: true,
        ..Default::default()
    };
    let joined = |rows: LazyFrame, backward: bool, suffix: &str| {
        rows.join(samples.clone(), [col("t_s")], [col("t_s")], JoinArgs::new(JoinType::AsOf(asof(backward))).with_suffix(Some(suffix.into())))
    };
    let before = joined(frames, true, "_before");
    let both = joined(before, false, "_after");
    // The sample before keeps its names; the one after, whose columns
    // clash with them, takes the suffix.
    let after_is_nearer =
        col("robot_t_s_after").is_not_null().and(col("robot_t_s").is_null().or((col("robot_t_s_after") - col("t_s")).lt(col("t_s") - col("robot_t_s"))));
    Ok(both.with_column(when(after_is_nearer).then(col("still_after")).otherwise(col("still")).fill_null(lit(false)).alias(name)).drop([
        "robot_t_s",
        "still",
        "robot_t_s_after",
        "still_after",
    ]))
}

/// Runs of still frames: a frame is still where its largest marker speed
/// (`marker_speed_m_s`, per frame of `frames_t_s`, sorted) is within
/// `holds.max_marker_speed_m_s` and every robot of `robots` (sample times,
/// still flags) is still at its sample nearest the frame. Runs shorter
/// than `holds.window_s` are left out.
pub fn still_runs(frames_t_s: &[f64], marker_speed_m_s: &[f64], robots: &[(Vec<f64>, Vec<bool>)], o: &HoldOptions) -> PolarsResult<Vec<StillRun>> {
    if robots.iter().any(|(robot_t_s, _)| robot_t_s.is_empty()) {
        // A robot without samples is never seen still.
        return Ok(vec![]);
    }
    let mut frames = df!("t_s" => frames_t_s, "speed" => marker_speed_m_s)?.lazy();
    let mut still = col("speed").lt_eq(lit(o.max_marker_speed_m_s));
    for (k, (robot_t_s, robot_still)) in robots.iter().enumerate() {
        let name = format!("robot_{k}_still");
        frames = nearest_still(frames, robot_t_s, robot_still, &name)?;
        still = still.and(col(name.as_str()));
    }
    // A run is named by the row where it starts, carried forward.
    let starts = col("still").and(col("still").shift(lit(1)).fill_null(lit(false)).not());
    let (half_s, settle_s) = (0.5 * o.window_s, o.settle_s);
    let runs = frames
        .with_row_index("row", None)
        .with_column(still.alias("still"))
        .with_column(when(starts).then(col("row")).otherwise(lit(NULL)).forward_fill(None).alias("run"))
        .filter(col("still"))
        .with_columns([col("t_s").first().over([col("run")]).alias("t0"), col("t_s").last().over([col("run")]).alias("t1")])
        .with_columns([((col("t0") + lit(half_s)) + lit(settle_s)).alias("start"), (col("t1") - lit(half_s)).alias("end")])
        .with_column(col("t_s").gt_eq(col("start")).and(col("t_s").lt_eq(col("end"))).alias("kept"))
        .group_by_stable([col("run")])
        .agg([col("t0").first(), col("t1").first(), col("start").first(), col("end").first(), col("kept").sum().alias("frames")])
        .filter((col("t1") - col("t0")).gt_eq(lit(o.window_s)))
        .collect()?;
    let times = |name: &str| -> PolarsResult<Vec<f64>> { Ok(runs.column(name)?.f64()?.into_no_null_iter().collect()) };
    let (t0_s, t1_s, start_s, end_s) = (times("t0")?, times("t1")?, times("start")?, times("end")?);
    let frames = runs.column("frames")?.cast(&DataType::UInt64)?;
    Ok(frames
        .u64()?
        .into_no_null_iter()
        .enumerate()
        .map(|(k, frames)| StillRun { t0_s: t0_s[k], t1_s: t1_s[k], start_s: start_s[k], end_s: end_s[k], frames: frames as usize })
        .collect())
}

/// Mean, standard deviation (n - 1) and count of the finite values of `x`
/// sampled at `t_s` within `[from_s, to_s]`; `None` where there is none.
pub fn stats_between(t_s: &[f64], x: &[f64], from_s: f64, to_s: f64) -> PolarsResult<Option<(f64, f64, usize)>> {
    let stats = df!("t" => t_s, "x" => x)?
        .lazy()
        .filter(col("t").gt_eq(lit(from_s)).and(col("t").lt_eq(lit(to_s))).and(col("x").is_finite()))
        .select([col("x").mean().alias("mean"), col("x").std(1).alias("sd"), col("x").count().cast(DataType::UInt64).alias("n")])
        .collect()?;
    let n = stats.column("n")?.u64()?.get(0).unwrap_or(0) as usize;
    if n == 0 {
        return Ok(None);
    }
    let mean = stats.column("mean")?.f64()?.get(0).unwrap_or(f64::NAN);
    // One sample has no scatter (the sample standard deviation is null).
    let sd = if n > 1 { stats.column("sd")?.f64()?.get(0).unwrap_or(0.0) } else { 0.0 };
    Ok(Some((mean, sd, n)))
}
