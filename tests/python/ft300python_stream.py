"""ft300python (PyPI; the FT 300 stream client many labs use) against
`rodlab emulate ft300`: starts the stream its way (pymodbus, function 16
to register 410), reads frames with pyserial.

Usage: python ft300python_stream.py PORT FRAMES
Prints one line of JSON: the frames read, [Fx, Fy, Fz, Mx, My, Mz] each.
"""
import json
import sys

from ft300python.ft300_stream import FT300Stream

port, count = sys.argv[1], int(sys.argv[2])
stream = FT300Stream(port, timeout=1, zero_reset=False)
frames = [stream.get_force_torque_raw() for _ in range(count)]
print(json.dumps({"frames": frames}))
