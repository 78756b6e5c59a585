//! What every figure shares: the Okabe-Ito palette (safe for the common
//! colour-vision deficiencies; its pale yellow last), and the scale a
//! figure is drawn at (1 for SVG, 2 for the PNG a screen shows sharp).

use plotters::style::RGBColor;

/// Okabe & Ito's eight colours, strongest first: blue, vermillion, bluish
/// green, orange, reddish purple, sky blue, black, yellow.
pub const OKABE_ITO: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(230, 159, 0),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(240, 228, 66),
];

/// Colour `i` of the palette; past eight series the colours repeat and
/// the series tell themselves apart by their line (see [`repeats`]).
pub fn palette(i: usize) -> RGBColor {
    OKABE_ITO[i % OKABE_ITO.len()]
}

/// Whether series `i` repeats a colour (drawn dashed, or hollow).
pub fn repeats(i: usize) -> bool {
    i >= OKABE_ITO.len()
}

/// A figure's drawing scale: lengths in pixels at scale 1, times `k`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale(pub f64);

impl Scale {
    /// SVG: vector, drawn at scale 1.
    pub const SVG: Scale = Scale(1.0);
    /// PNG: twice the pixels, for screens of twice the density.
    pub const PNG: Scale = Scale(2.0);

    /// `v` pixels at this scale.
    pub fn px(self, v: u32) -> u32 {
        (v as f64 * self.0).round() as u32
    }

    /// `v` pixels at this scale, signed.
    pub fn at(self, v: i32) -> i32 {
        (v as f64 * self.0).round() as i32
    }

    /// A font size of `v` points at this scale.
    pub fn font(self, v: f64) -> f64 {
        v * self.0
    }

    /// A figure of `size` pixels at scale 1, at this scale.
    pub fn size(self, size: (u32, u32)) -> (u32, u32) {
        (self.px(size.0), self.px(size.1))
    }
}

/// `label` broken at spaces into lines of at most `width` characters (a
/// longer word stands on its own line, whole): legends never cut text.
pub fn wrap(label: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = vec![];
    for word in label.split(' ') {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}
