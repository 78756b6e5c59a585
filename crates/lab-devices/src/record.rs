//! Recording a session from the devices of a rig: every device is checked
//! before recording starts (a wrong address or port is an input error),
//! then each records in its own thread into the session's streams on one
//! host clock until stopped (a flag, or a duration).

use lab::error::{Context, Error, Result};
use lab::progress::Progress;
use record::robot::{self, Clock, Status};
use record::serial;
use session::{Rig, SessionDir};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to record.
pub struct RecordRequest<'a> {
    pub rig: &'a Rig,
    pub rig_path: &'a Path,
    /// The rig file verbatim (kept in session.toml).
    pub rig_text: &'a str,
    pub out: &'a SessionDir,
    /// `out` already holds a session: record a new segment inside it
    /// (`segment-NN`, a session of its own with its own start time)
    /// instead of refusing.
    pub append: bool,
    /// Stop after this long \[s\] (default: when `stop` is set).
    pub duration_s: Option<f64>,
    /// Set to stop (Ctrl-C, a test, the virtual lab).
    pub stop: Arc<AtomicBool>,
    /// Serve a live view of the recording in the browser.
    pub view: Option<crate::view::live::LiveOptions>,
}

/// One device's figures at the end (as `session.toml` keeps them).
pub use session::DeviceRecord as DeviceSummary;

/// A finished recording.
#[derive(Clone, Debug)]
pub struct Recording {
    /// Where it was written: `out`, or a new segment inside it.
    pub session: SessionDir,
    pub devices: Vec<DeviceSummary>,
    pub wall_time_s: f64,
    /// CPU time of this process (Linux), to show what recording costs.
    pub cpu_s: Option<f64>,
    /// Capture settings a camera refused (or a file could not take).
    pub warnings: Vec<String>,
    /// Live-view updates dropped for browsers that did not keep up.
    pub view_dropped_updates: Option<u64>,
}

impl Recording {
    pub fn device(&self, name: &str) -> Option<&DeviceSummary> {
        self.devices.iter().find(|d| d.name == name)
    }
}

fn summary(name: &str, st: &Status) -> DeviceSummary {
    let first = st.first_sample_ns.load(Ordering::Relaxed);
    DeviceSummary {
        name: name.into(),
        rows: st.rows.load(Ordering::Relaxed),
        rows_lost: 0,
        gaps: st.gaps.load(Ordering::Relaxed),
        missing_samples: st.missing_packages.load(Ordering::Relaxed),
        reconnects: st.reconnects.load(Ordering::Relaxed),
        errors: st.errors.load(Ordering::Relaxed),
        rejected: st.rejected.load(Ordering::Relaxed),
        outage_s: st.outage_ns.load(Ordering::Relaxed) as f64 * 1e-9,
        first_sample_s: (first != i64::MIN).then_some(first as f64 * 1e-9),
        backlog_reads: st.backlog_reads.load(Ordering::Relaxed),
        backlog_samples: st.backlog_samples.load(Ordering::Relaxed),
        identity: st.identity(),
        last_error: st.last_error(),
        settings: st.settings.lock().map(|s| s.iter().cloned().collect()).unwrap_or_default(),
    }
}

/// What a device recorded, as its stream on disk has it: the rows counted
/// as they were written may include some a failed write never stored.
fn summary_on_disk(session: &Path, name: &str, st: &Status) -> DeviceSummary {
    let mut d = summary(name, st);
    if let Ok(rows) = session::stream_rows_on_disk(session, name) {
        if rows < d.rows {
            let lost = format!("{} rows counted, {rows} on disk", d.rows);
            d.last_error = Some(d.last_error.map_or(lost.clone(), |e| format!("{e} ({lost})")));
            d.rows_lost = d.rows - rows;
            d.rows = rows;
        }
    }
    d
}

/// Joins the device threads; a failed one's error becomes its last error.
/// Returned: the failure of the device whose thread ended first (the
/// recording stopped there, said with its time), else the first failure.
/// (A full disk fails every device within milliseconds; the one that
/// stopped the recording is named, whichever thread order they have.)
fn join_devices(threads: Vec<std::thread::JoinHandle<Result<()>>>, statuses: &[(String, Arc<Status>)], ended_early: Option<(usize, f64)>) -> Option<Error> {
    let mut failures = vec![];
    for (k, (t, (name, st))) in threads.into_iter().zip(statuses).enumerate() {
        let e = match t.join() {
            Ok(Ok(())) => continue,
            Ok(Err(e)) => e,
            Err(_) => Error::computation("its recorder thread panicked"),
        };
        st.failed(&e.to_string());
        let when = match ended_early {
            Some((j, t_s)) if j == k => format!(" at {t_s:.1} s: the recording stopped there"),
            _ => String::new(),
        };
        failures.push((k, e.context(format!("device {name} failed{when}"))));
    }
    let first_to_end = failures.iter().position(|(k, _)| ended_early.is_some_and(|(j, _)| j == *k)).unwrap_or(0);
    (!failures.is_empty()).then(|| failures.swap_remove(first_to_end).1)
}

/// Starts a device's recorder thread; `failed` gains its flag, set when
/// the thread ends with an error.
fn spawn_device(failed: &mut Vec<Arc<AtomicBool>>, run: impl FnOnce() -> Result<()> + Send + 'static) -> std::thread::JoinHandle<Result<()>> {
    let flag = Arc::new(AtomicBool::new(false));
    failed.push(flag.clone());
    std::thread::spawn(move || {
        let result = run();
        if result.is_err() {
            flag.store(true, Ordering::Relaxed);
        }
        result
    })
}

type OpenCamera = (record::camera::CameraConfig, Box<dyn record::camera::FrameSource>, Vec<(String, f64)>);

/// The disk's line at the start ([`crate::disk::budget`]): each device's
/// bytes a second from what it was configured and reported to do (a table
/// stream at most its rows of 8-byte values, a serial line at most its
/// baud rate's bytes), against the free space where the session goes.
fn disk_line(
    rig: &session::Rig,
    cameras: &[OpenCamera],
    netfts: &[(record::netft::NetFtConfig, record::netft::Calibration)],
    serial_ports: &[(record::serial::SerialConfig, Box<dyn record::serial::SerialSensor>, record::serial::Port)],
    root: &Path,
    duration_s: Option<f64>,
) -> String {
    use crate::disk::{camera_rate, table_rate};
    let mut rates = vec![];
    for r in &rig.robots {
        // Every variable at most six values (a pose, a wrench).
        rates.push(table_rate(&r.name, r.frequency_hz.unwrap_or(500.0), 1 + 6 * r.variables.len()));
    }
    for (cfg, capture, _) in cameras {
        // What the camera (or file) delivers, else what was asked.
        let [width, height, fps] = record::camera::delivers(capture.as_ref());
        let width = width.or(cfg.settings.width_px.map(f64::from)).unwrap_or(1280.0);
        let height = height.or(cfg.settings.height_px.map(f64::from)).unwrap_or(720.0);
        let fps = cfg.fps.or(fps).unwrap_or(30.0);
        rates.push(camera_rate(&cfg.name, width, height, fps, &cfg.container));
    }
    for (cfg, _) in netfts {
        // RDT streams at most 7 kHz: forces, moments and three counters.
        rates.push(table_rate(&cfg.name, 7000.0, 9));
    }
    for (cfg, sensor, _) in serial_ports {
        let columns = sensor.columns().len().max(1);
        rates.push(table_rate(&cfg.name, cfg.baud as f64 / 10.0 / (2 * columns) as f64, columns));
    }
    match crate::disk::free_bytes(root) {
        Some(free) => crate::disk::budget(&rates, free, duration_s).0,
        None => format!("disk: the free space of {} is unknown", root.display()),
    }
}

/// Records until `req.stop` is set or `req.duration_s` has passed.
pub fn record(req: &RecordRequest, progress: &dyn Progress) -> Result<Recording> {
    let rig = req.rig;
    let rig_name = req.rig_path.display().to_string();
    if let Some(d) = req.duration_s {
        lab::error::positive("--duration", d)?;
    }
    // The directory first: held for the whole recording, and never taken over.
    let root = req.out.path();
    std::fs::create_dir_all(root).map_err(|e| Error::io(format!("{}: cannot create: {e}", root.display())))?;
    let _lock = req.out.lock_for_recording()?;
    let target = target_dir(req.out, req.append)?;
    // Fail early and clearly: every device must answer and know its variables.
    for r in record::rig::robot_configs(rig) {
        robot::probe(&r).map_err(|e| Error::input(format!("{rig_name}: robot '{}' at {}: {e}", r.name, r.address)))?;
    }
    let mut cameras = vec![];
    let mut warnings = vec![];
    for cfg in record::rig::camera_configs(rig) {
        let mut capture = record::camera::open(&cfg).input(&rig_name)?;
        let (reported, w) = record::camera::apply_settings(&cfg, &mut capture);
        let capture: Box<dyn record::camera::FrameSource> = Box::new(capture);
        warnings.extend(w);
        cameras.push((cfg, capture, reported));
    }
    let mut netfts = vec![];
    for cfg in record::rig::netft_configs(rig) {
        let cal = record::netft::probe(&cfg).map_err(|e| Error::input(format!("{rig_name}: netft '{}': {e}", cfg.name)))?;
        netfts.push((cfg, cal));
    }
    let mut serial_ports = vec![];
    for (cfg, sensor) in record::rig::serial_sensors(rig) {
        let port = serial::open(&cfg.port, cfg.baud).map_err(|e| Error::input(format!("{rig_name}: sensor '{}': {e}", cfg.name)))?;
        serial_ports.push((cfg, sensor, port));
    }
    // What waited in the serial ports (a sensor streaming before anyone
    // read) is dropped now, all ports at once, just before the clock starts.
    std::thread::scope(|scope| {
        for (_, _, port) in serial_ports.iter_mut() {
            scope.spawn(move || serial::drop_backlog(port));
        }
    });
    progress.note(&disk_line(rig, &cameras, &netfts, &serial_ports, root, req.duration_s));
    // The view's address too, before anything is written.
    let bound_view = req.view.clone().map(crate::view::live::bind).transpose()?;
    let out = target.path();
    std::fs::create_dir_all(out).map_err(|e| Error::io(format!("{}: cannot create: {e}", out.display())))?;
    // The clock and start_unix_s are read together: t_host_ns counts from start_unix_s.
    let clock = Clock::start();
    let mut meta = session::SessionMeta::start(&rig.session.operator_notes, &rig_name, req.rig_text, rig.frames);
    meta.write(out)?;

    let stop = req.stop.clone();
    let mut threads: Vec<std::thread::JoinHandle<Result<()>>> = vec![];
    // Per device thread: it ended with an error.
    let mut failed: Vec<Arc<AtomicBool>> = vec![];
    let mut statuses: Vec<(String, Arc<Status>)> = vec![];
    for r in record::rig::robot_configs(rig) {
        let status = Arc::new(Status::default());
        statuses.push((r.name.clone(), status.clone()));
        let (s, dir) = (stop.clone(), out.to_path_buf());
        threads.push(spawn_device(&mut failed, move || robot::record(&r, &dir, clock, s, status).map_err(Error::from)));
    }
    for (cfg, capture, reported) in cameras {
        let status = Arc::new(Status::default());
        if let Ok(mut s) = status.settings.lock() {
            *s = reported;
        }
        statuses.push((cfg.name.clone(), status.clone()));
        let (s, dir) = (stop.clone(), out.to_path_buf());
        threads.push(spawn_device(&mut failed, move || record::camera::record(&cfg, capture, &dir, clock, s, status).map_err(Error::from)));
    }
    for (cfg, cal) in netfts {
        let status = Arc::new(Status::default());
        statuses.push((cfg.name.clone(), status.clone()));
        let (s, dir) = (stop.clone(), out.to_path_buf());
        threads.push(spawn_device(&mut failed, move || record::netft::record(&cfg, cal, &dir, clock, s, status).map_err(Error::from)));
    }
    for (cfg, sensor, port) in serial_ports {
        let status = Arc::new(Status::default());
        statuses.push((cfg.name.clone(), status.clone()));
        let (s, dir) = (stop.clone(), out.to_path_buf());
        threads.push(spawn_device(&mut failed, move || serial::record(&cfg, sensor, port, &dir, clock, s, status).map_err(Error::from)));
    }
    // The view reads the recorders' taps (its address was taken above).
    let view = match bound_view {
        Some(b) => {
            let title = format!("rodlab: recording {}", target.name());
            match crate::view::live::start(b, &title, statuses.clone(), rig.frames, clock) {
                Ok(v) => {
                    progress.note(&format!("live view: {}", v.url()));
                    Some(v)
                }
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    for t in threads {
                        let _ = t.join();
                    }
                    return Err(e);
                }
            }
        }
        None => None,
    };
    let started = Instant::now();
    let task = progress.task("record", None);
    let mut last_rows: Vec<u64> = vec![0; statuses.len()];
    let mut last_t = Instant::now();
    // A device whose thread failed (its stream could not be written, say)
    // stops the recording at once, not at its end. A device that ended
    // well (a camera's file played to its end) leaves the others running.
    let mut ended_early: Option<(usize, f64)> = None;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(250));
        if req.duration_s.is_some_and(|d| started.elapsed().as_secs_f64() >= d) {
            stop.store(true, Ordering::Relaxed);
        }
        if let Some(k) = failed.iter().position(|f| f.load(Ordering::Relaxed)) {
            ended_early = Some((k, clock.now_ns() as f64 * 1e-9));
            stop.store(true, Ordering::Relaxed);
        }
        let dt = last_t.elapsed().as_secs_f64();
        last_t = Instant::now();
        let line: Vec<String> = statuses
            .iter()
            .zip(last_rows.iter_mut())
            .map(|((name, st), last)| {
                let d = summary(name, st);
                let rate = (d.rows - *last) as f64 / dt;
                *last = d.rows;
                format!("{name}: {rate:.0} Hz, {} rows, {} gaps, {} reconnects, {} errors, {} rejected", d.rows, d.gaps, d.reconnects, d.errors, d.rejected)
            })
            .collect();
        task.message(&format!("{:.1} s | {}", started.elapsed().as_secs_f64(), line.join(" | ")));
        // What a device says must be seen now (a controller's exception).
        for (_, st) in &statuses {
            for alert in st.take_alerts() {
                progress.note(&alert);
                warnings.push(alert);
            }
        }
    }
    drop(task);
    let view_dropped_updates = view.map(|v| v.dropped_updates());
    let failure = join_devices(threads, &statuses, ended_early);
    let late_alerts: Vec<String> = statuses.iter().flat_map(|(_, st)| st.take_alerts()).collect();
    warnings.extend(late_alerts);
    let devices: Vec<DeviceSummary> = statuses.iter().map(|(n, st)| summary_on_disk(out, n, st)).collect();
    // The session says it was finished, and what each device recorded.
    meta.finish(devices.clone());
    meta.write(out)?;
    if let Some(e) = failure {
        return Err(e.context(format!("{} (the session is kept, finalised)", target.path().display())));
    }
    let silent: Vec<String> = devices.iter().filter(|d| d.rows == 0).map(nothing_recorded).collect();
    if !silent.is_empty() {
        return Err(Error::computation(format!("{}: {} (the session is kept, finalised)", target.path().display(), silent.join("; "))));
    }
    Ok(Recording { session: target, devices, wall_time_s: started.elapsed().as_secs_f64(), cpu_s: own_cpu_seconds(), warnings, view_dropped_updates })
}

/// Why a device recorded no row, for the recording's failure.
fn nothing_recorded(d: &DeviceSummary) -> String {
    let why = d.last_error.as_deref().unwrap_or("no sample arrived");
    if d.rejected > 0 {
        format!("device {} recorded nothing: {} samples arrived, every one rejected ({why})", d.name, d.rejected)
    } else {
        format!("device {} recorded nothing ({why})", d.name)
    }
}

/// Where to record: `out` when it is empty; a new `segment-NN` inside it
/// when it holds a session and `append` was asked for.
fn target_dir(out: &SessionDir, append: bool) -> Result<SessionDir> {
    let contents = out.contents();
    if contents.is_empty() {
        return Ok(out.clone());
    }
    if append && !out.meta_path().is_file() {
        return Err(Error::input(format!(
            "{}: --append adds a segment to a session, and this directory holds none (no session.toml): record into a new directory",
            out.path().display()
        )));
    }
    if !append {
        let shown: Vec<&str> = contents.iter().take(4).map(String::as_str).collect();
        return Err(Error::input(format!(
            "{}: is not empty (it holds {}{}): record into a new directory, or add --append to record a new segment inside it",
            out.path().display(),
            shown.join(", "),
            if contents.len() > 4 { ", ..." } else { "" }
        )));
    }
    let n = (2..).find(|n| !out.path().join(format!("segment-{n:02}")).exists()).expect("a free number");
    Ok(SessionDir::new(out.path().join(format!("segment-{n:02}"))))
}

/// CPU time (user + system) of this process so far, from /proc (Linux;
/// USER_HZ is 100 there).
fn own_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}
