"""A heavy cord hanging as a loop between two clamps, in PyElastica (PyPI
`pyelastica`): the peer of rodlab's held statics (tests/e2e_cli.rs).

The cord of configs/rod/clamped-clamped-cable.toml: L 1.5 m, r 5 mm,
E 2e7 Pa, Poisson's ratio 0.45, rho 1200 kg/m^3, gravity 9.81 m/s^2 along
-z. Its base is clamped at the origin pointing down (-z), its tip clamped
at (GAP, 0, 0) pointing up. PyElastica has no static solver: the cord
starts as a U (two straight legs and a half circle, its rest shape
straight), clamped at both ends, and relaxes under gravity with a uniform
linear damper until it is still. Prints `arc_m,x_m,y_m,z_m` of every node.

Usage: elastica_loop.py GAP_M ELEMENTS DURATION_S
"""

import contextlib
import sys

import numpy as np
import elastica as ea

LENGTH_M, RADIUS_M, E_PA, POISSON, RHO_KG_M3, G_M_S2 = 1.5, 5e-3, 2e7, 0.45, 1.2e3, 9.81


class Loop(ea.BaseSystemCollection, ea.Constraints, ea.Forcing, ea.Damping):
    pass


def u_shape(gap_m: float, arc_m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Points and unit tangents of a U of length L between the clamps."""
    radius = gap_m / 2
    leg = (LENGTH_M - np.pi * radius) / 2
    pts, tan = [], []
    for s in arc_m:
        if s <= leg:
            pts.append([0.0, 0.0, -s])
            tan.append([0.0, 0.0, -1.0])
        elif s >= LENGTH_M - leg:
            pts.append([gap_m, 0.0, -(LENGTH_M - s)])
            tan.append([0.0, 0.0, 1.0])
        else:
            a = (s - leg) / radius  # 0 .. pi round the bottom
            pts.append([radius - radius * np.cos(a), 0.0, -leg - radius * np.sin(a)])
            tan.append([np.sin(a), 0.0, -np.cos(a)])
    return np.array(pts).T, np.array(tan).T


def main() -> None:
    gap_m, elements, duration_s = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    sim = Loop()
    # Straight at rest: built straight (rest lengths L / n, no rest
    # curvature), then laid out as the U.
    rod = ea.CosseratRod.straight_rod(elements, np.zeros(3), np.array([0.0, 0.0, -1.0]), np.array([0.0, 1.0, 0.0]),
                                      LENGTH_M, RADIUS_M, RHO_KG_M3, youngs_modulus=E_PA,
                                      shear_modulus=E_PA / (2 * (1 + POISSON)))
    ds = LENGTH_M / elements
    nodes, _ = u_shape(gap_m, np.arange(elements + 1) * ds)
    _, tangents = u_shape(gap_m, (np.arange(elements) + 0.5) * ds)
    rod.position_collection[...] = nodes
    for k in range(elements):
        d3 = tangents[:, k]
        d1 = np.array([0.0, 1.0, 0.0])
        rod.director_collection[:, :, k] = np.array([d1, np.cross(d3, d1), d3])
    sim.append(rod)
    sim.constrain(rod).using(ea.FixedConstraint, constrained_position_idx=(0, -1), constrained_director_idx=(0, -1))
    sim.add_forcing_to(rod).using(ea.GravityForces, acc_gravity=np.array([0.0, 0.0, -G_M_S2]))
    step_s = float(sys.argv[4]) * ds / np.sqrt(E_PA / RHO_KG_M3) if len(sys.argv) > 4 else 0.1 * ds / np.sqrt(E_PA / RHO_KG_M3)
    # 8 /s: the loop's slowest swing (about 4.4 rad/s) near critical, still in
    # 2.5 s (the shape within 7 um of 6 s at 3 /s, measured).
    sim.dampen(rod).using(ea.AnalyticalLinearDamper, uniform_damping_constant=8.0, time_step=step_s)
    sim.finalize()
    with contextlib.redirect_stdout(sys.stderr):  # integrate prints the final time
        ea.integrate(ea.PositionVerlet(), sim, duration_s, int(round(duration_s / step_s)), progress_bar=False)
    speed = np.abs(rod.velocity_collection).max()
    print(f"# {elements} elements, step {step_s:.3g} s, {duration_s} s: largest node speed {speed:.3g} m/s", file=sys.stderr)
    print("arc_m,x_m,y_m,z_m")
    for i in range(elements + 1):
        x, y, z = rod.position_collection[:, i]
        print(f"{i * ds:.9f},{x:.9f},{y:.9f},{z:.9f}")


if __name__ == "__main__":
    main()
