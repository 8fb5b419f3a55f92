//! Exercise 11: liveness analysis — how long each buffer of a captured step lives.
//!
//! 中文：
//! 练习 11：活跃性分析——捕获下来的一步里，每个缓冲区要存活多久。

/// A captured step is a list of nodes run in order: node `i` runs at point
/// `i`, reads the nodes `inputs[i]` (all earlier) and writes one buffer.
/// `outputs` are the step's results (the loss, the gradients), which must
/// still be there when the step ends. Give each node's buffer the points it
/// is live at as `(first, end)`, half-open (`first..end`), no longer and no
/// shorter than it must: the planner of exercise 10 takes exactly these.
///
/// The check: hand-made and seeded random graphs, against dlsys-lab's
/// liveness analysis (the one its memory planner and its executor run).
///
/// Hint: a buffer is made at its node's own point. It must live through the
/// point of its last reader — the reader reads it while it runs, so `end` is
/// that reader's point + 1. A buffer nobody reads lives at its own point
/// only. A result lives to the end of the step: `end` is the number of nodes.
///
/// 中文：
/// 捕获下来的一步是一串按顺序执行的节点：节点 `i` 在时间点 `i` 执行，读取节点
/// `inputs[i]`（都在它之前），写出一个缓冲区。`outputs` 是这一步的结果（损失、
/// 梯度），这一步结束时它们必须还在。给每个节点的缓冲区算出它存活的时间点
/// `(first, end)`，左闭右开（`first..end`），不多不少：练习 10 的规划器要的正是这些输入。
///
/// 检查方式：在手写的图和用固定种子随机生成的图上，与 dlsys-lab 自己的活跃性分析
/// （它的内存规划器和执行器用的就是这个）比对结果。
///
/// 提示：缓冲区在它自己节点的时间点创建。它必须活过最后一个读它的节点的时间点——
/// 那个节点运行时还在读它，所以 `end` 是该节点的时间点 + 1。没有人读的缓冲区只在
/// 自己的时间点存活。结果要活到这一步结束：`end` 等于节点总数。
pub fn liveness(inputs: &[Vec<usize>], outputs: &[usize]) -> Vec<(u32, u32)> {
    todo!()
}
