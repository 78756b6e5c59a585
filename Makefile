# The two commands of the README: `make demo` and `make test`.
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: demo test setup bench

setup:
	@bash scripts/setup.sh

## Main job: the PLS paper's conical cantilever, compared with the paper.
demo: setup
	cargo run --release --quiet -p rodlab-cli --bin rodlab -- paper-table

## Every test of the workspace (unit, integration, end-to-end).
test: setup
	cargo test --workspace --locked -- --nocapture

## Criterion benchmarks (not part of the tests).
bench: setup
	cargo bench -p rod --bench statics
