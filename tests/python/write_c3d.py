"""Writes a C3D file with py-c3d (PyPI `c3d`), an independent writer, from
marker tracks given in the world frame in metres (JSON on stdin), as a
motion-capture system would export them:

  {"path": "...", "rate_hz": 100, "units": "mm" | "m", "up": "+z" | "+y" | "given",
   "format": "float" | "integer", "analog_channels": 0,
   "labels": ["Beam:Tip1", ...],
   "first_frame": 1,                      # optional: a trimmed export's first frame
   "trial_date": "2026-11-26", "trial_time": "10:21:45",  # optional: TRIAL:DATE and TRIAL:TIME
   "frames": [[[x, y, z] or null, ...], ...]}

Conventions: "+y" up is OptiTrack's (mocap = (x_w, z_w, -y_w)); "given":
the tracks are in the mocap's frame already (a lab's own axes); a missing
sample is written as the C3D standard's invalid point (residual -1,
coordinates zero); ANALOG:UNITS, SCALE and OFFSET are written per channel as the vendors do; "integer" stores scaled 16-bit integers (POINT:SCALE
0.1 of the units); analog channels, when asked for, carry a sine at 10
times the point rate (what a force plate's channels look like to a reader
that must skip them).
"""
import json
import sys

import c3d
import numpy as np

spec = json.load(sys.stdin)
scale_units = {"mm": 1000.0, "m": 1.0}[spec["units"]]
integer = spec["format"] == "integer"
n_analog = int(spec.get("analog_channels", 0))
per_frame = 10 if n_analog else 0
writer = c3d.Writer(
    point_rate=float(spec["rate_hz"]),
    analog_rate=float(spec["rate_hz"] * per_frame),
    point_scale=(0.1 if integer else -1.0),
    point_units=(spec["units"] + "  ")[:4],
)
frames = []
for k, frame in enumerate(spec["frames"]):
    points = np.zeros((len(frame), 5), dtype=np.float32)
    for i, p in enumerate(frame):
        if p is None:
            points[i, 3] = -1.0
            continue
        x, y, z = p
        if spec["up"] == "+y":
            x, y, z = x, z, -y
        points[i, :3] = np.array([x, y, z]) * scale_units
        points[i, 3] = 0.5  # residual: a valid reconstruction
    analog = np.array([[np.sin(0.1 * (k * per_frame + j) + c) for j in range(per_frame)] for c in range(n_analog)], dtype=np.float32)
    if n_analog == 0:
        analog = np.zeros((0, 0), dtype=np.float32)
    frames.append((points, analog))
writer.add_frames(frames)
writer.set_point_labels(spec["labels"])
if n_analog:
    writer.set_analog_labels(["Force.Fz%d" % c for c in range(n_analog)])
    # Vicon and Qualisys write ANALOG:UNITS; py-c3d does not unless asked,
    # and readers that follow the standard (c3dio) refuse a file without it.
    writer.analog_group.add_str("UNITS", "Channel units.", "V   " * n_analog, 4, n_analog)
    # Likewise one scale and one offset per channel (py-c3d's default is an
    # empty array, which c3dio refuses).
    writer.set_analog_scales([1.0] * n_analog)
    writer.set_analog_offsets([0] * n_analog)
if spec.get("first_frame", 1) != 1:
    writer.set_start_frame(int(spec["first_frame"]))
for key in ("trial_date", "trial_time"):
    if key in spec:
        writer.trial_group.add_str(key[6:].upper(), "The capture's " + key[6:] + ".", spec[key], len(spec[key]))
with open(spec["path"], "wb") as handle:
    writer.write(handle)
