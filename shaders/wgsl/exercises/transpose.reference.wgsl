// Reference: tiled transpose, coalesced reads and writes, padded tile.
// @harness-declarations

var<workgroup> tile: array<array<f32, 17>, 16>;

@compute @workgroup_size(16, 16)
fn main(@builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(workgroup_id) wg: vec3<u32>) {
    let r = wg.y * 16u + lid.y;
    let c = wg.x * 16u + lid.x;
    if (r < params.rows && c < params.cols) {
        tile[lid.y][lid.x] = x[r * params.cols + c];
    }
    workgroupBarrier();
    // Output row (an input column) and output column (an input row).
    let out_r = wg.x * 16u + lid.y;
    let out_c = wg.y * 16u + lid.x;
    if (out_r < params.cols && out_c < params.rows) {
        y[out_r * params.rows + out_c] = tile[lid.x][lid.y];
    }
}
