// C = A·B with one output per invocation, a workgroup covering 256
// consecutive columns of one row of C. Each subgroup (CUDA: warp) loads a
// run of A's row once, one value per lane, and passes it lane to lane with
// subgroupShuffle (__shfl_sync): A is read once per subgroup, not once per
// invocation, and no barrier is needed.
@compute @workgroup_size({{WG}})
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(subgroup_size) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let m = params.rows;
    let n = params.cols;
    let k = params.n;
    let groups_per_row = (n + WG - 1u) / WG;
    let t = row_index(wid, nwg);
    if (t >= m * groups_per_row) {
        return;
    }
    let i = t / groups_per_row;
    let j = (t % groups_per_row) * WG + lid;
    var acc = 0.0;
    // Lanes past the last column still load and pass on their run of A.
    for (var k0 = 0u; k0 < k; k0 += sg) {
        var a = 0.0;
        if (k0 + lane < k) {
            a = load_x(i * k + k0 + lane);
        }
        for (var s = 0u; s < sg; s++) {
            let av = subgroupShuffle(a, s);
            if (j < n && k0 + s < k) {
                acc = acc + av * load_x(params.aux + (k0 + s) * n + j);
            }
        }
    }
    if (j < n) {
        store_y(i * n + j, acc);
    }
}
