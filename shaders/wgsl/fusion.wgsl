// The elementwise chain y = gelu(x·scale + bias), GELU in its tanh form
// (the argument of tanh clamped to ±20, so |x| up to 1e4 stays finite):
// as three kernels, each a full read and write of the data, or fused.

fn gelu(v: f32) -> f32 {
    let inner = clamp(0.7978845608 * (v + 0.044715 * v * v * v), -20.0, 20.0);
    return 0.5 * v * (1.0 + tanh(inner));
}

fn flat(lid: u32, wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return row_index(wid, nwg) * WG + lid;
}

@compute @workgroup_size({{WG}})
fn scale(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let g = flat(lid, wid, nwg);
    if (g < params.n) {
        store_y(g, load_x(g) * {{GELU_SCALE}});
    }
}

@compute @workgroup_size({{WG}})
fn shift(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let g = flat(lid, wid, nwg);
    if (g < params.n) {
        store_y(g, load_x(g) + {{GELU_BIAS}});
    }
}

@compute @workgroup_size({{WG}})
fn gelu_only(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let g = flat(lid, wid, nwg);
    if (g < params.n) {
        store_y(g, gelu(load_x(g)));
    }
}

@compute @workgroup_size({{WG}})
fn gelu_fused(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let g = flat(lid, wid, nwg);
    if (g < params.n) {
        store_y(g, gelu(load_x(g) * {{GELU_SCALE}} + {{GELU_BIAS}}));
    }
}
