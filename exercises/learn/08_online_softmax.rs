//! Exercise 08: online softmax (Milakov & Gimelshein, 2018).

/// Returns the softmax of `row`, computing its max and its sum of
/// exponentials in *one* pass (then one more pass to write the outputs):
/// the trick behind fused softmax kernels and FlashAttention.
///
/// Rows may hold huge logits (±1000) and −inf entries (masked positions).
///
/// The check: rows of length 1, 2, 2^k ± 1, huge logits, −inf, and a row
/// whose max comes last, against the CPU softmax reference (f64 inside).
///
/// Hint: keep a running max m and a running sum s of exp(x − m). When a new
/// x exceeds m, the old terms were scaled for the old max: s ← s·exp(m − x) + 1,
/// m ← x. Otherwise s ← s + exp(x − m). Skip −inf (it adds nothing, and
/// −inf − (−inf) is NaN).
pub fn online_softmax(row: &[f32]) -> Vec<f32> {
    todo!()
}
