"""OpenCV-Python's stereo calibration of a camera pair, the peer of
`rodlab calibrate --camera-images`: each camera calibrated on its own
(calibrateCamera), then the pair by stereoCalibrate from those intrinsics,
refining them with the pair's pose (CALIB_USE_INTRINSIC_GUESS: every
camera's intrinsics and pose fitted to every view at once, the objective
rodlab's bundle adjustment minimises). Its spread is a grouped jackknife's:
the pair refitted leaving out one fifth of the shared views at a time (each
refit costs seconds).

With --corners CSV (what `rodlab calibrate --corners-out` writes:
camera,view,corner,u_px,v_px; the cameras named as the folders), the pair is
fitted to those corners instead of its own, so that both tools fit the same
data; its own are still found, and how far they lie from the given ones is
reported. With --start CAMERAS_TOML (a camera set rodlab wrote) the pair is
fitted once more, starting from that file's intrinsics instead of its own
per-camera calibrations: where OpenCV's Levenberg-Marquardt ends from there
says whether the file's pose is a minimum of OpenCV's own objective.

Usage: stereo_calibrate.py LEFT_DIR RIGHT_DIR COLS ROWS SQUARE_M [--corners CSV] [--start CAMERAS_TOML]
Prints JSON: R, T (right <- left: x_right = R x_left + T, metres),
T_spread_m and angle_spread_deg (jackknife standard errors), rms_px, and
with --corners corner_rms_px / corner_max_px (its corners against the given),
with --start R_from_start, T_from_start, rms_from_start_px.
"""

import argparse
import csv
import json
import math
import pathlib
import tomllib

import cv2

# One thread: OpenCV and OpenBLAS threads spin against the test runner on two cores.
cv2.setNumThreads(1)
import numpy as np


def corners(path, size):
    grey = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
    flags = cv2.CALIB_CB_ADAPTIVE_THRESH | cv2.CALIB_CB_NORMALIZE_IMAGE | cv2.CALIB_CB_FAST_CHECK
    found, c = cv2.findChessboardCorners(grey, size, flags=flags)
    if not found:
        return None, grey.shape[::-1]
    criteria = (cv2.TERM_CRITERIA_COUNT + cv2.TERM_CRITERIA_EPS, 50, 1e-4)
    c = cv2.cornerSubPix(grey, c, (7, 7), (-1, -1), criteria)
    # The first corner nearer the image's top-left (the board's 180-degree ambiguity).
    if c[0, 0].sum() > c[-1, 0].sum():
        c = c[::-1].copy()
    return c, grey.shape[::-1]


def views(folder, size):
    out = {}
    image_size = None
    for p in sorted(pathlib.Path(folder).glob("*.png")):
        c, image_size = corners(p, size)
        if c is not None:
            out[p.stem] = c
    return out, image_size


def given_corners(path, camera):
    rows = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["camera"] == camera:
                rows.setdefault(row["view"], []).append((int(row["corner"]), float(row["u_px"]), float(row["v_px"])))
    return {v: np.array([[[u, w]] for _, u, w in sorted(c)], np.float32) for v, c in rows.items()}


def start_intrinsics(path):
    """Each camera's K and distortion from a rodlab camera set, in its order."""
    with open(path, "rb") as f:
        cameras = tomllib.load(f)["camera"]
    out = []
    for c in cameras:
        m = c["model"]
        k = np.array([[m["fx_px"], 0.0, m["cx_px"]], [0.0, m["fy_px"], m["cy_px"]], [0.0, 0.0, 1.0]])
        out.append((k, np.array([m["distortion"]], float)))
    return out


def angle_deg(r):
    return math.degrees(np.linalg.norm(cv2.Rodrigues(r)[0]))


def main():
    args = argparse.ArgumentParser()
    for name, kind in (("left", str), ("right", str), ("cols", int), ("rows", int), ("square", float)):
        args.add_argument(name, type=kind)
    args.add_argument("--corners")
    args.add_argument("--start")
    a = args.parse_args()
    size = (a.cols, a.rows)
    board = np.zeros((a.rows * a.cols, 3), np.float32)
    board[:, :2] = np.mgrid[0:a.cols, 0:a.rows].T.reshape(-1, 2) * a.square
    left, image_size = views(a.left, size)
    right, _ = views(a.right, size)
    extra = {}
    if a.corners:
        given = [given_corners(a.corners, pathlib.Path(d).name) for d in (a.left, a.right)]
        gaps = np.concatenate([(own[v] - g[v]).reshape(-1, 2) for own, g in zip((left, right), given) for v in g if v in own])
        extra = {"corner_rms_px": float(np.sqrt((gaps ** 2).sum(axis=1).mean())), "corner_max_px": float(np.abs(gaps).max()),
                 "corners_compared": int(len(gaps))}
        left, right = given
    criteria = (cv2.TERM_CRITERIA_COUNT + cv2.TERM_CRITERIA_EPS, 100, 1e-10)
    intrinsics = []
    for seen in (left, right):
        obj = [board] * len(seen)
        _, k, d, _, _ = cv2.calibrateCamera(obj, list(seen.values()), image_size, None, None, criteria=criteria)
        intrinsics.append((k, d))
    shared = sorted(set(left) & set(right))

    def pair(names, criteria, start=None):
        obj = [board] * len(names)
        (k1, d1), (k2, d2) = [(k.copy(), d.copy()) for k, d in (start or intrinsics)]
        rms, _, _, _, _, r, t, _, _ = cv2.stereoCalibrate(
            obj, [left[n] for n in names], [right[n] for n in names], k1, d1, k2, d2, image_size,
            criteria=criteria, flags=cv2.CALIB_USE_INTRINSIC_GUESS)
        return rms, r, t.ravel()

    rms, r, t = pair(shared, criteria)
    # The refits stop earlier: 50 iterations move T by ~0.005 mm from 100.
    groups = 5
    refit = (cv2.TERM_CRITERIA_COUNT + cv2.TERM_CRITERIA_EPS, 50, 1e-8)
    left_out = [pair([v for i, v in enumerate(shared) if i % groups != g], refit) for g in range(groups)]
    ts = np.array([x[2] for x in left_out])
    angles = np.array([cv2.Rodrigues(x[1])[0].ravel() for x in left_out])
    jack = lambda a: float(math.sqrt((groups - 1) / groups * ((a - a.mean(axis=0)) ** 2).sum()))
    if a.start:
        rms_start, r_start, t_start = pair(shared, criteria, start_intrinsics(a.start))
        extra.update({"R_from_start": r_start.tolist(), "T_from_start": t_start.tolist(), "rms_from_start_px": rms_start})
    print(json.dumps({
        "R": r.tolist(), "T": t.tolist(), "rms_px": rms, "shared_views": len(shared),
        "T_spread_m": jack(ts), "angle_spread_deg": math.degrees(jack(angles)),
        "angle_deg": angle_deg(r), **extra,
    }))


if __name__ == "__main__":
    main()
