"""NetFT (PyPI), a Python client of ATI's RDT, against `rodlab emulate netft`.

Usage: python netft_read.py HOST N
Asks for N single measurements (RDT command 2 with a sample count of 1)
and prints one line of JSON with the raw counts it received (NetFT does
not scale them).
"""
import json
import sys

import NetFT

host, n = sys.argv[1], int(sys.argv[2])
sensor = NetFT.Sensor(host)
sensor.sock.settimeout(2.0)
readings = [list(sensor.getMeasurement()) for _ in range(n)]
print(json.dumps({"readings": readings}))
