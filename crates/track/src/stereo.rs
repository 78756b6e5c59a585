//! A set of cameras in one world frame, for markers in 3-D: calibration
//! from board views that two or more cameras see at the same time, and the
//! file `cameras.toml` that `track` reads to triangulate.
//!
//! Each camera's intrinsics start from OpenCV's calibrateCamera over the
//! views it sees; then every camera's intrinsics and pose and every view's
//! board pose come from one joint fit of all the views' reprojection errors
//! (a bundle adjustment, Levenberg-Marquardt). For a pair that is what
//! OpenCV's stereoCalibrate does when it refines the intrinsics; for more
//! cameras no pair is privileged. The world frame is the board's frame in
//! one view (the plane view), as for a single camera.

use crate::calibrate::{board_pose, image_files, BoardSpec, BoardViews};
use crate::camera::{CameraModel, PlanePose};
use crate::detect::TrackError;
use nalgebra::{DMatrix, DVector, Isometry3, Point3, Vector3};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `cameras.toml`: what `rodlab calibrate --camera-images` writes and
/// `rodlab track --cameras` reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CameraSet {
    /// What the world frame is: the board's frame in the view named here.
    pub world: String,
    /// The cameras; each one's `plane` is the world's pose in that camera
    /// (world -> camera).
    #[serde(rename = "camera")]
    pub cameras: Vec<SetCamera>,
    /// The joint fit's reprojection error in each view.
    #[serde(default, rename = "view")]
    pub views: Vec<ViewFit>,
}

/// One camera of a set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetCamera {
    /// The camera's name (the rig's `[[camera]] name`, the video's file stem).
    pub name: String,
    /// Intrinsics, and in `plane` the world's pose in this camera.
    pub model: CameraModel,
}

/// One board view of the calibration, as the joint fit sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ViewFit {
    /// The image's file stem (the same in every camera's folder).
    pub name: String,
    /// The cameras that found the board in it.
    pub cameras: Vec<String>,
    /// RMS reprojection error in each of those cameras \[px\].
    pub rms_px: Vec<f64>,
}

/// What a camera-set calibration did, for the user.
#[derive(Clone, Debug)]
pub struct SetSummary {
    /// Per camera: name, images, views with a board, RMS after the joint fit \[px\].
    pub cameras: Vec<(String, usize, usize, f64)>,
    /// Views with a board in two or more cameras.
    pub shared_views: usize,
    pub plane_view: String,
    /// Iterations of the joint fit.
    pub iterations: usize,
    /// The board corners each camera found in each view, as the fit used them.
    pub corners: Vec<ViewCorners>,
}

/// The board corners one camera found in one view \[px\], in the board's
/// order (row by row, the first corner nearer the image's top-left).
#[derive(Clone, Debug)]
pub struct ViewCorners {
    pub camera: String,
    pub view: String,
    pub corners_px: Vec<[f64; 2]>,
}

/// Writes corners as CSV (`camera,view,corner,u_px,v_px`), for a peer
/// calibration tool to fit the same data.
pub fn write_corners_csv(corners: &[ViewCorners], path: &Path) -> std::io::Result<()> {
    use std::fmt::Write as _;
    let mut text = String::from("camera,view,corner,u_px,v_px\n");
    for v in corners {
        for (k, [u, w]) in v.corners_px.iter().enumerate() {
            let _ = writeln!(text, "{},{},{k},{u},{w}", v.camera, v.view);
        }
    }
    std::fs::write(path, text)
}

/// A rigid transform as an isometry.
pub fn isometry(p: &PlanePose) -> Isometry3<f64> {
    Isometry3::new(Vector3::from(p.translation_m), Vector3::from(p.rotation_rad))
}

/// An isometry as a plane pose (rotation vector, translation).
pub fn plane_pose(i: &Isometry3<f64>) -> PlanePose {
    let r = i.rotation.scaled_axis();
    let t = i.translation.vector;
    PlanePose { rotation_rad: [r.x, r.y, r.z], translation_m: [t.x, t.y, t.z] }
}

impl CameraSet {
    pub fn load(path: &Path) -> Result<CameraSet, TrackError> {
        let (set, _): (CameraSet, _) = session::read_toml(path, "camera set file")?;
        let err = |m: String| TrackError::Config(session::ConfigFileError::new(path, m));
        if set.cameras.is_empty() {
            return Err(err("no [[camera]]".into()));
        }
        for (i, c) in set.cameras.iter().enumerate() {
            if set.cameras[..i].iter().any(|d| d.name == c.name) {
                return Err(err(format!("camera {:?}: the name is used twice", c.name)));
            }
            c.model.check().map_err(|m| err(format!("camera {:?}: {m}", c.name)))?;
            if c.model.plane.is_none() {
                return Err(err(format!(
                    "camera {:?}: no plane (the world's pose in the camera): calibrate the set with rodlab calibrate --camera-images",
                    c.name
                )));
            }
        }
        Ok(set)
    }

    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let text = toml::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(
            path,
            format!("# A camera set: each camera's intrinsics and the world's pose in it; written by rodlab calibrate --camera-images.\n{text}"),
        )
    }

    pub fn names(&self) -> Vec<String> {
        self.cameras.iter().map(|c| c.name.clone()).collect()
    }
}

/// One camera's board views on disk, as the calibration reads them.
struct CameraViews {
    name: String,
    model: CameraModel,
    /// View name -> (corners in px, the board's pose in this camera by PnP).
    seen: BTreeMap<String, (Vec<[f64; 2]>, Isometry3<f64>)>,
    images: usize,
}

fn read_camera_views(name: &str, dir: &Path, board: &BoardSpec) -> Result<CameraViews, TrackError> {
    let images = image_files(dir)?;
    if images.is_empty() {
        return Err(TrackError::Input(format!("camera {name}: {}: no images (png, jpg, bmp, tif)", dir.display())));
    }
    let found = BoardViews::find(&images, board)?;
    let (model, k, dist) = found.intrinsics(board, &format!("camera {name}: {}: ", dir.display()))?;
    let mut seen = BTreeMap::new();
    for (path, corners) in found.used() {
        if let Some(pose) = board_pose(corners, &k, &dist, board)? {
            let px = corners.iter().map(|c| [c.x as f64, c.y as f64]).collect();
            seen.insert(view_name(path), (px, isometry(&pose)));
        }
    }
    Ok(CameraViews { name: name.to_string(), model, seen, images: images.len() })
}

fn view_name(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Calibrates a camera set from one folder of board images per camera;
/// images of the same name were taken at the same time. The world is the
/// board in `plane_view` (a file stem; default `plane` if every camera has
/// it, else the first view every camera shares). Refuses cameras that share
/// no view (input) and, naming the worst views, a fit whose RMS exceeds
/// `max_rms_px` for a camera or twice that in a view (failed calibration).
pub fn calibrate_set(
    cameras: &[(String, PathBuf)],
    board: &BoardSpec,
    plane_view: Option<&str>,
    max_rms_px: f64,
) -> Result<(CameraSet, SetSummary), TrackError> {
    if cameras.len() < 2 {
        return Err(TrackError::Input("a camera set needs two or more cameras (--camera-images NAME=DIR, repeated)".into()));
    }
    for (i, (name, _)) in cameras.iter().enumerate() {
        if cameras[..i].iter().any(|(n, _)| n == name) {
            return Err(TrackError::Input(format!("camera {name}: named twice")));
        }
    }
    let views: Vec<CameraViews> = cameras.iter().map(|(n, d)| read_camera_views(n, d, board)).collect::<Result<_, _>>()?;
    refuse_one_camera_twice(&views)?;
    let camera_from_world = initial_camera_poses(&views)?;
    let mut fit = JointFit::new(&views, camera_from_world, board);
    let iterations = fit.solve();
    let plane = choose_plane_view(&views, plane_view)?;
    let world_from_plane = fit.world_from_board[&plane];
    let rms = fit.rms_by_view();
    let mut set = CameraSet { world: format!("the board in view {plane}"), cameras: vec![], views: vec![] };
    let corners = views
        .iter()
        .flat_map(|v| v.seen.iter().map(|(view, (px, _))| ViewCorners { camera: v.name.clone(), view: view.clone(), corners_px: px.clone() }))
        .collect();
    let mut summary = SetSummary { cameras: vec![], shared_views: 0, plane_view: plane.clone(), iterations, corners };
    for (i, v) in views.iter().enumerate() {
        let mut model = fit.models[i].clone();
        let (sum, n) = rms.iter().filter(|((c, _), _)| *c == i).fold((0.0, 0usize), |(s, n), (_, (e2, k))| (s + e2, n + k));
        model.rms_reprojection_px = (sum / n.max(1) as f64).sqrt();
        model.views = v.seen.len();
        model.plane = Some(plane_pose(&(fit.camera_from_world[i] * world_from_plane)));
        summary.cameras.push((v.name.clone(), v.images, v.seen.len(), model.rms_reprojection_px));
        set.cameras.push(SetCamera { name: v.name.clone(), model });
    }
    for name in fit.world_from_board.keys() {
        let seen: Vec<usize> = (0..views.len()).filter(|&i| views[i].seen.contains_key(name)).collect();
        summary.shared_views += usize::from(seen.len() >= 2);
        let rms_px = seen.iter().map(|&i| rms.get(&(i, name.clone())).map_or(0.0, |(e2, k)| (e2 / *k as f64).sqrt())).collect();
        set.views.push(ViewFit { name: name.clone(), cameras: seen.iter().map(|&i| views[i].name.clone()).collect(), rms_px });
    }
    refuse_a_poor_fit(&set, max_rms_px)?;
    Ok((set, summary))
}

/// Two cameras whose every shared view has the same corners (within
/// [`crate::calibrate::DUPLICATE_VIEW_PX`]) are one camera given twice (the
/// same folder as left and right gave two identical cameras and a zero
/// baseline): refused naming them.
fn refuse_one_camera_twice(views: &[CameraViews]) -> Result<(), TrackError> {
    for (i, a) in views.iter().enumerate() {
        for b in &views[..i] {
            let shared: Vec<_> = a.seen.iter().filter_map(|(name, (pa, _))| b.seen.get(name).map(|(pb, _)| (pa, pb))).collect();
            if !shared.is_empty() && shared.iter().all(|(pa, pb)| crate::calibrate::same_corners(pa.iter().copied(), pb.iter().copied())) {
                return Err(TrackError::Input(format!(
                    "cameras {} and {}: the same images (every one of their {} shared views has the same corners): one folder given twice? two cameras see the board from two places",
                    b.name,
                    a.name,
                    shared.len()
                )));
            }
        }
    }
    Ok(())
}

/// Failed calibration when a camera's RMS exceeds `max_rms_px` or a view's
/// twice that: a board that moved between the cameras' exposures, a view
/// mis-detected in one camera.
fn refuse_a_poor_fit(set: &CameraSet, max_rms_px: f64) -> Result<(), TrackError> {
    let mut worst: Vec<(f64, String)> =
        set.views.iter().flat_map(|v| v.cameras.iter().zip(&v.rms_px).map(move |(c, e)| (*e, format!("{c}/{} {e:.2} px", v.name)))).collect();
    worst.sort_by(|a, b| b.0.total_cmp(&a.0));
    let bad_camera = set.cameras.iter().find(|c| c.model.rms_reprojection_px.is_nan() || c.model.rms_reprojection_px > max_rms_px);
    let bad_view = worst.first().filter(|(e, _)| e.is_nan() || *e > 2.0 * max_rms_px);
    if bad_camera.is_none() && bad_view.is_none() {
        return Ok(());
    }
    let what = match bad_camera {
        Some(c) => format!("camera {} has an RMS reprojection error of {:.3} px > {max_rms_px} px", c.name, c.model.rms_reprojection_px),
        None => format!("a view's RMS reprojection error exceeds {:.3} px", 2.0 * max_rms_px),
    };
    let names: Vec<&str> = worst.iter().take(3).map(|(_, s)| s.as_str()).collect();
    Err(TrackError::Failed(format!(
        "calibration rejected: {what}; the worst views: {} (the board moved between the cameras' exposures, or was mis-detected?)",
        names.join(", ")
    )))
}

fn choose_plane_view(views: &[CameraViews], plane_view: Option<&str>) -> Result<String, TrackError> {
    let in_all = |name: &str| views.iter().all(|v| v.seen.contains_key(name));
    match plane_view {
        Some(p) => {
            let p = p.strip_suffix(".png").unwrap_or(p).to_string();
            if let Some(v) = views.iter().find(|v| !v.seen.contains_key(&p)) {
                return Err(TrackError::Input(format!("--plane-view {p}: camera {} has no image of that name with the board found in it", v.name)));
            }
            Ok(p)
        }
        None if in_all("plane") => Ok("plane".into()),
        None => views[0]
            .seen
            .keys()
            .find(|n| in_all(n))
            .cloned()
            .ok_or_else(|| TrackError::Input("no view shows the board to every camera: name one with --plane-view (a view every camera sees)".into())),
    }
}

/// Every camera's pose relative to camera 0 (camera 0 = the world while
/// fitting), chained through shared views from camera 0 outwards.
fn initial_camera_poses(views: &[CameraViews]) -> Result<Vec<Isometry3<f64>>, TrackError> {
    let mut camera_from_world: Vec<Option<Isometry3<f64>>> = vec![None; views.len()];
    camera_from_world[0] = Some(Isometry3::identity());
    loop {
        let mut progressed = false;
        for j in 0..views.len() {
            if camera_from_world[j].is_some() {
                continue;
            }
            let link = (0..views.len()).find_map(|i| {
                let from_world = camera_from_world[i]?;
                let (name, (_, i_from_board)) = views[i].seen.iter().find(|(n, _)| views[j].seen.contains_key(*n))?;
                let j_from_board = views[j].seen[name].1;
                Some(j_from_board * i_from_board.inverse() * from_world)
            });
            if let Some(p) = link {
                camera_from_world[j] = Some(p);
                progressed = true;
            }
        }
        if !progressed {
            break;
        }
    }
    let lost: Vec<&str> = views.iter().zip(&camera_from_world).filter(|(_, p)| p.is_none()).map(|(v, _)| v.name.as_str()).collect();
    if !lost.is_empty() {
        let others: Vec<&str> = views.iter().zip(&camera_from_world).filter(|(_, p)| p.is_some()).map(|(v, _)| v.name.as_str()).collect();
        return Err(TrackError::Input(format!(
            "camera {} shares no board view with camera {}: no image of the same name shows the board to both (take views the cameras see at the same time)",
            lost.join(", "),
            others.join(", ")
        )));
    }
    Ok(camera_from_world.into_iter().map(|p| p.expect("checked")).collect())
}

/// The joint fit: camera poses (camera 0 fixed) and view board poses,
/// minimising every corner's reprojection error in every camera.
struct JointFit<'a> {
    views: &'a [CameraViews],
    /// Each camera's intrinsics, refined with the poses (the cameras' rigid
    /// relation constrains them more than each camera's views alone).
    models: Vec<CameraModel>,
    board: Vec<Point3<f64>>,
    camera_from_world: Vec<Isometry3<f64>>,
    world_from_board: BTreeMap<String, Isometry3<f64>>,
}

/// Intrinsic parameters per camera: fx, fy, cx, cy, k1, k2, p1, p2, k3.
const INTRINSICS: usize = 9;

/// Six parameters of a pose: rotation vector, translation.
fn pose_params(p: &Isometry3<f64>) -> [f64; 6] {
    let (r, t) = (p.rotation.scaled_axis(), p.translation.vector);
    [r.x, r.y, r.z, t.x, t.y, t.z]
}

fn pose_of(x: &[f64]) -> Isometry3<f64> {
    Isometry3::new(Vector3::new(x[3], x[4], x[5]), Vector3::new(x[0], x[1], x[2]))
}

impl<'a> JointFit<'a> {
    fn new(views: &'a [CameraViews], camera_from_world: Vec<Isometry3<f64>>, board: &BoardSpec) -> JointFit<'a> {
        let mut world_from_board = BTreeMap::new();
        for (i, v) in views.iter().enumerate() {
            for (name, (_, camera_from_board)) in &v.seen {
                world_from_board.entry(name.clone()).or_insert_with(|| camera_from_world[i].inverse() * camera_from_board);
            }
        }
        let board = board.object_points().iter().map(|p| Point3::new(p.x as f64, p.y as f64, p.z as f64)).collect();
        let models = views.iter().map(|v| v.model.clone()).collect();
        JointFit { views, models, board, camera_from_world, world_from_board }
    }

    /// Intrinsics (9 per camera), camera poses (6 per camera but the
    /// first), view poses (6 per view).
    fn params(&self) -> Vec<f64> {
        let intrinsics = self.models.iter().flat_map(|m| {
            let [k1, k2, p1, p2, k3] = m.distortion;
            [m.fx_px, m.fy_px, m.cx_px, m.cy_px, k1, k2, p1, p2, k3]
        });
        let cams = self.camera_from_world[1..].iter().flat_map(pose_params);
        intrinsics.chain(cams).chain(self.world_from_board.values().flat_map(pose_params)).collect()
    }

    fn set_params(&mut self, x: &[f64]) {
        for (m, k) in self.models.iter_mut().zip(x.chunks(INTRINSICS)) {
            (m.fx_px, m.fy_px, m.cx_px, m.cy_px) = (k[0], k[1], k[2], k[3]);
            m.distortion = [k[4], k[5], k[6], k[7], k[8]];
        }
        let x = &x[INTRINSICS * self.models.len()..];
        let n = self.camera_from_world.len() - 1;
        for i in 0..n {
            self.camera_from_world[i + 1] = pose_of(&x[6 * i..6 * i + 6]);
        }
        for (k, p) in self.world_from_board.values_mut().enumerate() {
            *p = pose_of(&x[6 * (n + k)..6 * (n + k) + 6]);
        }
    }

    /// Reprojection residuals \[px\] in a fixed order (camera, view, corner, u/v).
    fn residuals(&self) -> Vec<f64> {
        let mut r = vec![];
        for (i, v) in self.views.iter().enumerate() {
            for (name, (corners, _)) in &v.seen {
                let camera_from_board = self.camera_from_world[i] * self.world_from_board[name];
                for (p, c) in self.board.iter().zip(corners) {
                    let q = self.models[i].project((camera_from_board * p).coords);
                    r.extend([q[0] - c[0], q[1] - c[1]]);
                }
            }
        }
        r
    }

    /// Sum of squared residuals and their count (u and v each) per (camera, view).
    fn rms_by_view(&self) -> BTreeMap<(usize, String), (f64, usize)> {
        let r = self.residuals();
        let mut out = BTreeMap::new();
        let mut k = 0;
        for (i, v) in self.views.iter().enumerate() {
            for (name, (corners, _)) in &v.seen {
                let e2: f64 = r[k..k + 2 * corners.len()].iter().map(|e| e * e).sum();
                // Per corner: both coordinates' squares over the corners (OpenCV's RMS).
                out.insert((i, name.clone()), (e2, corners.len()));
                k += 2 * corners.len();
            }
        }
        out
    }

    /// Residuals and their sum of squares at parameters `x`.
    fn evaluate(&mut self, x: &[f64]) -> (Vec<f64>, f64) {
        self.set_params(x);
        let r = self.residuals();
        let c = r.iter().map(|e| e * e).sum();
        (r, c)
    }

    /// Levenberg-Marquardt with a Jacobian by central differences (a few
    /// hundred parameters at most: dense normal equations are cheap).
    fn solve(&mut self) -> usize {
        let mut x = self.params();
        let (mut r, mut c) = self.evaluate(&x);
        let mut lambda = 1e-3;
        let mut iterations = 0;
        for _ in 0..100 {
            iterations += 1;
            let mut jac = DMatrix::<f64>::zeros(r.len(), x.len());
            for k in 0..x.len() {
                let h = 1e-7 * x[k].abs().max(1.0);
                let mut xp = x.clone();
                xp[k] += h;
                let (rp, _) = self.evaluate(&xp);
                xp[k] -= 2.0 * h;
                let (rm, _) = self.evaluate(&xp);
                for (row, (a, b)) in rp.iter().zip(&rm).enumerate() {
                    jac[(row, k)] = (a - b) / (2.0 * h);
                }
            }
            let jtj = jac.transpose() * &jac;
            let g = jac.transpose() * DVector::from_column_slice(&r);
            let mut improved = false;
            for _ in 0..20 {
                let mut a = jtj.clone();
                for k in 0..x.len() {
                    a[(k, k)] += lambda * jtj[(k, k)].max(1e-12);
                }
                let Some(step) = a.cholesky().map(|ch| ch.solve(&(-&g))) else {
                    lambda *= 10.0;
                    continue;
                };
                let xn: Vec<f64> = x.iter().zip(step.iter()).map(|(a, b)| a + b).collect();
                let (rn, cn) = self.evaluate(&xn);
                if cn < c {
                    let converged = (c - cn) <= 1e-12 * c || step.norm() < 1e-12;
                    (x, r, c) = (xn, rn, cn);
                    lambda = (lambda * 0.3).max(1e-12);
                    improved = !converged;
                    break;
                }
                lambda *= 10.0;
            }
            if !improved {
                break;
            }
        }
        self.set_params(&x);
        iterations
    }
}
