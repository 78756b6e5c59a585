//! Bounded fuzzing of everything rodlab reads from outside, in CI: C3D
//! files, a session's Parquet chunks, every kind of config file, and the
//! view server's requests, each mutated from a shipped or freshly made good
//! one by a seeded generator (the same cases every run; `RODLAB_FUZZ_CASES`
//! scales their number). Every run goes through the binary under a 2 GB
//! address-space limit (the memory budget: an allocation past it aborts,
//! which the test sees as a crash). What must hold: no panic, no abort, no
//! signal; a refusal is one line with exit 2 (1 for `session check`'s
//! problems).

use crate::common;
use common::*;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A small reproducible generator (64-bit LCG, high bits).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 11
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Cases per kind (default 1 x the counts below; `RODLAB_FUZZ_CASES=10` for a longer run).
fn scale() -> usize {
    std::env::var("RODLAB_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1)
}

/// `rodlab args` under the memory budget.
fn run_budgeted(args: &[&str]) -> Output {
    Command::new("prlimit").arg("--as=2000000000").arg(env!("CARGO_BIN_EXE_rodlab")).args(args).current_dir(root()).output().unwrap()
}

/// No crash: exit 0, 1 or 2 (those `allowed`), never a panic or a signal,
/// a refusal in one line.
/// A clean session to damage: the cable arm's gravity holds, `duration_s` long.
fn synth_holds_session(out: &std::path::Path, duration_s: f64) {
    let duration = duration_s.to_string();
    let args = [
        "synth",
        "session",
        "--scene",
        "configs/scene/cable-arm-holds.toml",
        "--rod",
        "configs/rod/pls-cable-arm.toml",
        "--out",
        out.to_str().unwrap(),
        "--duration-s",
        &duration,
    ];
    let o = rodlab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
}

fn no_crash(o: &Output, allowed: &[i32], case: &str) {
    let err = stderr(o);
    let code = o.status.code();
    assert!(code.is_some_and(|c| allowed.contains(&c)), "{case}: exit {:?} (a crash or abort?)\n{err}", o.status);
    assert!(!err.contains("panicked") && !err.contains("RUST_BACKTRACE"), "{case}: panicked\n{err}");
    if code == Some(2) {
        assert_eq!(err.trim_end().lines().count(), 1, "{case}: a refusal is one line:\n{err}");
    }
}

#[test]
fn c3d_files_mutated_never_crash_the_importer() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xC3D);
    let seeds: Vec<PathBuf> = ["z-up/trial-0g.c3d", "y-up/trial-20g.c3d"].iter().map(|f| root().join("datasets/mocap-beam").join(f)).collect();
    let maps = ["datasets/mocap-beam/z-up-map.toml", "datasets/mocap-beam/y-up-map.toml"];
    let edges: [u16; 6] = [0, 1, 2, 0x7FFF, 0x8000, 0xFFFF];
    for case in 0..120 * scale() {
        let k = case % seeds.len();
        let mut b = std::fs::read(&seeds[k]).unwrap();
        match rng.below(4) {
            // A header word set to an edge or random value.
            0 => {
                let at = 2 * rng.below(12);
                let v = if rng.below(2) == 0 { edges[rng.below(edges.len())] } else { rng.next() as u16 };
                b[at..at + 2].copy_from_slice(&v.to_le_bytes());
            }
            // Bits flipped in the parameter section.
            1 => {
                for _ in 0..1 + rng.below(8) {
                    let at = 512 + rng.below(b.len().min(4096) - 512);
                    b[at] ^= 1 << rng.below(8);
                }
            }
            // Cut short.
            2 => b.truncate(rng.below(b.len())),
            // Random bytes anywhere.
            _ => {
                for _ in 0..1 + rng.below(32) {
                    let at = rng.below(b.len());
                    b[at] = rng.next() as u8;
                }
            }
        }
        let file = dir.path().join(format!("case{case}.c3d"));
        std::fs::write(&file, &b).unwrap();
        let out = dir.path().join(format!("out{case}"));
        let o = run_budgeted(&[
            "import",
            "c3d",
            file.to_str().unwrap(),
            "--rod",
            "configs/rod/rectangular-beam.toml",
            "--map",
            maps[k],
            "--out",
            out.to_str().unwrap(),
        ]);
        no_crash(&o, &[0, 2], &format!("c3d case {case}"));
    }
}

/// Every config kind's shipped files, each mutated: a number made an edge
/// value or another type, a line dropped or doubled, the text cut.
#[test]
fn config_files_mutated_are_parsed_or_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x70_31);
    let mut files: Vec<(&str, PathBuf)> = vec![];
    for (kind, folder) in [("rod", "configs/rod"), ("scene", "configs/scene"), ("rig", "configs/rig")] {
        for e in std::fs::read_dir(root().join(folder)).unwrap() {
            files.push((kind, e.unwrap().path()));
        }
    }
    files.push(("loads", root().join("configs/loads.toml")));
    files.push(("loads", root().join("configs/loads-cable-cells.toml")));
    files.push(("map", root().join("datasets/mocap-beam/z-up-map.toml")));
    files.push(("markers", root().join("configs/markers.toml")));
    let values = ["-1", "0", "1e308", "-1e308", "nan", "inf", "1e-300", "\"x\"", "[]", "[1, 2]", "18446744073709551616", "true", "{}"];
    for case in 0..15 * files.len() * scale() {
        let (kind, path) = &files[case % files.len()];
        let text = std::fs::read_to_string(path).unwrap();
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        let at = rng.below(lines.len());
        match rng.below(4) {
            0 => {
                // A value after an '=' replaced.
                if let Some((key, _)) = lines[at].split_once('=') {
                    lines[at] = format!("{key}= {}", values[rng.below(values.len())]);
                }
            }
            1 => {
                lines.remove(at);
            }
            2 => {
                let l = lines[at].clone();
                lines.insert(at, l);
            }
            _ => lines.truncate(at),
        }
        let file = dir.path().join(format!("case{case}.toml"));
        std::fs::write(&file, lines.join("\n")).unwrap();
        let o = run_budgeted(&["schema", kind, "--check", file.to_str().unwrap()]);
        no_crash(&o, &[0, 2], &format!("{kind} case {case} from {}", path.display()));
    }
}

/// A session's chunks damaged (bits flipped, cut short, another chunk's
/// bytes): `session check` names the damage (exit 1), `info` and `export`
/// go on or refuse in one line, none crashes.
#[test]
fn session_chunks_damaged_are_named_and_never_crash_a_reader() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good");
    synth_holds_session(&good, 4.0);
    let mut chunks: Vec<PathBuf> = vec![good.join("markers.parquet")];
    for stream in ["robot", "ft300"] {
        for e in std::fs::read_dir(good.join("streams").join(stream)).unwrap() {
            chunks.push(e.unwrap().path());
        }
    }
    let mut rng = Rng(0xDA7A);
    for case in 0..25 * scale() {
        let s = dir.path().join(format!("case{case}"));
        copy_dir(&good, &s);
        let chunk = &chunks[rng.below(chunks.len())];
        let target = s.join(chunk.strip_prefix(&good).unwrap());
        let mut b = std::fs::read(&target).unwrap();
        match rng.below(3) {
            0 => {
                for _ in 0..1 + rng.below(16) {
                    let at = rng.below(b.len());
                    b[at] ^= 1 << rng.below(8);
                }
            }
            1 => b.truncate(rng.below(b.len())),
            _ => b = std::fs::read(&chunks[rng.below(chunks.len())]).unwrap(),
        }
        std::fs::write(&target, &b).unwrap();
        let case_name = format!("chunk case {case} ({})", target.display());
        no_crash(&run_budgeted(&["session", "check", s.to_str().unwrap(), "--skip-videos"]), &[0, 1], &case_name);
        no_crash(&run_budgeted(&["session", "info", s.to_str().unwrap()]), &[0, 2], &case_name);
        no_crash(
            &run_budgeted(&["session", "export", s.to_str().unwrap(), "--to", dir.path().join(format!("x{case}")).to_str().unwrap()]),
            &[0, 2],
            &case_name,
        );
    }
}

/// Requests a hostile client sends to `session view`: any method, path,
/// query (NaN, huge, negative times, unknown cameras), invalid UTF-8,
/// headers cut anywhere. The server answers each (or closes), keeps
/// serving, and stays within the memory budget.
#[test]
fn view_server_requests_mutated_are_answered_and_it_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s");
    synth_holds_session(&s, 3.0);
    let port = free_port();
    let mut server = Command::new("prlimit")
        .arg("--as=2000000000")
        .arg(env!("CARGO_BIN_EXE_rodlab"))
        .args(["session", "view", s.to_str().unwrap(), "--addr", &format!("127.0.0.1:{port}"), "--duration", "120"])
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < Duration::from_secs(20), "the view did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut rng = Rng(0x5EB);
    let methods = ["GET", "HEAD", "POST", "DELETE", "GET\0", "", "GETT"];
    let paths = ["/", "/api/info", "/api/at", "/frame.jpg", "/events", "/../../etc/passwd", "/%00", "//", "/api/at/"];
    let queries = [
        "",
        "?t=NaN",
        "?t=1e308",
        "?t=-1e308",
        "?t=-1",
        "?t=inf",
        "?t=0.5",
        "?camera=99&k=-1",
        "?camera=0&k=18446744073709551615",
        "?t",
        "?&&&=",
        "?t=0.5&t=1",
    ];
    let host = format!("127.0.0.1:{port}");
    for case in 0..150 * scale() {
        let mut req: Vec<u8> = format!(
            "{} {}{} HTTP/1.1\r\nHost: {}\r\n",
            methods[rng.below(methods.len())],
            paths[rng.below(paths.len())],
            queries[rng.below(queries.len())],
            if rng.below(8) == 0 { "evil.example:80" } else { host.as_str() }
        )
        .into_bytes();
        for _ in 0..rng.below(4) {
            let n = rng.below(200);
            req.extend(format!("X-{}: ", rng.next()).bytes());
            req.extend((0..n).map(|_| rng.next() as u8));
            req.extend(b"\r\n");
        }
        req.extend(b"\r\n");
        if rng.below(5) == 0 {
            req.truncate(rng.below(req.len()));
        }
        let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", port)) else { panic!("case {case}: the server is gone") };
        c.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
        use std::io::{Read, Write};
        let _ = c.write_all(&req);
        let _ = c.shutdown(std::net::Shutdown::Write);
        let mut answer = vec![];
        // An event stream never ends: a first chunk is an answer.
        let mut buf = [0u8; 4096];
        while let Ok(n) = c.read(&mut buf) {
            if n == 0 || answer.len() > 1 << 20 {
                break;
            }
            answer.extend_from_slice(&buf[..n]);
            if answer.starts_with(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream") {
                break;
            }
        }
        assert!(answer.is_empty() || answer.starts_with(b"HTTP/1.1 "), "case {case}: {:?}", String::from_utf8_lossy(&answer[..answer.len().min(80)]));
    }
    // Still serving, and still running.
    let page = Command::new("curl").args(["-s", "-o", "/dev/null", "-w", "%{http_code}", &format!("http://{host}/api/info")]).output();
    if let Ok(p) = page {
        assert_eq!(String::from_utf8_lossy(&p.stdout), "200", "the server answers after the fuzzing");
    }
    assert!(server.try_wait().unwrap().is_none(), "the server is still running");
    let _ = server.kill();
    let _ = server.wait();
}
