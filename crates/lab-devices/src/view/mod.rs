//! Seeing a session in the browser: while it records (`record --view`:
//! every device's state, rate, gaps and last values, time plots, the
//! camera's preview with its markers numbered, the strain observed live)
//! and afterwards (`session view`: the same page over the recorded files,
//! with a time slider). One page, two sources of its state: the recorders'
//! taps, or the session's tables. The page and its script are inside the
//! binary; plots are SVG drawn here.

pub mod http;
pub mod live;
pub mod replay;
pub mod svg;

use http::Reply;
use serde_json::{json, Value};

/// The page and its assets, the same for both views.
pub fn asset(path: &str) -> Option<Reply> {
    let (content_type, body): (&'static str, &'static str) = match path {
        "/" | "/index.html" => ("text/html; charset=utf-8", include_str!("assets/index.html")),
        "/view.js" => ("text/javascript; charset=utf-8", include_str!("assets/view.js")),
        "/view.css" => ("text/css; charset=utf-8", include_str!("assets/view.css")),
        _ => return None,
    };
    Some(Reply::Body { content_type, body: body.as_bytes().to_vec() })
}

/// A device's state as the page colours it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceState {
    /// Nothing yet.
    Waiting,
    Connected,
    /// Silent for longer than `SILENT_AFTER_S`; the recorder is reconnecting.
    Reconnecting,
    /// Silent for longer than `LOST_AFTER_S`.
    Lost,
    /// A replay past the stream's last row, or a camera's file played to its end.
    Ended,
}

/// A device silent this long is reconnecting, and this long lost \[s\].
pub const SILENT_AFTER_S: f64 = 1.0;
pub const LOST_AFTER_S: f64 = 5.0;

impl DeviceState {
    pub fn name(self) -> &'static str {
        match self {
            DeviceState::Waiting => "waiting",
            DeviceState::Connected => "connected",
            DeviceState::Reconnecting => "reconnecting",
            DeviceState::Lost => "lost",
            DeviceState::Ended => "ended",
        }
    }

    /// From the time since the last sample (None: none yet).
    pub fn of_silence(silent_s: Option<f64>) -> DeviceState {
        match silent_s {
            None => DeviceState::Waiting,
            Some(s) if s < SILENT_AFTER_S => DeviceState::Connected,
            Some(s) if s < LOST_AFTER_S => DeviceState::Reconnecting,
            Some(_) => DeviceState::Lost,
        }
    }
}

/// One device's line on the page.
pub struct DeviceLine {
    pub name: String,
    pub state: DeviceState,
    pub rate_hz: f64,
    pub rows: u64,
    pub gaps: u64,
    pub reconnects: u64,
    pub values: Vec<(String, f64)>,
}

impl DeviceLine {
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name, "state": self.state.name(), "rate_hz": finite(self.rate_hz), "rows": self.rows,
            "gaps": self.gaps, "reconnects": self.reconnects,
            "values": self.values.iter().map(|(k, v)| json!([short(k), finite(*v)])).collect::<Vec<_>>(),
        })
    }
}

/// NaN and infinities are not JSON: null.
pub fn finite(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        Value::Null
    }
}

/// Which of a stream's columns the page plots, by unit: a robot's TCP
/// position and force, every force \[N\] and torque \[N m\] column, and a
/// line sensor's other channels. `(title, column indices)`.
pub fn plot_groups(columns: &[String]) -> Vec<(String, Vec<usize>)> {
    let robot = columns.iter().any(|c| c == "timestamp");
    let find = |pred: &dyn Fn(&str) -> bool| -> Vec<usize> { columns.iter().enumerate().filter(|(_, c)| pred(c)).map(|(i, _)| i).collect() };
    let mut groups = vec![];
    if robot {
        for (title, prefix) in [("TCP position [m]", "actual_TCP_pose_"), ("TCP force [N]", "actual_TCP_force_")] {
            let idx = find(&|c| c.strip_prefix(prefix).is_some_and(|k| ["0", "1", "2"].contains(&k)));
            if !idx.is_empty() {
                groups.push((title.to_string(), idx));
            }
        }
        return groups;
    }
    let bookkeeping = |c: &str| matches!(c, "seq" | "t_device_s" | "frame" | "device_ms" | "status") || c.ends_with("sequence");
    let forces = find(&|c| c.ends_with("_n"));
    let torques = find(&|c| c.ends_with("_nm"));
    if !forces.is_empty() {
        groups.push(("force [N]".to_string(), forces));
    }
    if !torques.is_empty() {
        groups.push(("torque [N m]".to_string(), torques));
    }
    for (i, c) in columns.iter().enumerate() {
        if !bookkeeping(c) && !c.ends_with("_n") && !c.ends_with("_nm") {
            groups.push((c.clone(), vec![i]));
        }
    }
    groups
}

/// The columns a device's line shows: the plotted ones (a camera: its frame).
pub fn shown_columns(columns: &[String]) -> Vec<usize> {
    let plotted: Vec<usize> = plot_groups(columns).into_iter().flat_map(|(_, idx)| idx).collect();
    if plotted.is_empty() {
        columns.iter().position(|c| c == "frame").into_iter().collect()
    } else {
        plotted
    }
}

/// The plots of one device over `[t0, t1]` from its rows `(t_s, values)`.
pub fn device_plots<'a>(
    name: &str,
    columns: &[String],
    rows: impl Iterator<Item = (f64, &'a [f64])> + Clone,
    window: (f64, f64),
    cursor: Option<f64>,
) -> Vec<String> {
    plot_groups(columns)
        .into_iter()
        .map(|(title, idx)| {
            let series: Vec<svg::Series> = idx
                .iter()
                .map(|&i| svg::Series { name: short(&columns[i]), points: rows.clone().map(|(t, v)| (t, v.get(i).copied().unwrap_or(f64::NAN))).collect() })
                .collect();
            svg::plot(&svg::Axes { title: &format!("{name}: {title}"), x_label: "t [s]", x_range: Some(window), cursor, equal_aspect: false }, &series)
        })
        .collect()
}

/// `actual_TCP_pose_0` -> `x`; other names as they are.
fn short(column: &str) -> String {
    for prefix in ["actual_TCP_pose_", "actual_TCP_force_"] {
        if let Some(k) = column.strip_prefix(prefix) {
            return ["x", "y", "z", "rx", "ry", "rz"].get(k.parse::<usize>().unwrap_or(9)).map_or(column.to_string(), |s| s.to_string());
        }
    }
    column.to_string()
}

/// The strain part of the page: curvature along the rod and the rod's
/// shape (base and markers, in the plane where it moves most), observed on
/// the frame grabbed at `frame_t_s` \[s\] (the live strain may lag the
/// camera's newest frame).
pub fn strain_json(frame_t_s: f64, nodes: &[(f64, [f64; 3])], shape_w: &[[f64; 3]], residual_m: f64, status: &str) -> Value {
    let series: Vec<svg::Series> = ["kappa_x", "kappa_y", "kappa_z"]
        .iter()
        .enumerate()
        .map(|(k, name)| svg::Series { name: name.to_string(), points: nodes.iter().map(|(s, kappa)| (*s, kappa[k])).collect() })
        .collect();
    let curvature = svg::plot(&svg::Axes { title: "curvature [1/m]", x_label: "arc length s [m]", x_range: None, cursor: None, equal_aspect: false }, &series);
    // The horizontal axis the shape spreads along most, against z.
    let spread = |k: usize| {
        let (lo, hi) = shape_w.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p[k]), b.max(p[k])));
        hi - lo
    };
    let h = if spread(1) > spread(0) { 1 } else { 0 };
    let shape = svg::plot(
        &svg::Axes { title: "shape (base, markers)", x_label: if h == 0 { "x [m]" } else { "y [m]" }, x_range: None, cursor: None, equal_aspect: true },
        &[svg::Series { name: "rod".into(), points: shape_w.iter().map(|p| (p[h], p[2])).collect() }],
    );
    json!({
        "t_s": finite(frame_t_s), "svg": curvature, "shape_svg": shape, "residual_m": finite(residual_m), "status": status,
        "nodes": nodes.iter().map(|(s, k)| json!({"arc_m": s, "kappa_x": finite(k[0]), "kappa_y": finite(k[1]), "kappa_z": finite(k[2])})).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn plots_group_a_robot_a_force_sensor_and_a_line_sensor_by_unit() {
        let robot = names(&["timestamp", "actual_TCP_pose_0", "actual_TCP_pose_1", "actual_TCP_pose_2", "actual_TCP_pose_3", "actual_q_0"]);
        assert_eq!(plot_groups(&robot), vec![("TCP position [m]".to_string(), vec![1, 2, 3])]);
        let ft = names(&["fx_n", "fy_n", "fz_n", "mx_nm", "my_nm", "mz_nm", "rdt_sequence", "status"]);
        assert_eq!(plot_groups(&ft), vec![("force [N]".to_string(), vec![0, 1, 2]), ("torque [N m]".to_string(), vec![3, 4, 5])]);
        let cell = names(&["seq", "t_device_s", "force_n", "temperature_c"]);
        assert_eq!(plot_groups(&cell), vec![("force [N]".to_string(), vec![2]), ("temperature_c".to_string(), vec![3])]);
        assert_eq!(shown_columns(&names(&["frame", "device_ms"])), vec![0]);
    }

    #[test]
    fn device_states_follow_the_silence() {
        assert_eq!(DeviceState::of_silence(None), DeviceState::Waiting);
        assert_eq!(DeviceState::of_silence(Some(0.1)), DeviceState::Connected);
        assert_eq!(DeviceState::of_silence(Some(2.0)), DeviceState::Reconnecting);
        assert_eq!(DeviceState::of_silence(Some(9.0)), DeviceState::Lost);
    }
}
