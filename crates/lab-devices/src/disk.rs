//! How long the disk lasts: before a recording starts, each device's bytes
//! a second are estimated from its configuration and set against the free
//! space of the session's disk, in one line (stage "record"). A full disk
//! still stops a recording cleanly; this says beforehand when it will.

use std::path::Path;

/// Bytes a pixel of a camera's frame takes on disk, by container. Raw is
/// exact (24-bit BGR). HuffYUV and Motion-JPEG were measured on the demo's
/// 1280 x 720 frames (`rodlab synth video`): HuffYUV 1.69 B/px; Motion-JPEG
/// at quality 75 0.19 B/px at the demo's 2 grey levels of sensor noise and
/// 0.43 at 8, which the estimate takes (a noisier or busier scene).
pub fn bytes_per_pixel(container: &str) -> f64 {
    match container {
        "mkv" => 1.69,
        "avi" => 0.43,
        _ => 3.0,
    }
}

/// One device's estimate.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceRate {
    pub name: String,
    pub bytes_per_s: f64,
}

/// A camera's bytes a second: its frames at `fps`, by container.
pub fn camera_rate(name: &str, width_px: f64, height_px: f64, fps: f64, container: &str) -> DeviceRate {
    DeviceRate { name: name.into(), bytes_per_s: width_px * height_px * fps * bytes_per_pixel(container) }
}

/// A table stream's bytes a second at most: `rows_per_s` rows of `columns`
/// 8-byte values and the host time (Parquet's compression only lowers it).
pub fn table_rate(name: &str, rows_per_s: f64, columns: usize) -> DeviceRate {
    DeviceRate { name: name.into(), bytes_per_s: rows_per_s * (columns + 1) as f64 * 8.0 }
}

/// Free bytes for an unprivileged writer on the disk holding `path` (the
/// nearest existing ancestor); `None` when the system does not say.
pub fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let existing = path.ancestors().find(|p| p.exists())?;
    let c_path = std::ffi::CString::new(existing.as_os_str().as_bytes()).ok()?;
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a statvfs the call fills.
    let ok = unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) } == 0;
    ok.then(|| stat.f_bavail as u64 * stat.f_frsize as u64)
}

fn bytes_text(bytes: f64) -> String {
    match bytes {
        b if b >= 1e12 => format!("{:.1} TB", b / 1e12),
        b if b >= 1e9 => format!("{:.1} GB", b / 1e9),
        b if b >= 1e6 => format!("{:.1} MB", b / 1e6),
        b => format!("{:.0} kB", b / 1e3),
    }
}

fn duration_text(s: f64) -> String {
    match s {
        s if s >= 86_400.0 => format!("{:.1} days", s / 86_400.0),
        s if s >= 3600.0 => format!("{} h {:02} min", (s / 3600.0) as u64, ((s % 3600.0) / 60.0) as u64),
        s if s >= 60.0 => format!("{:.0} min", s / 60.0),
        s => format!("{s:.0} s"),
    }
}

/// What the disk allows, in one line: the rig's bytes a minute (the
/// largest device named), against `free` bytes, for `duration_s` (or how
/// long the disk lasts when none is planned). The second value is whether
/// the planned recording will not fit.
pub fn budget(rates: &[DeviceRate], free: u64, duration_s: Option<f64>) -> (String, bool) {
    let total: f64 = rates.iter().map(|r| r.bytes_per_s).sum();
    let largest = rates.iter().max_by(|a, b| a.bytes_per_s.total_cmp(&b.bytes_per_s));
    let of = largest.map_or(String::new(), |r| format!(" ({} {} a minute)", r.name, bytes_text(r.bytes_per_s * 60.0)));
    let rate = format!("this rig writes about {} a minute{of}", bytes_text(total * 60.0));
    let free_text = bytes_text(free as f64);
    if total <= 0.0 {
        return (format!("disk: {free_text} free"), false);
    }
    let lasts_s = free as f64 / total;
    match duration_s {
        Some(d) if d * total > free as f64 => (
            format!(
                "disk: {rate}: the planned {} need {}, {free_text} are free: the disk fills after {} (the recording then stops, kept)",
                duration_text(d),
                bytes_text(d * total),
                duration_text(lasts_s)
            ),
            true,
        ),
        Some(d) => (format!("disk: {rate}: the planned {} need {} of {free_text} free", duration_text(d), bytes_text(d * total)), false),
        None => (format!("disk: {rate}: {free_text} free last {}", duration_text(lasts_s)), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures: raw 1280 x 720 at 30 frames/s is 5 GB a
    /// minute, 2.4 TB for an 8-hour day.
    #[test]
    fn raw_video_of_a_lab_day() {
        let cam = camera_rate("camera", 1280.0, 720.0, 30.0, "raw");
        assert!((cam.bytes_per_s * 60.0 / 1e9 - 4.98).abs() < 0.01, "{}", cam.bytes_per_s);
        let (line, short) = budget(&[cam.clone(), table_rate("robot", 500.0, 13)], 1_000_000_000_000, Some(8.0 * 3600.0));
        assert!(short && line.contains("the planned 8 h 00 min need 2.4 TB, 1.0 TB are free: the disk fills after 3 h 20 min"), "{line}");
        assert!(line.contains("(camera 5.0 GB a minute)"), "{line}");
        let (line, short) = budget(&[cam], 1_000_000_000_000, None);
        assert!(!short && line.ends_with("1.0 TB free last 3 h 20 min"), "{line}");
    }
}
