//! ATI Net F/T (and its compatibles: Axia, Schunk FTN-AXIA) over Ethernet:
//! ATI's Raw Data Transfer (RDT) protocol on UDP port 49152, the
//! calibration read (`READCALINFO`) on TCP port 49151, a recorder that keeps
//! every record that arrives once and in order (UDP reorders, duplicates
//! and loses datagrams: the RDT sequence number tells), and an emulator
//! that speaks the same bytes with those faults on request.
//!
//! Request (8 bytes, big-endian): `u16 0x1234, u16 command, u32 sample
//! count` (0: until stopped). Record (36 bytes): `u32 rdt_sequence, u32
//! ft_sequence, u32 status, i32 Fx, Fy, Fz, Tx, Ty, Tz` in counts.

use crate::outage::{Continuity, Outages};
use crate::robot::{Clock, Status};
use session::StreamWriter;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const HEADER: u16 = 0x1234;
pub const STOP: u16 = 0x0000;
pub const START_REALTIME: u16 = 0x0002;
pub const SET_BIAS: u16 = 0x0042;
pub const RECORD_BYTES: usize = 36;
pub const READCALINFO: u8 = 0x01;

#[derive(Debug, thiserror::Error)]
pub enum NetFtError {
    #[error("Net F/T at {0}: {1}")]
    Connect(String, String),
    #[error("Net F/T: {0}")]
    Io(#[from] std::io::Error),
    #[error("Net F/T calibration: {0}")]
    Calibration(String),
    #[error("{0}")]
    Session(#[from] session::TableError),
}

impl fault::Fault for NetFtError {
    fn kind(&self) -> fault::Kind {
        match self {
            NetFtError::Connect(..) | NetFtError::Calibration(_) => fault::Kind::Input,
            NetFtError::Session(e) => e.kind(),
            NetFtError::Io(_) => fault::Kind::Io,
        }
    }
}

/// An RDT request.
pub fn request(command: u16, sample_count: u32) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..2].copy_from_slice(&HEADER.to_be_bytes());
    b[2..4].copy_from_slice(&command.to_be_bytes());
    b[4..].copy_from_slice(&sample_count.to_be_bytes());
    b
}

/// `(command, sample_count)` of a request; None without the header.
pub fn parse_request(b: &[u8]) -> Option<(u16, u32)> {
    (b.len() == 8 && u16::from_be_bytes([b[0], b[1]]) == HEADER).then(|| (u16::from_be_bytes([b[2], b[3]]), u32::from_be_bytes([b[4], b[5], b[6], b[7]])))
}

/// One RDT record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub rdt_sequence: u32,
    /// The sensor's own sample counter (its clock).
    pub ft_sequence: u32,
    /// Zero when healthy; the Net F/T's error bits otherwise.
    pub status: u32,
    /// Fx, Fy, Fz, Tx, Ty, Tz in counts.
    pub counts: [i32; 6],
}

impl Record {
    pub fn encode(&self) -> [u8; RECORD_BYTES] {
        let mut b = [0u8; RECORD_BYTES];
        b[..4].copy_from_slice(&self.rdt_sequence.to_be_bytes());
        b[4..8].copy_from_slice(&self.ft_sequence.to_be_bytes());
        b[8..12].copy_from_slice(&self.status.to_be_bytes());
        for (k, c) in self.counts.iter().enumerate() {
            b[12 + 4 * k..16 + 4 * k].copy_from_slice(&c.to_be_bytes());
        }
        b
    }

    pub fn decode(b: &[u8]) -> Option<Record> {
        if b.len() != RECORD_BYTES {
            return None;
        }
        let u = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Some(Record { rdt_sequence: u(0), ft_sequence: u(4), status: u(8), counts: std::array::from_fn(|k| u(12 + 4 * k) as i32) })
    }
}

/// Counts per newton and per newton metre.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    pub counts_per_n: f64,
    pub counts_per_nm: f64,
}

impl Calibration {
    /// Checks the values (a zero would make every force infinite).
    pub fn new(counts_per_n: f64, counts_per_nm: f64) -> Result<Calibration, NetFtError> {
        for (name, v) in [("counts_per_force", counts_per_n), ("counts_per_torque", counts_per_nm)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(NetFtError::Calibration(format!("{name} must be positive, got {v}")));
            }
        }
        Ok(Calibration { counts_per_n, counts_per_nm })
    }

    /// The wrench \[N, N m\] of a record's counts.
    pub fn wrench(&self, counts: &[i32; 6]) -> [f64; 6] {
        std::array::from_fn(|k| counts[k] as f64 / if k < 3 { self.counts_per_n } else { self.counts_per_nm })
    }

    /// Counts of a wrench, rounded.
    pub fn counts(&self, wrench: &[f64; 6]) -> [i32; 6] {
        std::array::from_fn(|k| (wrench[k] * if k < 3 { self.counts_per_n } else { self.counts_per_nm }).round() as i32)
    }
}

/// Newtons per unit of the Net F/T's force unit codes (1 lbf, 2 N, 3 klbf,
/// 4 kN, 5 kgf, 6 gf) and newton metres per torque unit (1 lbf-in,
/// 2 lbf-ft, 3 N-m, 4 N-mm, 5 kgf-cm, 6 kN-m).
fn force_unit_n(code: u8) -> Option<f64> {
    [4.448_221_615_260_5, 1.0, 4_448.221_615_260_5, 1_000.0, 9.806_65, 0.009_806_65].get(usize::from(code).checked_sub(1)?).copied()
}

fn torque_unit_nm(code: u8) -> Option<f64> {
    [0.112_984_829_027_616_7, 1.355_817_948_331_4, 1.0, 0.001, 0.098_066_5, 1_000.0].get(usize::from(code).checked_sub(1)?).copied()
}

/// The `READCALINFO` reply: `u16 0x1234, u8 force unit, u8 torque unit,
/// u32 counts per force, u32 counts per torque, u16 scale factors[6]`.
pub fn calibration_reply(force_unit: u8, torque_unit: u8, counts_per_force: u32, counts_per_torque: u32) -> [u8; 24] {
    let mut b = [0u8; 24];
    b[..2].copy_from_slice(&HEADER.to_be_bytes());
    b[2] = force_unit;
    b[3] = torque_unit;
    b[4..8].copy_from_slice(&counts_per_force.to_be_bytes());
    b[8..12].copy_from_slice(&counts_per_torque.to_be_bytes());
    for k in 0..6 {
        b[12 + 2 * k..14 + 2 * k].copy_from_slice(&1u16.to_be_bytes());
    }
    b
}

/// Reads the calibration over TCP (`READCALINFO`), in SI units.
pub fn read_calibration(addr: SocketAddr, timeout: Duration) -> Result<Calibration, NetFtError> {
    let what = addr.to_string();
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| NetFtError::Connect(what.clone(), format!("calibration port: {e}")))?;
    s.set_read_timeout(Some(timeout))?;
    let mut req = [0u8; 20];
    req[0] = READCALINFO;
    s.write_all(&req)?;
    let mut b = [0u8; 24];
    s.read_exact(&mut b).map_err(|e| NetFtError::Calibration(format!("{what}: no READCALINFO reply: {e}")))?;
    if u16::from_be_bytes([b[0], b[1]]) != HEADER {
        return Err(NetFtError::Calibration(format!("{what}: the reply does not start with 0x1234")));
    }
    let n_per = force_unit_n(b[2]).ok_or_else(|| NetFtError::Calibration(format!("{what}: unknown force unit code {}", b[2])))?;
    let nm_per = torque_unit_nm(b[3]).ok_or_else(|| NetFtError::Calibration(format!("{what}: unknown torque unit code {}", b[3])))?;
    let cpf = u32::from_be_bytes([b[4], b[5], b[6], b[7]]) as f64;
    let cpt = u32::from_be_bytes([b[8], b[9], b[10], b[11]]) as f64;
    // Counts per unit -> counts per newton (newton metre).
    Calibration::new(cpf / n_per, cpt / nm_per).map_err(|e| NetFtError::Calibration(format!("{what}: {e}")))
}

/// A Net F/T in the rig file.
#[derive(Clone, Debug)]
pub struct NetFtConfig {
    pub name: String,
    /// host:port of the RDT server (UDP, 49152).
    pub address: String,
    /// The calibration's TCP port (49151).
    pub calibration_port: u16,
    /// Counts per N and per N m; None: read from the sensor.
    pub calibration: Option<(f64, f64)>,
    /// Send the bias command (zero the sensor) before streaming.
    pub tare: bool,
}

impl NetFtConfig {
    fn socket_addr(&self) -> Result<SocketAddr, NetFtError> {
        self.address
            .to_socket_addrs()
            .map_err(|e| NetFtError::Connect(self.address.clone(), e.to_string()))?
            .next()
            .ok_or_else(|| NetFtError::Connect(self.address.clone(), "no address".into()))
    }

    /// The calibration: given, or read from the sensor.
    pub fn calibration(&self) -> Result<Calibration, NetFtError> {
        match self.calibration {
            Some((f, t)) => Calibration::new(f, t),
            None => {
                let mut a = self.socket_addr()?;
                a.set_port(self.calibration_port);
                read_calibration(a, Duration::from_secs(2))
            }
        }
    }
}

/// Checks the sensor before recording: its calibration and one record.
pub fn probe(cfg: &NetFtConfig) -> Result<Calibration, NetFtError> {
    let cal = cfg.calibration()?;
    let sock = UdpSocket::bind("0.0.0.0:0")?;
    sock.connect(cfg.socket_addr()?)?;
    sock.set_read_timeout(Some(Duration::from_millis(500)))?;
    for _ in 0..3 {
        sock.send(&request(START_REALTIME, 1))?;
        let mut b = [0u8; 64];
        if let Ok(n) = sock.recv(&mut b) {
            if Record::decode(&b[..n]).is_some() {
                return Ok(cal);
            }
        }
    }
    Err(NetFtError::Connect(cfg.address.clone(), "no RDT record in reply to a one-sample request (UDP 49152)".into()))
}

/// Records arriving out of order are held this many sequence numbers
/// before a missing one is declared lost.
const REORDER_WINDOW: u32 = 32;

/// The fastest a Net F/T streams RDT records \[Hz\] (ATI: 7000): a sequence
/// number further ahead than this rate allows since the last record (with
/// a margin) belongs to no stream the sensor sent.
pub const MAX_RDT_RATE_HZ: f64 = 7000.0;

/// What [`Reorder`] releases.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Released {
    /// A record in sequence order, at host time `t_ns` (never before the
    /// previous one's), and how many sequence numbers went missing before it.
    Record { t_ns: i64, record: Record, missing: u64 },
    /// The sensor's numbering restarted (ATI's RDT numbers from 1 in every
    /// stream a start request opens): a new stream begins with the next
    /// record, how much was missed in between is unknown.
    NewStream { t_ns: i64 },
}

/// Puts records back in order within a stream, drops duplicates, knows
/// that a stream restarts (a sequence far below the last that could start
/// a stream: the box rebooted, or a start request renumbered it), and
/// refuses a number further ahead than any stream could have reached
/// (a spoofed or corrupted datagram).
#[derive(Default)]
pub struct Reorder {
    held: BTreeMap<u32, (i64, Record)>,
    /// The last sequence number released, and the host time it arrived.
    last: Option<(u32, i64)>,
    /// Host time from which a new stream's numbers count (the start
    /// request, or the last record heard).
    stream_from_ns: Option<i64>,
    /// Host time of the last record released (stamps never run back).
    last_stamp_ns: i64,
    /// The previous stream's last number and when it came: a datagram of
    /// it that arrives after the new stream began is late, not forged.
    previous: Option<(u32, i64)>,
    /// Records dropped as duplicates, or late (their stream had ended).
    pub duplicates: u64,
    /// Records refused as beyond any stream's reach.
    pub implausible: u64,
    /// New streams after the first.
    pub restarts: u64,
    /// The newest sample counter (`ft_sequence`) of any record taken: the
    /// sensor's own count, which a new RDT stream does not restart.
    newest_ft: Option<u32>,
}

impl Reorder {
    /// The largest sequence number a stream could reach `dt_ns` after
    /// number `from`.
    fn reach(from: u32, dt_ns: i64) -> u32 {
        let ahead = MAX_RDT_RATE_HZ * 1.5 * (dt_ns.max(0) as f64 * 1e-9) + 2.0 * REORDER_WINDOW as f64;
        from.saturating_add(ahead.min(u32::MAX as f64) as u32)
    }

    /// A start request went out at host time `t_ns`: the stream it opens
    /// numbers from 1.
    pub fn started(&mut self, t_ns: i64) {
        self.stream_from_ns.get_or_insert(t_ns);
    }

    /// A record that arrived at host time `t_ns`: what can be released now.
    pub fn push(&mut self, t_ns: i64, r: Record) -> Vec<Released> {
        let s = r.rdt_sequence;
        let top = self.held.last_key_value().map(|(k, v)| (*k, v.0)).into_iter().chain(self.last).max_by_key(|x| x.0);
        let starts_a_stream = |from_ns: Option<i64>| s <= Self::reach(0, t_ns - from_ns.unwrap_or(t_ns));
        let mut out = vec![];
        match top {
            None if starts_a_stream(self.stream_from_ns) => {}
            None => {
                self.implausible += 1;
                return out;
            }
            Some((top, top_t)) if s > top => {
                if s > Self::reach(top, t_ns - top_t) {
                    let late = self.previous.is_some_and(|(p, pt)| s.saturating_add(REORDER_WINDOW) > p && s <= Self::reach(p, t_ns - pt));
                    if late {
                        self.duplicates += 1;
                    } else {
                        self.implausible += 1;
                    }
                    return out;
                }
            }
            // Far below; or at or below the top with a sample newer than
            // every one seen (a stream restarting within the reorder
            // window: a late record is older, a duplicate the same): a new
            // stream, if a stream could be at s by now.
            Some((top, top_t)) if s.saturating_add(REORDER_WINDOW) < top || (s <= top && self.newest_ft.is_some_and(|f| r.ft_sequence > f)) => {
                if !starts_a_stream(Some(top_t)) {
                    self.implausible += 1;
                    return out;
                }
                out.extend(self.release(true));
                self.previous = Some((top, top_t));
                self.last = None;
                self.restarts += 1;
                out.push(Released::NewStream { t_ns });
            }
            Some(_) => {
                if self.last.is_some_and(|(l, _)| s <= l) || self.held.contains_key(&s) {
                    self.duplicates += 1;
                    return out;
                }
            }
        }
        self.stream_from_ns = None;
        self.newest_ft = Some(self.newest_ft.map_or(r.ft_sequence, |f| f.max(r.ft_sequence)));
        self.held.insert(s, (t_ns, r));
        out.extend(self.release(false));
        out
    }

    /// Everything still held (at the end).
    pub fn flush(&mut self) -> Vec<Released> {
        self.release(true)
    }

    fn release(&mut self, all: bool) -> Vec<Released> {
        let mut out = vec![];
        while let Some((&seq, _)) = self.held.first_key_value() {
            let next = self.last.map_or(1, |(l, _)| l.wrapping_add(1));
            let newest = *self.held.last_key_value().expect("not empty").0;
            // In order, or the gap is older than the window: release.
            if seq == next || all || newest.wrapping_sub(seq) >= REORDER_WINDOW {
                let (t, r) = self.held.remove(&seq).expect("held");
                // A stream numbers from 1: those before its first record are missing too.
                let missing = u64::from(seq.wrapping_sub(next));
                self.last = Some((seq, t));
                self.last_stamp_ns = self.last_stamp_ns.max(t);
                out.push(Released::Record { t_ns: self.last_stamp_ns, record: r, missing });
            } else {
                break;
            }
        }
        out
    }
}

/// Records until `stop` is set: the six values in N and N m, and each
/// record's `rdt_sequence`, `ft_sequence` and `status`. Missing sequence
/// numbers go to the gap table as `lost`, a restarted stream as
/// `disconnected`; duplicates and records beyond any stream's reach are
/// dropped and counted as rejected; a status error is kept and raised once.
pub fn record(cfg: &NetFtConfig, cal: Calibration, session: &Path, clock: Clock, stop: Arc<AtomicBool>, status: Arc<Status>) -> Result<(), NetFtError> {
    let columns = ["fx_n", "fy_n", "fz_n", "mx_nm", "my_nm", "mz_nm", "rdt_sequence", "ft_sequence", "status"].map(String::from).to_vec();
    status.tap.set_columns(&columns);
    let mut writer = StreamWriter::create(session, &cfg.name, columns, Duration::from_secs(1))?;
    let mut outages = Outages::new(session, &cfg.name, 0.25, usize::MAX, status.clone())?;
    let sock = UdpSocket::bind("0.0.0.0:0")?;
    sock.connect(cfg.socket_addr()?)?;
    sock.set_read_timeout(Some(Duration::from_millis(100)))?;
    if cfg.tare {
        sock.send(&request(SET_BIAS, 0))?;
        status.set("tare_sent_at_s", clock.now_ns() as f64 * 1e-9);
    }
    status.set("counts_per_n", cal.counts_per_n);
    status.set("counts_per_nm", cal.counts_per_nm);
    let mut reorder = Reorder::default();
    reorder.started(clock.now_ns());
    sock.send(&request(START_REALTIME, 0))?;
    let mut status_raised = false;
    let mut last_heard = Instant::now();
    let mut buf = [0u8; 1500];
    let mut emit = |released: Vec<Released>, writer: &mut StreamWriter, outages: &mut Outages| -> Result<(), NetFtError> {
        let mut new_stream = false;
        for item in released {
            let (t, r, missing) = match item {
                Released::NewStream { .. } => {
                    // The sensor renumbered: the time between is a
                    // disconnection (it forgot the stream), nothing dropped.
                    outages.disconnected();
                    new_stream = true;
                    continue;
                }
                Released::Record { t_ns, record, missing } => (t_ns, record, missing),
            };
            let w = cal.wrench(&r.counts);
            let mut row = w.to_vec();
            row.extend([r.rdt_sequence as f64, r.ft_sequence as f64, r.status as f64]);
            writer.push(t, &row)?;
            let continuity = match (std::mem::take(&mut new_stream), missing) {
                (true, _) => Continuity::Restarted,
                (false, 0) => Continuity::Continuous,
                (false, m) => Continuity::Missing(m),
            };
            outages.arrived(t, 1, continuity)?;
            status.recorded(t, &row);
            if r.status != 0 && !status_raised {
                status_raised = true;
                status.alert(format!(
                    "{}: status 0x{:08x} at RDT sequence {} (a Net F/T error bit: saturation, a broken gauge or a lost sensor)",
                    cfg.name, r.status, r.rdt_sequence
                ));
            }
        }
        Ok(())
    };
    while !stop.load(Ordering::Relaxed) {
        match sock.recv(&mut buf) {
            Ok(n) => {
                let t = clock.now_ns();
                last_heard = Instant::now();
                match Record::decode(&buf[..n]) {
                    Some(r) => {
                        let implausible = reorder.implausible;
                        let released = reorder.push(t, r);
                        if reorder.implausible > implausible {
                            status.rejected.fetch_add(1, Ordering::Relaxed);
                            status.failed(&format!(
                                "a record with RDT sequence {} is further ahead than the sensor can stream ({} Hz at most): refused (a corrupted or spoofed datagram)",
                                r.rdt_sequence, MAX_RDT_RATE_HZ
                            ));
                        }
                        emit(released, &mut writer, &mut outages)?;
                    }
                    None => {
                        status.rejected.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                // A box that restarted forgets the stream: ask again.
                if last_heard.elapsed() > Duration::from_millis(500) {
                    outages.disconnected();
                    reorder.started(clock.now_ns());
                    let _ = sock.send(&request(START_REALTIME, 0));
                    last_heard = Instant::now();
                }
            }
            Err(_) => {
                outages.disconnected();
                std::thread::sleep(Duration::from_millis(50));
                reorder.started(clock.now_ns());
                let _ = sock.send(&request(START_REALTIME, 0));
            }
        }
    }
    let _ = sock.send(&request(STOP, 0));
    let released = reorder.flush();
    emit(released, &mut writer, &mut outages)?;
    status.rejected.fetch_add(reorder.duplicates, Ordering::Relaxed);
    status.set("duplicates", reorder.duplicates as f64);
    status.set("stream_restarts", reorder.restarts as f64);
    status.set("implausible_records", reorder.implausible as f64);
    writer.flush()?;
    outages.finish(clock.now_ns())?;
    Ok(())
}

/// Faults the emulator adds on request (none by default).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NetFtQuirks {
    /// Fraction of records never sent.
    pub lose: f64,
    /// Fraction of records sent after the next one.
    pub reorder: f64,
    /// Fraction of records sent twice.
    pub duplicate: f64,
    /// From this record on, the status word has an error bit.
    pub status_error_at: Option<u32>,
    /// The box reboots every this many seconds: silent for
    /// [`REBOOT_S`], it forgets whoever it streamed to (a client must ask
    /// again; the new stream numbers from 1).
    pub restart_every_s: Option<f64>,
    /// At this record, a datagram from the box's address with RDT sequence
    /// 0xFFFFFF00 and Fz = 999 N (what a spoofer on the network sends).
    pub spoof_at: Option<u32>,
}

/// How long a rebooting emulated box is silent \[s\].
pub const REBOOT_S: f64 = 0.3;

impl std::str::FromStr for NetFtQuirks {
    type Err = String;

    /// `lose=P,reorder=P,duplicate=P,status-error-at=N,restart-every=S,spoof-at=N`
    /// (any subset).
    fn from_str(s: &str) -> Result<NetFtQuirks, String> {
        let mut q = NetFtQuirks::default();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (k, v) = item.split_once('=').ok_or_else(|| format!("quirk '{item}': expected NAME=VALUE"))?;
            let fraction = || v.parse::<f64>().ok().filter(|p| (0.0..1.0).contains(p)).ok_or_else(|| format!("{k}={v}: expected a fraction in [0, 1)"));
            match k {
                "lose" => q.lose = fraction()?,
                "reorder" => q.reorder = fraction()?,
                "duplicate" => q.duplicate = fraction()?,
                "status-error-at" => q.status_error_at = Some(v.parse().map_err(|_| format!("status-error-at={v}: expected a record number"))?),
                "restart-every" => {
                    q.restart_every_s = Some(
                        v.parse::<f64>()
                            .ok()
                            .filter(|s| s.is_finite() && *s > REBOOT_S)
                            .ok_or_else(|| format!("restart-every={v}: expected seconds > {REBOOT_S}"))?,
                    )
                }
                "spoof-at" => q.spoof_at = Some(v.parse().map_err(|_| format!("spoof-at={v}: expected a record number"))?),
                _ => return Err(format!("unknown quirk '{k}' (lose, reorder, duplicate, status-error-at, restart-every, spoof-at)")),
            }
        }
        Ok(q)
    }
}

/// Emulator settings.
#[derive(Clone)]
pub struct NetFtEmulatorConfig {
    pub rate_hz: f64,
    /// Counts per N and per N m it reports (force unit N, torque unit N m).
    pub counts_per_force: u32,
    pub counts_per_torque: u32,
    /// The wrench it reads \[N, N m\] at sensor time t \[s\].
    pub wrench: Arc<dyn Fn(f64) -> [f64; 6] + Send + Sync>,
    pub quirks: NetFtQuirks,
}

impl NetFtEmulatorConfig {
    /// A constant wrench at `rate_hz`, 1,000,000 counts per N and per N m
    /// (a Nano17's order of magnitude).
    pub fn constant(rate_hz: f64, wrench: [f64; 6]) -> NetFtEmulatorConfig {
        NetFtEmulatorConfig {
            rate_hz,
            counts_per_force: 1_000_000,
            counts_per_torque: 1_000_000,
            wrench: Arc::new(move |_| wrench),
            quirks: NetFtQuirks::default(),
        }
    }
}

/// A running Net F/T emulator: RDT on UDP at `addr`, the calibration on
/// TCP at the same address's port - 1 (49152 and 49151 on a real box).
pub struct NetFtEmulator {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    /// Records sent (duplicates counted once), and left out.
    pub sent: Arc<AtomicU64>,
    pub lost: Arc<AtomicU64>,
}

impl NetFtEmulator {
    /// Binds `bind` (UDP) and its port - 1 (TCP, calibration). With port 0,
    /// free ports are tried until the one below is free too.
    pub fn spawn(bind: &str, cfg: NetFtEmulatorConfig) -> std::io::Result<NetFtEmulator> {
        let mut tries_left = if bind.ends_with(":0") { 50 } else { 1 };
        let (udp, tcp, addr) = loop {
            tries_left -= 1;
            let udp = UdpSocket::bind(bind)?;
            let addr = udp.local_addr()?;
            let mut tcp_addr = addr;
            tcp_addr.set_port(addr.port().wrapping_sub(1));
            match TcpListener::bind(tcp_addr) {
                Ok(tcp) => break (udp, tcp, addr),
                Err(_) if tries_left > 0 => continue,
                Err(e) => return Err(e),
            }
        };
        tcp.set_nonblocking(true)?;
        udp.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let (sent, lost) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let mut threads = vec![];
        {
            let (stop, cfg) = (stop.clone(), cfg.clone());
            threads.push(std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match tcp.accept() {
                        Ok((mut s, _)) => {
                            let _ = s.set_nonblocking(false);
                            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                            let mut req = [0u8; 20];
                            if s.read_exact(&mut req).is_ok() && req[0] == READCALINFO {
                                let _ = s.write_all(&calibration_reply(2, 3, cfg.counts_per_force, cfg.counts_per_torque));
                            }
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
            }));
        }
        {
            let (stop, sent, lost) = (stop.clone(), sent.clone(), lost.clone());
            threads.push(std::thread::spawn(move || serve_rdt(udp, &cfg, &stop, &sent, &lost)));
        }
        Ok(NetFtEmulator { addr, stop, threads, sent, lost })
    }

    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for NetFtEmulator {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Streams to whoever asked last, `count` records (0: until stopped).
fn serve_rdt(udp: UdpSocket, cfg: &NetFtEmulatorConfig, stop: &AtomicBool, sent: &AtomicU64, lost: &AtomicU64) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let cal = Calibration { counts_per_n: cfg.counts_per_force as f64, counts_per_nm: cfg.counts_per_torque as f64 };
    let epoch = Instant::now();
    let period = Duration::from_secs_f64(1.0 / cfg.rate_hz);
    let mut peer: Option<SocketAddr> = None;
    let mut remaining: Option<u32> = None;
    let (mut rdt_sequence, mut bias) = (0u32, [0i32; 6]);
    let mut held: Option<[u8; RECORD_BYTES]> = None;
    let mut next = Instant::now();
    let mut buf = [0u8; 64];
    let mut records_sent = 0u32;
    let mut reboots = 0u32;
    while !stop.load(Ordering::Relaxed) {
        // A reboot: silent for a while, then nobody to stream to.
        if let Some(every) = cfg.quirks.restart_every_s {
            if epoch.elapsed().as_secs_f64() >= every * f64::from(reboots + 1) {
                reboots += 1;
                std::thread::sleep(Duration::from_secs_f64(REBOOT_S));
                while udp.recv_from(&mut buf).is_ok() {}
                peer = None;
                held = None;
            }
        }
        while let Ok((n, from)) = udp.recv_from(&mut buf) {
            match parse_request(&buf[..n]) {
                Some((START_REALTIME, count)) => {
                    peer = Some(from);
                    remaining = (count > 0).then_some(count);
                    next = Instant::now();
                    // ATI: every stream a start request opens numbers from 1.
                    rdt_sequence = 0;
                }
                Some((STOP, _)) => peer = None,
                Some((SET_BIAS, _)) => bias = cal.counts(&(cfg.wrench)(epoch.elapsed().as_secs_f64())),
                _ => {}
            }
        }
        // Every record due by now (a late thread catches up).
        while let Some(to) = peer.filter(|_| Instant::now() >= next) {
            next += period;
            // The sensor's own clock: one sample per period since power-up.
            let t = epoch.elapsed().as_secs_f64();
            let ft_sequence = (t * cfg.rate_hz) as u32;
            rdt_sequence = rdt_sequence.wrapping_add(1);
            let raw = cal.counts(&(cfg.wrench)(t));
            let status = if cfg.quirks.status_error_at.is_some_and(|k| rdt_sequence >= k) { 0x8001_0000 } else { 0 };
            let record = Record { rdt_sequence, ft_sequence, status, counts: std::array::from_fn(|k| raw[k] - bias[k]) }.encode();
            if let Some(r) = remaining.as_mut() {
                *r -= 1;
                if *r == 0 {
                    peer = None;
                }
            }
            if rng.gen::<f64>() < cfg.quirks.lose {
                lost.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            sent.fetch_add(1, Ordering::Relaxed);
            records_sent += 1;
            if cfg.quirks.spoof_at == Some(records_sent) {
                let forged = Record { rdt_sequence: 0xFFFF_FF00, ft_sequence, status: 0, counts: cal.counts(&[0.0, 0.0, 999.0, 0.0, 0.0, 0.0]) };
                let _ = udp.send_to(&forged.encode(), to);
            }
            if rng.gen::<f64>() < cfg.quirks.reorder && held.is_none() {
                held = Some(record);
                continue;
            }
            let _ = udp.send_to(&record, to);
            if let Some(h) = held.take() {
                let _ = udp.send_to(&h, to);
            }
            if rng.gen::<f64>() < cfg.quirks.duplicate {
                let _ = udp.send_to(&record, to);
            }
        }
        let wait = if peer.is_some() { next.saturating_duration_since(Instant::now()) } else { Duration::from_millis(1) };
        std::thread::sleep(wait.min(Duration::from_millis(1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(seq: u32) -> Record {
        Record { rdt_sequence: seq, ft_sequence: seq, status: 0, counts: [seq as i32; 6] }
    }

    #[test]
    fn records_and_requests_round_trip_in_network_order() {
        let r = Record { rdt_sequence: 7, ft_sequence: 123_456, status: 0x8001_0000, counts: [1, -2, 3_000_000, -4, 5, -6] };
        let b = r.encode();
        assert_eq!(&b[..4], &[0, 0, 0, 7]);
        assert_eq!(Record::decode(&b), Some(r));
        assert_eq!(request(START_REALTIME, 0), [0x12, 0x34, 0x00, 0x02, 0, 0, 0, 0]);
        assert_eq!(parse_request(&request(SET_BIAS, 9)), Some((SET_BIAS, 9)));
        assert_eq!(parse_request(&[0u8; 8]), None);
    }

    /// (sequence, missing before it) of what came out; `None` marks a new stream.
    fn seqs(out: &[Released]) -> Vec<Option<(u32, u64)>> {
        out.iter()
            .map(|r| match r {
                Released::Record { record, missing, .. } => Some((record.rdt_sequence, *missing)),
                Released::NewStream { .. } => None,
            })
            .collect()
    }

    #[test]
    fn reordered_and_duplicated_records_come_out_once_in_order_and_gaps_are_counted() {
        let mut o = Reorder::default();
        o.started(0);
        let mut out = vec![];
        for s in [1, 2, 4, 3, 3, 5, 8, 9] {
            out.extend(o.push(MS, rec(s)));
        }
        out.extend(o.flush());
        assert_eq!(seqs(&out), [(1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (8, 2), (9, 0)].map(Some).to_vec());
        assert_eq!(o.duplicates, 1);
    }

    const MS: i64 = 1_000_000;

    /// ATI's RDT numbers each stream from 1: after a restart (the box
    /// rebooted, or a start request renumbered it) the new stream's records
    /// are kept, after a marker, not dropped as old duplicates.
    #[test]
    fn a_stream_that_restarts_its_numbering_is_a_new_stream_and_nothing_is_dropped() {
        let mut o = Reorder::default();
        o.started(0);
        let mut out = vec![];
        for s in 1..=5000 {
            out.extend(o.push(i64::from(s) * MS, rec(s)));
        }
        // 0.8 s of silence, then a new stream from 1.
        for s in 1..=100 {
            out.extend(o.push((5800 + i64::from(s)) * MS, rec(s)));
        }
        out.extend(o.flush());
        let got = seqs(&out);
        assert_eq!(got.iter().filter(|x| x.is_some()).count(), 5100, "every record kept");
        let marker = got.iter().position(|x| x.is_none()).expect("a new stream marked");
        assert_eq!(got[marker - 1], Some((5000, 0)));
        assert_eq!(got[marker + 1], Some((1, 0)));
        assert_eq!((o.duplicates, o.restarts, o.implausible), (0, 1, 0));
    }

    /// A box whose stream restarts every 20-30 records (shorter than the
    /// reorder window), its sample counter running on: every record kept,
    /// each restart a new stream. Before: 99.6 % rejected as duplicates.
    #[test]
    fn restarts_shorter_than_the_reorder_window_are_new_streams() {
        let mut o = Reorder::default();
        o.started(0);
        let (mut out, mut ft, mut sent) = (vec![], 0u32, 0usize);
        for stream in 0..40 {
            for s in 1..=(20 + stream % 11) {
                ft += 1;
                sent += 1;
                out.extend(o.push(i64::from(ft) * MS, Record { rdt_sequence: s, ft_sequence: ft, status: 0, counts: [0; 6] }));
            }
        }
        out.extend(o.flush());
        let got = seqs(&out);
        assert_eq!(got.iter().filter(|x| x.is_some()).count(), sent, "every record kept");
        assert_eq!((o.duplicates, o.restarts, o.implausible), (0, 39, 0));
        // A duplicate of the newest record is still a duplicate.
        o.push(i64::from(ft + 1) * MS, Record { rdt_sequence: 20 + 39 % 11, ft_sequence: ft, status: 0, counts: [0; 6] });
        assert_eq!(o.duplicates, 1);
    }

    /// A datagram of the old stream that arrives after the new one began is
    /// late (dropped like a duplicate), not a forgery.
    #[test]
    fn a_straggler_of_the_previous_stream_is_late_not_forged() {
        let mut o = Reorder::default();
        o.started(0);
        for s in 1..=1000 {
            o.push(i64::from(s) * MS, rec(s));
        }
        o.push(1500 * MS, rec(1));
        o.push(1501 * MS, rec(999));
        assert_eq!((o.restarts, o.duplicates, o.implausible), (1, 1, 0));
    }

    /// A number further ahead than the sensor could have streamed since the
    /// last record (a spoofed 0xFFFFFF00 after a second) is refused, and
    /// the next genuine record follows without a giant gap.
    #[test]
    fn a_sequence_beyond_any_streams_reach_is_refused() {
        let mut o = Reorder::default();
        o.started(0);
        let mut out = vec![];
        for s in 1..=1000 {
            out.extend(o.push(i64::from(s) * MS, rec(s)));
        }
        out.extend(o.push(1001 * MS, rec(0xFFFF_FF00)));
        out.extend(o.push(1002 * MS, rec(1001)));
        out.extend(o.flush());
        let got = seqs(&out);
        assert_eq!(got.last(), Some(&Some((1001, 0))));
        assert!(got.iter().flatten().all(|(s, m)| *s <= 1001 && *m == 0), "{:?}", &got[got.len() - 3..]);
        assert_eq!(o.implausible, 1);
        // Not a stream's start either: a first record far from 1.
        let mut fresh = Reorder::default();
        fresh.started(0);
        assert!(fresh.push(MS, rec(0xFFFF_FF00)).is_empty() && fresh.implausible == 1);
    }

    /// Stamps never run back: a record released after a later-arrived one
    /// (it arrived out of order) takes the later stamp.
    #[test]
    fn released_stamps_never_run_back() {
        let mut o = Reorder::default();
        o.started(0);
        let mut out = vec![];
        for (s, t) in [(1, 10), (3, 20), (2, 30), (4, 40)] {
            out.extend(o.push(t * MS, rec(s)));
        }
        let stamps: Vec<i64> = out.iter().filter_map(|r| if let Released::Record { t_ns, .. } = r { Some(*t_ns / MS) } else { None }).collect();
        assert_eq!(stamps, [10, 30, 30, 40]);
    }

    #[test]
    fn calibration_units_are_converted_to_si() {
        assert_eq!(force_unit_n(2), Some(1.0));
        assert!((force_unit_n(1).unwrap() - 4.448_221_615).abs() < 1e-9);
        assert_eq!(torque_unit_nm(4), Some(0.001));
        assert_eq!(force_unit_n(0), None);
        let c = Calibration::new(1e6, 2e6).unwrap();
        assert_eq!(c.wrench(&[1_000_000, 0, 0, 2_000_000, 0, 0]), [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
        assert!(Calibration::new(0.0, 1.0).unwrap_err().to_string().contains("counts_per_force must be positive"));
    }
}
