//! Device emulators for dry runs and tests, configured from plain values:
//! a UR controller's RTDE server, a Robotiq FT 300 and an ASCII line sensor
//! on a serial line. They speak the devices' bytes (the `record` crate);
//! this module reads what they play (CSV tables) and checks the settings.

use lab::error::{positive, Context, Error, Result};
pub use record::netft::NetFtQuirks;
pub use record::rtde::{Controller, Quirks};
use record::rtde::{Emulator, EmulatorConfig};
use record::serial::{self, Port};
use record::serial_emulators::{self, AsciiPlayback, Ft300EmulatorConfig, ValueTable, WrenchTable};
use session::rig::Separator;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::SystemTime;

/// A wall-clock instant from seconds since 1970 (UTC), named `flag` in errors.
pub fn unix_time(flag: &str, s: f64) -> Result<SystemTime> {
    if !(s.is_finite() && s > 0.0) {
        return Err(Error::input(format!("{flag}: must be a positive number of seconds since 1970, got {s}")));
    }
    Ok(std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(s))
}

/// Seconds since 1970 now.
pub fn unix_now_s() -> f64 {
    SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs_f64()
}

fn check_rate(rate_hz: f64, max: f64) -> Result<()> {
    positive("--rate-hz", rate_hz)?;
    if rate_hz > max {
        return Err(Error::input(format!("--rate-hz: must be at most {max}, got {rate_hz}")));
    }
    Ok(())
}

/// A UR controller to emulate.
#[derive(Clone, Debug)]
pub struct RobotEmulator {
    /// Address to listen on ("127.0.0.1:0": any free port).
    pub bind: String,
    /// The controller played: CB3 (URControl 3.x, 125 Hz) or e-Series
    /// (5.x, 500 Hz).
    pub controller: Controller,
    /// Amplitude of the built-in sinusoidal flange motion \[m\].
    pub amplitude_m: f64,
    pub quirks: Quirks,
    /// Flange poses to play instead (robot base frame, controller time).
    pub trajectory: Option<Vec<(f64, [f64; 6])>>,
    /// Wall-clock time \[s since 1970\] at which the trajectory's t = 0 plays.
    pub start_at_unix_s: Option<f64>,
    /// What `actual_TCP_force` / `ft_raw_wrench` report (base frame, trajectory time).
    pub wrench_base: Option<record::rtde::WrenchSignal>,
}

impl RobotEmulator {
    pub fn new(bind: &str) -> RobotEmulator {
        RobotEmulator {
            bind: bind.into(),
            controller: Controller::ESeries,
            amplitude_m: 0.02,
            quirks: Quirks::default(),
            trajectory: None,
            start_at_unix_s: None,
            wrench_base: None,
        }
    }

    /// Starts the controller's server in this process; it stops when dropped.
    pub fn start(&self) -> Result<Emulator> {
        let trajectory = match &self.trajectory {
            Some(samples) => Some(Arc::new(lie::trajectory::PoseTrajectory::from_ur(samples.clone()).input("--trajectory")?)),
            None => None,
        };
        let trajectory_delay_s = match self.start_at_unix_s {
            Some(t) => -serial_emulators::seconds_since(unix_time("--start-at-unix-s", t)?),
            None => 0.0,
        };
        let cfg = EmulatorConfig {
            controller: self.controller,
            amplitude_m: self.amplitude_m,
            quirks: self.quirks,
            trajectory,
            trajectory_delay_s,
            wrench_base: self.wrench_base.clone(),
            ..EmulatorConfig::default()
        };
        Emulator::spawn(&self.bind, cfg).map_err(|e| Error::input(format!("--bind {}: {e}", self.bind)))
    }
}

/// An FT 300 to emulate.
#[derive(Clone, Debug)]
pub struct Ft300Emulator {
    pub rate_hz: f64,
    /// Every N frames, also send garbage, a truncated and a corrupted frame.
    pub inject_garbage_every: Option<u64>,
    /// A wrench to play (sensor frame; time from the start command).
    pub wrench: Option<Vec<(f64, [f64; 6])>>,
    /// Wall-clock time \[s since 1970\] of the wrench table's t = 0.
    pub start_at_unix_s: Option<f64>,
    /// Added to every frame `[fx, fy, fz, mx, my, mz]` \[N, N m\].
    pub bias: [f64; 6],
    /// Noise per force \[N\] and moment \[N m\] component.
    pub noise_n: f64,
    pub noise_nm: f64,
    pub seed: u64,
    /// Streams from power-up, before any start command.
    pub streaming_at_power_up: bool,
}

impl Ft300Emulator {
    pub fn new(rate_hz: f64) -> Ft300Emulator {
        Ft300Emulator {
            rate_hz,
            inject_garbage_every: None,
            wrench: None,
            start_at_unix_s: None,
            bias: [0.0; 6],
            noise_n: 0.0,
            noise_nm: 0.0,
            seed: 1,
            streaming_at_power_up: false,
        }
    }

    fn config(&self) -> Result<Ft300EmulatorConfig> {
        check_rate(self.rate_hz, 1000.0)?;
        if self.inject_garbage_every == Some(0) {
            return Err(Error::input("--inject-garbage-every: must be at least 1"));
        }
        lab::error::non_negative("--noise-n", self.noise_n)?;
        lab::error::non_negative("--noise-nm", self.noise_nm)?;
        if !self.bias.iter().all(|b| b.is_finite()) {
            return Err(Error::input("--bias: expected six finite numbers fx,fy,fz,mx,my,mz"));
        }
        let wrench = self.wrench.clone().map(WrenchTable::new).transpose().input("--wrench")?.map(Arc::new);
        let wrench_start = self.start_at_unix_s.map(|t| unix_time("--start-at-unix-s", t)).transpose()?;
        Ok(Ft300EmulatorConfig {
            inject_garbage_every: self.inject_garbage_every,
            wrench,
            wrench_start,
            bias: self.bias,
            noise_n: self.noise_n,
            noise_nm: self.noise_nm,
            seed: self.seed,
            streaming_at_power_up: self.streaming_at_power_up,
            ..Ft300EmulatorConfig::new(self.rate_hz)
        })
    }

    /// Plays the sensor on `port` until `stop`; returns the frames sent.
    pub fn run(&self, port: Port, stop: Arc<AtomicBool>) -> Result<u64> {
        let cfg = self.config()?;
        Ok(serial_emulators::run_ft300(port, &cfg, stop)?)
    }
}

/// An ASCII line sensor to emulate.
#[derive(Clone, Debug)]
pub struct AsciiEmulator {
    pub rate_hz: f64,
    pub separator: Separator,
    /// Values to play (each row held until the next) instead of the
    /// built-in `seq,t_us,force_mn` lines.
    pub values: Option<Vec<(f64, Vec<f64>)>>,
    /// Wall-clock time \[s since 1970\] of the values' t = 0.
    pub start_at_unix_s: Option<f64>,
}

impl AsciiEmulator {
    /// Plays the sensor on `port` until `stop`; returns the lines sent.
    pub fn run(&self, port: Port, stop: Arc<AtomicBool>) -> Result<u64> {
        check_rate(self.rate_hz, 10_000.0)?;
        let playback = match &self.values {
            Some(rows) => Some(AsciiPlayback {
                table: Arc::new(ValueTable::new(rows.clone()).input("--values")?),
                start: self.start_at_unix_s.map(|t| unix_time("--start-at-unix-s", t)).transpose()?,
            }),
            None => None,
        };
        Ok(serial_emulators::run_ascii(port, self.rate_hz, &self.separator, playback.as_ref(), stop)?)
    }
}

/// Opens a serial device for an emulator (one end of a `socat` pair).
pub fn open_port(path: &Path, baud: u32) -> Result<Port> {
    Ok(serial::open(&path.to_string_lossy(), baud)?)
}

/// An ATI Net F/T to emulate: RDT on UDP at `bind` (49152 on a real box),
/// its calibration on TCP at the port below.
#[derive(Clone, Debug)]
pub struct NetFtEmulatorSpec {
    pub bind: String,
    pub rate_hz: f64,
    /// The wrench it reads \[N, N m\].
    pub wrench: [f64; 6],
    pub counts_per_force: u32,
    pub counts_per_torque: u32,
    pub quirks: NetFtQuirks,
}

impl NetFtEmulatorSpec {
    pub fn start(&self) -> Result<record::netft::NetFtEmulator> {
        check_rate(self.rate_hz, 10_000.0)?;
        if self.counts_per_force == 0 || self.counts_per_torque == 0 {
            return Err(Error::input("--counts-per-force, --counts-per-torque: must be positive"));
        }
        if !self.wrench.iter().all(|v| v.is_finite()) {
            return Err(Error::input("--wrench: expected six finite numbers"));
        }
        let cfg = record::netft::NetFtEmulatorConfig {
            counts_per_force: self.counts_per_force,
            counts_per_torque: self.counts_per_torque,
            quirks: self.quirks,
            ..record::netft::NetFtEmulatorConfig::constant(self.rate_hz, self.wrench)
        };
        record::netft::NetFtEmulator::spawn(&self.bind, cfg)
            .map_err(|e| Error::input(format!("--bind {}: {e} (the calibration listens on the port below it)", self.bind)))
    }
}
