"""Identification from sessions and from motion, through Python, on the
shipped motion-capture release day (datasets/mocap-release, C3D files
written by py-c3d): equal to the command line's."""

from __future__ import annotations

import tomllib

import pytest

import rodlab
from conftest import repo

BEAM = repo("configs/rod/rectangular-beam.toml")
DATA = repo("datasets/mocap-release")


def read(path):
    with open(path, "rb") as f:
        return tomllib.load(f)


@pytest.fixture(scope="module")
def sessions(run, tmp_path_factory):
    out = tmp_path_factory.mktemp("mocap") / "sessions"
    run("import", "c3d", *sorted(DATA.glob("*.c3d")), "--rod", BEAM, "--map", DATA / "map.toml", "--out", out)
    return sorted(out.iterdir())


def test_identify_from_sessions_and_from_a_release_equal_the_command_line(run, start, sessions, tmp_path):
    rod = rodlab.Rod.from_file(BEAM)
    fit = rodlab.identify(rod, sessions=[rodlab.Session(s) for s in sessions], loads=DATA / "masses.toml", out=tmp_path / "fit", progress=False)
    run("identify", "--rod", BEAM, "--sessions", *sessions, "--loads", DATA / "masses.toml", "--out", tmp_path / "cli-fit")
    cli = read(tmp_path / "cli-fit" / "identified.toml")["parameters"]
    for name in ("e_pa", "rho_kg_m3"):
        assert fit.values[name] == pytest.approx(cli[name]["value"], rel=1e-12)
    # The beam that made the data: E = 2.35e5 Pa, rho = 1120 kg/m^3.
    assert fit.values["e_pa"] == pytest.approx(2.35e5, rel=0.01)
    release = [s for s in sessions if s.name == "trial-100g"]
    # The command line's dynamic fit runs beside Python's (10 s each).
    cli_done = start("identify", "--dynamic", "--rod", BEAM, "--sessions", *release, "--scene", DATA / "release.toml", "--params",
                     fit.identified_toml, "--loads", DATA / "masses.toml", "--out", tmp_path / "cli-dyn")
    got = rodlab.identify_dynamic(rod, sessions=release, scene=DATA / "release.toml", params=fit, loads=DATA / "masses.toml",
                                  out=tmp_path / "dyn", progress=False)
    cli_done()
    cli_dyn = read(tmp_path / "cli-dyn" / "identified.toml")["dynamic"]
    assert got["dynamic"]["damping_ratio"] == pytest.approx(cli_dyn["damping_ratio"], rel=1e-12)
    # The beam's damping ratio: 0.06.
    assert got["dynamic"]["damping_ratio"] == pytest.approx(0.06, rel=0.05)
    assert got["identified_toml"] == tmp_path / "dyn" / "identified.toml"
    # The fit's chi-square, as the command line's; a reversed window refused.
    assert got["dynamic"]["noise_test"]["dof"] == cli_dyn["noise_test"]["dof"]
    with pytest.raises(rodlab.InputError, match="window"):
        rodlab.identify_dynamic(rod, sessions=release, scene=DATA / "release.toml", params=fit, loads=DATA / "masses.toml",
                                window_s=(1.0, 0.5), out=tmp_path / "dyn-window", progress=False)
    with pytest.raises(rodlab.InputError, match="no-scene.toml"):
        rodlab.identify_dynamic(rod, sessions=release, scene=tmp_path / "no-scene.toml", progress=False)


def test_import_c3d_from_python_equals_the_command_line(sessions, tmp_path):
    """import_c3d makes the sessions the command line made, table for table;
    Session.info, check and export answer as `rodlab session ...`."""
    files = sorted(DATA.glob("*.c3d"))
    made = rodlab.import_c3d(files, rod=BEAM, map=DATA / "map.toml", out=tmp_path / "py", progress=False)
    assert [m["session"].name for m in made] == [s.name for s in sessions]
    for m, cli in zip(made, sessions):
        py, theirs = rodlab.Session(m["session"]), rodlab.Session(cli)
        assert py.streams() == theirs.streams() and m["frames"] > 0 and m["rate_hz"] > 0
        assert py.markers().equals(theirs.markers())
        for stream in py.streams():
            assert py.stream(stream).equals(theirs.stream(stream)), stream
    one = rodlab.import_c3d(files[0], rod=BEAM, map=DATA / "map.toml", out=tmp_path / "one", progress=False)
    assert len(one) == 1 and one[0]["session"] == tmp_path / "one"
    session = rodlab.Session(made[0]["session"])
    info = session.info()
    assert info["streams"] and all(s["rows"] > 0 and s["rate_hz"] > 0 for s in info["streams"].values()), info
    check = session.check()
    assert check["ok"] and check["problems"] == [] and check["rows"] > 0, check
    exported = session.export(tmp_path / "export")
    assert exported["files"] and all(p.exists() for p in exported["files"]), exported
    with pytest.raises(rodlab.InputError, match="map"):
        rodlab.import_table(files[0], rod=BEAM, map=tmp_path / "no-map.toml", out=tmp_path / "bad", progress=False)
