// Exercise: the maximum of each row.
//
// The harness provides (keep these declarations as they are):
//   params.rows, params.cols   x is rows × cols, row-major
//   params.neg_inf             −inf (WGSL has no infinity literal)
//   x                          the input
//   y                          rows values: y[r] = max of row r
// It dispatches one workgroup per row: @workgroup_size(256),
// dispatchWorkgroups(rows); workgroup_id.x is the row.
// Checked on cols = 1, 2, 255, 257, 1000, 4097, rows of only negative
// values, rows holding −inf and +inf, and a row that is all −inf.
//
// 中文：
// 练习：求每一行的最大值。
//
// 测试框架（harness）提供以下声明（请保持原样）：
//   params.rows, params.cols   x 是 rows × cols 的矩阵，按行主序存储
//   params.neg_inf             −inf（WGSL 没有无穷大字面量）
//   x                          输入
//   y                          rows 个值：y[r] = 第 r 行的最大值
// 每行 dispatch 一个工作组（相当于 CUDA 的线程块）：@workgroup_size(256)，
// dispatchWorkgroups(rows)；workgroup_id.x 就是行号。
// 检查用例：cols = 1、2、255、257、1000、4097，全是负数的行，
// 含 −inf 和 +inf 的行，以及全部为 −inf 的行。
// @harness-declarations

var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) tid: u32,
        @builtin(workgroup_id) wg: vec3<u32>) {
    let row = wg.x;
    //en TODO: each invocation takes the max of its strided share of the row,
    //en then a tree in partial[] (workgroupBarrier() between steps), then
    //en invocation 0 writes y[row]. What is the max of nothing?
    //zh TODO：每个线程先求它跨步负责的那部分元素的最大值，
    //zh 再在 partial[] 上做树形归约（各步之间 workgroupBarrier()），最后
    //zh 线程 0 写出 y[row]。一个元素都没有时，最大值该是多少？
    if (tid == 0u) {
        y[row] = x[row * params.cols];
    }
}
