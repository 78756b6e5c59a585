"""SDU's ur_rtde client (the one most labs use) against `rodlab emulate robot`.

Usage: python ur_rtde_receive.py HOST SECONDS FREQUENCY_HZ
FREQUENCY_HZ -1 lets ur_rtde choose from the controller's version (125 Hz
on CB3, 500 Hz on e-Series). Prints one line of JSON: connected, samples,
first/last controller timestamps, the median step between the distinct
controller timestamps seen (the streaming period), the last TCP pose.
"""
import json
import math
import statistics
import sys
import time

import rtde_receive

host, seconds, frequency = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
r = rtde_receive.RTDEReceiveInterface(host, frequency)
connected = r.isConnected()
first = r.getTimestamp()
samples = 0
stamps = []
end = time.monotonic() + seconds
pose = None
while time.monotonic() < end:
    pose = r.getActualTCPPose()
    t = r.getTimestamp()
    if not stamps or t != stamps[-1]:
        stamps.append(t)
    samples += 1
    # Polled faster than any controller streams, so every step is seen.
    time.sleep(0.0002)
last = r.getTimestamp()
r.disconnect()
steps = [b - a for a, b in zip(stamps, stamps[1:]) if b > a]
print(json.dumps({
    "connected": connected,
    "samples": samples,
    "first_timestamp_s": first,
    "last_timestamp_s": last,
    "median_step_s": statistics.median(steps) if steps else None,
    "pose": pose,
    "pose_finite": pose is not None and len(pose) == 6 and all(math.isfinite(v) for v in pose),
}))
