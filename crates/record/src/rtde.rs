//! Universal Robots RTDE (real-time data exchange), protocol version 2:
//! package codec, a client that keeps *every* data package, and an emulator
//! that speaks the same bytes (science §7).
//!
//! Package: `u16 size (incl. header) | u8 type | payload`, big-endian.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const REQUEST_PROTOCOL_VERSION: u8 = b'V';
pub const GET_URCONTROL_VERSION: u8 = b'v';
pub const TEXT_MESSAGE: u8 = b'M';
pub const DATA_PACKAGE: u8 = b'U';
pub const SETUP_OUTPUTS: u8 = b'O';
pub const SETUP_INPUTS: u8 = b'I';
pub const START: u8 = b'S';
pub const PAUSE: u8 = b'P';

/// RTDE field types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    Double,
    Vector3d,
    Vector6d,
    Int32,
    Uint32,
    Vector6Int32,
    Vector6Uint32,
    Uint64,
    Uint8,
    Bool,
}

impl FieldType {
    pub fn name(&self) -> &'static str {
        match self {
            FieldType::Double => "DOUBLE",
            FieldType::Vector3d => "VECTOR3D",
            FieldType::Vector6d => "VECTOR6D",
            FieldType::Int32 => "INT32",
            FieldType::Uint32 => "UINT32",
            FieldType::Vector6Int32 => "VECTOR6INT32",
            FieldType::Vector6Uint32 => "VECTOR6UINT32",
            FieldType::Uint64 => "UINT64",
            FieldType::Uint8 => "UINT8",
            FieldType::Bool => "BOOL",
        }
    }

    pub fn parse(s: &str) -> Option<FieldType> {
        Some(match s {
            "DOUBLE" => FieldType::Double,
            "VECTOR3D" => FieldType::Vector3d,
            "VECTOR6D" => FieldType::Vector6d,
            "INT32" => FieldType::Int32,
            "UINT32" => FieldType::Uint32,
            "VECTOR6INT32" => FieldType::Vector6Int32,
            "VECTOR6UINT32" => FieldType::Vector6Uint32,
            "UINT64" => FieldType::Uint64,
            "UINT8" => FieldType::Uint8,
            "BOOL" => FieldType::Bool,
            _ => return None,
        })
    }

    /// Number of values (columns) and bytes.
    pub fn width(&self) -> (usize, usize) {
        match self {
            FieldType::Double => (1, 8),
            FieldType::Vector3d => (3, 24),
            FieldType::Vector6d => (6, 48),
            FieldType::Int32 | FieldType::Uint32 => (1, 4),
            FieldType::Vector6Int32 | FieldType::Vector6Uint32 => (6, 24),
            FieldType::Uint64 => (1, 8),
            FieldType::Uint8 | FieldType::Bool => (1, 1),
        }
    }
}

/// Standard output variables of UR's RTDE guide served by the emulator
/// (a subset, with their proper types).
pub const STANDARD_OUTPUTS: &[(&str, FieldType)] = &[
    ("timestamp", FieldType::Double),
    ("target_q", FieldType::Vector6d),
    ("target_qd", FieldType::Vector6d),
    ("target_qdd", FieldType::Vector6d),
    ("target_current", FieldType::Vector6d),
    ("target_moment", FieldType::Vector6d),
    ("actual_q", FieldType::Vector6d),
    ("actual_qd", FieldType::Vector6d),
    ("actual_current", FieldType::Vector6d),
    ("joint_control_output", FieldType::Vector6d),
    ("actual_TCP_pose", FieldType::Vector6d),
    ("actual_TCP_speed", FieldType::Vector6d),
    ("actual_TCP_force", FieldType::Vector6d),
    ("target_TCP_pose", FieldType::Vector6d),
    ("target_TCP_speed", FieldType::Vector6d),
    ("actual_digital_input_bits", FieldType::Uint64),
    ("joint_temperatures", FieldType::Vector6d),
    ("actual_execution_time", FieldType::Double),
    ("robot_mode", FieldType::Int32),
    ("joint_mode", FieldType::Vector6Int32),
    ("safety_mode", FieldType::Int32),
    ("actual_tool_accelerometer", FieldType::Vector3d),
    ("speed_scaling", FieldType::Double),
    ("target_speed_fraction", FieldType::Double),
    ("actual_momentum", FieldType::Double),
    ("actual_main_voltage", FieldType::Double),
    ("actual_robot_voltage", FieldType::Double),
    ("actual_robot_current", FieldType::Double),
    ("actual_joint_voltage", FieldType::Vector6d),
    ("actual_digital_output_bits", FieldType::Uint64),
    ("runtime_state", FieldType::Uint32),
    ("robot_status_bits", FieldType::Uint32),
    ("safety_status_bits", FieldType::Uint32),
    ("standard_analog_input0", FieldType::Double),
    ("standard_analog_input1", FieldType::Double),
    ("standard_analog_output0", FieldType::Double),
    ("standard_analog_output1", FieldType::Double),
    ("analog_io_types", FieldType::Uint32),
    ("io_current", FieldType::Double),
    ("tool_mode", FieldType::Uint32),
    ("tool_analog_input_types", FieldType::Uint32),
    ("tool_analog_input0", FieldType::Double),
    ("tool_analog_input1", FieldType::Double),
    ("tool_output_voltage", FieldType::Int32),
    ("tool_output_current", FieldType::Double),
    ("tool_temperature", FieldType::Double),
    ("tcp_force_scalar", FieldType::Double),
    ("elbow_position", FieldType::Vector3d),
    ("elbow_velocity", FieldType::Vector3d),
    ("ft_raw_wrench", FieldType::Vector6d),
    ("payload", FieldType::Double),
    ("payload_cog", FieldType::Vector3d),
    ("payload_inertia", FieldType::Vector6d),
    ("output_bit_registers0_to_31", FieldType::Uint32),
    ("output_bit_registers32_to_63", FieldType::Uint32),
];

/// The general purpose registers of UR's RTDE guide, 0..47 for the
/// outputs and 0..47 for the inputs (which clients may read back).
fn register(name: &str) -> Option<FieldType> {
    for (prefix, ty) in [
        ("output_int_register_", FieldType::Int32),
        ("output_double_register_", FieldType::Double),
        ("input_int_register_", FieldType::Int32),
        ("input_double_register_", FieldType::Double),
    ] {
        if let Some(n) = name.strip_prefix(prefix).and_then(|k| k.parse::<u32>().ok()) {
            return (n < 48).then_some(ty);
        }
    }
    None
}

#[derive(Debug, thiserror::Error)]
pub enum RtdeError {
    #[error("cannot connect to {0}: {1}")]
    Connect(String, String),
    #[error("RTDE: {0}")]
    Io(#[from] std::io::Error),
    #[error("RTDE protocol: {0}")]
    Protocol(String),
    #[error("RTDE: the controller does not know the output variable '{0}'")]
    UnknownVariable(String),
    /// A rate the controller cannot stream at (CB3: 125 Hz, e-Series: 500 Hz).
    #[error("RTDE: {asked_hz} Hz asked, but the controller (URControl {version}) streams at most {max_hz} Hz: give frequency_hz <= {max_hz}, or leave it out to use the controller's maximum")]
    RateAboveController { asked_hz: f64, max_hz: f64, version: String },
    /// Writing the session (disk full, permissions).
    #[error("{0}")]
    Session(#[from] session::TableError),
}

impl fault::Fault for RtdeError {
    fn kind(&self) -> fault::Kind {
        match self {
            RtdeError::UnknownVariable(_) | RtdeError::RateAboveController { .. } => fault::Kind::Input,
            RtdeError::Session(e) => e.kind(),
            _ => fault::Kind::Io,
        }
    }
}

/// Writes one package.
pub fn write_package<W: Write>(w: &mut W, kind: u8, payload: &[u8]) -> std::io::Result<()> {
    let size = (payload.len() + 3) as u16;
    let mut buf = Vec::with_capacity(payload.len() + 3);
    buf.extend_from_slice(&size.to_be_bytes());
    buf.push(kind);
    buf.extend_from_slice(payload);
    w.write_all(&buf)
}

/// Reads one package: (type, payload).
pub fn read_package<R: Read>(r: &mut R) -> std::io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 3];
    r.read_exact(&mut head)?;
    let size = u16::from_be_bytes([head[0], head[1]]) as usize;
    if size < 3 {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("RTDE package size {size} < 3")));
    }
    let mut payload = vec![0u8; size - 3];
    r.read_exact(&mut payload)?;
    Ok((head[2], payload))
}

/// A socket whose every package must arrive whole within `per_package`
/// of the first try to read it: a peer that trickles (a 65,535-byte header,
/// then a byte every half second) never holds a reader longer, as a
/// per-read timeout alone would (each byte resets it).
struct PackageDeadline {
    socket: TcpStream,
    per_package: Duration,
    deadline: Option<Instant>,
}

impl PackageDeadline {
    /// Reads one package by the deadline (a late one is `TimedOut`, and
    /// the stream is then out of step: the connection is over).
    fn package(r: &mut std::io::BufReader<PackageDeadline>) -> std::io::Result<(u8, Vec<u8>)> {
        r.get_mut().deadline = Some(Instant::now() + r.get_ref().per_package);
        let package = read_package(r);
        r.get_mut().deadline = None;
        package
    }
}

impl Read for PackageDeadline {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if let Some(deadline) = self.deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "a package did not arrive whole in time (a trickling peer)"));
            }
            self.socket.set_read_timeout(Some(left))?;
        }
        self.socket.read(buf)
    }
}

/// Decodes a data package's values (after the recipe id) into columns.
pub fn decode_values(types: &[FieldType], bytes: &[u8]) -> Result<Vec<f64>, RtdeError> {
    let mut out = Vec::with_capacity(types.len() * 6);
    let mut at = 0;
    let take = |at: &mut usize, n: usize| -> Result<&[u8], RtdeError> {
        let s = bytes.get(*at..*at + n).ok_or_else(|| RtdeError::Protocol(format!("data package too short ({} bytes)", bytes.len())))?;
        *at += n;
        Ok(s)
    };
    for t in types {
        match t {
            FieldType::Double => out.push(f64::from_be_bytes(take(&mut at, 8)?.try_into().unwrap())),
            FieldType::Vector3d | FieldType::Vector6d => {
                for _ in 0..t.width().0 {
                    out.push(f64::from_be_bytes(take(&mut at, 8)?.try_into().unwrap()));
                }
            }
            FieldType::Int32 => out.push(i32::from_be_bytes(take(&mut at, 4)?.try_into().unwrap()) as f64),
            FieldType::Uint32 => out.push(u32::from_be_bytes(take(&mut at, 4)?.try_into().unwrap()) as f64),
            FieldType::Vector6Int32 => {
                for _ in 0..6 {
                    out.push(i32::from_be_bytes(take(&mut at, 4)?.try_into().unwrap()) as f64);
                }
            }
            FieldType::Vector6Uint32 => {
                for _ in 0..6 {
                    out.push(u32::from_be_bytes(take(&mut at, 4)?.try_into().unwrap()) as f64);
                }
            }
            FieldType::Uint64 => out.push(u64::from_be_bytes(take(&mut at, 8)?.try_into().unwrap()) as f64),
            FieldType::Uint8 | FieldType::Bool => out.push(take(&mut at, 1)?[0] as f64),
        }
    }
    if at != bytes.len() {
        return Err(RtdeError::Protocol(format!("data package has {} bytes, recipe needs {at}", bytes.len())));
    }
    Ok(out)
}

/// Column names of a recipe: `name` or `name_0..name_k`.
pub fn column_names(names: &[String], types: &[FieldType]) -> Vec<String> {
    names
        .iter()
        .zip(types)
        .flat_map(|(n, t)| {
            let k = t.width().0;
            if k == 1 {
                vec![n.clone()]
            } else {
                (0..k).map(|i| format!("{n}_{i}")).collect()
            }
        })
        .collect()
}

/// The fastest a controller of this version streams: 125 Hz on CB3
/// (URControl major version 3 and older), 500 Hz on e-Series (5 and on),
/// as UR's own client and `ur_rtde` choose by default.
pub fn controller_max_rate_hz(version: [u32; 4]) -> f64 {
    if version[0] <= 3 {
        125.0
    } else {
        500.0
    }
}

/// "3.15.7.106331".
pub fn version_string(version: [u32; 4]) -> String {
    version.map(|v| v.to_string()).join(".")
}

/// Which controller generation the emulator plays.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Controller {
    /// UR3/5/10 before e-Series: URControl 3.x, 125 Hz.
    Cb3,
    /// e-Series: URControl 5.x, 500 Hz.
    #[default]
    ESeries,
}

impl Controller {
    /// The version it answers to "get URControl version".
    pub fn version(self) -> [u32; 4] {
        match self {
            Controller::Cb3 => [3, 15, 7, 106331],
            Controller::ESeries => [5, 11, 0, 108249],
        }
    }

    pub fn rate_hz(self) -> f64 {
        controller_max_rate_hz(self.version())
    }

    pub fn version_string(self) -> String {
        version_string(self.version())
    }
}

impl std::str::FromStr for Controller {
    type Err = QuirkError;

    fn from_str(s: &str) -> Result<Controller, QuirkError> {
        match s {
            "cb3" => Ok(Controller::Cb3),
            "e-series" => Ok(Controller::ESeries),
            _ => Err(QuirkError(format!("unknown controller '{s}' (cb3, e-series)"))),
        }
    }
}

/// How serious a controller's text message is (RTDE v2 warning levels).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MessageLevel {
    Exception,
    Error,
    Warning,
    Info,
}

impl MessageLevel {
    pub fn from_byte(b: u8) -> MessageLevel {
        match b {
            0 => MessageLevel::Exception,
            1 => MessageLevel::Error,
            2 => MessageLevel::Warning,
            _ => MessageLevel::Info,
        }
    }

    pub fn byte(self) -> u8 {
        self as u8
    }

    pub fn name(self) -> &'static str {
        match self {
            MessageLevel::Exception => "EXCEPTION",
            MessageLevel::Error => "ERROR",
            MessageLevel::Warning => "WARNING",
            MessageLevel::Info => "INFO",
        }
    }
}

/// A controller's text message (protocol 2: `u8 length, message, u8
/// length, source, u8 level`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextMessage {
    pub message: String,
    pub source: String,
    pub level: MessageLevel,
}

impl TextMessage {
    /// Decodes a text message's payload; one that does not follow the
    /// protocol 2 layout is kept whole as an INFO message from "?".
    pub fn decode(p: &[u8]) -> TextMessage {
        let parse = || -> Option<TextMessage> {
            let n = *p.first()? as usize;
            let message = p.get(1..1 + n)?;
            let m = *p.get(1 + n)? as usize;
            let source = p.get(2 + n..2 + n + m)?;
            let level = *p.get(2 + n + m)?;
            (p.len() == 3 + n + m).then(|| TextMessage {
                message: String::from_utf8_lossy(message).into(),
                source: String::from_utf8_lossy(source).into(),
                level: MessageLevel::from_byte(level),
            })
        };
        parse().unwrap_or_else(|| TextMessage { message: String::from_utf8_lossy(p).into(), source: "?".into(), level: MessageLevel::Info })
    }

    /// The protocol 2 payload (texts cut at 255 bytes).
    pub fn encode(&self) -> Vec<u8> {
        let cut = |t: &str| t.as_bytes()[..t.len().min(255)].to_vec();
        let (m, s) = (cut(&self.message), cut(&self.source));
        let mut b = vec![m.len() as u8];
        b.extend(m);
        b.push(s.len() as u8);
        b.extend(s);
        b.push(self.level.byte());
        b
    }
}

/// What the client receives while streaming.
#[derive(Debug)]
pub enum Received {
    Data(Vec<f64>),
    Text(TextMessage),
    Other(u8),
}

/// An RTDE client with one output recipe.
pub struct RtdeClient {
    stream: std::io::BufReader<PackageDeadline>,
    writer: TcpStream,
    pub names: Vec<String>,
    pub types: Vec<FieldType>,
    pub recipe_id: u8,
    pub controller_version: [u32; 4],
    /// The rate asked in the recipe: the rig's, or the controller's maximum.
    pub frequency_hz: f64,
    /// Packages that arrived during setup and before the start
    /// confirmation (text messages, data), returned first by `receive`.
    early: std::collections::VecDeque<Received>,
}

impl RtdeClient {
    /// Connects, negotiates protocol 2, reads the controller version and
    /// sets up the output recipe (`timestamp` is always added first) at
    /// `frequency_hz`, or the controller's maximum when none is given; a
    /// rate above the controller's maximum is refused before asking.
    pub fn connect(addr: &str, frequency_hz: Option<f64>, variables: &[String], timeout: Duration) -> Result<RtdeClient, RtdeError> {
        let sock: SocketAddr = addr
            .to_socket_addrs()
            .map_err(|e| RtdeError::Connect(addr.into(), e.to_string()))?
            .next()
            .ok_or_else(|| RtdeError::Connect(addr.into(), "no address".into()))?;
        let s = TcpStream::connect_timeout(&sock, timeout).map_err(|e| RtdeError::Connect(addr.into(), e.to_string()))?;
        s.set_nodelay(true).ok();
        s.set_read_timeout(Some(timeout)).ok();
        let mut writer = s.try_clone()?;
        // Every package, in the handshake and in the stream, whole within
        // the timeout.
        let mut stream = std::io::BufReader::with_capacity(1 << 16, PackageDeadline { socket: s, per_package: timeout, deadline: None });
        let mut early = std::collections::VecDeque::new();
        write_package(&mut writer, REQUEST_PROTOCOL_VERSION, &2u16.to_be_bytes())?;
        // A peer that accepts the connection but never answers is not an
        // RTDE server (a wrong port, a busy controller): say so.
        let (_, p) = expect(&mut stream, REQUEST_PROTOCOL_VERSION, &mut early).map_err(|e| match e {
            RtdeError::Io(io) if matches!(io.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => RtdeError::Connect(
                addr.into(),
                format!("connected, but no RTDE answer within {:.1} s (is it a UR controller's RTDE port, 30004?)", timeout.as_secs_f64()),
            ),
            other => other,
        })?;
        if p.first() != Some(&1) {
            return Err(RtdeError::Protocol("controller refused protocol version 2".into()));
        }
        write_package(&mut writer, GET_URCONTROL_VERSION, &[])?;
        let (_, p) = expect(&mut stream, GET_URCONTROL_VERSION, &mut early)?;
        if p.len() < 16 {
            return Err(RtdeError::Protocol("short controller version".into()));
        }
        let controller_version: [u32; 4] = std::array::from_fn(|i| u32::from_be_bytes(p[4 * i..4 * i + 4].try_into().unwrap()));
        let max_hz = controller_max_rate_hz(controller_version);
        let frequency_hz = frequency_hz.unwrap_or(max_hz);
        if frequency_hz > max_hz {
            return Err(RtdeError::RateAboveController { asked_hz: frequency_hz, max_hz, version: version_string(controller_version) });
        }
        let mut names: Vec<String> = vec!["timestamp".into()];
        names.extend(variables.iter().filter(|v| *v != "timestamp").cloned());
        let mut payload = frequency_hz.to_be_bytes().to_vec();
        payload.extend_from_slice(names.join(",").as_bytes());
        write_package(&mut writer, SETUP_OUTPUTS, &payload)?;
        let (_, p) = expect(&mut stream, SETUP_OUTPUTS, &mut early)?;
        let recipe_id = *p.first().ok_or_else(|| RtdeError::Protocol("empty recipe reply".into()))?;
        let types_s = String::from_utf8_lossy(&p[1..]).to_string();
        let mut types = vec![];
        for (n, t) in names.iter().zip(types_s.split(',')) {
            if t == "NOT_FOUND" {
                return Err(RtdeError::UnknownVariable(n.clone()));
            }
            types.push(FieldType::parse(t).ok_or_else(|| RtdeError::Protocol(format!("unknown type '{t}' for '{n}'")))?);
        }
        if types.len() != names.len() {
            return Err(RtdeError::Protocol(format!("recipe has {} types for {} variables", types.len(), names.len())));
        }
        if recipe_id == 0 {
            return Err(RtdeError::Protocol(format!("the controller refused the output recipe (id 0): {types_s}")));
        }
        Ok(RtdeClient { stream, writer, names, types, recipe_id, controller_version, frequency_hz, early })
    }

    /// Starts streaming. Data packages that arrive before the confirmation
    /// are kept and returned first by [`RtdeClient::receive`].
    pub fn start(&mut self) -> Result<(), RtdeError> {
        write_package(&mut self.writer, START, &[])?;
        loop {
            let (kind, p) = PackageDeadline::package(&mut self.stream)?;
            match kind {
                START => {
                    return if p.first() == Some(&1) { Ok(()) } else { Err(RtdeError::Protocol("start refused".into())) };
                }
                DATA_PACKAGE => {
                    let v = self.decode(&p)?;
                    self.early.push_back(Received::Data(v));
                }
                TEXT_MESSAGE => self.early.push_back(Received::Text(TextMessage::decode(&p))),
                _ => {}
            }
        }
    }

    fn decode(&self, p: &[u8]) -> Result<Vec<f64>, RtdeError> {
        if p.first() != Some(&self.recipe_id) {
            return Err(RtdeError::Protocol(format!("data package for recipe {:?}, ours is {}", p.first(), self.recipe_id)));
        }
        decode_values(&self.types, &p[1..])
    }

    /// The next package (every data package, in order).
    pub fn receive(&mut self) -> Result<Received, RtdeError> {
        if let Some(r) = self.early.pop_front() {
            return Ok(r);
        }
        let (kind, p) = PackageDeadline::package(&mut self.stream)?;
        Ok(match kind {
            DATA_PACKAGE => Received::Data(self.decode(&p)?),
            TEXT_MESSAGE => Received::Text(TextMessage::decode(&p)),
            k => Received::Other(k),
        })
    }

    pub fn pause(&mut self) -> Result<(), RtdeError> {
        write_package(&mut self.writer, PAUSE, &[])?;
        Ok(())
    }

    pub fn column_names(&self) -> Vec<String> {
        column_names(&self.names, &self.types)
    }
}

/// The reply of `kind`; text messages on the way are kept in `early`
/// (data before a recipe exists cannot be decoded and is skipped).
fn expect(r: &mut std::io::BufReader<PackageDeadline>, kind: u8, early: &mut std::collections::VecDeque<Received>) -> Result<(u8, Vec<u8>), RtdeError> {
    loop {
        let (k, p) = PackageDeadline::package(r)?;
        if k == kind {
            return Ok((k, p));
        }
        if k == TEXT_MESSAGE {
            early.push_back(Received::Text(TextMessage::decode(&p)));
            continue;
        }
        if k != DATA_PACKAGE {
            return Err(RtdeError::Protocol(format!("expected '{}', got '{}'", kind as char, k as char)));
        }
    }
}

/// Ways the emulator departs from a controller, on request, to test that
/// clients survive them. None by default: the emulator behaves like a
/// controller.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Quirks {
    /// Send the first data package before the start confirmation.
    pub early_data: bool,
    /// Send a text message during setup and before the start confirmation.
    pub text: bool,
    /// Close the connection after this many data packages.
    pub drop_after: Option<u64>,
    /// Leave out this fraction of data packages (at random, seeded): the
    /// controller's clock goes on, so the client sees them missing.
    pub lose: f64,
    /// Send a text message at level EXCEPTION (a protective stop) after
    /// this many data packages.
    pub exception_after: Option<u64>,
    /// Never confirm a pause request: go on streaming (a controller in a
    /// bad state, or a proxy that drops the request).
    pub ignore_pause: bool,
    /// Answer a pause request with a package header of 65,535 bytes, then
    /// trickle one byte every half second.
    pub trickle_after_pause: bool,
    /// From this handshake on (the first client to ask for a protocol
    /// version is 1), answer it by trickling the same way.
    pub trickle_handshake_from: Option<u64>,
}

/// The trickle quirks: a header announcing 65,535 bytes, then one byte
/// every half second until the client leaves or the emulator stops.
fn trickle(w: &mut TcpStream, stop: &AtomicBool) -> std::io::Result<()> {
    w.write_all(&[0xff, 0xff, DATA_PACKAGE])?;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..10 {
            std::thread::sleep(Duration::from_millis(50));
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
        }
        w.write_all(&[0])?;
    }
    Ok(())
}

/// A quirk the emulator does not know.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct QuirkError(String);

impl std::str::FromStr for Quirks {
    type Err = QuirkError;

    /// `early-data,text,drop-after=N,lose=P,exception-after=N,ignore-pause,
    /// trickle-after-pause,trickle-handshake-from=N` (any subset).
    fn from_str(s: &str) -> Result<Quirks, QuirkError> {
        let mut q = Quirks::default();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            match item.split_once('=') {
                None if item == "early-data" => q.early_data = true,
                None if item == "text" => q.text = true,
                None if item == "ignore-pause" => q.ignore_pause = true,
                None if item == "trickle-after-pause" => q.trickle_after_pause = true,
                Some(("trickle-handshake-from", n)) => {
                    q.trickle_handshake_from =
                        Some(n.parse().map_err(|_| QuirkError(format!("trickle-handshake-from={n}: expected a handshake number (the first is 1)")))?)
                }
                Some(("drop-after", n)) => q.drop_after = Some(n.parse().map_err(|_| QuirkError(format!("drop-after={n}: expected a number of packages")))?),
                Some(("exception-after", n)) => {
                    q.exception_after = Some(n.parse().map_err(|_| QuirkError(format!("exception-after={n}: expected a number of packages")))?)
                }
                Some(("lose", p)) => {
                    q.lose =
                        p.parse().ok().filter(|p: &f64| (0.0..1.0).contains(p)).ok_or_else(|| QuirkError(format!("lose={p}: expected a fraction in [0, 1)")))?
                }
                _ => return Err(QuirkError(format!("unknown quirk '{item}' (early-data, text, drop-after=N, lose=P, exception-after=N, ignore-pause, trickle-after-pause, trickle-handshake-from=N)"))),
            }
        }
        Ok(q)
    }
}

/// A wrench over controller time \[N, N m\] (force then moment).
#[derive(Clone)]
pub struct WrenchSignal(pub Arc<dyn Fn(f64) -> [f64; 6] + Send + Sync>);

impl std::fmt::Debug for WrenchSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WrenchSignal")
    }
}

/// Emulator settings.
#[derive(Clone, Debug)]
pub struct EmulatorConfig {
    /// The controller played: its version and its own rate (125 or 500 Hz);
    /// a lower requested rate is served by sending the packages of the
    /// control cycles where the requested clock ticks.
    pub controller: Controller,
    pub quirks: Quirks,
    /// Flange trajectory: amplitude of the sinusoidal motion \[m\] and period \[s\].
    pub amplitude_m: f64,
    pub period_s: f64,
    /// Instead of the sinusoid: flange poses played on controller time
    /// (slerp between samples, held before the first and after the last),
    /// e.g. a simulated experiment.
    pub trajectory: Option<Arc<lie::trajectory::PoseTrajectory>>,
    /// Controller time at which the trajectory's t = 0 plays \[s\] (held
    /// at its first pose before): lets several emulators play one
    /// experiment from one wall-clock instant.
    pub trajectory_delay_s: f64,
    /// What `actual_TCP_force` and `ft_raw_wrench` report, in the robot's
    /// base frame, on the trajectory's time (a wrist sensor read through
    /// the controller).
    pub wrench_base: Option<WrenchSignal>,
}

impl Default for EmulatorConfig {
    fn default() -> Self {
        Self {
            controller: Controller::ESeries,
            quirks: Quirks::default(),
            amplitude_m: 0.02,
            period_s: 4.0,
            trajectory: None,
            trajectory_delay_s: 0.0,
            wrench_base: None,
        }
    }
}

fn lookup(name: &str) -> Option<FieldType> {
    STANDARD_OUTPUTS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t).or_else(|| register(name))
}

/// Values of the emulated robot at controller time `t` (package index k).
fn emulated_values(name: &str, t: f64, k: u64, cfg: &EmulatorConfig) -> Vec<f64> {
    let w = std::f64::consts::TAU / cfg.period_s;
    let a = cfg.amplitude_m;
    if let Some(traj) = &cfg.trajectory {
        let (first, last) = traj.span_s();
        let pose_at = |t: f64| traj.at((t - cfg.trajectory_delay_s).clamp(first, last)).expect("clamped into the span");
        match name {
            "actual_TCP_pose" | "target_TCP_pose" => return lie::trajectory::pose_to_ur(&pose_at(t)).to_vec(),
            // Central difference over one controller period, base frame: [v; w].
            "actual_TCP_speed" | "target_TCP_speed" => return traj.velocity(t - cfg.trajectory_delay_s, 0.5 / cfg.controller.rate_hz()).to_vec(),
            _ => {}
        }
    }
    if let (Some(w), "actual_TCP_force" | "ft_raw_wrench") = (&cfg.wrench_base, name) {
        return (w.0)(t - cfg.trajectory_delay_s).to_vec();
    }
    match name {
        "timestamp" => vec![t],
        "actual_TCP_pose" | "target_TCP_pose" => vec![0.3 + a * (w * t).sin(), 0.0, 0.2 - 0.5 * a * (w * t).cos(), 0.0, std::f64::consts::PI, 0.0],
        "actual_TCP_speed" | "target_TCP_speed" => vec![a * w * (w * t).cos(), 0.0, 0.5 * a * w * (w * t).sin(), 0.0, 0.0, 0.0],
        "output_int_register_0" => vec![(k % (1 << 31)) as f64],
        "robot_mode" => vec![7.0],
        "safety_mode" => vec![1.0],
        "runtime_state" => vec![2.0],
        "speed_scaling" | "target_speed_fraction" => vec![1.0],
        _ => {
            let (n, _) = lookup(name).map(|t| t.width()).unwrap_or((1, 0));
            (0..n).map(|i| 0.1 * i as f64 + 0.01 * (w * t).sin()).collect()
        }
    }
}

fn encode_value(t: FieldType, v: &[f64], out: &mut Vec<u8>) {
    match t {
        FieldType::Double | FieldType::Vector3d | FieldType::Vector6d => v.iter().for_each(|x| out.extend_from_slice(&x.to_be_bytes())),
        FieldType::Int32 | FieldType::Vector6Int32 => v.iter().for_each(|x| out.extend_from_slice(&(*x as i32).to_be_bytes())),
        FieldType::Uint32 | FieldType::Vector6Uint32 => v.iter().for_each(|x| out.extend_from_slice(&(*x as u32).to_be_bytes())),
        FieldType::Uint64 => out.extend_from_slice(&(v[0] as u64).to_be_bytes()),
        FieldType::Uint8 | FieldType::Bool => out.push(v[0] as u8),
    }
}

/// A running emulator (stops when dropped or on [`Emulator::stop`]).
pub struct Emulator {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Data packages sent over all connections.
    pub sent: Arc<std::sync::atomic::AtomicU64>,
    /// Data packages left out (the `lose` quirk).
    pub lost: Arc<std::sync::atomic::AtomicU64>,
}

impl Emulator {
    /// Binds (loopback by default in the CLI) and serves clients one at a time.
    pub fn spawn(bind: &str, cfg: EmulatorConfig) -> std::io::Result<Emulator> {
        let listener = TcpListener::bind(bind)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let lost = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (stop2, sent2, lost2) = (stop.clone(), sent.clone(), lost.clone());
        let thread = std::thread::spawn(move || {
            let epoch = Instant::now();
            let mut handshakes = 0u64;
            while !stop2.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((s, _)) => {
                        s.set_nonblocking(false).ok();
                        let _ = serve(s, &cfg, &stop2, (&sent2, &lost2), epoch, &mut handshakes);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Ok(Emulator { addr, stop, thread: Some(thread), sent, lost })
    }

    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Serves one client until it disconnects or the emulator stops.
type Counter = std::sync::atomic::AtomicU64;

/// A text message in the protocol 2 layout, from the emulator.
fn emulator_text(message: &str, level: MessageLevel) -> Vec<u8> {
    TextMessage { message: message.into(), source: "rodlab RTDE emulator".into(), level }.encode()
}

fn serve(s: TcpStream, cfg: &EmulatorConfig, stop: &AtomicBool, counters: (&Counter, &Counter), epoch: Instant, handshakes: &mut u64) -> std::io::Result<()> {
    s.set_nodelay(true).ok();
    let mut w = s.try_clone()?;
    let mut r = std::io::BufReader::new(s);
    let mut recipe: Vec<(String, FieldType)> = vec![];
    // A controller numbers valid output recipes from 1; 0 means invalid.
    let mut recipe_id = 0u8;
    let mut next_id = 1u8;
    let mut frequency_hz = cfg.controller.rate_hz();
    loop {
        let (kind, p) = read_package(&mut r)?;
        match kind {
            REQUEST_PROTOCOL_VERSION => {
                *handshakes += 1;
                if cfg.quirks.trickle_handshake_from.is_some_and(|from| *handshakes >= from) {
                    return trickle(&mut w, stop);
                }
                let v = p.get(..2).map(|b| u16::from_be_bytes([b[0], b[1]]));
                write_package(&mut w, REQUEST_PROTOCOL_VERSION, &[(v == Some(2)) as u8])?;
            }
            GET_URCONTROL_VERSION => {
                let mut b = vec![];
                for x in cfg.controller.version() {
                    b.extend_from_slice(&x.to_be_bytes());
                }
                write_package(&mut w, GET_URCONTROL_VERSION, &b)?;
            }
            SETUP_OUTPUTS => {
                let names = String::from_utf8_lossy(p.get(8..).unwrap_or_default()).to_string();
                let asked = p.get(..8).map(|b| f64::from_be_bytes(b.try_into().expect("8 bytes"))).unwrap_or(f64::NAN);
                recipe.clear();
                let mut types = vec![];
                let mut all_found = true;
                // Clients end the list with a comma (ur_rtde does): a
                // controller ignores the empty name.
                for n in names.split(',').filter(|n| !n.is_empty()) {
                    match lookup(n) {
                        Some(t) => {
                            types.push(t.name());
                            recipe.push((n.to_string(), t));
                        }
                        None => {
                            types.push("NOT_FOUND");
                            all_found = false;
                        }
                    }
                }
                // A rate the controller cannot serve makes the recipe invalid.
                let max = cfg.controller.rate_hz();
                // UR's RTDE: 1 Hz to the controller's rate (a rate of 1e-300
                // Hz once wedged the emulator for every later client).
                let rate_ok = (1.0..=max).contains(&asked);
                if !rate_ok {
                    write_package(&mut w, TEXT_MESSAGE, &emulator_text(&format!("output frequency {asked} Hz is not in [1, {max}]"), MessageLevel::Error))?;
                }
                frequency_hz = asked;
                recipe_id = if all_found && rate_ok && !recipe.is_empty() { next_id } else { 0 };
                if recipe_id != 0 {
                    next_id = next_id.checked_add(1).unwrap_or(1);
                } else {
                    recipe.clear();
                }
                let mut reply = vec![recipe_id];
                reply.extend_from_slice(types.join(",").as_bytes());
                if cfg.quirks.text {
                    write_package(&mut w, TEXT_MESSAGE, &emulator_text("output recipe set up", MessageLevel::Info))?;
                }
                write_package(&mut w, SETUP_OUTPUTS, &reply)?;
            }
            SETUP_INPUTS => {
                write_package(&mut w, SETUP_INPUTS, b"\x02IN_USE")?;
            }
            START => {
                if recipe.is_empty() {
                    write_package(&mut w, START, &[0])?;
                    continue;
                }
                if cfg.quirks.text {
                    write_package(&mut w, TEXT_MESSAGE, &emulator_text("streaming", MessageLevel::Info))?;
                }
                return stream(&mut w, &mut r, (&recipe, recipe_id, frequency_hz), cfg, stop, counters, epoch);
            }
            PAUSE => write_package(&mut w, PAUSE, &[1])?,
            _ => write_package(&mut w, TEXT_MESSAGE, &emulator_text("unsupported package", MessageLevel::Warning))?,
        }
    }
}

/// Streams the recipe at the controller's rate, sending the packages of
/// the control cycles where the requested rate's clock ticks.
fn stream(
    w: &mut TcpStream,
    r: &mut std::io::BufReader<TcpStream>,
    (recipe, recipe_id, frequency_hz): (&[(String, FieldType)], u8, f64),
    cfg: &EmulatorConfig,
    stop: &AtomicBool,
    (sent, lost): (&Counter, &Counter),
    epoch: Instant,
) -> std::io::Result<()> {
    use rand::{Rng, SeedableRng};
    let rate_hz = cfg.controller.rate_hz();
    let period = Duration::from_secs_f64(1.0 / rate_hz);
    // Controller time runs from the emulator's start; cycle k at k * period.
    let mut k = (epoch.elapsed().as_secs_f64() * rate_hz).ceil() as u64;
    let package = |k: u64| {
        let t = k as f64 / rate_hz;
        let mut b = vec![recipe_id];
        for (n, ty) in recipe {
            encode_value(*ty, &emulated_values(n, t, k, cfg), &mut b);
        }
        b
    };
    // Cycle k carries a package when the requested clock ticked since k - 1.
    let ticks = |k: u64| (k as f64 * frequency_hz / rate_hz + 1e-9).floor();
    let due_at = |k: u64| k == 0 || ticks(k) > ticks(k - 1);
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut streamed = 0u64;
    if cfg.quirks.early_data {
        write_package(w, DATA_PACKAGE, &package(k))?;
        sent.fetch_add(1, Ordering::Relaxed);
        k += 1;
    }
    write_package(w, START, &[1])?;
    r.get_ref().set_nonblocking(true)?;
    let mut buf = std::io::BufWriter::with_capacity(1 << 14, w.try_clone()?);
    while !stop.load(Ordering::Relaxed) {
        let due = epoch + period * k as u32;
        let now = Instant::now();
        if due > now {
            buf.flush()?;
            std::thread::sleep(due - now);
        }
        if !due_at(k) {
            k += 1;
            continue;
        }
        if cfg.quirks.lose > 0.0 && rng.gen::<f64>() < cfg.quirks.lose {
            lost.fetch_add(1, Ordering::Relaxed);
        } else {
            write_package(&mut buf, DATA_PACKAGE, &package(k))?;
            sent.fetch_add(1, Ordering::Relaxed);
        }
        k += 1;
        streamed += 1;
        if cfg.quirks.exception_after == Some(streamed) {
            write_package(&mut buf, TEXT_MESSAGE, &emulator_text("C153A0: protective stop (emulated)", MessageLevel::Exception))?;
        }
        if cfg.quirks.drop_after.is_some_and(|n| streamed >= n) {
            // The quirk: the connection drops mid-stream.
            buf.flush()?;
            return w.shutdown(std::net::Shutdown::Both);
        }
        // A pause request ends the stream.
        let mut peek = [0u8; 3];
        match r.get_ref().peek(&mut peek) {
            Ok(0) => return Ok(()),
            Ok(n) if n >= 3 && peek[2] == PAUSE && cfg.quirks.ignore_pause => {
                // The quirk: the request is read and dropped, the stream goes on.
                r.get_ref().set_nonblocking(false)?;
                let _ = read_package(r)?;
                r.get_ref().set_nonblocking(true)?;
            }
            Ok(n) if n >= 3 && peek[2] == PAUSE && cfg.quirks.trickle_after_pause => {
                r.get_ref().set_nonblocking(false)?;
                let _ = read_package(r)?;
                buf.flush()?;
                return trickle(w, stop);
            }
            Ok(n) if n >= 3 && peek[2] == PAUSE => {
                r.get_ref().set_nonblocking(false)?;
                let _ = read_package(r)?;
                buf.flush()?;
                write_package(&mut buf, PAUSE, &[1])?;
                buf.flush()?;
                return Ok(());
            }
            _ => {}
        }
    }
    buf.flush()
}
