//! The devices of a rig file ([`session::Rig`], the one rig schema) as the
//! recorder's device configurations.

use crate::camera::{CameraConfig, CameraSource};
use crate::robot::RobotConfig;
use crate::serial::{AsciiSensor, Ft300, SerialConfig, SerialSensor};
use session::Rig;

/// The robots of the rig.
pub fn robot_configs(rig: &Rig) -> Vec<RobotConfig> {
    rig.robots
        .iter()
        .map(|r| RobotConfig { name: r.name.clone(), address: r.address.clone(), frequency_hz: r.frequency_hz, variables: r.variables.clone() })
        .collect()
}

/// The cameras of the rig.
pub fn camera_configs(rig: &Rig) -> Vec<CameraConfig> {
    rig.cameras
        .iter()
        .map(|c| CameraConfig {
            name: c.name.clone(),
            source: match (&c.device, &c.file) {
                (Some(i), _) => CameraSource::Device(*i),
                (None, f) => CameraSource::File(f.clone().unwrap_or_default().into()),
            },
            fps: c.fps,
            file_start: c.file_start_unix_s.map(|t| std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(t)),
            container: c.container.clone(),
            settings: c.settings.clone(),
        })
        .collect()
}

/// Serial sensors with their decoders, in rig order.
pub fn serial_sensors(rig: &Rig) -> Vec<(SerialConfig, Box<dyn SerialSensor>)> {
    let mut v: Vec<(SerialConfig, Box<dyn SerialSensor>)> = vec![];
    for f in &rig.ft300s {
        v.push((SerialConfig { name: f.name.clone(), port: f.port.clone(), baud: f.baud }, Box::new(Ft300::default())));
    }
    for a in &rig.ascii_sensors {
        v.push((
            SerialConfig { name: a.name.clone(), port: a.port.clone(), baud: a.baud },
            Box::new(AsciiSensor::new(a.columns.clone(), a.separator(), a.scales())),
        ));
    }
    v
}

/// The Net F/T sensors of the rig.
pub fn netft_configs(rig: &Rig) -> Vec<crate::netft::NetFtConfig> {
    rig.netfts
        .iter()
        .map(|n| crate::netft::NetFtConfig {
            name: n.name.clone(),
            address: n.address.clone(),
            calibration_port: n.calibration_port,
            calibration: n.counts_per_force.zip(n.counts_per_torque),
            tare: n.tare,
        })
        .collect()
}
