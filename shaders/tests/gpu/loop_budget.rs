//! How many loop iterations the driver lets one invocation run, measured:
//! llvmpipe silently ends an invocation's loops once 65,535 have been spent,
//! one allowance for all loops, where every iteration and every loop exit
//! costs one. The kernels' plans keep every invocation below `LOOP_BUDGET`,
//! and the learner-loop guard fires before the allowance runs out. On a
//! driver without such a cap the loops run to the end, which this test
//! accepts as well.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dlsys_core::kernels::LOOP_BUDGET;
use dlsys_shaders::Gpu;
use wgpu::util::DeviceExt as _;

const SHADER: &str = r"
struct P { n: u32, inner: u32, pad0: u32, pad1: u32 }
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> p: P;

@compute @workgroup_size(64)
fn one_loop(@builtin(global_invocation_id) gid: vec3<u32>) {
    var count = 0u;
    for (var i = 0u; i < p.n; i++) { count += 1u; }
    out[gid.x] = count;
}

@compute @workgroup_size(64)
fn two_loops(@builtin(global_invocation_id) gid: vec3<u32>) {
    var count = 0u;
    for (var i = 0u; i < p.n; i++) { count += 1u; }
    for (var i = 0u; i < p.n; i++) { count += 1u; }
    out[gid.x] = count;
}

@compute @workgroup_size(64)
fn nested(@builtin(global_invocation_id) gid: vec3<u32>) {
    var count = 0u;
    for (var j = 0u; j < p.n / p.inner; j++) {
        for (var i = 0u; i < p.inner; i++) { count += 1u; }
    }
    out[gid.x] = count;
}
";

/// Runs `entry` with `n` (and `inner`) and returns invocation 0's count.
fn count(gpu: &Gpu, entry: &str, n: u32, inner: u32) -> u32 {
    let device = &gpu.device;
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("loop budget"),
        source: wgpu::ShaderSource::Wgsl(SHADER.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: None,
        layout: None,
        module: &module,
        entry_point: Some(entry),
        compilation_options: Default::default(),
        cache: None,
    });
    let out = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 256,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let read = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 256,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let params = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: bytemuck::cast_slice(&[n, inner, 0, 0]),
        usage: wgpu::BufferUsages::UNIFORM,
    });
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: out.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: params.as_entire_binding(),
            },
        ],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(1, 1, 1);
    }
    encoder.copy_buffer_to_buffer(&out, 0, &read, 0, 256);
    gpu.queue.submit([encoder.finish()]);
    read.slice(..).map_async(wgpu::MapMode::Read, |_| {});
    device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    let counts: Vec<u32> =
        bytemuck::cast_slice(&read.slice(..).get_mapped_range().unwrap()).to_vec();
    read.unmap();
    counts[0]
}

#[test]
fn the_loop_budget_stays_below_what_the_driver_allows() {
    let gpu = match Gpu::request_blocking() {
        Ok(gpu) => gpu,
        Err(err) => {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(!ci, "CI=true but no GPU adapter: {err}");
            eprintln!("SKIPPED (not CI, no GPU adapter): {err}");
            return;
        }
    };
    let budget = LOOP_BUDGET;
    // Within the budget every loop runs to the end, in every arrangement
    // (llvmpipe counts each iteration and each loop's exit: 60,000 inner
    // iterations in 600 entries of the inner loop cost 61,200).
    assert_eq!(count(&gpu, "one_loop", budget, 1), budget);
    assert_eq!(count(&gpu, "two_loops", budget / 2, 1), budget / 2 * 2);
    assert_eq!(count(&gpu, "nested", 60_000, 100), 60_000);
    // Past it: the driver either runs everything or stops at its own cap,
    // which must lie above the budget (llvmpipe: 65,535 in all).
    let far = 1_000_000;
    let single = count(&gpu, "one_loop", far, 1);
    let double = count(&gpu, "two_loops", far, 1);
    assert!(
        single == far || single > budget,
        "one loop ran {single} times"
    );
    assert!(
        double == 2 * far || double > budget,
        "two loops ran {double} times"
    );
    let capped = single < far;
    eprintln!(
        "{}: one loop of {far} ran {single}, two ran {double} in all{}",
        gpu.adapter_info.name,
        if capped { " (capped)" } else { "" }
    );
    if gpu.adapter_info.name.contains("llvmpipe") {
        // The facts the plans and the learner-loop guard are built on: one
        // allowance of 65,535 per invocation, spent by every iteration and
        // every loop exit, of all loops together.
        assert_eq!(single, 65_535);
        assert!(
            (65_534..=65_536).contains(&double),
            "two loops ran {double}"
        );
        assert_eq!(
            count(&gpu, "nested", 65_000, 10),
            54_613,
            "12 per inner entry"
        );
    }
}
