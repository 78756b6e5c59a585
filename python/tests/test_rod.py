"""Rod and its statics from Python: equal to the command line's to 1e-12,
right against beam theory and the balance of forces, and bad input raising
the library's kinds with its messages."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

import rodlab
from conftest import repo

CANTILEVER = repo("configs/rod/pls-paper-cantilever.toml")
CABLE_ARM = repo("configs/rod/pls-cable-arm.toml")
BEAM = repo("configs/rod/rectangular-beam.toml")


def read_shape_csv(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    col = lambda *names: np.array([[float(r[n]) for n in names] for r in rows])
    return col("arc_m")[:, 0], col("px_m", "py_m", "pz_m"), col("rot_w", "rot_x", "rot_y", "rot_z"), col(
        "kappa_x", "kappa_y", "kappa_z", "eps_x", "eps_y", "eps_z")


def quat_to_matrix(q):
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def test_rod_properties_from_file_and_from_toml():
    rod = rodlab.Rod.from_file(CANTILEVER)
    assert rod.length_m == pytest.approx(0.2)
    assert rod.sections == 3 and rod.cables == 0
    assert rod.section_lengths_m.sum() == pytest.approx(0.2)
    assert rod.material["e_pa"] == 1.1e5
    same = rodlab.Rod.from_toml(CANTILEVER.read_text())
    assert np.array_equal(same.solve().position_m, rod.solve().position_m)
    arm = rodlab.Rod.from_file(CABLE_ARM, sections=4, modes="euler-bernoulli")
    assert arm.sections == 4 and arm.cables == 4
    beam = rodlab.Rod.from_file(BEAM)
    assert beam.markers_arc_m.shape == (len(beam.markers_arc_m),) and beam.markers_offset_body_m.shape[1] == 3


@pytest.mark.parametrize(
    "rod_file, args, kwargs",
    [
        (CANTILEVER, [], {}),
        (CANTILEVER, ["--tip-force", "-0.01,0.002,0", "--tip-moment", "0,0.0005,0"], {"tip_force": [-0.01, 0.002, 0], "tip_moment": [0, 0.0005, 0]}),
        (CABLE_ARM, ["--tension", "0,0,0,1.96"], {"tensions": [0, 0, 0, 1.96]}),
        (CABLE_ARM, ["--tension", "0.5,0,0.2,0", "--no-gravity"], {"tensions": np.array([0.5, 0, 0.2, 0]), "gravity": False}),
        (CANTILEVER, ["--flange-pose", "0.1,0,0.3,0,1.5707963,0"], {"flange_pose": [0.1, 0, 0.3, 0, 1.5707963, 0]}),
    ],
)
def test_solve_equals_the_command_line(run, tmp_path, rod_file, args, kwargs):
    out = tmp_path / "shape.csv"
    run("solve", "--rod", rod_file, *args, "--out", out)
    arc, pos, quat, strain = read_shape_csv(out)
    shape = rodlab.Rod.from_file(rod_file).solve(**kwargs)
    assert shape.arc_m.shape == arc.shape and shape.position_m.shape == (len(arc), 3)
    assert np.allclose(shape.arc_m, arc, rtol=0, atol=1e-12)
    assert np.allclose(shape.position_m, pos, rtol=0, atol=1e-12)
    assert np.allclose(shape.strain, strain, rtol=0, atol=1e-12)
    rot = np.array([quat_to_matrix(q) for q in quat])
    assert np.allclose(shape.rotation, rot, rtol=0, atol=1e-12)
    assert np.allclose(shape.rotation @ np.swapaxes(shape.rotation, 1, 2), np.eye(3), atol=1e-12)


def test_a_tip_force_against_beam_theory():
    # The 30 mm square silicone beam, no gravity, Euler-Bernoulli modes, a
    # small tip force: w = P L^3 / (3 E I) (uniform beam).
    rod = rodlab.Rod.from_file(BEAM, modes="euler-bernoulli")
    p = 1e-3
    shape = rod.solve(tip_force=[0, 0, -p], gravity=False)
    e, length, side = rod.material["e_pa"], rod.length_m, 0.03
    w = p * length**3 / (3 * e * side**4 / 12)
    assert shape.tip_m[2] == pytest.approx(-w, rel=1e-3)


def test_the_base_reaction_balances_the_weight_and_the_tip_force():
    rod = rodlab.Rod.from_file(CANTILEVER)
    force = np.array([0.0, 0.002, -0.001])
    shape = rod.solve(tip_force=force)
    weight = shape.mass_kg * rod.gravity_m_s2
    assert np.allclose(shape.base_force_n, -(weight + force), rtol=0, atol=1e-12)
    free = rod.solve(tip_force=force, gravity=False)
    lever = free.tip_m - free.position_m[0]
    assert np.allclose(free.base_moment_nm, -np.cross(lever, force), rtol=0, atol=1e-12)


def test_solve_many_equals_solve_one_by_one_and_broadcasts():
    rod = rodlab.Rod.from_file(CABLE_ARM)
    rng = np.random.default_rng(7)
    tensions = rng.uniform(0, 1.5, (40, 4))
    batch = rod.solve_many(tensions=tensions, tip_force=[0, 0, -0.01])
    assert len(batch) == 40 and batch.position_m.shape == (40, len(batch.arc_m), 3)
    assert batch.rotation.shape == (40, len(batch.arc_m), 3, 3) and batch.strain.shape[2] == 6
    for i in (0, 17, 39):
        one = rod.solve(tensions=tensions[i], tip_force=[0, 0, -0.01])
        assert np.array_equal(batch.position_m[i], one.position_m)
        assert np.array_equal(batch.tip_m[i], one.tip_m)
        assert np.array_equal(batch.base_force_n[i], one.base_force_n)
    assert np.array_equal(rod.solve_many(tensions=tensions, threads=1).position_m, rod.solve_many(tensions=tensions).position_m)


def test_solve_many_names_the_load_that_failed_and_refuses_disagreeing_batches():
    rod = rodlab.Rod.from_file(CABLE_ARM)
    tensions = np.zeros((5, 4))
    tensions[3, 0] = -1.0
    with pytest.raises(rodlab.InputError, match=r"load 3: .*non-negative"):
        rod.solve_many(tensions=tensions)
    with pytest.raises(ValueError, match="disagree"):
        rod.solve_many(tensions=np.zeros((5, 4)), tip_force=np.zeros((4, 3)))
    with pytest.raises(ValueError, match=r"tensions: expected an array of shape \(k, 4\)"):
        rod.solve_many(tensions=np.zeros((5, 3)))
    with pytest.raises(ValueError, match="at least one"):
        rod.solve_many()


def test_bad_input_raises_the_kinds_and_messages_of_the_command_line(run, tmp_path):
    with pytest.raises(rodlab.InputError, match="nope.toml") as e:
        rodlab.Rod.from_file(tmp_path / "nope.toml")
    assert isinstance(e.value, ValueError) and isinstance(e.value, rodlab.Error)
    # A misspelt field: the same one line as the command line's.
    bad = tmp_path / "bad.toml"
    bad.write_text(CANTILEVER.read_text().replace("length_m", "lenght_m", 1))
    with pytest.raises(rodlab.InputError) as e:
        rodlab.Rod.from_file(bad)
    cli = run("solve", "--rod", bad, check=False)
    assert cli.returncode == 2
    assert str(e.value) in cli.stderr and "lenght_m" in str(e.value)
    rod = rodlab.Rod.from_file(CANTILEVER)
    with pytest.raises(rodlab.InputError, match="finite"):
        rod.solve(tip_force=[math.nan, 0, 0])
    with pytest.raises(ValueError, match="tip_force: expected three numbers"):
        rod.solve(tip_force=[1, 2])
    with pytest.raises(ValueError, match="tip_force"):
        rod.solve(tip_force="down")
    with pytest.raises(rodlab.InputError, match="3 cables|cables"):
        rodlab.Rod.from_file(CABLE_ARM).solve(tensions=[1, 2, 3])
    with pytest.raises(rodlab.InputError, match="positive"):
        rod.with_material(e_pa=-1.0)
    with pytest.raises(rodlab.ComputationError):
        # Far beyond what the model represents.
        rod.with_material(e_pa=1.0).solve(tip_force=[0, 0, -100.0])


def test_with_material_scales_the_deflection():
    rod = rodlab.Rod.from_file(BEAM, modes="euler-bernoulli")
    soft = rod.solve(tip_force=[0, 0, -1e-3], gravity=False).tip_m[2]
    stiff = rod.with_material(e_pa=2 * rod.material["e_pa"]).solve(tip_force=[0, 0, -1e-3], gravity=False).tip_m[2]
    assert stiff == pytest.approx(soft / 2, rel=1e-3)


CORD = repo("configs/rod/clamped-clamped-cable.toml")
UP = [0, -math.pi / 2, 0]


def test_a_rod_held_at_both_ends_equals_the_command_line_and_carries_its_reaction(run, tmp_path):
    out = tmp_path / "loop.csv"
    cli = run("solve", "--rod", CORD, "--tip-position", "0.1,0,0", "--tip-rotation", ",".join(repr(v) for v in UP), "--out", out)
    arc, pos, _, _ = read_shape_csv(out)
    cord = rodlab.Rod.from_file(CORD)
    loop = cord.solve(tip_position=[0.1, 0, 0], tip_rotation=UP)
    assert np.allclose(loop.position_m, pos, rtol=0, atol=1e-12)
    # Each clamp carries half the cord's weight; the loop is stable.
    weight_n = cord.material["rho_kg_m3"] * math.pi * 0.005**2 * cord.length_m * 9.81
    assert loop.tip_force_n[2] == pytest.approx(0.5 * weight_n, rel=1e-3)
    assert loop.base_force_n[2] == pytest.approx(0.5 * weight_n, rel=1e-3)
    assert loop.stability_eigenvalue > 0 and ": stable" in cli.stdout
    assert loop.tip_moment_nm.shape == (3,)
    free = rodlab.Rod.from_file(CANTILEVER).solve()
    assert free.tip_force_n is None and free.stability_eigenvalue is None
    # What the rod file's [tip] condition asks for, named in the call's words.
    with pytest.raises(rodlab.InputError, match="tip_position"):
        cord.solve()
    with pytest.raises(rodlab.InputError, match="tip_rotation"):
        cord.solve(tip_position=[0.1, 0, 0])
    with pytest.raises(rodlab.InputError, match="free"):
        rodlab.Rod.from_file(CANTILEVER).solve(tip_position=[0.1, 0, 0])
    with pytest.raises(rodlab.InputError, match="rod's length"):
        cord.solve(tip_position=[2.0, 0, 0], tip_rotation=UP)


def test_rubbing_cables_give_two_shapes_by_direction_as_the_command_line(run, tmp_path):
    """The tapered arm's cables with friction_mu 0.15 (the capstan law):
    pulled in and let out at the same tension, two shapes, each equal to
    `rodlab solve --direction` to 1e-12; a direction that is neither is a
    ValueError naming it."""
    text = open(repo("configs/rod/tapered-channels-arm.toml")).read().replace("path_radius_m = 4.0e-3", "path_radius_m = 4.0e-3\nfriction_mu = 0.15")
    rod_file = tmp_path / "rubbing.toml"
    rod_file.write_text(text)
    arm = rodlab.Rod.from_file(rod_file)
    shapes = {}
    for direction in ["load", "unload"]:
        out = tmp_path / f"{direction}.csv"
        run("solve", "--rod", rod_file, "--tension", "0.3,0,0", "--direction", direction, "--out", out)
        _, pos, _, _ = read_shape_csv(out)
        shapes[direction] = arm.solve(tensions=[0.3, 0, 0], direction=direction)
        assert np.allclose(shapes[direction].position_m, pos, rtol=0, atol=1e-12)
    # Let out, the cable keeps more of its tension along the arm: the tip higher.
    assert shapes["unload"].tip_m[2] > shapes["load"].tip_m[2] + 1e-3
    with pytest.raises(ValueError, match="direction: 'sideways'"):
        arm.solve(tensions=[0.3, 0, 0], direction="sideways")
    # solve_many takes the same direction for its batch (#80): each row the single solve's.
    many = arm.solve_many(tensions=[[0.3, 0, 0], [0.2, 0, 0]], direction="unload")
    assert np.allclose(many.tip_m[0], shapes["unload"].tip_m, rtol=0, atol=1e-12)
    assert not np.allclose(arm.solve_many(tensions=[[0.3, 0, 0]]).tip_m[0], many.tip_m[0], rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="direction: 'sideways'"):
        arm.solve_many(tensions=[[0.3, 0, 0]], direction="sideways")


def test_a_rod_file_that_is_a_device_or_a_fifo_is_refused_at_once(tmp_path):
    """Before: Rod.from_file('/dev/zero') grew the interpreter to 24 GB; a FIFO hung."""
    import os

    fifo = tmp_path / "rod.toml"
    os.mkfifo(fifo)
    for path in ["/dev/zero", str(fifo)]:
        with pytest.raises(rodlab.InputError, match="not a regular file"):
            rodlab.Rod.from_file(path)


def test_a_rod_from_a_dict_is_the_rod_of_its_file(tmp_path):
    """Rod.from_dict takes a rod file's table as tomllib reads it (#80): the
    same rod as from_file, to the last shape coordinate; a wrong field is an
    InputError naming it in the file's words."""
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        pytest.skip("tomllib")
    path = repo("configs/rod/tapered-channels-arm.toml")
    with open(path, "rb") as f:
        table = tomllib.load(f)
    from_dict, from_file = rodlab.Rod.from_dict(table), rodlab.Rod.from_file(path)
    assert from_dict.length_m == from_file.length_m and from_dict.cables == 3
    assert np.array_equal(from_dict.solve(tensions=[0.2, 0, 0]).position_m, from_file.solve(tensions=[0.2, 0, 0]).position_m)
    assert rodlab.Rod.from_dict(table, sections=4).sections == 4
    bad = dict(table, material=dict(table["material"], e_pa=-1.0))
    with pytest.raises(rodlab.InputError, match=r"<dict>.*material.e_pa"):
        rodlab.Rod.from_dict(bad)
    with pytest.raises(rodlab.InputError, match="expected a table"):
        rodlab.Rod.from_dict(dict(table, material=0.05))


def test_a_followed_branch_equals_the_command_lines(run, tmp_path):
    """solve(follow=, to=, branch_out=): the loop's clamp twisted until it
    snaps, as `rodlab solve --follow tip_twist_rad --to 9 --branch-out`:
    the same CSV, and the branch as arrays with its critical points."""
    cord = repo("configs/rod/clamped-clamped-cable.toml")
    hold = ["--tip-position", "0.1,0,0", "--tip-rotation", "0,-1.5707963,0"]
    run("solve", "--rod", cord, *hold, "--follow", "tip_twist_rad", "--to", "9", "--branch-out", tmp_path / "cli.csv")
    shape = rodlab.Rod.from_file(cord).solve(tip_position=[0.1, 0, 0], tip_rotation=[0, -1.5707963, 0], follow="tip_twist_rad", to=9.0,
                                              branch_out=tmp_path / "py.csv")
    assert (tmp_path / "py.csv").read_text() == (tmp_path / "cli.csv").read_text()
    branch = shape.branch
    assert branch["path"] == "tip_twist_rad" and len(branch["value"]) == len(branch["lowest_eigenvalue"]) > 2
    assert branch["critical"] and branch["critical"][0][0].startswith("a limit point"), branch["critical"]
    with pytest.raises(ValueError, match="follow"):
        rodlab.Rod.from_file(cord).solve(tip_position=[0.1, 0, 0], tip_rotation=[0, -1.5707963, 0], follow="tip_twist_rad")
