//! One world frame for a rig, through the lab's workflows: a session whose
//! robot base is rotated and shifted in the world, whose board (plane of
//! motion) stands vertical with gravity along its -y, whose tool points
//! down (UR rotation vectors near pi, flipping sign between samples), with
//! markers 10 mm above the board rendered into a video; tracking then
//! observing recover the strain and the base pose. And the rig calibration
//! measures the robot's base from tracked poses.

use crate::common;
use common::*;
use lie::{Pose, Vec3, Vec6};
use session::{FramePose, RigFrames, SessionMeta, Table};
use std::path::Path;
use track::camera::CameraModel;
use track::synth::{demo_camera, Look, Renderer};

/// A test rod (sags ~6 cm over 0.2 m) with 8 centre-line markers
/// (the mount is set per test).
const ROD: &str = r#"
length_m = 0.2
sections_m = [0.05, 0.05, 0.05, 0.05]
subsegments_per_section = 4
modes = "cosserat"
[radius]
base_m = 0.006
tip_m = 0.004
[material]
e_pa = 5.0e6
poisson = 0.45
rho_kg_m3 = 1100
[base]
position_m = [0.0, 0.0, 0.02]
[[marker]]
arc_m = 0.025
[[marker]]
arc_m = 0.05
[[marker]]
arc_m = 0.075
[[marker]]
arc_m = 0.1
[[marker]]
arc_m = 0.125
[[marker]]
arc_m = 0.15
[[marker]]
arc_m = 0.175
[[marker]]
arc_m = 0.2
"#;

/// The rig: robot base yawed 35 deg and rolled 4 deg, shifted; the board
/// vertical (its y up = world z, its z = world -y), markers 10 mm above it.
fn frames(board_y_m: f64) -> RigFrames {
    RigFrames {
        robot_base: FramePose { position_m: [-0.35, 0.22, 0.05], rpy_deg: [4.0, 0.0, 35.0] },
        board: FramePose { position_m: [0.02, board_y_m, 0.30], rpy_deg: [90.0, 0.0, 0.0] },
        marker_height_m: 0.010,
        gravity_m_s2: [0.0, 0.0, -9.81],
        table: None,
    }
}

/// The flange's orientation at rest, in the world: a half turn (angle pi,
/// the tool pointing down) about an axis of the robot's base frame that is
/// nearly perpendicular to the board's normal, so that turning about that
/// normal (in the plane of motion) takes the angle through pi: the logged
/// rotation vectors (angle in [0, pi]) jump from ~pi u to ~-pi u.
fn flange_rest(world_from_robot: &Pose) -> lie::Mat3 {
    let a_b = world_from_robot.rot.transpose() * Vec3::y();
    let u_b = (a_b.cross(&Vec3::z()).normalize() + a_b * 0.3).normalize();
    world_from_robot.rot * lie::trajectory::rotation_from_vector(&(u_b * std::f64::consts::PI))
}

/// The flange in the world at time t: turning slowly about the board's
/// normal (world y), position drifting in the plane. Both linear in time
/// between log samples, so slerp reproduces them exactly.
fn flange_world(t: f64, y_plane: f64, rest: &lie::Mat3) -> Pose {
    let theta = -0.25 + 0.5 * t;
    let rot = Pose::from_rpy(0.0, theta, 0.0, Vec3::zeros()).rot * rest;
    Pose { rot, pos: Vec3::new(0.01 + 0.02 * t, y_plane, 0.35 - 0.01 * t) }
}

/// The rod file with the mount undoing the flange's rest orientation: the
/// rod's base 20 mm below the flange, the rod along world x, bending in the
/// board's plane.
fn rod_text(rest: &lie::Mat3) -> String {
    let mount = FramePose::from_pose(&Pose { rot: rest.transpose(), pos: rest.transpose() * Vec3::new(0.0, 0.0, -0.02) });
    let [x, y, z] = mount.position_m;
    let [r, p, w] = mount.rpy_deg;
    ROD.replace("position_m = [0.0, 0.0, 0.02]", &format!("position_m = [{x}, {y}, {z}]\nrpy_deg = [{r}, {p}, {w}]"))
}

#[test]
fn observe_in_a_rotated_rig_with_a_vertical_board_and_raised_markers() {
    let dir = tempfile::tempdir().unwrap();
    let sess = dir.path().join("session");
    std::fs::create_dir_all(&sess).unwrap();
    let (mut camera, plane) = demo_camera();
    camera.plane = Some(plane.clone());
    let h = 0.010;
    // The rod moves in the world plane y = y_plane; the board stands h
    // behind it (away from the camera).
    let y_plane = 0.1;
    let s = plane.camera_side();
    let rig = frames(y_plane + s * h);
    let world_from_robot = rig.world_from_robot();
    let world_from_board = rig.world_from_board();
    let rest = flange_rest(&world_from_robot);
    let text = rod_text(&rest);
    let rod_path = dir.path().join("rod.toml");
    std::fs::write(&rod_path, &text).unwrap();
    let rod = rod::Rod::from_toml_str(&text, "rod.toml").unwrap();
    let t0_ns: i64 = 1_000_000_000;

    // Robot log: 500 Hz over 0.6 s, flange poses in the robot's base frame.
    let log_t: Vec<f64> = (0..=300).map(|k| k as f64 * 0.002).collect();
    let ur: Vec<[f64; 6]> = log_t.iter().map(|&t| lie::trajectory::pose_to_ur(&world_from_robot.inverse().compose(&flange_world(t, y_plane, &rest)))).collect();
    let flips = ur.windows(2).filter(|w| w[0][3] * w[1][3] + w[0][4] * w[1][4] + w[0][5] * w[1][5] < 0.0).count();
    assert!(flips > 0, "the rotation vectors must flip somewhere in the log");
    let robot_dir = session::stream_dir(&sess, "robot");
    std::fs::create_dir_all(&robot_dir).unwrap();
    let mut t = Table::new();
    t.push_i64("t_host_ns", log_t.iter().map(|t| t0_ns + (t * 1e9).round() as i64).collect());
    t.push_f64("timestamp", log_t.clone());
    for i in 0..6 {
        t.push_f64(&format!("actual_TCP_pose_{i}"), ur.iter().map(|p| p[i]).collect());
    }
    t.write(&robot_dir.join("000000.parquet")).unwrap();

    // Truth per frame: statics under gravity and in-plane forces at two
    // markers (a shape the observer's own model can represent exactly).
    let n_frames = 12;
    let frame_t: Vec<f64> = (0..n_frames).map(|k| 0.03 + 0.045 * k as f64).collect();
    let points: Vec<f64> = rod.markers.iter().map(|m| m.arc_m).collect();
    let mut truths = vec![];
    let mut q = None;
    for (k, &t) in frame_t.iter().enumerate() {
        let mut r = rod.clone();
        r.base = flange_world(t, y_plane, &rest).compose(&rod.base);
        let model = rod::Model::new(&r, &points);
        let mut loads = rod::Loads::gravity();
        let lift = 0.03 + 0.02 * (k as f64 * 0.7).sin();
        for (m, f) in [(3, Vec3::new(0.01, 0.0, lift)), (7, Vec3::new(-0.005, 0.0, 0.5 * lift))] {
            loads.point_loads.push(rod::PointLoad {
                x_m: r.markers[m].arc_m,
                offset_body_m: Vec3::zeros(),
                force_n: f,
                moment_nm: Vec3::zeros(),
                follower: false,
            });
        }
        let sol = rod::statics::solve(&model, &loads, q.as_ref(), &rod::NewtonOptions { tolerance: 1e-13, ..Default::default() }).unwrap();
        let fr = model.frames(&sol.q);
        let markers: Vec<Vec3> = r.markers.iter().map(|m| fr.joints[model.joint_at(m.arc_m)].pos).collect();
        let strain: Vec<Vec6> = model.node_x_m.iter().map(|&x| model.strain_at(x, &sol.q)).collect();
        q = Some(sol.q);
        truths.push((r.base, markers, strain));
    }

    // Video: markers rendered in the plane h above the board.
    let look = Look { noise_sigma: 0.0, ..Look::default() };
    let mut renderer = Renderer::new(camera.clone(), plane.offset(h), look);
    let video = sess.join("camera.mkv");
    let mut sink = track::source::VideoSink::create(&video, 25.0, camera.width_px as i32, camera.height_px as i32).unwrap();
    for (_, markers, _) in &truths {
        let in_plane: Vec<[f64; 2]> = markers
            .iter()
            .map(|p| {
                let b = world_from_board.inverse().transform_point(p);
                assert!((b.z - s * h).abs() < 1e-9, "markers move {h} m above the board: z = {}", b.z);
                [b.x, b.y]
            })
            .collect();
        let img = renderer.render(&[in_plane], &[true; 8]);
        sink.write(&img.to_mat().unwrap()).unwrap();
    }
    sink.finish().unwrap();
    let frames_dir = session::stream_dir(&sess, "camera");
    std::fs::create_dir_all(&frames_dir).unwrap();
    let mut t = Table::new();
    t.push_i64("t_host_ns", frame_t.iter().map(|t| t0_ns + (t * 1e9).round() as i64).collect());
    t.push_f64("frame", (0..n_frames).map(|k| k as f64).collect());
    t.push_f64("device_ms", frame_t.iter().map(|t| t * 1e3).collect());
    t.write(&frames_dir.join("000000.parquet")).unwrap();
    SessionMeta::start("frames test", "rig.toml", "# synthetic\n", rig).write(&sess).unwrap();
    let camera_path = dir.path().join("camera.toml");
    CameraModel { plane_offset_m: None, ..camera.clone() }.save(&camera_path).unwrap();

    // Track, then observe.
    let tracked = lab_devices::track::track(&lab_devices::track::TrackRequest::new(&video, &camera_path, &sess.join("markers.parquet")), &lab::Silent).unwrap();
    assert_eq!(tracked.world_from, Some(sess.join("session.toml")), "positions in the session's world frame");
    let tracked = session::read_markers(&sess.join("markers.parquet")).unwrap();
    let mut worst_marker = 0.0f64;
    for r in &tracked {
        let p = Vec3::new(r.x_m, r.y_m, r.z_m);
        worst_marker = worst_marker.max((p - truths[r.frame as usize].1[r.marker as usize]).norm());
    }
    // Clean renders track to a few micrometres: sigma says so.
    let o = lab::observe::ObserveOptions { mode: lab::observe::ObserverMode::Weighted, sigma_m: 4e-6, energy_scale_j: None };
    lab::observe::observe(&sess.join("markers.parquet"), &rod::Rod::from_file(&rod_path).unwrap(), &o, &sess.join("strain.parquet"), &lab::Silent).unwrap();
    let strain = session::read_strain(&sess.join("strain.parquet")).unwrap();

    // Strain within 1 % of its range, per kind; base pose to 1e-6.
    let range = |group: std::ops::Range<usize>| {
        let vals: Vec<f64> =
            truths.iter().flat_map(|(_, _, s)| s.iter().flat_map(|v| group.clone().map(move |c| v[c] - if c == 3 { 1.0 } else { 0.0 }))).collect();
        vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max) - vals.iter().cloned().fold(f64::INFINITY, f64::min)
    };
    let (curv_range, stretch_range) = (range(0..3), range(3..6));
    let mut worst = [0.0f64; 2];
    let mut worst_base = (0.0f64, 0.0f64);
    for row in &strain {
        let (base, _, truth) = &truths[row.frame as usize];
        let s_true = truth[row.node as usize];
        for c in 0..6 {
            let observed = if c == 3 { row.strain[c] + 1.0 } else { row.strain[c] };
            worst[c / 3] = worst[c / 3].max((observed - s_true[c]).abs());
        }
        let b = lie::trajectory::pose_from_ur(&row.base_pose);
        worst_base.0 = worst_base.0.max((b.pos - base.pos).norm());
        worst_base.1 = worst_base.1.max(lie::angular(&lie::log(&Pose { rot: b.rot.transpose() * base.rot, pos: Vec3::zeros() })).norm());
    }
    println!(
        "rotated rig: markers tracked within {:.3} mm; curvature within {:.3} % of its range ({curv_range:.3} 1/m), stretch/shear within {:.3} % ({stretch_range:.2e}); base within {:.2e} m / {:.2e} rad",
        1e3 * worst_marker,
        100.0 * worst[0] / curv_range,
        100.0 * worst[1] / stretch_range.max(1e-12),
        worst_base.0,
        worst_base.1
    );
    assert!(worst_base.0 < 1e-6 && worst_base.1 < 1e-6, "{worst_base:?}");
    assert!(worst[0] < 0.01 * curv_range, "curvature error {:.3} % of range", 100.0 * worst[0] / curv_range);
    // Stretch and shear stay below 0.12 % here: from positions alone they
    // are seen only as their integral (science §6, observer notes); their
    // error is bounded in absolute terms.
    assert!(worst[1] < 1e-4, "stretch/shear error {:.2e}", worst[1]);
}

/// Synthetic pairs: a marker on the flange held at 8 poses, tracked with
/// 0.2 mm noise in the world; the robot's base comes back within 0.5 mm and
/// 0.1 deg, and the force sensor's weight agrees with gravity. Poses on a
/// line are refused.
#[test]
fn rig_calibration_recovers_the_robot_base() {
    use rand::{rngs::StdRng, SeedableRng};
    let dir = tempfile::tempdir().unwrap();
    let rod = rod::Rod::from_toml_str(ROD, "rod.toml").unwrap();
    let marker_on_flange = rod.base.transform_point(&Vec3::new(rod.markers[0].arc_m, 0.0, 0.0));
    let truth = frames(0.0).world_from_robot();
    let write_session = |sess: &Path, targets: &[Vec3], yaw_step: f64, bend_m: f64| {
        std::fs::create_dir_all(sess).unwrap();
        let mut rig = frames(0.0);
        rig.robot_base = FramePose::default(); // unknown: to be measured
        SessionMeta::start("rig calibration", "rig.toml", "", rig).write(sess).unwrap();
        // Each target held 0.3 s, moves of 0.2 s between; log at 500 Hz.
        let hold = 0.3;
        let mv = 0.2;
        let period = hold + mv;
        let total = period * targets.len() as f64;
        let flange_w = |t: f64| -> Pose {
            let k = ((t / period) as usize).min(targets.len() - 1);
            let local = t - k as f64 * period;
            let from = targets[k];
            let to = targets[(k + 1).min(targets.len() - 1)];
            let w = if local < hold { 0.0 } else { ((local - hold) / mv).min(1.0) };
            let rot = Pose::from_rpy(std::f64::consts::PI, 0.0, yaw_step * k as f64, Vec3::zeros()).rot;
            Pose { rot, pos: from + (to - from) * w }
        };
        let n = (total / 0.002) as usize;
        let log_t: Vec<f64> = (0..n).map(|k| k as f64 * 0.002).collect();
        let robot_dir = session::stream_dir(sess, "robot");
        std::fs::create_dir_all(&robot_dir).unwrap();
        let mut t = Table::new();
        t.push_i64("t_host_ns", log_t.iter().map(|t| (t * 1e9).round() as i64).collect());
        let ur: Vec<[f64; 6]> = log_t.iter().map(|&t| lie::trajectory::pose_to_ur(&truth.inverse().compose(&flange_w(t)))).collect();
        for i in 0..6 {
            t.push_f64(&format!("actual_TCP_pose_{i}"), ur.iter().map(|p| p[i]).collect());
        }
        t.write(&robot_dir.join("000000.parquet")).unwrap();
        // Tracked marker at 30 Hz with 0.2 mm noise, world frame.
        let mut rng = StdRng::seed_from_u64(3);
        let mut gauss = move || rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut rng);
        let rows: Vec<session::MarkerRow> = (0..(total * 30.0) as usize)
            .map(|k| {
                let t = k as f64 / 30.0;
                // A marker on a part that bends sags by a different amount at each pose.
                let pose = ((t / period) as usize).min(targets.len() - 1);
                let sag = Vec3::new(0.0, 0.0, -bend_m * (pose % 3) as f64);
                let p = flange_w(t).transform_point(&marker_on_flange) + sag + Vec3::new(gauss(), gauss(), gauss()) * 2e-4;
                session::MarkerRow {
                    frame: k as i64,
                    t_s: t,
                    t_host_ns: Some((t * 1e9).round() as i64),
                    marker: 0,
                    u_px: 0.0,
                    v_px: 0.0,
                    x_m: p.x,
                    y_m: p.y,
                    z_m: p.z,
                    area_px: 50.0,
                    flags: 0,
                }
            })
            .collect();
        session::write_markers(&sess.join("markers.parquet"), &rows).unwrap();
        // A flange force sensor reading the rod's weight (flange frame).
        let ft_dir = session::stream_dir(sess, "ft300");
        std::fs::create_dir_all(&ft_dir).unwrap();
        let mut t = Table::new();
        let ft_t: Vec<f64> = (0..(total * 100.0) as usize).map(|k| k as f64 * 0.01).collect();
        let weight = Vec3::new(0.0, 0.0, -0.08);
        let f: Vec<Vec3> = ft_t.iter().map(|&t| flange_w(t).rot.transpose() * weight).collect();
        t.push_i64("t_host_ns", ft_t.iter().map(|t| (t * 1e9).round() as i64).collect());
        for (i, c) in ["fx_n", "fy_n", "fz_n"].iter().enumerate() {
            t.push_f64(c, f.iter().map(|v| v[i]).collect());
        }
        t.write(&ft_dir.join("000000.parquet")).unwrap();
    };
    // Eight poses spread in the board's plane (world x-z) and a little across it.
    let targets: Vec<Vec3> = (0..8).map(|k| Vec3::new(0.05 * (k % 4) as f64, 0.01 * (k % 3) as f64, 0.30 + 0.06 * (k / 4) as f64)).collect();
    let sess = dir.path().join("cal");
    write_session(&sess, &targets, 0.3, 0.0);
    let out = dir.path().join("frames.toml");
    let calibrate = |sess: &Path| {
        let session = lab::SessionDir::new(sess);
        lab::rig::calibrate(&lab::rig::RigCalibrationRequest { session: &session, rod: &rod, marker: 0, max_speed_m_s: 0.005, max_rms_m: lab::rig::MAX_RMS_M })
    };
    let cal = calibrate(&sess).unwrap();
    assert!(cal.gravity_angle_deg.is_some_and(|a| a < 1.0) && cal.warnings.is_empty(), "{cal:?}");
    lab::rig::write_frames(&out, &cal.frames, &lab::SessionDir::new(&sess)).unwrap();
    #[derive(serde::Deserialize)]
    struct Out {
        frames: RigFrames,
    }
    let measured: Out = toml::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let g = measured.frames.world_from_robot();
    let dp = (g.pos - truth.pos).norm();
    let da = lie::angular(&lie::log(&Pose { rot: g.rot.transpose() * truth.rot, pos: Vec3::zeros() })).norm().to_degrees();
    println!("rig calibration: base within {:.3} mm and {:.4} deg", 1e3 * dp, da);
    assert!(dp < 5e-4 && da < 0.1, "{dp} m, {da} deg");

    // All poses on a line: refused with the reason.
    let line: Vec<Vec3> = (0..6).map(|k| Vec3::new(0.04 * k as f64, 0.0, 0.3)).collect();
    let sess = dir.path().join("line");
    write_session(&sess, &line, 0.0, 0.0);
    expect_input_error(calibrate(&sess), &["degenerate", "line"]);

    // The tracked marker on a part that bends (sagging 0, 4, 8 mm by pose):
    // refused as a failed computation, the worst poses and the usual
    // causes named, nothing to write.
    let sess = dir.path().join("bending");
    write_session(&sess, &targets, 0.3, 0.004);
    let e = calibrate(&sess).unwrap_err();
    let text = e.to_string();
    assert_eq!(e.kind(), fault::Kind::Computation, "{text}");
    assert!(
        text.contains("rig calibration refused, nothing written") && text.contains("mm RMS (limit 1.0 mm") && text.contains("worst ") && text.contains("bends"),
        "{text}"
    );
}

/// One clock: a marker table without host times next to a session with a
/// robot log is refused, naming both; frames outside the robot log are
/// flagged, never extrapolated.
#[test]
fn observe_uses_host_time_only_and_never_extrapolates_the_robot() {
    let dir = tempfile::tempdir().unwrap();
    let sess = dir.path().join("session");
    let robot_dir = session::stream_dir(&sess, "robot");
    std::fs::create_dir_all(&robot_dir).unwrap();
    let mut t = Table::new();
    let log_ns: Vec<i64> = (0..=100).map(|k| 1_000_000_000 + k * 2_000_000).collect(); // 0.2 s
    t.push_i64("t_host_ns", log_ns.clone());
    for (i, v) in [0.1, 0.0, 0.3, 0.0, 0.0, 0.0].iter().enumerate() {
        t.push_f64(&format!("actual_TCP_pose_{i}"), vec![*v; log_ns.len()]);
    }
    t.write(&robot_dir.join("000000.parquet")).unwrap();
    SessionMeta::start("clock test", "rig.toml", "", RigFrames::default()).write(&sess).unwrap();
    let rod = rod("configs/rod/contact-paper-steel-core.toml");
    let rows = |with_host: bool| -> Vec<session::MarkerRow> {
        // Frame 0 inside the log, frame 1 after it.
        [1_100_000_000i64, 1_500_000_000]
            .iter()
            .enumerate()
            .flat_map(|(f, &ns)| {
                rod.markers.iter().enumerate().map(move |(m, mk)| session::MarkerRow {
                    frame: f as i64,
                    t_s: ns as f64 * 1e-9,
                    t_host_ns: with_host.then_some(ns),
                    marker: m as u32,
                    u_px: 0.0,
                    v_px: 0.0,
                    x_m: 0.1 + mk.arc_m,
                    y_m: 0.0,
                    z_m: 0.3,
                    area_px: 40.0,
                    flags: 0,
                })
            })
            .collect()
    };
    let markers = sess.join("markers.parquet");
    let out = sess.join("strain.parquet");
    session::write_markers(&markers, &rows(false)).unwrap();
    expect_input_error(lab::observe::observe(&markers, &rod, &Default::default(), &out, &lab::Silent), &["markers.parquet", "t_host_ns", "session"]);
    session::write_markers(&markers, &rows(true)).unwrap();
    let o = lab::observe::ObserveOptions { energy_scale_j: Some(1e-6), ..Default::default() };
    lab::observe::observe(&markers, &rod, &o, &out, &lab::Silent).unwrap();
    let strain = session::read_strain(&sess.join("strain.parquet")).unwrap();
    assert!(strain.iter().filter(|r| r.frame == 0).all(|r| r.status == "ok"));
    assert!(strain.iter().filter(|r| r.frame == 1).all(|r| r.status.contains("outside robot log") && r.strain[0].is_nan()));
}
