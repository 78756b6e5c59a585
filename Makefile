# The two commands of the README: `make demo` and `make test`.
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: demo test setup bench install wheel

setup:
	@bash scripts/setup.sh

# The demo runs the binary `make test` builds and tests: one profile (dev,
# which the test profile inherits unchanged, the physics crates optimised)
# compiled once serves both; a release build compiled polars and the OpenCV
# bindings a second time (13 of a fresh clone's 28 minutes).
RODLAB := target/debug/rodlab

## Main job: the PLS paper's cantilever (Tables II/III), then identification
## of E, G, rho on the paper's cable-arm data, model variants by leave-one-out
## -> reports/demo/index.html;
## tracking, a dry-run recording, and a virtual lab day (synthetic sessions
## -> identify --sessions -> validate) -> reports/demo/lab-day/; a motion-capture
## lab (C3D import -> identify -> validate) -> reports/demo/mocap/.
demo: setup
	cargo build --workspace --locked --quiet
	$(RODLAB) paper-table
	$(RODLAB) identify --rod configs/rod/pls-cable-arm.toml --experiments datasets/pls-cable-arm \
		--out reports/demo --reference 2.563e5,8.543e4,1.41e3 --compare-variants
	@# Tracking: calibrate on synthetic board images, track a synthetic video.
	$(RODLAB) synth board --out reports/demo/track/board
	$(RODLAB) calibrate --images reports/demo/track/board/views --board 9x6 --square-m 0.016 \
		--plane-image reports/demo/track/board/plane.png --out reports/demo/track/camera.toml
	$(RODLAB) synth video --out reports/demo/track/video --frames 200 --occlude 2,100,5
	$(RODLAB) track reports/demo/track/video/video.avi --camera reports/demo/track/camera.toml \
		--markers reports/demo/track/video/markers.toml --out reports/demo/track/markers.parquet --overlay-every 20 \
		--overlay reports/demo/track/overlay
	@# A short dry-run recording from the emulators (RTDE, FT 300, ASCII load cell).
	bash scripts/dry-run.sh sessions/demo-dry-run 3 $(RODLAB)
	@# A virtual lab day, recorded live: each experiment simulated (the truth
	@# beside the session, never inside), then played in real time through the
	@# RTDE and FT 300 emulators and a rendered camera into `rodlab record`, the
	@# video tracked; E and rho identified from two days of gravity holds, the
	@# fit validated on the stick and slide experiments (about 3 min, 2 GB of
	@# lossless video in sessions/lab-day).
	rm -rf sessions/lab-day reports/demo/lab-day
	@# The FT 300 not zeroed after power-up (another bias each day): fitted.
	$(RODLAB) synth session --live --scene configs/scene/cable-arm-holds.toml --rod configs/rod/contact-paper-steel-core.toml --out sessions/lab-day/holds-1 --seed 1 \
		--ft-bias 1.5,0.8,-1.2,0,0,0.05
	$(RODLAB) synth session --live --scene configs/scene/cable-arm-holds.toml --rod configs/rod/contact-paper-steel-core.toml --out sessions/lab-day/holds-2 --seed 2 \
		--ft-bias=-1.0,1.8,0.6,0.03,-0.02,0
	$(RODLAB) identify --rod configs/rod/contact-paper-steel-core.toml --sessions sessions/lab-day/holds-1 sessions/lab-day/holds-2 \
		--loads configs/loads.toml --out reports/demo/lab-day/fit
	@# The cable arm pulled by its cables, load cells read through the ASCII emulator.
	$(RODLAB) synth session --live --scene configs/scene/cable-arm-tensions-planar.toml --rod configs/rod/pls-cable-arm.toml --out sessions/lab-day/pulls \
		--e-pa 2.5e5 --rho-kg-m3 1.3e3 --no-flange-sensor --seed 5
	$(RODLAB) identify --rod configs/rod/pls-cable-arm.toml --sessions sessions/lab-day/pulls --loads configs/loads-cable-cells.toml --out reports/demo/lab-day/fit-pulls
	$(RODLAB) synth session --live --scene configs/scene/contact-paper-stick.toml --rod configs/rod/contact-paper-steel-core.toml --out sessions/lab-day/stick --seed 3
	$(RODLAB) synth session --live --scene configs/scene/contact-paper-slide.toml --rod configs/rod/contact-paper-steel-core.toml --out sessions/lab-day/slide --seed 4
	$(RODLAB) validate sessions/lab-day/stick --rod configs/rod/contact-paper-steel-core.toml --params reports/demo/lab-day/fit/identified.toml \
		--scene configs/scene/contact-paper-stick.toml --out reports/demo/lab-day/stick --sigma-m 2e-5
	$(RODLAB) validate sessions/lab-day/slide --rod configs/rod/contact-paper-steel-core.toml --params reports/demo/lab-day/fit/identified.toml \
		--scene configs/scene/contact-paper-slide.toml --out reports/demo/lab-day/slide --sigma-m 2e-5
	@# What the statics cannot see: friction and damping from a rung and a dragged rod.
	$(RODLAB) synth session --live --scene configs/scene/contact-paper-ring.toml --rod configs/rod/contact-paper-steel-core.toml --out sessions/lab-day/ring --seed 5
	$(RODLAB) synth session --live --scene configs/scene/contact-paper-lying-drag.toml --rod configs/rod/contact-paper-steel-core.toml --out sessions/lab-day/drag --seed 6
	$(RODLAB) identify --dynamic --rod configs/rod/contact-paper-steel-core.toml --sessions sessions/lab-day/ring sessions/lab-day/drag \
		--scene configs/scene/contact-paper-lying-drag.toml --params reports/demo/lab-day/fit/identified.toml --out reports/demo/lab-day/dynamic
	@# A motion-capture lab: C3D files (two vendors' conventions) imported,
	@# the beam identified from its hung masses, the fit validated (seconds).
	rm -rf sessions/mocap reports/demo/mocap
	$(RODLAB) import c3d datasets/mocap-beam/z-up/*.c3d --rod configs/rod/rectangular-beam.toml \
		--map datasets/mocap-beam/z-up-map.toml --out sessions/mocap
	$(RODLAB) import c3d datasets/mocap-beam/y-up/*.c3d --rod configs/rod/rectangular-beam.toml \
		--map datasets/mocap-beam/y-up-map.toml --out sessions/mocap
	$(RODLAB) identify --rod configs/rod/rectangular-beam.toml --sessions sessions/mocap/* \
		--loads datasets/mocap-beam/masses.toml --out reports/demo/mocap/fit
	$(RODLAB) validate sessions/mocap/trial-50g --rod configs/rod/rectangular-beam.toml \
		--params reports/demo/mocap/fit/identified.toml --scene datasets/mocap-beam/hung-50g.toml \
		--out reports/demo/mocap/validate
	bash scripts/demo-index.sh reports/demo
	@echo "every report: reports/demo/reports.html"

## Every test of the workspace (unit, integration, end-to-end, and the
## Python package's pytest suite): with
## cargo-nextest where it is installed (every test its own process, two at a
## time across all test binaries, then the recordings six at a time beside
## the live virtual-lab days one at a time; .config/nextest.toml), else
## cargo test.
test:
	@bash scripts/setup.sh system
	@bash scripts/run-tests.sh

## A `rodlab` that does every command on the PATH: the binary and its
## device and tracking builds in PREFIX/lib/rodlab, PREFIX/bin/rodlab linked
## to it (default PREFIX: ~/.local; the build `make test` made).
PREFIX ?= $(HOME)/.local
install: setup
	@bash scripts/install.sh $(PREFIX)

## The Python package as an abi3 wheel carrying the device build and the
## OpenCV libraries it links (target/wheels; `pip install` it anywhere,
## no cargo needed).
wheel: setup
	@bash scripts/python-tests.sh --build-only
	@bash scripts/wheel.sh

## Every benchmark (not part of the tests): criterion's, then the Python
## package's; one table of them into docs/results.md (scripts/bench-table.py).
bench: setup
	cargo bench -p rodlab-bench --bench statics
	cargo bench -p rodlab-bench --bench observe
	cargo bench -p rodlab-bench --bench fit
	cargo bench -p rodlab-bench --bench scenes
	cargo bench -p rodlab-bench-lab --bench detect
	cargo bench -p rodlab-bench-lab --bench validate
	cargo bench -p rodlab-bench-lab --bench dynamic
	@# Process start, of the binary `make demo` runs (dev profile).
	cargo build -p rodlab-cli -p rodlab-devices -p rodlab-tracking
	cargo bench -p rodlab-bench-lab --bench start --profile dev
	@# The Python package: what a call adds, solve_many's cores, session tables.
	bash scripts/python-tests.sh --build-only
	.venv/bin/python python/bench.py | tee target/python-bench.txt
	@# The peer side by side: DisMech's slip onset in PyElastica (PyPI, setup.sh).
	.venv/bin/python scripts/peer-pyelastica.py | grep '^pyelastica' | tee target/peer-pyelastica.txt
	@# Tracking against an OpenCV-Python script, whole processes, the demo's video
	@# in each of the recorder's containers (raw, the default, first).
	VIDEO_FORMAT=raw .venv/bin/python scripts/peer/track-race.py target/debug/rodlab 5 | tee target/peer-track.txt
	VIDEO_FORMAT=mkv .venv/bin/python scripts/peer/track-race.py target/debug/rodlab 5 | tee -a target/peer-track.txt
	VIDEO_FORMAT=avi .venv/bin/python scripts/peer/track-race.py target/debug/rodlab 5 | tee -a target/peer-track.txt
	@# One table of them all, with the machine and the date -> docs/results.md.
	python3 scripts/bench-table.py
