//! Helpers shared by the end-to-end tests of the `rodlab` binary.
#![allow(dead_code)]

pub mod tmpfs;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The workspace root (tests run the binary from there).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `rodlab` with `args` from the workspace root.
pub fn rodlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rodlab")).args(args).current_dir(root()).output().expect("run rodlab")
}

/// `rodlab` as a command run from the workspace root, to spawn or pipe.
pub fn rodlab_command() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rodlab"));
    c.current_dir(root());
    c
}

/// A TCP port free on loopback now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A robot emulator on 127.0.0.1:`port` for `duration_s`, with extra
/// arguments (`--controller cb3`, `--quirk ...`), once it listens. Its
/// standard output is piped (it ends with `sent N ...`).
pub fn robot_emulator(port: u16, duration_s: f64, extra: &[&str]) -> Child {
    let child = rodlab_command()
        .args(["emulate", "robot", "--bind", &format!("127.0.0.1:{port}"), "--duration", &duration_s.to_string()])
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t.elapsed() < Duration::from_secs(10), "emulator did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// The venv's Python when it can import `module`; otherwise says loudly
/// that the `what` test is skipped (scripts/setup.sh makes the venv; it
/// needs python3-venv and PyPI).
pub fn venv_python(module: &str, what: &str) -> Option<PathBuf> {
    let python = root().join(".venv/bin/python");
    let available = python.is_file() && Command::new(&python).args(["-c", &format!("import {module}")]).status().is_ok_and(|s| s.success());
    if !available {
        eprintln!("\n*** SKIPPED {what} test: {} cannot import {module} (run scripts/setup.sh; it needs python3-venv and PyPI) ***\n", python.display());
    }
    available.then_some(python)
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Renders the page in headless Chromium and returns the report's self-check.
pub fn chromium_check(html: &Path) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", html.canonicalize().unwrap().display()))
        .output()
        .expect("chromium is installed by scripts/setup.sh");
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom.find("data-check=\"").expect("the page ran its self-check") + 12;
    dom[start..start + dom[start..].find('"').unwrap()].to_string()
}

/// Asserts exit status 2 with a one-line error containing every needle.
pub fn expect_exit_2(o: Output, needles: &[&str]) {
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} not in: {err}");
    }
}

/// Copies a directory tree (a session, to spoil a copy of it).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.path().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A `socat` pty pair: emulators write to `a`, the recorder reads `b`.
pub struct PtyPair {
    child: Child,
    pub a: PathBuf,
    pub b: PathBuf,
}

impl PtyPair {
    pub fn new(dir: &Path, name: &str) -> PtyPair {
        let (a, b) = (dir.join(format!("{name}-a")), dir.join(format!("{name}-b")));
        let child = Command::new("socat")
            .args([format!("pty,raw,echo=0,link={}", a.display()), format!("pty,raw,echo=0,link={}", b.display())])
            .stderr(Stdio::null())
            .spawn()
            .expect("socat (installed by scripts/setup.sh)");
        let t = Instant::now();
        while !(a.exists() && b.exists()) {
            assert!(t.elapsed() < Duration::from_secs(10), "socat did not create the pty pair");
            std::thread::sleep(Duration::from_millis(20));
        }
        PtyPair { child, a, b }
    }
}

impl Drop for PtyPair {
    /// Unplugged: socat killed, and its links gone with it, as a USB
    /// adapter's device file goes. Killed, socat leaves them pointing at
    /// its freed ptys, and a recorder reconnecting by the link opened the
    /// next pty the system handed out: another test's, whose recorder then
    /// could not take the port's lock.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.a);
        let _ = std::fs::remove_file(&self.b);
    }
}

/// Gaussian noise from a small LCG (Box-Muller), reproducible.
pub struct Noise(pub u64);

impl Noise {
    pub fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    pub fn gauss(&mut self, sd: f64) -> f64 {
        sd * (-2.0 * self.uniform().ln()).sqrt() * (std::f64::consts::TAU * self.uniform()).cos()
    }
}
