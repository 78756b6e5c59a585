"""The workflows from Python equal the command line's (the same library
underneath): identification on the PLS paper's data, a simulation of the
contact paper's stick scene, validation and observation of a session, a
session's tables; progress reports and their callbacks."""

from __future__ import annotations

import json
import shutil
import tomllib

import numpy as np
import polars as pl
import pytest

import rodlab
from conftest import repo

CABLE_ARM = repo("configs/rod/pls-cable-arm.toml")
STEEL = repo("configs/rod/contact-paper-steel-core.toml")
STICK = repo("configs/scene/contact-paper-stick.toml")


def parameters(identified_toml):
    with open(identified_toml, "rb") as f:
        return tomllib.load(f)["parameters"]


def test_identify_on_the_paper_data_equals_the_command_line(run, tmp_path):
    run("identify", "--rod", CABLE_ARM, "--experiments", repo("datasets/pls-cable-arm"), "--out", tmp_path / "cli")
    reports = []
    got = rodlab.identify(
        rodlab.Rod.from_file(CABLE_ARM),
        experiments=repo("datasets/pls-cable-arm"),
        out=tmp_path / "py",
        progress=lambda task, done, total, message: reports.append((task, done, total, message)),
    )
    cli = parameters(tmp_path / "cli" / "identified.toml")
    for name in ("e_pa", "g_pa", "rho_kg_m3"):
        assert got.values[name] == pytest.approx(cli[name]["value"], rel=1e-12, abs=0)
        low, high = got.intervals[name]
        assert [low, high] == pytest.approx(cli[name]["ci95"], rel=1e-12)
        assert low < got.values[name] < high
    assert got.identified_toml == tmp_path / "py" / "identified.toml" and got.report.exists()
    assert got.identified_toml in got.files and all(f.exists() for f in got.files) and any(f.suffix == ".png" for f in got.files)
    assert got.file["parameters"]["e_pa"]["value"] == got.values["e_pa"]
    assert got.experiments > 0
    # The identified parameters feed a solve as the command line's --params.
    shape = rodlab.Rod.from_file(CABLE_ARM).solve(tensions=[0, 0, 0, 1.0], params=got)
    assert np.isfinite(shape.tip_m).all()
    # Reported: the task's start and end; the fit's starts and the
    # leave-one-out folds as tasks with their totals (a bar with an ETA).
    assert reports[0][:2] == ("identify", 0) and reports[-1][3] == "done", reports
    totals = {task: total for task, _, total, _ in reports if task in ("start", "leave-one-out")}
    assert totals["start"] >= 1 and totals["leave-one-out"] == got.experiments, reports
    folds = [(done, total, message) for task, done, total, message in reports if task == "leave-one-out"]
    assert folds[-1] == (got.experiments, got.experiments, "done"), folds


def test_identify_asks_for_exactly_one_source_and_names_bad_input(tmp_path):
    rod = rodlab.Rod.from_file(CABLE_ARM)
    with pytest.raises(ValueError, match="either experiments"):
        rodlab.identify(rod, out=tmp_path, progress=False)
    with pytest.raises(rodlab.InputError, match="missing-dir"):
        rodlab.identify(rod, experiments=tmp_path / "missing-dir", out=tmp_path / "o", progress=False)
    with pytest.raises(rodlab.InputError, match="reference"):
        rodlab.identify(rod, experiments=repo("datasets/pls-cable-arm"), reference=[1, 2], out=tmp_path / "o", progress=False)


def test_simulate_the_stick_scene_equals_the_command_line(run, tmp_path):
    run("simulate", "--rod", STEEL, "--scene", STICK, "--out", tmp_path / "cli")
    sim = rodlab.simulate(rodlab.Rod.from_file(STEEL), STICK, out=tmp_path / "py", progress=False)
    table = pl.read_parquet(tmp_path / "cli" / "sim.parquet")
    t = sim.time_s
    assert len(sim) == len(t) == table.height
    assert np.allclose(t, table["t_s"].to_numpy(), rtol=0, atol=1e-12)
    tip_columns = [c for c in table.columns if c.startswith("tip_") and c.endswith("_m") and c[4] in "xyz" and len(c) == 7]
    assert len(tip_columns) == 3, table.columns
    assert np.allclose(sim.tip_m, table.select(tip_columns).to_numpy(), rtol=0, atol=1e-12)
    normal = [c for c in table.columns if c.startswith("normal_force")][0]
    assert np.allclose(sim.normal_force_n, table[normal].to_numpy(), rtol=0, atol=1e-12)
    assert sim.normal_force_n.max() > 0, "the stick scene presses the tip on the table"
    assert sim.marker_position_m.shape[0] == len(t) and sim.marker_position_m.shape[2] == 3
    assert sim.node_strain.shape[2] == 6 and sim.tangential_force_n.shape == (len(t), 3)
    # The nodes run base to tip: the last is the tip, each section's length apart along the centre line at rest.
    nodes = sim.node_position_m
    assert nodes.shape == (len(t), sim.node_strain.shape[1], 3)
    assert np.allclose(nodes[:, -1], sim.tip_m, rtol=0, atol=1e-12)
    chord = np.linalg.norm(np.diff(nodes[0], axis=0), axis=1)
    assert (chord > 0).all() and chord.sum() <= rodlab.Rod.from_file(STEEL).length_m + 1e-9
    assert isinstance(sim.summary, dict) and sim.out == tmp_path / "py"


def test_validate_and_observe_a_session_equal_the_command_line(run, stick_session, tmp_path):
    run("validate", stick_session, "--rod", STEEL, "--scene", STICK, "--out", tmp_path / "cli", "--sigma-m", "3e-4")
    with open(tmp_path / "cli" / "summary.json") as f:
        cli = json.load(f)
    got = rodlab.validate(stick_session, rodlab.Rod.from_file(STEEL), STICK, out=tmp_path / "py", sigma_m=3e-4, progress=False)
    assert got["pass"] == cli["pass"]
    (summary,) = got["sessions"]
    assert summary["strain_headline_rms_pct"] == pytest.approx(cli["strain_headline_rms_pct"], rel=1e-12)
    assert [c["name"] for c in summary["checks"]] == [c["name"] for c in cli["checks"]]
    assert summary["scene_kind"] == "stick"
    # The observer through Python and through the command line.
    run("observe", stick_session, "--rod", STEEL, "--out", tmp_path / "cli-strain.parquet")
    figures = rodlab.observe(stick_session, rodlab.Rod.from_file(STEEL), out=tmp_path / "py-strain.parquet", progress=False)
    assert figures["failed"] == 0 and figures["solved"] == figures["frames"] > 0
    a, b = pl.read_parquet(tmp_path / "cli-strain.parquet"), pl.read_parquet(tmp_path / "py-strain.parquet")
    assert a.columns == b.columns and a.height == b.height
    numeric = [c for c, t in a.schema.items() if t.is_numeric()]
    assert np.allclose(a.select(numeric).to_numpy(), b.select(numeric).to_numpy(), rtol=1e-12, atol=1e-12)


def test_a_sessions_tables_as_dataframes_equal_the_export(run, stick_session, tmp_path):
    session = rodlab.Session(stick_session)
    assert session.name == "stick" and session.meta["device"]
    assert sorted(session.streams()) == ["ft300", "robot"]
    run("session", "export", stick_session, "--to", tmp_path / "export")
    for name in session.streams():
        frame = session.stream(name)
        assert isinstance(frame, pl.DataFrame)
        exported = pl.read_csv(tmp_path / "export" / "streams" / f"{name}.csv")
        assert frame.columns == exported.columns
        assert frame["t_host_ns"].dtype == pl.Int64 and np.array_equal(frame["t_host_ns"].to_numpy(), exported["t_host_ns"].to_numpy())
        floats = [c for c, t in frame.schema.items() if t == pl.Float64]
        assert np.array_equal(frame.select(floats).to_numpy(), exported.select(floats).cast(pl.Float64).to_numpy())
    markers = session.markers()
    assert markers.height > 0 and {"x_m", "y_m", "z_m"} <= set(markers.columns)
    # No outage: an empty table that still has the gap table's columns (#80).
    gaps = session.gaps("robot")
    assert gaps.height == 0 and gaps.columns == ["start_host_ns", "end_host_ns", "duration_s", "reason", "missing_samples"], gaps
    with pytest.raises(rodlab.InputError, match="no stream 'camera9'"):
        session.stream("camera9")
    # The strain table once observed into the session.
    rod = rodlab.Rod.from_file(STEEL)
    if not (stick_session / "strain.parquet").exists():
        with pytest.raises(rodlab.InputError, match="no strain table"):
            session.strain()
    figures = rodlab.observe(session, rod, progress=False)
    strain = session.strain()
    assert figures["out"] == stick_session / "strain.parquet" and strain.height > 0
    # A camera is a stream with a video beside it (the synthetic session has none).
    assert session.video() is None
    copy = tmp_path / "with-camera"
    shutil.copytree(stick_session, copy)
    (copy / "streams" / "camera").mkdir()
    (copy / "camera.mkv").write_bytes(b"")
    assert rodlab.Session(copy).video() == copy / "camera.mkv" == rodlab.Session(copy).video("camera")
    with pytest.raises(rodlab.InputError, match="not a directory"):
        rodlab.Session(tmp_path / "nothing")


def test_stream_chunks_another_tool_wrote_are_read_and_a_null_is_named(stick_session, tmp_path):
    """A chunk written by polars (snappy or zstd, nullable columns, several row
    groups): rodlab's reader takes it as its own, and refuses a chunk with
    a null, naming the column, instead of reading a number."""
    copy = tmp_path / "stick"
    shutil.copytree(stick_session, copy)
    ft = rodlab.Session(copy).stream("ft300")
    chunks = sorted((copy / "streams" / "ft300").glob("*.parquet"))
    first = chunks[0]
    # The first chunk rewritten by polars, in row groups of 30 rows, snappy-compressed.
    head = pl.read_parquet(first)
    assert head.height >= 100
    head.write_parquet(first, row_group_size=30, compression="snappy")
    again = rodlab.Session(copy).stream("ft300")
    assert again.columns == ft.columns and again.height == ft.height
    assert np.array_equal(again["t_host_ns"].to_numpy(), ft["t_host_ns"].to_numpy())
    assert np.array_equal(again.drop("t_host_ns").to_numpy(), ft.drop("t_host_ns").to_numpy())
    # A null in a chunk: refused by the strict reader, naming the column;
    # the lenient one leaves the chunk's 100 rows out.
    with_null = head.with_columns(pl.when(pl.int_range(pl.len()) == 3).then(None).otherwise(pl.col("fx_n")).alias("fx_n"))
    with_null.write_parquet(first)
    with pytest.raises(rodlab.InputError, match="fx_n.*null"):
        rodlab.Session(copy).stream("ft300", strict=True)
    assert rodlab.Session(copy).stream("ft300").height == ft.height - head.height


def test_a_progress_callback_sees_the_work_and_its_exception_stops_it(tmp_path):
    rod = rodlab.Rod.from_file(STEEL)
    seen = []
    rodlab.simulate(rod, STICK, out=tmp_path / "a", progress=lambda *r: seen.append(r))
    tasks = [r for r in seen if r[0] == "simulate"]
    assert tasks and tasks[0][1] == 0 and tasks[-1][3] == "done" and tasks[-1][1] == tasks[-1][2] > 0

    class Stop(Exception):
        pass

    def stop(task, done, total, message):
        if done and done > 10:
            raise Stop("enough")

    with pytest.raises(Stop, match="enough"):
        rodlab.simulate(rod, STICK, out=tmp_path / "b", progress=stop)
    # A second call works.
    assert len(rodlab.simulate(rod, STICK, out=tmp_path / "c", progress=False)) > 0


TAPERED = repo("configs/rod/tapered-channels-arm.toml")


def test_a_failed_fit_is_a_result_whose_suggestion_fits(tmp_path):
    """The tapered arm's cables rub with mu 0.15, each pulled to 0.1-0.4 N and
    let out again. Fitted without friction, identify raises ComputationError
    whose ``result`` carries the fit's figures and suggests the friction,
    by its keyword; called with that keyword, the same data fit and mu
    comes back."""
    with open(TAPERED, "rb") as f:
        table = tomllib.load(f)
    for cable in table["cable"]:
        cable["friction_mu"] = 0.15
    truth = rodlab.Rod.from_dict(table).with_material(e_pa=2.0e5, g_pa=2.0e5 / 2.9, rho_kg_m3=1.1e3)
    inputs = ["experiment,tension_1_n,tension_2_n,tension_3_n,direction"]
    measurements = ["experiment,arc_m,offset_y_m,offset_z_m,x_m,y_m,z_m,sigma_m"]
    for cable in range(3):
        for t in (0.1, 0.2, 0.3, 0.4):
            for direction in ("load", "unload"):
                name = f"c{cable + 1}-{t}-{direction}"
                tensions = [0.0, 0.0, 0.0]
                tensions[cable] = t
                shape = truth.solve(tensions=tensions, direction=direction)
                inputs.append(f"{name},{','.join(map(str, tensions))},{direction}")
                # Two joints (their arcs exactly): the middle and the tip.
                for j in (len(shape.arc_m) // 2, len(shape.arc_m) - 1):
                    x, y, z = shape.position_m[j]
                    measurements.append(f"{name},{float(shape.arc_m[j])!r},0,0,{float(x)!r},{float(y)!r},{float(z)!r},1e-4")
    data = tmp_path / "pulls"
    data.mkdir()
    (data / "inputs.csv").write_text("\n".join(inputs) + "\n")
    (data / "measurements.csv").write_text("\n".join(measurements) + "\n")
    rod = rodlab.Rod.from_file(TAPERED)

    with pytest.raises(rodlab.ComputationError) as failed:
        rodlab.identify(rod, experiments=data, out=tmp_path / "plain", loo=False, tie_g_poisson=0.45, progress=False)
    result = failed.value.result
    assert result is not None and result["chi_square"] > 10 * result["dof"], result
    assert set(result["values"]) == {"e_pa", "g_pa", "rho_kg_m3"} and len(result["worst"]) == 3
    suggestion = result["suggestion"]
    assert suggestion["keyword"] == "fit_friction=(0.2, 0.2)" and suggestion["passed"], suggestion

    fitted = rodlab.identify(rod, experiments=data, out=tmp_path / "friction", loo=False, tie_g_poisson=0.45, fit_friction=(0.2, 0.2), progress=False)
    mu = fitted.file["parameters"]["friction_mu"]
    assert abs(mu / 0.15 - 1) < 0.1 and abs(fitted.values["e_pa"] / 2.0e5 - 1) < 0.01, (mu, fitted.values)
    # True: the rod file's prior, which this file does not have: named in Python's words.
    with pytest.raises(rodlab.InputError, match=r"^fit_friction: "):
        rodlab.identify(rod, experiments=data, out=tmp_path / "none", loo=False, fit_friction=True, progress=False)


def test_synth_session_from_python_equals_the_command_line(stick_session, tmp_path):
    """synth_session with the command line's seed makes the same session:
    every stream and the marker table equal, the truth beside it."""
    made = rodlab.synth_session(scene=STICK, rod=STEEL, out=tmp_path / "stick", seed=3, progress=False)
    theirs = rodlab.Session(stick_session)
    assert isinstance(made, rodlab.Session) and made.streams() == theirs.streams()
    for stream in made.streams():
        assert made.stream(stream).equals(theirs.stream(stream)), stream
    assert made.markers().equals(theirs.markers())
    assert (tmp_path / "stick-truth" / "truth.toml").exists()
    with pytest.raises(ValueError, match="ft_bias"):
        rodlab.synth_session(scene=STICK, rod=STEEL, out=tmp_path / "bad", ft_bias=[1, 2], progress=False)
