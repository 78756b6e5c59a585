#!/usr/bin/env python3
"""The peer of `rodlab track`: what a lab writes in OpenCV-Python to follow
coloured markers through a video, frame by frame and each frame in full:
cvtColor to HSV, inRange per hue range, a morphological opening, external
contours, the area and circularity filters of markers.toml, and each
blob's centroid from its moments. No tracking: every frame is searched in
full, the markers ordered along the chain from the base by nearest
neighbours. Writes one CSV row per marker and frame.

`make bench` times this script and `rodlab track` on the same video, each as
a whole process, best of several runs (scripts/track-race.sh); the tests
compare the centroids it finds with rodlab's (python/tests/test_track.py).

Usage: track-peer.py VIDEO MARKERS_TOML OUT_CSV
"""

from __future__ import annotations

import csv
import math
import sys
import tomllib

import cv2
import numpy as np


def masks_for(params: dict) -> list:
    """inRange bounds of each hue range, in OpenCV's 8-bit HSV (H in 2 deg)."""
    s_min = round(params.get("saturation_min", 0.4) * 255)
    v_min = round(params.get("value_min", 0.25) * 255)
    ranges = params.get("hue_ranges_deg", [[0.0, 20.0], [340.0, 360.0]])
    return [((math.floor(a / 2), s_min, v_min), (min(math.ceil(b / 2), 180), 255, 255)) for a, b in ranges]


def blobs(frame: np.ndarray, bounds: list, kernel, params: dict) -> list:
    hsv = cv2.cvtColor(frame, cv2.COLOR_BGR2HSV)
    mask = None
    for low, high in bounds:
        part = cv2.inRange(hsv, low, high)
        mask = part if mask is None else cv2.bitwise_or(mask, part)
    if kernel is not None:
        mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, kernel)
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    found = []
    for contour in contours:
        m = cv2.moments(contour)
        perimeter = cv2.arcLength(contour, True)
        area = m["m00"] + perimeter / 2 + 1
        if m["m00"] <= 0 or not params.get("min_area_px", 12.0) <= area <= params.get("max_area_px", 20000.0):
            continue
        if min(4 * math.pi * m["m00"] / perimeter**2, 1.0) < params.get("min_circularity", 0.4):
            continue
        found.append((m["m10"] / m["m00"], m["m01"] / m["m00"], area))
    return found


def chain(found: list, base: tuple) -> list:
    """Markers in order from the one nearest the base, each to its nearest unused one."""
    left, out, at = list(found), [], base
    while left:
        i = min(range(len(left)), key=lambda k: (left[k][0] - at[0]) ** 2 + (left[k][1] - at[1]) ** 2)
        at = left.pop(i)
        out.append(at)
    return out


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    video, markers_toml, out_csv = sys.argv[1:]
    with open(markers_toml, "rb") as f:
        params = tomllib.load(f)
    capture = cv2.VideoCapture(video)
    if not capture.isOpened():
        print(f"{video}: cannot open as a video", file=sys.stderr)
        return 2
    height = capture.get(cv2.CAP_PROP_FRAME_HEIGHT)
    base = tuple(params.get("base_px", [0.0, height / 2]))
    k = int(params.get("open_kernel_px", 3))
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k)) if k > 1 else None
    bounds = masks_for(params)
    with open(out_csv, "w", newline="") as f:
        rows = csv.writer(f)
        rows.writerow(["frame", "marker", "u_px", "v_px", "area_px"])
        frame_index = 0
        while True:
            ok, frame = capture.read()
            if not ok:
                break
            for i, (u, v, area) in enumerate(chain(blobs(frame, bounds, kernel, params), base)):
                rows.writerow([frame_index, i, f"{u:.4f}", f"{v:.4f}", f"{area:.1f}"])
            frame_index += 1
    print(f"{frame_index} frames", file=sys.stderr)
    return 0 if frame_index > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
