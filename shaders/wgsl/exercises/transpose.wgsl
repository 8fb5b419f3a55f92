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
// @harness-declarations

var<workgroup> tile: array<array<f32, 17>, 16>;

@compute @workgroup_size(16, 16)
fn main(@builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(workgroup_id) wg: vec3<u32>) {
    // TODO 1. tile[lid.y][lid.x] = x[(tile row + lid.y) * cols + tile col + lid.x]
    //         (only inside the matrix: the last tiles are partial).
    // TODO 2. workgroupBarrier() — not inside an if.
    // TODO 3. Write y at the transposed tile, reading tile[lid.x][lid.y].
    //         (Why 17 columns? Padding keeps the column reads off one bank.)
    let r = wg.y * 16u + lid.y;
    let c = wg.x * 16u + lid.x;
    if (r < params.rows && c < params.cols) {
        y[r * params.cols + c] = x[r * params.cols + c];
    }
}
