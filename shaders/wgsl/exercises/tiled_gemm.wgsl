// Exercise: a tiled matrix multiply, C = A·B.
//
// Stage 16 × 16 tiles of A and B in workgroup memory (CUDA: __shared__),
// so that each value read from global memory is used 16 times instead of
// once, and wait at workgroupBarrier() (CUDA: __syncthreads()) both after
// loading a tile and before overwriting it.
//
// The harness provides (keep these declarations as they are):
//   params.rows = M, params.cols = N, params.n = K
//   x   A (M × K, row-major) followed at once by B (K × N, row-major):
//       A[i][p] = x[i * K + p], B[p][j] = x[M * K + p * N + j]
//   y   C (M × N, row-major)
// It dispatches 16 × 16 tiles of C: @workgroup_size(16, 16),
// dispatchWorkgroups(ceil(N / 16), ceil(M / 16)); workgroup_id.x is the
// tile column, .y the tile row (a workgroup is CUDA's thread block).
// Checked on M×N×K = 1×1×1, 1×17×1, 17×33×65, 33×16×16, 64×64×64,
// 100×7×300 and with ±inf in A: each C[i][j] within 1e-4 · Σₖ |A[i][k]|·|B[k][j]|.
//
// 中文：
// 练习：分块（tiling）矩阵乘法 C = A·B。
//
// 把 A 和 B 各一块 16 × 16 的分块搬进工作组共享内存（CUDA 的 __shared__），
// 这样从全局内存读出的每个值能用 16 次，而不是 1 次。加载完一个分块之后、
// 以及覆盖它之前，都要在 workgroupBarrier()（CUDA 的 __syncthreads()）处等齐。
//
// 测试框架（harness）提供以下声明（请保持原样）：
//   params.rows = M，params.cols = N，params.n = K
//   x   先是 A（M × K，行主序），紧接着是 B（K × N，行主序）：
//       A[i][p] = x[i * K + p]，B[p][j] = x[M * K + p * N + j]
//   y   C（M × N，行主序）
// 按 C 的 16 × 16 分块 dispatch：@workgroup_size(16, 16)，
// dispatchWorkgroups(ceil(N / 16), ceil(M / 16))；workgroup_id.x 是分块所在的列，
// .y 是分块所在的行（一个工作组相当于 CUDA 的一个线程块）。
// 检查用例：1×1×1、1×17×1、17×33×65、33×16×16、64×64×64、100×7×300，
// 以及 A 里含 ±inf 的情形：每个 C[i][j] 的误差不超过 1e-4 · Σₖ |A[i][k]|·|B[k][j]|。
// @harness-declarations

var<workgroup> tile_a: array<array<f32, 16>, 16>;
var<workgroup> tile_b: array<array<f32, 16>, 16>;

@compute @workgroup_size(16, 16)
fn main(@builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(workgroup_id) wg: vec3<u32>) {
    let i = wg.y * 16u + lid.y;
    let j = wg.x * 16u + lid.x;
    let m = params.rows;
    let n = params.cols;
    let k = params.n;
    var acc = 0.0;
    //en TODO: loop over the K dimension 16 at a time (k0 = 0, 16, …):
    //en   1. tile_a[lid.y][lid.x] = A[i][k0 + lid.x], tile_b[lid.y][lid.x] =
    //en      B[k0 + lid.y][j] — 0.0 outside A or B (the edge tiles are partial);
    //en   2. workgroupBarrier();
    //en   3. acc += Σ over p < 16 of tile_a[lid.y][p] * tile_b[p][lid.x];
    //en   4. workgroupBarrier() before the next tile overwrites these.
    //en Keep the barriers outside any if: every invocation must reach them.
    //zh TODO：沿 K 维每次走 16（k0 = 0, 16, …）：
    //zh   1. tile_a[lid.y][lid.x] = A[i][k0 + lid.x]，tile_b[lid.y][lid.x] =
    //zh      B[k0 + lid.y][j]——超出 A 或 B 的位置填 0.0（边缘的分块不完整）；
    //zh   2. workgroupBarrier();
    //zh   3. acc += 对 p < 16 求和 tile_a[lid.y][p] * tile_b[p][lid.x]；
    //zh   4. 下一块覆盖这两个分块之前，再 workgroupBarrier()。
    //zh 屏障不要放进任何 if 里：每个线程都必须执行到。
    if (i < m && j < n) {
        y[i * n + j] = acc;
    }
}
