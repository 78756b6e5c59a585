# The two commands of the README: `make demo` and `make test`.
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: demo test setup bench

setup:
	@bash scripts/setup.sh

RODLAB := target/release/rodlab

## Main job: the PLS paper's cantilever (Tables II/III), then identification
## of E, G, rho on the paper's cable-arm data -> reports/demo/index.html.
demo: setup
	cargo build --release --quiet -p rodlab-cli --bin rodlab
	$(RODLAB) paper-table
	$(RODLAB) identify --rod configs/rod/pls-cable-arm.toml --experiments datasets/pls-cable-arm \
		--out reports/demo --reference 2.563e5,8.543e4,1.41e3
	@# A short dry-run recording from the RTDE emulator (loopback).
	$(RODLAB) emulate robot --bind 127.0.0.1:30004 --duration 6 > /dev/null & sleep 0.5; \
		rm -rf sessions/demo-dry-run; \
		$(RODLAB) record --rig configs/rig/emulated.toml --out sessions/demo-dry-run --duration 3 && \
		$(RODLAB) session info sessions/demo-dry-run && $(RODLAB) session check sessions/demo-dry-run; \
		status=$$?; wait; exit $$status

## Every test of the workspace (unit, integration, end-to-end).
test: setup
	cargo test --workspace --locked -- --nocapture

## Criterion benchmarks (not part of the tests).
bench: setup
	cargo bench -p rod --bench statics
	cargo bench -p identify --bench fit
