"""Writes marker trajectories as the trajectory tables motion-capture labs
export, each laid out as its vendor's software writes it (JSON on stdin):

  {"path": "...", "format": "qualisys" | "motive" | "vicon" | "plain",
   "rate_hz": 100, "labels": ["Beam:Tip1", ...],
   "frames_mm": [[[x, y, z] or null, ...], ...],       # the mocap's frame, mm
   "base_pose": [[x_mm, y_mm, z_mm, qw, qx, qy, qz], ...],  # plain only, optional
   "rotation": "quaternion" | "rotation_vector" | "euler_xyz_deg",
   "start_s": 0.0,            # optional: the first row's own time (a trimmed export)
   "file_version": false,     # optional, qualisys: current QTM's FILE_VERSION 2.0.0 line first
   "motive_version": "1.23"}  # optional, motive: the Format Version written

Frames are numbered as each vendor numbers them: from 1 at time 0
(Qualisys, Vicon), from 0 (Motive); a trimmed export (start_s > 0) keeps
the numbers and times of the frames it holds.

- Qualisys TSV (QTM's 3D export): the KEY<TAB>value header (NO_OF_FRAMES,
  FREQUENCY, MARKER_NAMES, TRAJECTORY_TYPES, ...), the "Frame Time <name> X"
  row, positions in mm, a gap written as zeros.
- OptiTrack Motive CSV (format 1.23): the metadata row (Export Frame Rate,
  Length Units = Meters), a blank row, the Type / Name / ID / quantity rows
  and "Frame,Time (Seconds),X,Y,Z..."; a rigid body on the clamp exported
  beside the markers (its Rotation and Position columns, and its "Rigid Body
  Marker" columns: where its model expects the markers, not the markers), a
  gap left empty.
- Vicon Nexus CSV: a Devices block (a force plate), then the Trajectories
  block (rate, "Subject:Marker" names, "Frame,Sub Frame,X,Y,Z", units row
  mm), a gap left empty.
- plain: "t_s" then "<label>_x", "<label>_y", "<label>_z" in mm, and the
  base's pose columns when given (base_x, base_y, base_z in mm and the
  rotation as asked).

Numbers are written with Python's repr: the shortest text that reads back
as the same double.
"""
import json
import math
import sys

spec = json.load(sys.stdin)
fmt = spec["format"]
rate = float(spec["rate_hz"])
labels = spec["labels"]
frames = spec["frames_mm"]
n = len(frames)
# The first row's frame from time 0 (a trimmed export starts later).
start = int(round(float(spec.get("start_s", 0.0)) * rate))


def num(v):
    return repr(float(v))


def quat_to_matrix(q):
    w, x, y, z = q
    return [
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ]


def rotation_vector(q):
    w, x, y, z = q
    if w < 0:
        w, x, y, z = -w, -x, -y, -z
    s = math.sqrt(x * x + y * y + z * z)
    if s < 1e-15:
        return [2 * x, 2 * y, 2 * z]
    angle = 2 * math.atan2(s, w)
    return [angle * x / s, angle * y / s, angle * z / s]


def euler_xyz_deg(q):
    # Extrinsic x, then y, then z: R = Rz(c) Ry(b) Rx(a).
    r = quat_to_matrix(q)
    b = math.asin(max(-1.0, min(1.0, -r[2][0])))
    a = math.atan2(r[2][1], r[2][2])
    c = math.atan2(r[1][0], r[0][0])
    return [math.degrees(a), math.degrees(b), math.degrees(c)]


out = []
if fmt == "qualisys":
    if spec.get("file_version"):
        out.append("FILE_VERSION\t2.0.0")
    out.append("NO_OF_FRAMES\t%d" % n)
    out.append("NO_OF_CAMERAS\t8")
    out.append("NO_OF_MARKERS\t%d" % len(labels))
    out.append("FREQUENCY\t%d" % int(rate))
    out.append("NO_OF_ANALOG\t0")
    out.append("ANALOG_FREQUENCY\t0")
    out.append("DESCRIPTION\t--")
    out.append("TIME_STAMP\t2026-11-26, 10:21:45.123\t3456.78901234")
    out.append("DATA_INCLUDED\t3D")
    out.append("MARKER_NAMES\t" + "\t".join(labels))
    out.append("TRAJECTORY_TYPES\t" + "\t".join("Measured" for _ in labels))
    out.append("Frame\tTime\t" + "\t".join("%s %s" % (l, a) for l in labels for a in "XYZ"))
    for k, frame in enumerate(frames):
        cells = [str(start + k + 1), "%.5f" % ((start + k) / rate)]
        for p in frame:
            cells.extend(["0.000"] * 3 if p is None else [num(v) for v in p])
        out.append("\t".join(cells))
elif fmt == "motive":
    out.append(
        "Format Version,%s,Take Name,trial,Take Notes,,Capture Frame Rate,%.6f,Export Frame Rate,%.6f,"
        "Capture Start Time,2026-11-26 10.21.45.123 AM,Capture Start Frame,0,Total Frames in Take,%d,"
        "Total Exported Frames,%d,Rotation Type,Quaternion,Length Units,Meters,Coordinate Space,Global"
        % (spec.get("motive_version", "1.23"), rate, rate, n + start, n)
    )
    out.append("")
    # A rigid body on the clamp: rotation (X, Y, Z, W), position, then
    # the markers it expects ("Rigid Body Marker"), then the markers.
    types = ["Rigid Body"] * 7 + ["Rigid Body Marker"] * 3 + ["Marker"] * (3 * len(labels))
    names = ["Clamp"] * 7 + ["Clamp:Marker1"] * 3 + [l for l in labels for _ in range(3)]
    ids = ["1"] * 7 + ["1"] * 3 + [str(100 + i) for i in range(len(labels)) for _ in range(3)]
    quantities = ["Rotation"] * 4 + ["Position"] * 3 + ["Position"] * 3 + ["Position"] * (3 * len(labels))
    axes = ["X", "Y", "Z", "W", "X", "Y", "Z", "X", "Y", "Z"] + ["X", "Y", "Z"] * len(labels)
    out.append(",Type," + ",".join(types))
    out.append(",Name," + ",".join(names))
    out.append(",ID," + ",".join(ids))
    out.append(",," + ",".join(quantities))
    out.append("Frame,Time (Seconds)," + ",".join(axes))
    for k, frame in enumerate(frames):
        cells = [str(start + k), "%.6f" % ((start + k) / rate)]
        # The rigid body where it was solved (not used by the reader).
        cells += ["0.0", "0.0", "0.0", "1.0", "0.5", "0.25", "0.125", "0.5", "0.26", "0.13"]
        for p in frame:
            cells.extend([""] * 3 if p is None else [num(v / 1000.0) for v in p])
        out.append(",".join(cells))
elif fmt == "vicon":
    out.append("Devices")
    out.append("1000")
    out.append(",,Force Plate 1 - Force,,")
    out.append("Frame,Sub Frame,Fx,Fy,Fz")
    out.append(",,N,N,N")
    for k in range(3):
        out.append("%d,0,0.1,0.2,-9.8" % (k + 1))
    out.append("")
    out.append("Trajectories")
    out.append("%d" % int(rate))
    out.append(",," + ",".join(l + ",," for l in labels).rstrip(","))
    out.append("Frame,Sub Frame," + ",".join("X,Y,Z" for _ in labels))
    out.append(",," + ",".join("mm,mm,mm" for _ in labels))
    for k, frame in enumerate(frames):
        cells = [str(start + k + 1), "0"]
        for p in frame:
            cells.extend([""] * 3 if p is None else [num(v) for v in p])
        out.append(",".join(cells))
    out.append("")
elif fmt == "plain":
    base = spec.get("base_pose")
    rot = spec.get("rotation", "quaternion")
    header = ["t_s"] + ["%s_%s" % (l, a) for l in labels for a in "xyz"]
    if base is not None:
        header += ["base_x", "base_y", "base_z"]
        header += {"quaternion": ["qw", "qx", "qy", "qz"], "rotation_vector": ["rx", "ry", "rz"], "euler_xyz_deg": ["roll_deg", "pitch_deg", "yaw_deg"]}[rot]
    out.append(",".join(header))
    for k, frame in enumerate(frames):
        cells = [num((start + k) / rate)]
        for p in frame:
            cells.extend([""] * 3 if p is None else [num(v) for v in p])
        if base is not None:
            b = base[k]
            cells += [num(v) for v in b[:3]]
            q = b[3:]
            cells += [num(v) for v in {"quaternion": lambda: q, "rotation_vector": lambda: rotation_vector(q), "euler_xyz_deg": lambda: euler_xyz_deg(q)}[rot]()]
        out.append(",".join(cells))
else:
    raise SystemExit("unknown format " + fmt)

with open(spec["path"], "w", newline="") as f:
    f.write("\n".join(out) + "\n")
