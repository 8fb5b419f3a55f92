// The parallel-reduction ladder after Mark Harris, "Optimizing Parallel
// Reduction in CUDA". Each entry point reduces x[0..n) to one partial per
// workgroup in y; the host repeats on the partials until one value is left.
// `combine` is a + b or a NaN-propagating max (filled in by the host), `identity` its unit.

fn combine(a: f32, b: f32) -> f32 {
    {{COMBINE}}
}

fn identity() -> f32 {
    return {{IDENTITY}};
}

fn load_or_identity(i: u32) -> f32 {
    if (i < params.n) {
        return load_x(i);
    }
    return identity();
}

var<workgroup> sdata: array<f32, {{WG}}>;

fn write_partial(wid: u32, lid: u32) {
    if (lid == 0u) {
        store_y(wid, sdata[0]);
    }
}

fn flat_workgroup(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

// 1. Interleaved addressing, divergent branching: `tid % (2s) == 0`.
@compute @workgroup_size({{WG}})
fn interleaved_divergent(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                         @builtin(local_invocation_index) lid: u32) {
    let w = flat_workgroup(wid, nwg);
    // Workgroups past the data (when the dispatch wraps into y) do nothing.
    if (w * WG >= params.n) {
        return;
    }
    sdata[lid] = load_or_identity(w * WG + lid);
    workgroupBarrier();
    for (var s = 1u; s < WG; s = s * 2u) {
        if (lid % (2u * s) == 0u) {
            sdata[lid] = combine(sdata[lid], sdata[lid + s]);
        }
        workgroupBarrier();
    }
    write_partial(w, lid);
}

// 2. Interleaved addressing, strided index: no divergence, bank conflicts.
@compute @workgroup_size({{WG}})
fn interleaved_strided(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                       @builtin(local_invocation_index) lid: u32) {
    let w = flat_workgroup(wid, nwg);
    // Workgroups past the data (when the dispatch wraps into y) do nothing.
    if (w * WG >= params.n) {
        return;
    }
    sdata[lid] = load_or_identity(w * WG + lid);
    workgroupBarrier();
    for (var s = 1u; s < WG; s = s * 2u) {
        let index = 2u * s * lid;
        if (index < WG) {
            sdata[index] = combine(sdata[index], sdata[index + s]);
        }
        workgroupBarrier();
    }
    write_partial(w, lid);
}

// 3. Sequential addressing: contiguous active threads, no bank conflicts.
@compute @workgroup_size({{WG}})
fn sequential(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let w = flat_workgroup(wid, nwg);
    // Workgroups past the data (when the dispatch wraps into y) do nothing.
    if (w * WG >= params.n) {
        return;
    }
    sdata[lid] = load_or_identity(w * WG + lid);
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            sdata[lid] = combine(sdata[lid], sdata[lid + s]);
        }
        workgroupBarrier();
    }
    write_partial(w, lid);
}

// 4. First add during load: each thread combines two elements as it loads,
// so half as many workgroups do the work.
@compute @workgroup_size({{WG}})
fn first_add(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let w = flat_workgroup(wid, nwg);
    // Workgroups past the data (when the dispatch wraps into y) do nothing.
    if (w * 2u * WG >= params.n) {
        return;
    }
    let i = w * WG * 2u + lid;
    sdata[lid] = combine(load_or_identity(i), load_or_identity(i + WG));
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            sdata[lid] = combine(sdata[lid], sdata[lid + s]);
        }
        workgroupBarrier();
    }
    write_partial(w, lid);
}

// 5. Unrolled: the tree written out for the fixed workgroup size. WGSL has no
// warp-synchronous execution, so unlike CUDA's trick the barriers stay.
@compute @workgroup_size({{WG}})
fn unrolled(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let w = flat_workgroup(wid, nwg);
    // Workgroups past the data (when the dispatch wraps into y) do nothing.
    if (w * 2u * WG >= params.n) {
        return;
    }
    let i = w * WG * 2u + lid;
    sdata[lid] = combine(load_or_identity(i), load_or_identity(i + WG));
    workgroupBarrier();
{{UNROLLED_STEPS}}
    write_partial(w, lid);
}

// 6. Many elements per thread: a grid-stride loop accumulates in a register,
// then one tree per workgroup.
@compute @workgroup_size({{WG}})
fn grid_stride(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let w = flat_workgroup(wid, nwg);
    let stride = nwg.x * nwg.y * WG;
    var acc = identity();
    for (var i = w * WG + lid; i < params.n; i = i + stride) {
        acc = combine(acc, load_x(i));
    }
    sdata[lid] = acc;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            sdata[lid] = combine(sdata[lid], sdata[lid + s]);
        }
        workgroupBarrier();
    }
    write_partial(w, lid);
}
