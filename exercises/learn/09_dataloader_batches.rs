//! Exercise 09: a shuffling data loader.
//!
//! 中文：
//! 练习 09：带打乱（shuffle）的数据加载器（data loader）。

/// Shuffle the indices 0..len uniformly at random, then cut them into
/// batches of `batch_size` (≥ 1). With `drop_last`, a short last batch is
/// dropped; without it, it is kept. `below(n)` returns a uniformly random
/// number in 0..n: draw all randomness from it, so a seeded stream gives the
/// same batches.
///
/// The check: sizes, every index at most once, reproducibility, and a
/// uniform shuffle: over 60,000 shuffles of three items each of the six
/// orders must come up 1/6 of the time.
///
/// Hint: Fisher–Yates: for i from len − 1 down to 1, swap positions i and
/// below(i + 1). Swapping with below(len) at every i looks as good and is
/// biased: n^n equally likely paths cannot spread evenly over n! orders.
///
/// 中文：
/// 把下标 0..len 均匀随机地打乱，再切成每批 `batch_size`（≥ 1）个的批。设置
/// `drop_last` 时，丢掉不满的最后一批；不设置时保留它。`below(n)` 返回 0..n 内均匀
/// 分布的随机数：所有随机性都从它取，这样同一个种子的随机流会得到相同的批。
///
/// 检查方式：批的大小，每个下标至多出现一次，可复现性，以及打乱是否均匀：对三个元素
/// 打乱 60,000 次，六种顺序都必须各占 1/6。
///
/// 提示：Fisher–Yates 洗牌：i 从 len − 1 递减到 1，交换位置 i 和 below(i + 1)。每个
/// i 都和 below(len) 交换，看起来一样好，其实是有偏的：n^n 条等概率的路径无法平均
/// 分到 n! 种顺序上。
pub fn dataloader_batches(
    len: usize,
    batch_size: usize,
    drop_last: bool,
    below: &mut dyn FnMut(usize) -> usize,
) -> Vec<Vec<usize>> {
    todo!()
}
