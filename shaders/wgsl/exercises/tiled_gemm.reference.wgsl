// Reference: tiled matrix multiply through 16 × 16 tiles in workgroup memory.
// @harness-declarations

var<workgroup> tile_a: array<array<f32, 16>, 16>;
var<workgroup> tile_b: array<array<f32, 16>, 16>;

@compute @workgroup_size(16, 16)
fn main(@builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(workgroup_id) wg: vec3<u32>) {
    let m = params.rows;
    let n = params.cols;
    let k = params.n;
    let i = wg.y * 16u + lid.y;
    let j = wg.x * 16u + lid.x;
    var acc = 0.0;
    for (var k0 = 0u; k0 < k; k0 += 16u) {
        var a = 0.0;
        if (i < m && k0 + lid.x < k) {
            a = x[i * k + k0 + lid.x];
        }
        tile_a[lid.y][lid.x] = a;
        var b = 0.0;
        if (k0 + lid.y < k && j < n) {
            b = x[m * k + (k0 + lid.y) * n + j];
        }
        tile_b[lid.y][lid.x] = b;
        workgroupBarrier();
        for (var p = 0u; p < 16u; p++) {
            acc += tile_a[lid.y][p] * tile_b[p][lid.x];
        }
        workgroupBarrier();
    }
    if (i < m && j < n) {
        y[i * n + j] = acc;
    }
}
