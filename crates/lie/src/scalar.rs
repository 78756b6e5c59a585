//! A minimal real-scalar abstraction with a forward-mode dual number, so that
//! the few closed forms whose *derivatives* the rod solver needs (the tangent
//! map of the exponential) are written once and differentiated exactly.

use std::ops::{Add, Div, Mul, Neg, Sub};

/// What the generic closed forms need from a scalar.
pub trait Real: Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self> + Neg<Output = Self> {
    fn from_f64(v: f64) -> Self;
    /// The plain value (used for branch decisions only).
    fn value(self) -> f64;
    /// Largest absolute part (value or derivatives): for series cut-offs.
    fn magnitude(self) -> f64;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn sqrt(self) -> Self;
}

impl Real for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
    fn value(self) -> f64 {
        self
    }
    fn magnitude(self) -> f64 {
        self.abs()
    }
    fn sin(self) -> Self {
        f64::sin(self)
    }
    fn cos(self) -> Self {
        f64::cos(self)
    }
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
}

/// Forward-mode dual number `re + eps * du`, `eps^2 = 0`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dual {
    pub re: f64,
    pub du: f64,
}

impl Dual {
    pub fn new(re: f64, du: f64) -> Self {
        Self { re, du }
    }
    pub fn constant(re: f64) -> Self {
        Self { re, du: 0.0 }
    }
}

impl Add for Dual {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Self::new(self.re + o.re, self.du + o.du)
    }
}
impl Sub for Dual {
    type Output = Self;
    fn sub(self, o: Self) -> Self {
        Self::new(self.re - o.re, self.du - o.du)
    }
}
impl Mul for Dual {
    type Output = Self;
    fn mul(self, o: Self) -> Self {
        Self::new(self.re * o.re, self.re * o.du + self.du * o.re)
    }
}
impl Div for Dual {
    type Output = Self;
    fn div(self, o: Self) -> Self {
        let inv = 1.0 / o.re;
        Self::new(self.re * inv, (self.du * o.re - self.re * o.du) * inv * inv)
    }
}
impl Neg for Dual {
    type Output = Self;
    fn neg(self) -> Self {
        Self::new(-self.re, -self.du)
    }
}

impl Real for Dual {
    fn from_f64(v: f64) -> Self {
        Self::constant(v)
    }
    fn value(self) -> f64 {
        self.re
    }
    fn magnitude(self) -> f64 {
        self.re.abs().max(self.du.abs())
    }
    fn sin(self) -> Self {
        Self::new(self.re.sin(), self.du * self.re.cos())
    }
    fn cos(self) -> Self {
        Self::new(self.re.cos(), -self.du * self.re.sin())
    }
    fn sqrt(self) -> Self {
        let s = self.re.sqrt();
        Self::new(s, self.du / (2.0 * s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dual_derivative_of_composite_function() {
        // f(x) = sin(x) * sqrt(x) / (1 + x^2), f'(x) checked against a central difference.
        let f = |x: Dual| x.sin() * x.sqrt() / (Dual::constant(1.0) + x * x);
        let x0 = 0.7;
        let d = f(Dual::new(x0, 1.0)).du;
        let g = |x: f64| x.sin() * x.sqrt() / (1.0 + x * x);
        let h = 1e-6;
        let fd = (g(x0 + h) - g(x0 - h)) / (2.0 * h);
        assert!((d - fd).abs() < 1e-9, "{d} vs {fd}");
    }
}
