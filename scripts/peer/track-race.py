#!/usr/bin/env python3
"""`rodlab track` against an OpenCV-Python script (scripts/peer/track-peer.py)
on the demo's video, each timed as a whole process (start, decode, track,
write), best of ROUNDS runs, taken in turns. Makes the demo's video and
camera first (`rodlab synth`, `rodlab calibrate`) in target/track-race when
they are missing; VIDEO_FORMAT picks the video's format: raw (default:
uncompressed BGR in an .avi, the demo's), mkv (HuffYUV) or avi (Motion-JPEG).

Prints one line for scripts/bench-table.py (target/peer-track.txt), after
checking that both found the same markers (centroids within 0.5 px).
Run quiet, nothing else on the machine.

Usage: track-race.py RODLAB [ROUNDS]   (`make bench` passes the binary it built)
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import time
from pathlib import Path

import polars

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "target" / "track-race"


def run(args: list) -> float:
    t = time.perf_counter()
    subprocess.run([str(a) for a in args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def demo_video(rodlab: str, video_format: str) -> tuple:
    """The demo's 200 frames (`make demo`'s `synth video`) and a camera for them."""
    extension = "avi" if video_format == "raw" else video_format
    video_dir, board = WORK / f"video-{video_format}", WORK / "board"
    video, camera = video_dir / f"video.{extension}", WORK / "camera.toml"
    if not camera.exists():
        run([rodlab, "synth", "board", "--out", board])
        run([rodlab, "calibrate", "--images", board / "views", "--board", "9x6", "--square-m", "0.016",
             "--plane-image", board / "plane.png", "--out", camera])
    if not video.exists():
        run([rodlab, "synth", "video", "--out", video_dir, "--frames", "200", "--occlude", "2,100,5", "--format", video_format])
    return video, camera, video_dir / "markers.toml"


def same_markers(ours: Path, theirs: Path) -> int:
    """Frames whose markers the two found alike (every centroid within 0.5 px)."""
    mine = polars.read_parquet(ours).filter(polars.col("u_px").is_not_nan())
    peer = {}
    with open(theirs) as f:
        for row in csv.DictReader(f):
            peer.setdefault(int(row["frame"]), []).append((float(row["u_px"]), float(row["v_px"])))
    alike = 0
    for frame, group in mine.group_by("frame"):
        found = peer.get(frame[0], [])
        if len(found) == group.height and all(
            min((u - pu) ** 2 + (v - pv) ** 2 for pu, pv in found) <= 0.25 for u, v in zip(group["u_px"], group["v_px"])
        ):
            alike += 1
    return alike


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    rodlab, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5
    video_format = os.environ.get("VIDEO_FORMAT", "raw")
    WORK.mkdir(parents=True, exist_ok=True)
    video, camera, markers = demo_video(rodlab, video_format)
    ours_out, theirs_out = WORK / "ours.parquet", WORK / "theirs.csv"
    ours_cmd = [rodlab, "track", video, "--camera", camera, "--markers", markers, "--out", ours_out]
    theirs_cmd = [sys.executable, Path(__file__).with_name("track-peer.py"), video, markers, theirs_out]
    ours, theirs = [], []
    for _ in range(rounds):
        ours.append(run(ours_cmd))
        theirs.append(run(theirs_cmd))
    alike = same_markers(ours_out, theirs_out)
    size_mb = video.stat().st_size / 1e6
    print(
        f"track demo video {video.name} ({video_format}, {size_mb:.0f} MB, 200 frames): rodlab {min(ours):.3f} s, "
        f"OpenCV-Python {min(theirs):.3f} s, ratio {min(theirs) / min(ours):.2f}x; same markers in {alike} of 200 frames"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
