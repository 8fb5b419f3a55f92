// Exercise: online softmax (Milakov & Gimelshein, 2018), one workgroup per row.
//
// Each invocation reads its share of the row ONCE to get both its max m and
// its sum s of exp(x − m); the (m, s) pairs are then merged in a tree, and
// one more pass writes the outputs.
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
// 练习：在线 softmax（online softmax，Milakov & Gimelshein, 2018），每行一个工作组
// （相当于 CUDA 的线程块）。
//
// 每个线程只把自己负责的那部分行读一次，就同时得到它的最大值 m
// 和 exp(x − m) 的和 s；然后各线程的 (m, s) 对按树形合并，
// 最后再扫一遍写出结果。
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

var<workgroup> part_m: array<f32, 256>;
var<workgroup> part_s: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) tid: u32,
        @builtin(workgroup_id) wg: vec3<u32>) {
    let base = wg.x * params.cols;
    //en TODO 1. Running (m, s) over c = tid, tid + 256, …: when v > m,
    //en         s = s * exp(m − v) + 1 and m = v; else s += exp(v − m).
    //en         Skip v == −inf (−inf − (−inf) is NaN).
    //en TODO 2. Merge pairs in a tree: m = max(ma, mb),
    //en         s = sa * exp(ma − m) + sb * exp(mb − m) (careful when m is −inf).
    //en TODO 3. y = exp(x − m) / s.
    //zh TODO 1. 在 c = tid, tid + 256, … 上维护 (m, s)：当 v > m 时，
    //zh         s = s * exp(m − v) + 1，m = v；否则 s += exp(v − m)。
    //zh         跳过 v == −inf（−inf − (−inf) 是 NaN）。
    //zh TODO 2. 树形两两合并：m = max(ma, mb)，
    //zh         s = sa * exp(ma − m) + sb * exp(mb − m)（m 为 −inf 时要小心）。
    //zh TODO 3. y = exp(x − m) / s。
    for (var c = tid; c < params.cols; c += 256u) {
        y[base + c] = 0.0;
    }
}
