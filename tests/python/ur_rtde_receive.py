"""SDU's ur_rtde client (the one most labs use) against `rodlab emulate robot`.

Usage: python ur_rtde_receive.py HOST SECONDS FREQUENCY_HZ
Prints one line of JSON: connected, samples, first/last controller
timestamps, the last TCP pose.
"""
import json
import math
import sys
import time

import rtde_receive

host, seconds, frequency = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
r = rtde_receive.RTDEReceiveInterface(host, frequency)
connected = r.isConnected()
first = r.getTimestamp()
samples = 0
end = time.monotonic() + seconds
pose = None
while time.monotonic() < end:
    pose = r.getActualTCPPose()
    samples += 1
    time.sleep(1.0 / frequency)
last = r.getTimestamp()
r.disconnect()
print(json.dumps({
    "connected": connected,
    "samples": samples,
    "first_timestamp_s": first,
    "last_timestamp_s": last,
    "pose": pose,
    "pose_finite": pose is not None and len(pose) == 6 and all(math.isfinite(v) for v in pose),
}))
