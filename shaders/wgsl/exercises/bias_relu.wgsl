// Exercise: fused bias + ReLU, y = max(x + bias, 0), the bias broadcast over rows.
//
// The harness provides (keep these declarations as they are):
//   params.rows, params.cols   x and y are rows × cols, row-major
//   params.n                   rows × cols
//   x, bias                    the input and the bias (cols values)
//   y                          the output
// It dispatches ceil(n / 256) workgroups of @workgroup_size(256), so the
// last workgroup may run past the end of the data.
// Checked on n = 1, 257, cols = 1, 3, 257, more than one workgroup, ±inf.
// @harness-declarations

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    // TODO: guard i against n; which bias element belongs to element i?
    y[i] = x[i];
}
