//! Several cameras' marker tables (pixels, each on its own frames) into one
//! table of 3-D markers: frames matched on the host clock (no hardware
//! trigger), each marker located from the views of one instant (see
//! [`crate::triangulate`]), positions and rays placed in the rig's world.

use crate::detect::TrackError;
use crate::triangulate::{locate, Located, PlacedCamera};
use nalgebra::Vector3;
use session::{flags, MarkerRow, MarkerViews};
use std::collections::BTreeMap;

/// One frame of one camera: time \[s\], host time, and each marker's pixel.
struct ViewFrame {
    frame: i64,
    t_s: f64,
    t_host_ns: Option<i64>,
    /// Per marker: (pixel if seen, area \[px\]).
    markers: Vec<(Option<[f64; 2]>, f64)>,
}

fn frames_of(rows: &[MarkerRow]) -> Vec<ViewFrame> {
    let mut by_frame: BTreeMap<i64, ViewFrame> = BTreeMap::new();
    for r in rows {
        let f = by_frame.entry(r.frame).or_insert_with(|| ViewFrame { frame: r.frame, t_s: r.t_s, t_host_ns: r.t_host_ns, markers: vec![] });
        let i = r.marker as usize;
        if f.markers.len() <= i {
            f.markers.resize(i + 1, (None, f64::NAN));
        }
        let seen = r.flags & (flags::MISSING | flags::MERGED) == 0 && r.u_px.is_finite() && r.v_px.is_finite();
        f.markers[i] = (seen.then_some([r.u_px, r.v_px]), r.area_px);
    }
    let mut frames: Vec<ViewFrame> = by_frame.into_values().collect();
    frames.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    frames
}

/// The median time between consecutive frames \[s\].
fn frame_period_s(frames: &[ViewFrame]) -> Option<f64> {
    let mut d: Vec<f64> = frames.windows(2).map(|w| w[1].t_s - w[0].t_s).filter(|d| *d > 0.0).collect();
    d.sort_by(f64::total_cmp);
    d.get(d.len() / 2).copied()
}

/// What merging did.
#[derive(Clone, Debug, Default)]
pub struct Merged {
    /// The reference camera's frames: the table's.
    pub frames: usize,
    pub rows: Vec<MarkerRow>,
    pub views: Vec<MarkerViews>,
    /// Per camera: the reference camera's frames it had no frame within half
    /// a frame period of (not triangulated with it; counted).
    pub unmatched_frames: Vec<usize>,
    /// Marker-frames triangulated, kept as rays, and refused by the
    /// epipolar constraint.
    pub points: usize,
    pub rays: usize,
    pub disagreements: usize,
}

/// Merges `per_camera[i]` (camera i's rows, pixels and times) into 3-D rows
/// on camera 0's frames; `world_from_set` places the set's world (the board
/// in its plane view) in the rig's world. Views farther than `gate_px` from
/// each other's epipolar lines are not one marker. Refuses (input) videos
/// whose clocks do not overlap.
pub fn merge(
    cameras: &[PlacedCamera],
    per_camera: &[Vec<MarkerRow>],
    names: &[String],
    world_from_set: &lie::Pose,
    gate_px: f64,
) -> Result<Merged, TrackError> {
    let frames: Vec<Vec<ViewFrame>> = per_camera.iter().map(|rows| frames_of(rows)).collect();
    for (k, f) in frames.iter().enumerate() {
        if f.is_empty() {
            return Err(TrackError::Input(format!("camera {}: no frames tracked", names[k])));
        }
    }
    let period_s = frame_period_s(&frames[0]).unwrap_or(f64::INFINITY);
    let span = |f: &[ViewFrame]| (f[0].t_s, f[f.len() - 1].t_s);
    let (a0, a1) = span(&frames[0]);
    for (k, f) in frames.iter().enumerate().skip(1) {
        let (b0, b1) = span(f);
        if b1 < a0 - period_s / 2.0 || b0 > a1 + period_s / 2.0 {
            return Err(TrackError::Input(format!(
                "the videos' clocks do not overlap: camera {} runs {a0:.3} s to {a1:.3} s, camera {} {b0:.3} s to {b1:.3} s (frames tables of one session?)",
                names[0], names[k]
            )));
        }
    }
    let n_markers = frames.iter().flat_map(|f| f.iter().map(|v| v.markers.len())).max().unwrap_or(0);
    let mut out = Merged { frames: frames[0].len(), unmatched_frames: vec![0; cameras.len()], ..Merged::default() };
    for reference in &frames[0] {
        // Each camera's frame nearest in time, if within half a period.
        let matched: Vec<Option<(&ViewFrame, f64)>> = frames
            .iter()
            .enumerate()
            .map(|(k, f)| {
                let near = nearest(f, reference.t_s);
                let dt = near.t_s - reference.t_s;
                if dt.abs() <= period_s / 2.0 {
                    Some((near, dt))
                } else {
                    out.unmatched_frames[k] += 1;
                    None
                }
            })
            .collect();
        for i in 0..n_markers {
            let pixels: Vec<Option<[f64; 2]>> = matched.iter().map(|m| m.and_then(|(f, _)| f.markers.get(i).and_then(|x| x.0))).collect();
            let (row, views) = locate_row(cameras, reference, i, &pixels, &matched, world_from_set, gate_px);
            match row.flags {
                f if f & flags::RAY != 0 => out.rays += 1,
                f if f & flags::DISAGREE != 0 => out.disagreements += 1,
                f if f & flags::MISSING == 0 => out.points += 1,
                _ => {}
            }
            out.rows.push(row);
            out.views.push(views);
        }
    }
    Ok(out)
}

fn nearest(frames: &[ViewFrame], t_s: f64) -> &ViewFrame {
    let k = frames.partition_point(|f| f.t_s < t_s);
    let candidates = [k.checked_sub(1), Some(k).filter(|&k| k < frames.len())];
    candidates.into_iter().flatten().map(|k| &frames[k]).min_by(|a, b| (a.t_s - t_s).abs().total_cmp(&(b.t_s - t_s).abs())).expect("frames is not empty")
}

/// The row of marker `i` at the reference frame, from its views.
fn locate_row(
    cameras: &[PlacedCamera],
    reference: &ViewFrame,
    i: usize,
    pixels: &[Option<[f64; 2]>],
    matched: &[Option<(&ViewFrame, f64)>],
    world_from_set: &lie::Pose,
    gate_px: f64,
) -> (MarkerRow, MarkerViews) {
    let (ref_px, area) = reference.markers.get(i).copied().unwrap_or((None, f64::NAN));
    let mut row = MarkerRow {
        frame: reference.frame,
        t_s: reference.t_s,
        t_host_ns: reference.t_host_ns,
        marker: i as u32,
        u_px: ref_px.map_or(f64::NAN, |p| p[0]),
        v_px: ref_px.map_or(f64::NAN, |p| p[1]),
        x_m: f64::NAN,
        y_m: f64::NAN,
        z_m: f64::NAN,
        area_px: area,
        flags: flags::MISSING,
    };
    let mut views = MarkerViews { cameras: 0, reprojection_px: f64::NAN, view_dt_s: f64::NAN, ray: [f64::NAN; 3] };
    let spread = |mask: u32| -> f64 {
        let dts: Vec<f64> = matched.iter().enumerate().filter(|(k, _)| mask & (1 << k) != 0).filter_map(|(_, m)| m.map(|(_, dt)| dt)).collect();
        dts.iter().copied().fold(f64::NEG_INFINITY, f64::max) - dts.iter().copied().fold(f64::INFINITY, f64::min)
    };
    let place = |p: &Vector3<f64>| world_from_set.transform_point(&lie::Vec3::new(p.x, p.y, p.z));
    match locate(cameras, pixels, gate_px) {
        Located::Point { at, cameras: mask } => {
            let w = place(&at.position_m);
            (row.x_m, row.y_m, row.z_m, row.flags) = (w.x, w.y, w.z, 0);
            views = MarkerViews { cameras: mask, reprojection_px: at.reprojection_px, view_dt_s: spread(mask), ray: [f64::NAN; 3] };
        }
        Located::Ray { ray, camera } => {
            let (o, d) = (place(&ray.origin_m), world_from_set.rot * lie::Vec3::new(ray.direction.x, ray.direction.y, ray.direction.z));
            (row.x_m, row.y_m, row.z_m, row.flags) = (o.x, o.y, o.z, flags::RAY);
            views = MarkerViews { cameras: 1 << camera, reprojection_px: f64::NAN, view_dt_s: 0.0, ray: [d.x, d.y, d.z] };
        }
        Located::Disagree { .. } => {
            row.flags = flags::MISSING | flags::DISAGREE;
            views.cameras = pixels.iter().enumerate().filter(|(_, p)| p.is_some()).fold(0, |m, (k, _)| m | (1 << k));
        }
        Located::Unseen => {}
    }
    (row, views)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::BoardSpec;
    use crate::synth::camera_set;

    /// Camera rows of `points` seen at times `t_s` (one frame each).
    fn rows(camera: &PlacedCamera, frames: &[(f64, Vec<Vector3<f64>>)]) -> Vec<MarkerRow> {
        let mut out = vec![];
        for (k, (t_s, points)) in frames.iter().enumerate() {
            for (i, p) in points.iter().enumerate() {
                let px = camera.project(p).unwrap();
                out.push(MarkerRow {
                    frame: k as i64,
                    t_s: *t_s,
                    t_host_ns: Some((t_s * 1e9) as i64),
                    marker: i as u32,
                    u_px: px[0],
                    v_px: px[1],
                    x_m: f64::NAN,
                    y_m: f64::NAN,
                    z_m: f64::NAN,
                    area_px: 100.0,
                    flags: 0,
                });
            }
        }
        out
    }

    fn pair() -> Vec<PlacedCamera> {
        camera_set(2, 0.6, 30.0, &BoardSpec { cols: 9, rows: 6, square_m: 0.016 }).iter().map(|(_, m)| PlacedCamera::new(m).unwrap()).collect()
    }

    fn still(t_s: f64) -> (f64, Vec<Vector3<f64>>) {
        (t_s, vec![Vector3::new(0.05, 0.04, -0.01), Vector3::new(0.09, 0.05, -0.02)])
    }

    /// Frames 30 ms apart at 10 ms offsets are matched and their time spread
    /// recorded; a frame with no partner within half a period is counted,
    /// and its markers kept as rays; the set's world is placed in the rig's.
    #[test]
    fn frames_are_matched_on_the_host_clock_within_half_a_period() {
        let cams = pair();
        let left: Vec<_> = (0..5).map(|k| still(0.03 * k as f64)).collect();
        // The right camera 10 ms late, and its frame 3 lost.
        let right: Vec<_> = (0..5).filter(|k| *k != 3).map(|k| still(0.03 * k as f64 + 0.01)).collect();
        let names = vec!["left".to_string(), "right".to_string()];
        let shift = lie::Pose { rot: lie::Mat3::identity(), pos: lie::Vec3::new(1.0, 2.0, 3.0) };
        let m = merge(&cams, &[rows(&cams[0], &left), rows(&cams[1], &right)], &names, &shift, 3.0).unwrap();
        assert_eq!((m.points, m.rays, m.disagreements, m.unmatched_frames.clone()), (8, 2, 0, vec![0, 1]));
        for (r, v) in m.rows.iter().zip(&m.views) {
            if r.frame == 3 {
                assert_eq!((r.flags, v.cameras), (flags::RAY, 0b01));
                continue;
            }
            let truth = still(0.0).1[r.marker as usize] + Vector3::new(1.0, 2.0, 3.0);
            assert!((Vector3::new(r.x_m, r.y_m, r.z_m) - truth).norm() < 1e-9, "{r:?}");
            assert!((v.view_dt_s - 0.01).abs() < 1e-12 && v.cameras == 0b11, "{v:?}");
        }
    }

    /// Videos whose clocks do not overlap (another session's video, a
    /// frames table of another day): refused naming both spans.
    #[test]
    fn videos_whose_clocks_do_not_overlap_are_refused() {
        let cams = pair();
        let left: Vec<_> = (0..5).map(|k| still(0.03 * k as f64)).collect();
        let right: Vec<_> = (0..5).map(|k| still(100.0 + 0.03 * k as f64)).collect();
        let names = vec!["left".to_string(), "right".to_string()];
        let e = merge(&cams, &[rows(&cams[0], &left), rows(&cams[1], &right)], &names, &lie::Pose::identity(), 3.0).unwrap_err().to_string();
        assert!(e.contains("clocks do not overlap") && e.contains("camera right 100.000 s to 100.120 s"), "{e}");
    }
}
