//! End-to-end recording against the emulators, all on loopback and started
//! by the tests themselves.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rodlab() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rodlab"));
    c.current_dir(root());
    c
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn emulator(port: u16, duration_s: f64) -> Child {
    let child = rodlab()
        .args(["emulate", "robot", "--bind", &format!("127.0.0.1:{port}"), "--rate-hz", "500", "--duration", &duration_s.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until it listens.
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t.elapsed() < Duration::from_secs(10), "emulator did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn rig(dir: &Path, port: u16) -> PathBuf {
    let p = dir.join("rig.toml");
    std::fs::write(
        &p,
        format!("[[robot]]\nname = \"robot\"\naddress = \"127.0.0.1:{port}\"\nfrequency_hz = 500\nvariables = [\"actual_TCP_pose\", \"output_int_register_0\"]\n"),
    )
    .unwrap();
    p
}

fn sent_by(mut child: Child) -> u64 {
    child.wait().unwrap();
    let mut s = String::new();
    child.stdout.take().unwrap().read_to_string(&mut s).unwrap();
    s.lines().find_map(|l| l.strip_prefix("sent ").and_then(|r| r.split_whitespace().next()).and_then(|n| n.parse().ok())).unwrap_or(0)
}

fn robot_table(session: &Path) -> session::Table {
    session::Table::read_chunks(&session::stream_dir(session, "robot")).unwrap()
}

/// CPU seconds (user + system) of a process, from /proc.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = f.get(11).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) + f.get(12).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    ticks / 100.0
}

#[test]
fn sixty_seconds_at_500_hz_nothing_lost() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let emu = emulator(port, 63.0);
    let out = dir.path().join("s");
    let mut rec = rodlab()
        .args(["record", "--rig", rig(dir.path(), port).to_str().unwrap(), "--out", out.to_str().unwrap(), "--duration", "60"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = rec.id();
    std::thread::sleep(Duration::from_secs(59));
    let cpu = cpu_seconds(pid);
    assert!(rec.wait().unwrap().success());
    let sent = sent_by(emu);
    let t = robot_table(&out);
    let seq = t.f64("output_int_register_0").unwrap();
    let ts = t.f64("timestamp").unwrap();
    let th = t.i64("t_host_ns").unwrap();
    println!("60 s: {} rows, emulator sent {sent}, recorder CPU {:.1} % of one core", seq.len(), cpu / 59.0 * 100.0);
    assert!(seq.len() >= 29_900, "{} rows", seq.len());
    // Every package between the first and the last is there, in order.
    assert!(seq.windows(2).all(|w| w[1] == w[0] + 1.0), "a sequence number is missing or repeated");
    assert!(ts.windows(2).all(|w| w[1] > w[0]) && th.windows(2).all(|w| w[1] >= w[0]));
    // The emulator kept sending after the recorder paused: sent >= recorded.
    assert!(sent as usize >= seq.len());
    assert!(cpu / 59.0 <= 0.20, "recorder CPU {:.1} %", cpu / 59.0 * 100.0);
    let o = rodlab().args(["session", "check", out.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn robot_emulator_killed_and_restarted_mid_session() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut emu = emulator(port, 30.0);
    let out = dir.path().join("s");
    let rec = rodlab()
        .args(["record", "--rig", rig(dir.path(), port).to_str().unwrap(), "--out", out.to_str().unwrap(), "--duration", "5"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    emu.kill().unwrap();
    emu.wait().unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let emu2 = emulator(port, 30.0);
    let o = rec.wait_with_output().unwrap();
    assert!(o.status.success());
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("reconnects") && !stdout.contains(" 0 reconnects"), "{stdout}");
    drop(emu2);
    let t = robot_table(&out);
    let seq = t.f64("output_int_register_0").unwrap();
    let gaps = session::Table::read_chunks(&session::stream_dir(&out, "robot_gaps")).unwrap();
    assert!(gaps.height() >= 1, "the gap is in the session");
    // Rows after the reconnection are the new emulator's, consecutive.
    let tail = &seq[seq.len() - 500..];
    assert!(tail.windows(2).all(|w| w[1] == w[0] + 1.0));
    let o = rodlab().args(["session", "info", out.to_str().unwrap()]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("gaps"));
}

#[test]
fn recorder_killed_loses_at_most_one_second() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let emu = emulator(port, 6.0);
    let out = dir.path().join("s");
    let mut rec = rodlab()
        .args(["record", "--rig", rig(dir.path(), port).to_str().unwrap(), "--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(3300));
    rec.kill().unwrap(); // SIGKILL
    rec.wait().unwrap();
    let killed_at = Instant::now();
    let _ = sent_by(emu);
    let o = rodlab().args(["session", "check", out.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let t = robot_table(&out);
    let th = t.i64("t_host_ns").unwrap();
    // The recorder ran ~3.3 s after connecting; at most the last second is lost.
    let recorded_s = (th[th.len() - 1] - th[0]) as f64 * 1e-9;
    println!("recorded {recorded_s:.2} s before SIGKILL ({} rows)", th.len());
    assert!(recorded_s >= 3.3 - 0.5 - 1.0, "{recorded_s} s");
    let seq = t.f64("output_int_register_0").unwrap();
    assert!(seq.windows(2).all(|w| w[1] == w[0] + 1.0));
    let _ = killed_at;
}

#[test]
fn unknown_variable_and_unreachable_host_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let _emu = emulator(port, 5.0);
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, format!("[[robot]]\naddress = \"127.0.0.1:{port}\"\nvariables = [\"actual_TCP_pose\", \"actual_banana\"]\n")).unwrap();
    let o = rodlab().args(["record", "--rig", bad.to_str().unwrap(), "--out", dir.path().join("x").to_str().unwrap(), "--duration", "1"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("actual_banana") && err.contains("bad.toml"), "{err}");
    let gone = dir.path().join("gone.toml");
    std::fs::write(&gone, format!("[[robot]]\naddress = \"127.0.0.1:{}\"\nvariables = []\n", free_port())).unwrap();
    let o = rodlab().args(["record", "--rig", gone.to_str().unwrap(), "--out", dir.path().join("y").to_str().unwrap(), "--duration", "1"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot connect"));
    let o = rodlab().args(["record", "--rig", "configs/rig/missing.toml", "--out", dir.path().join("z").to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}
