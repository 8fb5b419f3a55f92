// Exercise: FlashAttention forward for one head (Dao et al., 2022).
//
// O = softmax(Q·Kᵀ/√d)·V for one head of N queries and N keys of d values.
// Only the first params.n keys are real (key padding): the rest are masked.
// One invocation per query row, 64 rows per workgroup. K and V go through
// workgroup memory TILE rows at a time, loaded once for all 64 rows; each
// row keeps a running max m, a running sum l and its O accumulator, and
// rescales both when a tile raises the max. No N × N matrix is written.
//
// The harness provides (keep these declarations as they are):
//   params.rows                N, the queries (and the keys)
//   params.cols                d, values per row (at most 64)
//   params.n                   real keys: keys n … N − 1 are masked
//   params.neg_inf             −inf (WGSL has no infinity literal)
//   x                          Q (N × d), then K (N × d), then V (N × d)
//   y                          write O (N × d); a row with no real key is 0
// It dispatches ceil(N / 64) workgroups: @workgroup_size(64); the query
// row is workgroup_id.x · 64 + local_invocation_index.
// Checked on N = 1, N off the tile, d = 32 and 64, scores of ±10000 (exp
// overflows f32 past 88.7), no real key at all, key padding, and scores
// that rise in every tile (so the running max moves every time).
//
// 中文：
// 练习：单个注意力头的 FlashAttention 前向（Dao 等，2022）。
//
// 对一个头计算 O = softmax(Q·Kᵀ/√d)·V：N 个查询、N 个键，每个 d 维。
// 只有前 params.n 个键是真实的（key padding），其余的被屏蔽。
// 每个线程负责一个查询行，每个工作组（相当于 CUDA 的线程块）64 行。
// K 和 V 每次搬 TILE 行进工作组共享内存，只读一次，供这 64 行共用；
// 每一行维护当前最大值 m、累加和 l 和它的 O 累加器，某个分块让最大值变大时，
// l 和 O 累加器都要重新缩放。全程不写出任何 N × N 的矩阵。
//
// 测试框架（harness）提供以下声明（请保持原样）：
//   params.rows                N，查询数（也是键数）
//   params.cols                d，每行的值个数（最多 64）
//   params.n                   真实键的个数：第 n … N − 1 个键被屏蔽
//   params.neg_inf             −inf（WGSL 没有无穷大字面量）
//   x                          依次是 Q（N × d）、K（N × d）、V（N × d）
//   y                          写入 O（N × d）；没有任何真实键的行写 0
// 它会 dispatch ceil(N / 64) 个工作组：@workgroup_size(64)；查询行号是
// workgroup_id.x · 64 + local_invocation_index。
// 检查用例：N = 1、N 不是分块的整数倍、d = 32 和 64、±10000 的分数
// （自变量超过 88.7 时 exp 在 f32 里就会上溢）、完全没有真实键、key padding，
// 以及每个分块里分数都在变大（当前最大值每次都会变）。
// @harness-declarations

const TILE: u32 = 16u;
var<workgroup> k_tile: array<f32, 1024>;
var<workgroup> v_tile: array<f32, 1024>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) tid: u32,
        @builtin(workgroup_id) wg: vec3<u32>) {
    let n = params.rows;
    let d = params.cols;
    let keys = min(params.n, n);
    let i = wg.x * 64u + tid;
    let live = i < n;
    let scale = inverseSqrt(f32(d));
    var q: array<f32, 64>;
    var acc: array<f32, 64>;
    var m = params.neg_inf;
    var l = 0.0;
    //en TODO 1. Load row i of Q into q (only where live).
    //en TODO 2. For each tile j0 = 0, TILE, … below keys: every invocation
    //en         helps copy its rows of K and V into k_tile and v_tile
    //en         (row t of the tile at t · d), then workgroupBarrier().
    //en TODO 3. If live: the tile's scores s = q·k / √d, their max mt =
    //en         max(m, …); multiply l AND every acc[c] by exp(m − mt); add
    //en         p = exp(s − mt) to l and p·v to acc; m = mt.
    //en         Then workgroupBarrier() before the next tile overwrites it.
    //en TODO 4. If live: y[i·d + c] = acc[c] / l, or 0 when l is 0.
    //zh TODO 1. 把 Q 的第 i 行读进 q（只在 live 时）。
    //zh TODO 2. 对 keys 以内的每个分块 j0 = 0, TILE, …：每个线程都帮忙把
    //zh         K 和 V 的若干行复制到 k_tile 和 v_tile（分块第 t 行放在 t · d），
    //zh         然后 workgroupBarrier()。
    //zh TODO 3. 若 live：算出这个分块的分数 s = q·k / √d 及其最大值 mt =
    //zh         max(m, …)；把 l 和每个 acc[c] 都乘以 exp(m − mt)；
    //zh         再把 p = exp(s − mt) 加到 l、把 p·v 加到 acc；m = mt。
    //zh         在下一个分块覆盖共享内存之前，再调用一次 workgroupBarrier()。
    //zh TODO 4. 若 live：y[i·d + c] = acc[c] / l，l 为 0 时写 0。
    if (live) {
        for (var c = 0u; c < d; c++) {
            y[i * d + c] = 0.0;
        }
    }
}
