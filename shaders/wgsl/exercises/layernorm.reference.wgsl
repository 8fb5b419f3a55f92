// Reference: fused LayerNorm, one pass for the sums of the shifted values,
// a tree in workgroup memory, a second pass to write.
// @harness-declarations

var<workgroup> part_sum: array<f32, 256>;
var<workgroup> part_sq: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) tid: u32,
        @builtin(workgroup_id) wg: vec3<u32>) {
    let row = wg.x;
    let cols = params.cols;
    let base = row * cols;
    // Shifting by a value of the row keeps the squares small: no cancellation.
    let shift = x[base];
    var s = 0.0;
    var q = 0.0;
    for (var c = tid; c < cols; c += 256u) {
        let d = x[base + c] - shift;
        s += d;
        q += d * d;
    }
    part_sum[tid] = s;
    part_sq[tid] = q;
    for (var stride = 128u; stride > 0u; stride >>= 1u) {
        workgroupBarrier();
        if (tid < stride) {
            part_sum[tid] += part_sum[tid + stride];
            part_sq[tid] += part_sq[tid + stride];
        }
    }
    workgroupBarrier();
    let n = f32(cols);
    let shifted_mean = part_sum[0] / n;
    let variance = max(part_sq[0] / n - shifted_mean * shifted_mean, 0.0);
    let inv = inverseSqrt(variance + 1e-5);
    for (var c = tid; c < cols; c += 256u) {
        y[base + c] = (x[base + c] - shift - shifted_mean) * inv;
    }
}
