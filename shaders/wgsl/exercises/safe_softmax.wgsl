// Exercise: safe softmax, one workgroup per row.
//
// The harness provides (keep these declarations as they are):
//   params.rows, params.cols   x and y are rows × cols, row-major
//   params.neg_inf             −inf (WGSL has no infinity literal)
//   x                          the logits
//   y                          write softmax(row) for every row
// It dispatches one workgroup per row: @workgroup_size(256),
// dispatchWorkgroups(rows); workgroup_id.x is the row.
// Checked on cols = 1, 2, 255, 257, 1000, 4097, logits of ±10000 (exp
// overflows f32 past 88.7), and rows holding −inf (masked positions).
//
// 中文：
// 练习：安全 softmax（safe softmax），每行一个工作组（相当于 CUDA 的线程块）。
//
// 测试框架（harness）提供以下声明（请保持原样）：
//   params.rows, params.cols   x 和 y 都是 rows × cols，按行主序存储
//   params.neg_inf             −inf（WGSL 没有无穷大字面量）
//   x                          logits
//   y                          对每一行写入 softmax(row)
// 每行 dispatch 一个工作组：@workgroup_size(256)，
// dispatchWorkgroups(rows)；workgroup_id.x 就是行号。
// 检查用例：cols = 1、2、255、257、1000、4097，±10000 的 logits
// （自变量超过 88.7 时 exp 在 f32 里就会上溢），以及含 −inf 的行（被掩码屏蔽的位置）。
// @harness-declarations

var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) tid: u32,
        @builtin(workgroup_id) wg: vec3<u32>) {
    let base = wg.x * params.cols;
    //en TODO 1. The row max m: strided loop, then a tree in partial[].
    //en TODO 2. The sum of exp(x − m): strided loop, then a tree.
    //en         (workgroupBarrier() between every step, and before reusing partial[].)
    //en TODO 3. y[i] = exp(x[i] − m) / sum.
    //zh TODO 1. 行最大值 m：跨步循环，然后在 partial[] 上做树形归约。
    //zh TODO 2. exp(x − m) 之和：跨步循环，再做一次树形归约。
    //zh         （每一步之间、以及复用 partial[] 之前都要 workgroupBarrier()。）
    //zh TODO 3. y[i] = exp(x[i] − m) / sum。
    for (var c = tid; c < params.cols; c += 256u) {
        y[base + c] = 0.0;
    }
}
