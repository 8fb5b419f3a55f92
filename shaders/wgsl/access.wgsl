// Access patterns and layouts.

fn access_flat(lid: u32, wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return row_index(wid, nwg) * WG + lid;
}

// y[i] = x[src(i)], src a permutation whose neighbours are params.aux
// (the stride) apart: every value read once, the writes contiguous.
@compute @workgroup_size({{WG}})
fn strided(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let g = access_flat(lid, wid, nwg);
    let n = params.n;
    if (g >= n) {
        return;
    }
    let q = n / params.aux;
    store_y(g, load_x((g % q) * params.aux + g / q));
}

// rows × cols → cols × rows: reads along rows, writes down columns.
@compute @workgroup_size({{WG}})
fn transpose_naive(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let g = access_flat(lid, wid, nwg);
    let rows = params.rows;
    let cols = params.cols;
    if (g >= rows * cols) {
        return;
    }
    store_y((g % cols) * rows + g / cols, load_x(g));
}

// Through a 16 × 16 tile in workgroup memory (17 wide, so a column of the
// tile spreads over the memory banks): read a tile along its rows, write
// it back along the output's rows.
var<workgroup> tr_tile: array<f32, 272>;

@compute @workgroup_size(16, 16)
fn transpose_tiled(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let rows = params.rows;
    let cols = params.cols;
    let tiles_c = (cols + 15u) / 16u;
    let t = row_index(wid, nwg);
    if (t >= ((rows + 15u) / 16u) * tiles_c) {
        return;
    }
    let ty = lid / 16u;
    let tx = lid % 16u;
    let r0 = (t / tiles_c) * 16u;
    let c0 = (t % tiles_c) * 16u;
    if (r0 + ty < rows && c0 + tx < cols) {
        tr_tile[ty * 17u + tx] = load_x((r0 + ty) * cols + c0 + tx);
    }
    workgroupBarrier();
    // Output row c0 + ty, column r0 + tx: input (r0 + tx, c0 + ty).
    if (c0 + ty < cols && r0 + tx < rows) {
        store_y((c0 + ty) * rows + r0 + tx, tr_tile[tx * 17u + ty]);
    }
}

// The sum of each channel: one workgroup per channel, params.rows
// channels (C) of params.cols values, params.aux (H·W) per image.
fn channel_sum(c: u32, lid: u32, nhwc: bool) {
    let channels = params.rows;
    let per = params.cols;
    let image = params.aux;
    var s = 0.0;
    for (var p = lid; p < per; p += WG) {
        var i = p * channels + c;
        if (!nhwc) {
            i = ((p / image) * channels + c) * image + p % image;
        }
        s = s + load_x(i);
    }
    let total = wg_sum(s, lid);
    if (lid == 0u) {
        store_y(c, total);
    }
}

@compute @workgroup_size({{WG}})
fn channel_nchw(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let c = row_index(wid, nwg);
    if (c >= params.rows) {
        return;
    }
    channel_sum(c, lid, false);
}

@compute @workgroup_size({{WG}})
fn channel_nhwc(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let c = row_index(wid, nwg);
    if (c >= params.rows) {
        return;
    }
    channel_sum(c, lid, true);
}
