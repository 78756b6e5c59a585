//! `record`: the first stage of record -> track -> observe -> identify ->
//! simulate -> report. Device protocols (UR RTDE over TCP, Robotiq FT 300
//! and ASCII line sensors over serial ports, ATI Net F/T over UDP, cameras
//! through OpenCV), emulators that speak the same bytes, and the recorder
//! that writes every sample into a session.

pub mod ascii;
pub mod camera;
pub mod ft300;
pub mod netft;
pub mod outage;
pub mod rig;
pub mod robot;
pub mod rtde;
pub mod serial;
pub mod serial_emulators;
