//! Exercise 12: symmetric per-channel int8 quantisation.
//!
//! 中文：
//! 练习 12：对称的逐通道 int8 量化。

/// Quantise a weight matrix `w` of `rows × cols` (row-major: `rows` inputs,
/// `cols` output channels) to int8, one scale per output channel (column),
/// symmetric: scale_j = amax_j / 127 over column j, code = x / scale_j
/// rounded to nearest, ties to even, clamped to [−127, 127]. Return the
/// codes (row-major, like `w`) and the `cols` scales. Work in f64.
/// A column of zeros gets scale 1 (its codes are 0; nothing is divided by
/// zero). A NaN or an infinity anywhere: return `None`.
/// Dequantising, code · scale_j, is then within scale_j / 2 of x.
///
/// The check: codes and scales against dlsys-lab's quantiser (the
/// quantisation lesson's) on seeded matrices, an all-zero channel, one huge
/// value in one channel (which must not touch the other channels' scales),
/// a single row, and ±inf and NaN refused.
///
/// Hint: first find each column's amax (|x| largest), then its scale, then
/// every code with `f64::round_ties_even`.
///
/// 中文：
/// 把 `rows × cols` 的权重矩阵 `w`（行主序：`rows` 个输入、`cols` 个输出通道）量化成
/// int8，每个输出通道（每一列）一个缩放因子，对称映射：scale_j = 第 j 列的 amax / 127，
/// 码值 = x / scale_j 按就近舍入（偶数优先）取整，再截到 [−127, 127]。返回码值（与
/// `w` 一样行主序）和 `cols` 个缩放因子。用 f64 计算。全零的列缩放因子取 1（码值都
/// 是 0，不做除以零的运算）。任何位置出现 NaN 或无穷大：返回 `None`。这样反量化
/// code · scale_j 与 x 的差不超过 scale_j / 2。
///
/// 检查方式：在带种子的随机矩阵、全零通道、某个通道里有一个极大值（不能影响其他
/// 通道的缩放因子）、只有一行的矩阵上，与 dlsys-lab 的量化器（量化一课所用）比对码值
/// 和缩放因子；±inf 和 NaN 必须被拒绝。
///
/// 提示：先求每一列的 amax（绝对值最大的数），再算缩放因子，最后用
/// `f64::round_ties_even` 算出每个码值。
pub fn quantise_per_channel(w: &[f32], rows: usize, cols: usize) -> Option<(Vec<i8>, Vec<f64>)> {
    todo!()
}
