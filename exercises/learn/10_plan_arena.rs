//! Exercise 10: plan a step's memory ahead of time, as a graph compiler does.
//!
//! 中文：
//! 练习 10：像图编译器那样，提前规划一步训练的内存。

/// Each buffer is `(bytes, first, end)`: it is live at the points
/// `first..end` of the step (half-open: a buffer freed at point 5 and one
/// made at point 5 are never live together). Give every buffer an offset
/// in one arena so that two buffers live at the same point never share a
/// byte, using as little arena as you can. A buffer with `first >= end` is
/// never live; any offset will do.
///
/// The check: random lifetime tables; no two buffers live together may
/// overlap, and the arena (the largest offset + bytes) may be no larger
/// than the plan of dlsys-lab's planner, greedy by size with best fit.
///
/// Hint: greedy by size: take the buffers largest first (ties: the earlier
/// `first`, then the earlier index). For each, list the buffers already placed that are live at
/// some point with it, sorted by offset; put it at the start of the
/// smallest gap between them that holds it (best fit), else past the
/// last of them.
///
/// 中文：
/// 每个缓冲区是 `(bytes, first, end)`：它在这一步的 `first..end` 这些时间点存活
/// （左闭右开：在第 5 点释放的缓冲区和在第 5 点创建的缓冲区从不同时存活）。为每个
/// 缓冲区在一块 arena 里分配一个偏移，使同一时间点存活的两个缓冲区没有任何一个字节
/// 重叠，并且 arena 越小越好。`first >= end` 的缓冲区从不存活，偏移随意。
///
/// 检查方式：随机的生命周期表；同时存活的两个缓冲区不能重叠，arena（最大的
/// 偏移 + 字节数）不能比 dlsys-lab 的规划器（按大小贪心、最佳适配）的结果更大。
///
/// 提示：按大小贪心：从大到小处理缓冲区（一样大时 `first` 小的先，再一样时下标小的先）。对每个缓冲区，
/// 列出已经放好的、和它在某个时间点同时存活的缓冲区，按偏移排序；把它放进其中能
/// 容纳它的最小空隙的起点（最佳适配），没有这样的空隙就放在它们最后面。
pub fn plan_arena(buffers: &[(u64, u32, u32)]) -> Vec<u64> {
    todo!()
}
