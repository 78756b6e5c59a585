"""Python is as complete as the command line: a walk of `rodlab --help`'s
whole tree. Every command is reached from Python or named below with the
reason it is not; every option of a reached command is a keyword of its
Python call (the flag's name in snake case, or its rename below) or named
with a reason. A new flag without its keyword fails here."""

from __future__ import annotations

import inspect
import re

import pytest

import rodlab
from rodlab import _rodlab

# Command -> the Python calls that together take its options.
CALLS = {
    "solve": [rodlab.Rod.solve, rodlab.Rod.from_file],
    "identify": [_rodlab.identify, _rodlab.identify_dynamic],
    "simulate": [_rodlab.simulate],
    "validate": [_rodlab.validate],
    "observe": [_rodlab.observe],
    "synth session": [_rodlab.synth_session],
    "import c3d": [_rodlab.import_c3d],
    "import table": [_rodlab.import_table],
    "session info": [_rodlab.Session.info],
    "session check": [_rodlab.Session.check],
    "session export": [_rodlab.Session.export],
    "archive index": [_rodlab.archive_index],
    "archive report": [_rodlab.archive_report],
}
if rodlab.HAS_DEVICES:
    CALLS.update({
        "track": [_rodlab.track],
        "calibrate": [_rodlab.calibrate],
        "record": [_rodlab.record],
        "emulate robot": [_rodlab.RobotEmulator],
        "emulate ft300": [_rodlab.Ft300Emulator],
        "emulate netft": [_rodlab.NetFtEmulator],
        "emulate ascii-sensor": [_rodlab.AsciiSensorEmulator],
    })

# Commands Python does not offer, and why.
NOT_IN_PYTHON = {
    "help": "clap's own",
    "synth board": "test images for calibration: a tool of the command line's tests",
    "synth video": "test videos for tracking: a tool of the command line's tests",
    "camera": "an interactive set-up step at the rig",
    "session view": "a live web view: a server, not a call",
    "paper-table": "the PLS paper's table printed: a demonstration",
    "schema": "JSON schemas for editors' language servers",
    "verify": "the benchmarks with analytic answers, run and plotted: a demonstration",
    "rig": "measuring the rig's world frame at the robot: an interactive set-up step",
}
# Commands whose Python calls need the device build.
DEVICES = {"track", "calibrate", "record", "emulate robot", "emulate ft300", "emulate netft", "emulate ascii-sensor"}

# Options spelt otherwise in Python.
RENAMED = {
    "no-loo": "loo",
    "tie-g": "tie_g_poisson",
    "tension": "tensions",
    "no-gravity": "gravity",
    "no-flange-sensor": "flange_sensor",
    "skip-videos": "videos",
    "no-parameter-band": "parameter_band",
}
# Positional arguments named otherwise, per command.
RENAMED_IN = {
    ("observe", "input"): "session",
    ("track", "inputs"): "video",
    ("record", "duration"): "duration_s",
}
# Options every call takes otherwise: the rod is the Rod object (or the
# first argument), the session a Session's method's own.
EVERYWHERE = {
    "help": "clap's own",
    "rod": "a Rod object or the rod file, the first argument",
    "dir": "the Session the method is called on",
    "dynamic": "identify_dynamic is its own call",
    "sections": "Rod.from_file(sections=)",
    "modes": "Rod.from_file(modes=)",
}
# Options of single commands Python does not take, and why.
NOT_TAKEN = {
    ("solve", "out"): "the Shape is returned; its arrays are the CSV's columns",
    ("synth session", "live"): "records in real time through the emulators: rodlab.record with the emulator classes",
    ("synth session", "netft"): "with --live only",
    ("synth session", "wrench-from-robot"): "with --live only",
    ("synth session", "cameras"): "with --live only",
    ("synth session", "hide-marker"): "with --live only",
    ("synth session", "camera-fps"): "with --live only",
    ("synth session", "view"): "with --live only: a live web view",
    ("record", "view"): "a live web view: a server, not a call",
    ("record", "view-window-s"): "with view only",
    ("record", "markers"): "with view only (the live view's tracker)",
    ("record", "calibration"): "with view only (the live view's camera)",
    ("record", "rod"): "with view only (the live view's strain)",
    ("emulate robot", "duration"): "an emulator object serves until stop() or its with block ends",
    ("emulate ft300", "duration"): "an emulator object plays until stop() or its with block ends",
    ("emulate netft", "duration"): "an emulator object serves until stop() or its with block ends",
    ("emulate ascii-sensor", "duration"): "an emulator object plays until stop() or its with block ends",
}


def help_text(run, command: str) -> str:
    return run(*command.split(), "--help").stdout


def subcommands(text: str) -> list[str]:
    """The names under "Commands:"."""
    if "Commands:" not in text:
        return []
    block = text.split("Commands:", 1)[1].split("\n\n", 1)[0]
    return [m.group(1) for m in re.finditer(r"^  ([a-z0-9][a-z0-9-]*)\s", block, re.M)]


def options(text: str) -> list[str]:
    """The long options under "Options:" and "Arguments:" (positional names in lower case)."""
    longs = re.findall(r"^\s+(?:-[a-zA-Z], )?--([a-z0-9-]+)", text, re.M)
    positional = []
    if "Arguments:" in text:
        block = text.split("Arguments:", 1)[1].split("\n\n", 1)[0]
        positional = [m.group(1).lower().replace("_", "-") for m in re.finditer(r"^\s+[<\[]([A-Z_]+)[>\]]", block, re.M)]
    return [o for o in longs if o != "version"] + positional


def keywords(calls) -> set[str]:
    names = set()
    for call in calls:
        names |= set(inspect.signature(call).parameters)
    return names


def walk(run) -> dict[str, str]:
    """Every command of the tree (leaves and groups) with its help."""
    found = {}
    todo = [""]
    while todo:
        command = todo.pop()
        text = help_text(run, command) if command else run("--help").stdout
        if command:
            found[command] = text
        todo += [f"{command} {s}".strip() for s in subcommands(text) if s != "help"]
    return found


def test_every_command_and_option_of_the_command_line_has_its_python(run):
    tree = walk(run)
    missing = []
    for command, text in sorted(tree.items()):
        groups = subcommands(text)
        if command in NOT_IN_PYTHON or command.split()[0] in NOT_IN_PYTHON:
            continue
        if command in DEVICES and not rodlab.HAS_DEVICES:
            continue
        if command not in CALLS:
            if not groups:
                missing.append(f"{command}: no Python call")
            continue
        have = keywords(CALLS[command])
        for option in options(text):
            if option in EVERYWHERE or (command, option) in NOT_TAKEN:
                continue
            keyword = RENAMED_IN.get((command, option), RENAMED.get(option, option.replace("-", "_")))
            if keyword not in have:
                missing.append(f"{command} --{option}: no keyword {keyword}")
    assert not missing, "\n".join(missing)
    # The walk saw the tree (a broken parser would pass vacuously).
    assert {"solve", "identify", "synth session", "import c3d", "session check"} <= set(tree), sorted(tree)
    assert "fit-friction" in options(tree["identify"]) and "fit-density" in options(tree["identify"])


def test_the_reasons_name_commands_and_options_that_exist(run):
    tree = walk(run)
    for command in NOT_IN_PYTHON:
        assert command == "help" or command in tree, f"{command} is not a command"
    for command, option in NOT_TAKEN:
        assert option in options(tree[command]), f"{command} has no --{option}"
    for command in CALLS:
        assert command in tree, f"{command} is not a command"
