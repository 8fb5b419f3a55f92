// Reference: fused bias + ReLU, one element per invocation.
// @harness-declarations

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= params.n) {
        return;
    }
    y[i] = max(x[i] + bias[i % params.cols], 0.0);
}
