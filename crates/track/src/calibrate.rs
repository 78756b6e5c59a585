//! Camera calibration from checkerboard images (OpenCV calib3d), and the
//! pose of the plane of motion from one image of the board lying in it.
//!
//! Rig frame: origin at the board's first inner corner (the one nearer the
//! image's top-left), x along the board's `cols` direction, y along `rows`,
//! z = x cross y (away from the camera for a board facing it).

use crate::camera::{CameraModel, PlanePose};
use crate::detect::TrackError;
use opencv::core::{self, Mat, Point2f, Point3f, Size, TermCriteria, Vector};
use opencv::prelude::*;
use opencv::{calib3d, imgcodecs, imgproc};
use std::path::{Path, PathBuf};

/// Fewer usable views than this cannot constrain focal length and distortion.
pub const MIN_VIEWS: usize = 5;

#[derive(Clone, Debug)]
pub struct BoardSpec {
    /// Inner corners per row and per column.
    pub cols: usize,
    pub rows: usize,
    pub square_m: f64,
}

impl BoardSpec {
    /// "COLSxROWS", e.g. "9x6".
    pub fn parse_size(s: &str) -> Result<(usize, usize), TrackError> {
        let bad = |why: &str| TrackError::Input(format!("--board {s:?}: {why}"));
        let (c, r) = s.split_once(['x', 'X']).ok_or_else(|| bad("expected COLSxROWS inner corners, e.g. 9x6"))?;
        let (c, r): (usize, usize) = (c.trim().parse().map_err(|_| bad("bad column count"))?, r.trim().parse().map_err(|_| bad("bad row count"))?);
        if c < 3 || r < 3 {
            return Err(bad("need at least 3x3 inner corners"));
        }
        Ok((c, r))
    }

    pub fn object_points(&self) -> Vector<Point3f> {
        let mut v = Vector::new();
        for i in 0..self.rows {
            for j in 0..self.cols {
                v.push(Point3f::new((j as f64 * self.square_m) as f32, (i as f64 * self.square_m) as f32, 0.0));
            }
        }
        v
    }
}

/// What the calibration did, for the user.
#[derive(Clone, Debug)]
pub struct CalibrationSummary {
    pub images: usize,
    pub used: Vec<PathBuf>,
    pub rejected: Vec<PathBuf>,
    /// Views dropped as copies of an earlier one (the view, the earlier).
    pub duplicates: Vec<(PathBuf, PathBuf)>,
    pub rms_px: f64,
    pub plane_image: PathBuf,
}

fn read_grey(path: &Path) -> Result<Mat, TrackError> {
    crate::image_size::check(path)?;
    let m = imgcodecs::imread(&path.to_string_lossy(), imgcodecs::IMREAD_GRAYSCALE)?;
    if m.empty() {
        return Err(TrackError::Input(format!("{}: cannot read image", path.display())));
    }
    Ok(m)
}

/// Inner corners of the board in `grey`, refined to sub-pixel, in the
/// canonical order (first corner nearer the image's top-left).
pub fn find_corners(grey: &Mat, board: &BoardSpec) -> Result<Option<Vector<Point2f>>, TrackError> {
    let mut corners: Vector<Point2f> = Vector::new();
    let size = Size::new(board.cols as i32, board.rows as i32);
    let found = calib3d::find_chessboard_corners(
        grey,
        size,
        &mut corners,
        calib3d::CALIB_CB_ADAPTIVE_THRESH | calib3d::CALIB_CB_NORMALIZE_IMAGE | calib3d::CALIB_CB_FAST_CHECK,
    )?;
    if !found || corners.len() != board.cols * board.rows {
        return Ok(None);
    }
    let criteria = TermCriteria::new(core::TermCriteria_COUNT + core::TermCriteria_EPS, 50, 1e-4)?;
    imgproc::corner_sub_pix(grey, &mut corners, Size::new(7, 7), Size::new(-1, -1), criteria)?;
    let (first, last) = (corners.get(0)?, corners.get(corners.len() - 1)?);
    if first.x + first.y > last.x + last.y {
        let reversed: Vec<Point2f> = corners.iter().rev().collect();
        corners = Vector::from_iter(reversed);
    }
    Ok(Some(corners))
}

/// Whether OpenCV's sector-based detector (findChessboardCornersSB) sees
/// a board of this size: 0.15-0.3 s on a 1280x720 image, found or not.
/// The classic detector, whose corners (with cornerSubPix) calibrate, takes
/// milliseconds where the size is right but 40-48 s on an image showing a
/// larger board than the one asked for (OpenCV 4.6 grouping its extra
/// squares), so a wrong `--board` cost minutes per image before its error.
/// Once one image of a set confirms the size, the rest go to the classic
/// detector directly.
fn board_seen(grey: &Mat, board: &BoardSpec) -> Result<bool, TrackError> {
    let mut corners: Vector<Point2f> = Vector::new();
    Ok(calib3d::find_chessboard_corners_sb(grey, Size::new(board.cols as i32, board.rows as i32), &mut corners, calib3d::CALIB_CB_NORMALIZE_IMAGE)?)
}

/// Board corners found in a set of images of one size.
pub struct BoardViews {
    pub size: Size,
    /// Each image with its corners, or None where no board was found (or
    /// the view repeats an earlier one).
    pub views: Vec<(PathBuf, Option<Vector<Point2f>>)>,
    /// Views whose corners all lie within [`DUPLICATE_VIEW_PX`] of an
    /// earlier view's (a copied file, a camera that did not move): the
    /// view and the earlier one. Dropped: counted once, they would weigh a
    /// pose as many views (one view copied 12 times gave fx 3777 px for
    /// 2350, k2 -19).
    pub duplicates: Vec<(PathBuf, PathBuf)>,
}

/// Two views whose corners all lie within this of each other are one view \[px\].
pub const DUPLICATE_VIEW_PX: f32 = 0.5;

/// Whether two corner sets \[px\] are one view (every corner within
/// [`DUPLICATE_VIEW_PX`] of its twin): one camera's views, or two cameras'.
pub fn same_corners(a: impl ExactSizeIterator<Item = [f64; 2]>, b: impl ExactSizeIterator<Item = [f64; 2]>) -> bool {
    a.len() == b.len() && a.zip(b).all(|(p, q)| (p[0] - q[0]).hypot(p[1] - q[1]) < f64::from(DUPLICATE_VIEW_PX))
}

/// [`same_corners`] of OpenCV's corner sets.
pub fn same_view(a: &Vector<Point2f>, b: &Vector<Point2f>) -> bool {
    let px = |c: &Vector<Point2f>| c.iter().map(|p| [f64::from(p.x), f64::from(p.y)]).collect::<Vec<_>>();
    same_corners(px(a).into_iter(), px(b).into_iter())
}

impl BoardViews {
    /// Reads `images` (one size) and finds the board in each.
    pub fn find(images: &[PathBuf], board: &BoardSpec) -> Result<BoardViews, TrackError> {
        if images.is_empty() {
            return Err(TrackError::Input("no images to calibrate from".into()));
        }
        let mut size: Option<Size> = None;
        let mut views = vec![];
        // Until one image confirms the board's size, images wait (their
        // index; read again once confirmed, so a set of images that never
        // confirm it is not held in memory) for the corner search: see
        // [`board_seen`].
        let mut confirmed = false;
        let mut waiting: Vec<usize> = vec![];
        for path in images {
            let grey = read_grey(path)?;
            let s = grey.size()?;
            if let Some(z) = size.filter(|z| *z != s) {
                return Err(TrackError::Input(format!("{}: {}x{} px, but earlier images are {}x{}", path.display(), s.width, s.height, z.width, z.height)));
            }
            size = Some(s);
            if !confirmed && !board_seen(&grey, board)? {
                waiting.push(views.len());
                views.push((path.clone(), None));
                continue;
            }
            confirmed = true;
            views.push((path.clone(), find_corners(&grey, board)?));
            for i in waiting.drain(..) {
                views[i].1 = find_corners(&read_grey(&views[i].0)?, board)?;
            }
        }
        let mut duplicates = vec![];
        for i in 0..views.len() {
            let Some(corners) = views[i].1.as_ref() else { continue };
            if let Some(j) = (0..i).find(|&j| views[j].1.as_ref().is_some_and(|c| same_view(c, corners))) {
                duplicates.push((views[i].0.clone(), views[j].0.clone()));
                views[i].1 = None;
            }
        }
        Ok(BoardViews { size: size.expect("at least one image"), views, duplicates })
    }

    /// The images where the board was found.
    pub fn used(&self) -> impl Iterator<Item = (&PathBuf, &Vector<Point2f>)> {
        self.views.iter().filter_map(|(p, c)| c.as_ref().map(|c| (p, c)))
    }

    /// Intrinsics by OpenCV's calibrateCamera over the views with a board;
    /// refuses too few views. Returns the camera (no plane yet), K and the
    /// distortion as OpenCV matrices.
    pub fn intrinsics(&self, board: &BoardSpec, what: &str) -> Result<(CameraModel, Mat, Mat), TrackError> {
        let mut object_points: Vector<Vector<Point3f>> = Vector::new();
        let mut image_points: Vector<Vector<Point2f>> = Vector::new();
        for (_, c) in self.used() {
            image_points.push(c.clone());
            object_points.push(board.object_points());
        }
        let used = image_points.len();
        if used == 0 {
            return Err(TrackError::Input(format!(
                "{what}no image shows a {}x{} board (inner corners); check --board (inner corners, not squares) and the images",
                board.cols, board.rows
            )));
        }
        if used < MIN_VIEWS {
            let copies = match self.duplicates.len() {
                0 => String::new(),
                d => format!(" ({d} more were copies of another view, dropped)"),
            };
            return Err(TrackError::Input(format!(
                "{what}too few views: the board was found in {used} distinct views of {} images{copies}, need at least {MIN_VIEWS}",
                self.views.len()
            )));
        }
        let mut k = Mat::default();
        let mut dist = Mat::default();
        let mut rvecs: Vector<Mat> = Vector::new();
        let mut tvecs: Vector<Mat> = Vector::new();
        let criteria = TermCriteria::new(core::TermCriteria_COUNT + core::TermCriteria_EPS, 100, 1e-10)?;
        let rms = calib3d::calibrate_camera(&object_points, &image_points, self.size, &mut k, &mut dist, &mut rvecs, &mut tvecs, 0, criteria)?;
        let kf = |r: i32, c: i32| -> Result<f64, TrackError> { Ok(*k.at_2d::<f64>(r, c)?) };
        let d: Vec<f64> = (0..5).map(|i| dist.at::<f64>(i).copied()).collect::<Result<_, _>>()?;
        let camera = CameraModel {
            width_px: self.size.width as u32,
            height_px: self.size.height as u32,
            fx_px: kf(0, 0)?,
            fy_px: kf(1, 1)?,
            cx_px: kf(0, 2)?,
            cy_px: kf(1, 2)?,
            distortion: [d[0], d[1], d[2], d[3], d[4]],
            rms_reprojection_px: rms,
            views: used,
            plane: None,
            plane_offset_m: None,
        };
        Ok((camera, k, dist))
    }
}

/// Calibrates from `images`; the plane pose comes from `plane_image` (default:
/// the first usable image). Rejects too few views and an RMS above `max_rms_px`.
pub fn calibrate(images: &[PathBuf], board: &BoardSpec, plane_image: Option<&Path>, max_rms_px: f64) -> Result<(CameraModel, CalibrationSummary), TrackError> {
    let found = BoardViews::find(images, board)?;
    let (mut camera, k, dist) = found.intrinsics(board, "")?;
    let rms = camera.rms_reprojection_px;
    if rms.is_nan() || rms > max_rms_px {
        return Err(TrackError::Input(format!("calibration rejected: RMS reprojection error {rms:.3} px > {max_rms_px} px (blurred or mis-detected views?)")));
    }
    let used: Vec<PathBuf> = found.used().map(|(p, _)| p.clone()).collect();
    let copied = |p: &PathBuf| found.duplicates.iter().any(|(d, _)| d == p);
    let rejected: Vec<PathBuf> = found.views.iter().filter(|(p, c)| c.is_none() && !copied(p)).map(|(p, _)| p.clone()).collect();
    let plane_path = plane_image.map(Path::to_path_buf).unwrap_or_else(|| used[0].clone());
    camera.plane = Some(plane_pose(&camera, &k, &dist, &plane_path, board)?);
    let duplicates = found.duplicates.clone();
    Ok((camera, CalibrationSummary { images: images.len(), used, rejected, duplicates, rms_px: rms, plane_image: plane_path }))
}

/// Pose of the board in `path` (solvePnP with the calibrated intrinsics).
fn plane_pose(camera: &CameraModel, k: &Mat, dist: &Mat, path: &Path, board: &BoardSpec) -> Result<PlanePose, TrackError> {
    let grey = read_grey(path)?;
    let s = grey.size()?;
    if s.width as u32 != camera.width_px || s.height as u32 != camera.height_px {
        return Err(TrackError::Input(format!("{}: plane image size differs from the calibration images", path.display())));
    }
    let corners = find_corners(&grey, board)?
        .ok_or_else(|| TrackError::Input(format!("{}: no {}x{} board found in the plane image", path.display(), board.cols, board.rows)))?;
    board_pose(&corners, k, dist, board)?.ok_or_else(|| TrackError::Input(format!("{}: cannot estimate the plane pose", path.display())))
}

/// The board's pose in the camera from its corners (solvePnP with the
/// calibrated intrinsics); None where OpenCV finds none.
pub fn board_pose(corners: &Vector<Point2f>, k: &Mat, dist: &Mat, board: &BoardSpec) -> Result<Option<PlanePose>, TrackError> {
    let mut rvec = Mat::default();
    let mut tvec = Mat::default();
    if !calib3d::solve_pnp(&board.object_points(), corners, k, dist, &mut rvec, &mut tvec, false, calib3d::SOLVEPNP_ITERATIVE)? {
        return Ok(None);
    }
    let r: Vec<f64> = (0..3).map(|i| rvec.at::<f64>(i).copied()).collect::<Result<_, _>>()?;
    let t: Vec<f64> = (0..3).map(|i| tvec.at::<f64>(i).copied()).collect::<Result<_, _>>()?;
    Ok(Some(PlanePose { rotation_rad: [r[0], r[1], r[2]], translation_m: [t[0], t[1], t[2]] }))
}

/// Image files of a directory (png, jpg, jpeg, bmp, tif, tiff), sorted by name.
pub fn image_files(dir: &Path) -> Result<Vec<PathBuf>, TrackError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| TrackError::Input(format!("{}: cannot read directory: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().and_then(|e| e.to_str()).is_some_and(|e| ["png", "jpg", "jpeg", "bmp", "tif", "tiff"].contains(&e.to_ascii_lowercase().as_str()))
        })
        .collect();
    files.sort();
    Ok(files)
}
