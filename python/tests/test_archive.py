"""A lab's archive as one table (#82): `rodlab archive index` and
`rodlab.archive_index` over two days of sessions and two identifications,
read back by polars as one dataset (Parquet and CSV)."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import polars as pl

import rodlab

from conftest import repo

ARM = repo("configs/rod/pls-cable-arm.toml")
HOLDS = repo("configs/scene/cable-arm-holds.toml")


def test_an_archive_of_two_days_and_two_fits_is_one_table(rodlab_bin: Path, tmp_path: Path) -> None:
    archive = tmp_path / "lab"
    rod = rodlab.Rod.from_file(ARM)
    day1 = [rodlab.synth_session(scene=HOLDS, rod=rod, out=archive / "day1" / f"s{k}", seed=k, progress=False) for k in range(2)]
    stick = rodlab.synth_session(
        scene=repo("configs/scene/contact-paper-stick.toml"), rod=repo("configs/rod/contact-paper-steel-core.toml"),
        out=archive / "day2" / "stick", seed=3, duration_s=0.6, progress=False,
    )
    rodlab.identify(rod, sessions=day1, out=archive / "fits" / "both", progress=False, loo=False)
    # A later fit of the second session alone: its row takes this one.
    later = rodlab.identify(rod, sessions=[day1[1]], out=archive / "fits" / "s1-alone", progress=False, loo=False)

    got = rodlab.archive_index(archive)
    assert (got["sessions"], got["identified"], got["warnings"]) == (3, 2, [])
    table = pl.read_parquet(got["parquet"]).sort("session")
    assert table["session"].to_list() == ["day1/s0", "day1/s1", "day2/stick"]
    assert table["identified"].to_list() == ["fits/both/identified.toml", "fits/s1-alone/identified.toml", ""]
    assert table["specimen"].to_list() == ["pls-cable-arm", "pls-cable-arm", ""]
    for row, fit in [(0, archive / "fits" / "both"), (1, archive / "fits" / "s1-alone")]:
        written = tomllib.loads((fit / "identified.toml").read_text())["parameters"]
        for name, column in [("e_pa", "e"), ("g_pa", "g")]:
            assert table[f"{column}_pa"][row] == written[name]["value"]
            assert [table[f"{column}_low_pa"][row], table[f"{column}_high_pa"][row]] == written[name]["ci95"]
        assert table["rho_kg_m3"][row] == written["rho_kg_m3"]["value"]
    assert table["e_pa"][1] == later.values["e_pa"]
    assert table["e_pa"].is_nan()[2] and table["rms_error_mm"].is_nan()[2]
    # What each session holds, as `session info` says it.
    for row, session in enumerate([*day1, stick]):
        streams = session.info()["streams"].values()
        assert table["streams"][row] == len(streams)
        assert table["rows"][row] == sum(s["rows"] for s in streams)
        assert abs(table["duration_s"][row] - max(s["span_s"] for s in streams)) < 1e-9
        assert table["marker_rows"][row] == session.markers().height
        assert table["devices"][row] == "robot,ft300" and table["gaps"][row] == 0 and table["outage_s"][row] == 0.0
    assert (table["start_unix_s"] > 1.7e9).all()

    # The command line writes the same table; its CSV reads as the Parquet.
    out = tmp_path / "index" / "archive.parquet"
    done = subprocess.run([str(rodlab_bin), "archive", "index", str(archive), "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "3 sessions (2 with an identification)" in done.stdout
    assert pl.read_parquet(out).sort("session").equals(table)
    csv = pl.read_csv(out.with_suffix(".csv"), infer_schema_length=None).sort("session")
    assert csv["session"].equals(table["session"]) and csv["e_pa"][:2].to_list() == table["e_pa"][:2].to_list()
    assert csv["e_pa"][2] is None  # an empty field: no identification

    # The report: each fit once, at its first session's day, its intervals drawn.
    drawn = rodlab.archive_report(archive, out=tmp_path / "report")
    fits = {f["identified"]: f for f in drawn["fits"]}
    assert sorted(fits) == ["fits/both/identified.toml", "fits/s1-alone/identified.toml"]
    assert fits["fits/both/identified.toml"]["sessions"] == ["day1/s0", "day1/s1"]
    assert fits["fits/s1-alone/identified.toml"]["sessions"] == ["day1/s1"]
    both = fits["fits/both/identified.toml"]
    assert both["specimen"] == "pls-cable-arm" and both["day"] == 0.0
    assert both["e_pa"] == [table["e_pa"][0], table["e_low_pa"][0], table["e_high_pa"][0]]
    html = (tmp_path / "report" / "index.html").read_text()
    for figure in ["e_over_time", "g_over_time", "rho_over_time"]:
        assert figure in html and (tmp_path / "report" / f"{figure}.png").stat().st_size > 5_000
        series = json.loads((tmp_path / "report" / f"{figure}.json").read_text())["series"]
        assert [s["label"] for s in series] == ["pls-cable-arm"] and len(series[0]["band"]) == 2
    done = subprocess.run([str(rodlab_bin), "archive", "report", str(archive), "--out", str(tmp_path / "report-cli")], capture_output=True, text=True)
    assert done.returncode == 0 and "2 identifications of 3 sessions" in done.stdout, done.stdout + done.stderr

    missing = subprocess.run([str(rodlab_bin), "archive", "index", str(tmp_path / "nowhere")], capture_output=True, text=True)
    assert missing.returncode == 2 and "nowhere: not a directory" in missing.stderr
