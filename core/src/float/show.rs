//! Numbers as learners read them.

/// A number as learners read it: plain decimal in a comfortable range,
/// otherwise scientific (always the shortest text that reads back exactly).
pub fn show(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "+inf" } else { "-inf" }.to_owned();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    plain_or_scientific(x, x.abs())
}

/// [`show`] for an f32, with the f32's own shortest text (0.1, not
/// 0.10000000149011612).
pub fn show_f32(x: f32) -> String {
    if !x.is_finite() || x == 0.0 {
        return show(f64::from(x));
    }
    plain_or_scientific(x, f64::from(x.abs()))
}

/// The comfortable range, said once: decimal from 1e-4 up to 1e7.
fn plain_or_scientific<T: std::fmt::Display + std::fmt::LowerExp>(x: T, magnitude: f64) -> String {
    if (1e-4..1e7).contains(&magnitude) {
        x.to_string()
    } else {
        format!("{x:e}")
    }
}

/// [`show`] rounded to `digits` significant digits (for errors and ratios,
/// where more digits would only show the noise of the f64 they were computed in).
pub fn show_sig(x: f64, digits: usize) -> String {
    if !x.is_finite() || x == 0.0 {
        return show(x);
    }
    let rounded: f64 = format!("{:.*e}", digits.saturating_sub(1), x)
        .parse()
        .unwrap_or(x);
    show(rounded)
}
