// Exercise: transpose through workgroup memory.
//
// Read a 16 × 16 tile with coalesced loads (neighbouring invocations read
// neighbouring addresses), then write it out transposed, again coalesced,
// by reading the tile the other way round.
//
// The harness provides (keep these declarations as they are):
//   params.rows, params.cols   x is rows × cols, row-major
//   x                          the input
//   y                          the output, cols × rows: y[c][r] = x[r][c]
// It dispatches 16 × 16 tiles: @workgroup_size(16, 16),
// dispatchWorkgroups(ceil(cols / 16), ceil(rows / 16)); workgroup_id.x is
// the tile column, .y the tile row.
// Checked on 1 × 1, 1 × 17, 17 × 1, 16 × 16, 33 × 47 and 100 × 257.
//
// 中文：
// 练习：借助工作组共享内存（workgroup memory）做矩阵转置。
//
// 用合并访存（coalesced access：相邻线程读相邻地址）读入一个 16 × 16 的分块（tile），
// 再换个方向读这个分块，把它转置后写出，写出时同样是合并访存。
//
// 测试框架（harness）提供以下声明（请保持原样）：
//   params.rows, params.cols   x 是 rows × cols，按行主序存储
//   x                          输入
//   y                          输出，cols × rows：y[c][r] = x[r][c]
// 按 16 × 16 的分块 dispatch：@workgroup_size(16, 16)，
// dispatchWorkgroups(ceil(cols / 16), ceil(rows / 16))；workgroup_id.x 是
// 分块所在的列，.y 是分块所在的行。一个工作组相当于 CUDA 的一个线程块。
// 检查用例：1 × 1、1 × 17、17 × 1、16 × 16、33 × 47 和 100 × 257。
// @harness-declarations

var<workgroup> tile: array<array<f32, 17>, 16>;

@compute @workgroup_size(16, 16)
fn main(@builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(workgroup_id) wg: vec3<u32>) {
    //en TODO 1. tile[lid.y][lid.x] = x[(tile row + lid.y) * cols + tile col + lid.x]
    //en         (only inside the matrix: the last tiles are partial).
    //en TODO 2. workgroupBarrier() — not inside an if.
    //en TODO 3. Write y at the transposed tile, reading tile[lid.x][lid.y].
    //en         (Why 17 columns? Padding keeps the column reads off one bank.)
    //zh TODO 1. tile[lid.y][lid.x] = x[(分块起始行 + lid.y) * cols + 分块起始列 + lid.x]
    //zh         （只在矩阵范围内：最后几块不完整）。
    //zh TODO 2. workgroupBarrier()——不要放进 if 里。
    //zh TODO 3. 把 y 写到转置后的位置，读 tile[lid.x][lid.y]。
    //zh         （为什么是 17 列？多出的一列让按列读取不落在同一个 bank 上。）
    let r = wg.y * 16u + lid.y;
    let c = wg.x * 16u + lid.x;
    if (r < params.rows && c < params.cols) {
        y[r * params.cols + c] = x[r * params.cols + c];
    }
}
