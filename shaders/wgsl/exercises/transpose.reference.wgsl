// Reference: tiled transpose, coalesced reads and writes, padded tile.
struct Params { rows: u32, cols: u32, n: u32, neg_inf: f32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

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
