//! Whole-process start of the `rodlab` binary (the build `make demo` and the
//! tests use): commands that touch no device, which load no OpenCV library,
//! and a device command that loads the device build (for comparison).
//! Run with the profile the binary was built with, after building it:
//! `cargo build -p rodlab-cli -p rodlab-devices`, then
//! `cargo bench -p rodlab-bench-lab --bench start --profile dev`.

use criterion::{criterion_group, criterion_main, Criterion};
use std::path::PathBuf;
use std::process::Command;

/// The `rodlab` binary of the profile this benchmark was built with: in
/// `target/<profile>/`, beside the `deps/` directory this executable runs
/// from (a bench cannot name another package's binary).
fn rodlab_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the benchmark's own path");
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>/deps/");
    let binary = profile_dir.join("rodlab");
    assert!(binary.is_file(), "{} is missing: build it first with the same profile (cargo build -p rodlab-cli -p rodlab-devices)", binary.display());
    binary
}

fn run(args: &[&str]) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let o = Command::new(rodlab_binary()).args(args).current_dir(&root).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

fn bench_start(c: &mut Criterion) {
    let out = std::env::temp_dir().join(format!("rodlab-start-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let shape = out.join("shape.csv");
    let mut g = c.benchmark_group("process_start");
    g.sample_size(30);
    g.bench_function("version", |b| b.iter(|| run(&["--version"])));
    g.bench_function("schema_rod", |b| b.iter(|| run(&["schema", "rod"])));
    g.bench_function("solve_table_ii", |b| b.iter(|| run(&["solve", "--rod", "configs/rod/pls-paper-cantilever.toml", "--out", shape.to_str().unwrap()])));
    // A device command: the device build and OpenCV loaded (not a goal).
    g.bench_function("device_build_schema_markers", |b| b.iter(|| run(&["schema", "markers"])));
    g.finish();
    let _ = std::fs::remove_dir_all(&out);
}

criterion_group!(benches, bench_start);
criterion_main!(benches);
