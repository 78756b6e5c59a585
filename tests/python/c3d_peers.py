"""Random C3D files written by py-c3d (PyPI `c3d`) and read back by the
reference readers, py-c3d and ezc3d (PyPI `ezc3d`, when it is installed):
what every sample is to them, for tests/e2e_c3d.rs to compare rodlab's
reader with.

  python c3d_peers.py OUT_DIR COUNT SEED

Each file: the floating-point format (a negative POINT:SCALE of random
magnitude, as Qualisys writes -2.4e-6) or the integer format (a positive
one), 1-6 points over 1-40 frames in mm or m, every valid sample with a
random residual byte 0-255 and a random 7-bit camera mask (a float file's
fourth word then reads like Qualisys' 32658: cameras 127, residual 146),
and about one sample in eight invalid (the C3D standard's negative word).
OUT_DIR/peers.json lists, per file, its units and per peer every sample as
[x, y, z] in the file's units, or null where the peer reads it invalid.
"""
import json
import os
import sys
import warnings

import c3d
import numpy as np

try:
    import ezc3d
except ImportError:  # the second peer is optional: where it does not install
    ezc3d = None

warnings.simplefilter("ignore")  # py-c3d warns of files without analog data
out_dir, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(seed)
os.makedirs(out_dir, exist_ok=True)
listing = []
for i in range(count):
    is_float = bool(rng.integers(2))
    magnitude = float(10.0 ** rng.uniform(-6, 0)) if is_float else float(10.0 ** rng.uniform(-2, 0))
    scale = -magnitude if is_float else magnitude
    units = ["mm", "m"][rng.integers(2)]
    n_points, n_frames = int(rng.integers(1, 7)), int(rng.integers(1, 41))
    writer = c3d.Writer(point_rate=float(rng.choice([50, 100, 120, 200])), point_scale=scale, point_units=(units + "  ")[:4])
    frames = []
    for _ in range(n_frames):
        points = np.zeros((n_points, 5), np.float32)
        if is_float:
            points[:, :3] = rng.uniform(-2000.0, 2000.0, (n_points, 3))
        else:
            # Whole multiples of the scale: what a 16-bit integer holds.
            points[:, :3] = rng.integers(-32000, 32001, (n_points, 3)) * np.float32(magnitude)
        points[:, 3] = rng.integers(0, 256, n_points) * magnitude
        points[:, 4] = rng.integers(0, 128, n_points)
        points[rng.uniform(size=n_points) < 0.125, 3] = -1.0
        frames.append((points, np.zeros((0, 0), np.float32)))
    writer.add_frames(frames)
    writer.set_point_labels(["P%d" % k for k in range(n_points)])
    path = os.path.join(out_dir, "f%04d.c3d" % i)
    with open(path, "wb") as handle:
        writer.write(handle)

    peers = {}
    with open(path, "rb") as handle:
        grid = []
        for _, points, _ in c3d.Reader(handle).read_frames():
            grid.append([None if p[3] < 0 else [float(v) for v in p[:3]] for p in points])
        peers["py-c3d"] = grid
    if ezc3d is not None:
        data = ezc3d.c3d(path)["data"]["points"]  # 4 x points x frames, NaN where invalid
        peers["ezc3d"] = [
            [None if np.isnan(data[:3, p, f]).any() else [float(v) for v in data[:3, p, f]] for p in range(data.shape[1])]
            for f in range(data.shape[2])
        ]
    listing.append({"path": path, "units": units, "float": is_float, "peers": peers})
with open(os.path.join(out_dir, "peers.json"), "w") as handle:
    json.dump(listing, handle)
