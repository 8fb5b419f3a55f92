//! Programs through the one Ladder: an integer kernel with typed, named
//! buffers (packed 8-bit in, i32 out, checked bit for bit), two dispatches
//! with a named intermediate buffer, and WGSL generated at run time with
//! its own traffic model, verified by its instrumented build. A wrong
//! expectation and a buffer of the wrong type are caught.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dlsys_core::kernels::{Family, Problem, Traffic};
use dlsys_shaders::ladder::{Ladder, Outcome};
use dlsys_shaders::run::program::{Dispatch, ElementType, Expected, NamedBuffer, Program, Values};

/// c[i] = Σ_j a[i][j]·b[i][j] over four signed 8-bit lanes, unpacked by
/// hand with `extractBits` (sign-extending), accumulated in i32.
const DOT4: &str = "
@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read> b: array<u32>;
@group(0) @binding(2) var<storage, read_write> c: array<i32>;
@group(0) @binding(3) var<storage, read_write> total: array<i32>;

@compute @workgroup_size(64)
fn dot4(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if (i >= arrayLength(&c)) { return; }
    var sum = 0i;
    for (var lane = 0u; lane < 4u; lane += 1u) {
        let x = extractBits(bitcast<i32>(a[i]), lane * 8u, 8u);
        let y = extractBits(bitcast<i32>(b[i]), lane * 8u, 8u);
        sum += x * y;
    }
    c[i] = sum;
}

// The second dispatch: every dot product summed, one invocation.
@compute @workgroup_size(1)
fn sum_all() {
    var s = 0i;
    for (var i = 0u; i < arrayLength(&c); i += 1u) {
        s += c[i];
    }
    total[0] = s;
}
";

fn dot4_program(n: usize, expected: Option<Vec<i32>>) -> Program {
    let a: Vec<i8> = (0..4 * n)
        .map(|i| ((i * 37 + 11) % 256) as u8 as i8)
        .collect();
    let b: Vec<i8> = (0..4 * n)
        .map(|i| ((i * 91 + 5) % 256) as u8 as i8)
        .collect();
    let dots: Vec<i32> = a
        .chunks(4)
        .zip(b.chunks(4))
        .map(|(x, y)| {
            x.iter()
                .zip(y)
                .map(|(p, q)| i32::from(*p) * i32::from(*q))
                .sum()
        })
        .collect();
    let total: i32 = dots.iter().sum();
    Program {
        id: "int8/dot4".to_owned(),
        family: Family::Gemm,
        source: DOT4.to_owned(),
        counted: None,
        buffers: vec![
            NamedBuffer::input("a", Values::Packed8(a)),
            NamedBuffer::input("b", Values::Packed8(b)),
            NamedBuffer::zeroed("c", ElementType::I32, n as u64),
            NamedBuffer::zeroed("total", ElementType::I32, 1),
        ],
        dispatches: vec![
            Dispatch {
                entry: "dot4".to_owned(),
                workgroups: [(n as u32).div_ceil(64), 1, 1],
                params: [0; 8],
            },
            Dispatch {
                entry: "sum_all".to_owned(),
                workgroups: [1, 1, 1],
                params: [0; 8],
            },
        ],
        output: "total".to_owned(),
        expected: Expected::Exact(Values::I32(expected.unwrap_or(vec![total]))),
        traffic: Traffic {
            bytes_read: 8 * n as u64 + 4 * n as u64,
            bytes_written: 4 * n as u64 + 4,
            input_passes: 1,
            dispatches: 2,
        },
        ops: 8.0 * n as f64,
    }
}

/// An elementwise chain written out as WGSL at run time, with the loads and
/// stores counted in its instrumented build.
#[derive(Clone, Copy)]
enum Op {
    Scale(f32),
    Add(f32),
    Relu,
    Tanh,
}

fn generated(ops: &[Op], n: usize, instrumented: bool) -> String {
    let count = |which: usize| {
        if instrumented {
            format!("atomicAdd(&counters[{which}], 4u);")
        } else {
            String::new()
        }
    };
    let mut body = String::from("var v = x[i];\n");
    for op in ops {
        body.push_str(&match op {
            Op::Scale(k) => format!("    v = v * {k:?};\n"),
            Op::Add(k) => format!("    v = v + {k:?};\n"),
            Op::Relu => "    v = max(v, 0.0);\n".to_owned(),
            Op::Tanh => "    v = tanh(v);\n".to_owned(),
        });
    }
    let counters = if instrumented {
        "@group(0) @binding(2) var<storage, read_write> counters: array<atomic<u32>, 2>;"
    } else {
        ""
    };
    format!(
        "@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
{counters}
@compute @workgroup_size(64)
fn chain(@builtin(global_invocation_id) id: vec3<u32>) {{
    let i = id.x;
    if (i >= {n}u) {{ return; }}
    {load}
    {body}
    {store}
    y[i] = v;
}}
",
        load = count(0),
        store = count(1),
    )
}

fn chain_program(ops: &[Op], n: usize) -> Program {
    let x: Vec<f32> = (0..n).map(|i| (i as f32 - n as f32 / 2.0) / 37.0).collect();
    let want: Vec<f32> = x
        .iter()
        .map(|&v| {
            ops.iter().fold(f64::from(v), |v, op| match op {
                Op::Scale(k) => v * f64::from(*k),
                Op::Add(k) => v + f64::from(*k),
                Op::Relu => v.max(0.0),
                Op::Tanh => v.tanh(),
            }) as f32
        })
        .collect();
    Program {
        id: "generated/chain".to_owned(),
        family: Family::Fusion,
        source: generated(ops, n, false),
        counted: Some(generated(ops, n, true)),
        buffers: vec![
            NamedBuffer::input("x", Values::F32(x)),
            NamedBuffer::zeroed("y", ElementType::F32, n as u64),
        ],
        dispatches: vec![Dispatch {
            entry: "chain".to_owned(),
            workgroups: [(n as u32).div_ceil(64), 1, 1],
            params: [0; 8],
        }],
        output: "y".to_owned(),
        expected: Expected::Close {
            want,
            tolerance: 1e-5,
            floor: 1.0,
        },
        traffic: Traffic {
            bytes_read: 4 * n as u64,
            bytes_written: 4 * n as u64,
            input_passes: 1,
            dispatches: 1,
        },
        ops: (ops.len() * n) as f64,
    }
}

fn run(programs: Vec<Program>) -> Vec<Outcome> {
    let Some(mut runner) = crate::support::runner("programs") else {
        return Vec::new();
    };
    Ladder::with_inputs(
        Vec::new(),
        Problem::new(1, 1),
        dlsys_shaders::ladder::Inputs::shared(vec![0.0]),
        2,
    )
    .with_programs(programs)
    .run_blocking(&mut runner)
}

#[test]
fn an_integer_program_with_two_dispatches_is_exact_and_a_wrong_answer_is_caught() {
    // 1,000 lanes of four: not a multiple of the workgroup.
    let outcomes = run(vec![
        dot4_program(1000, None),
        dot4_program(1000, Some(vec![7])),
    ]);
    if outcomes.is_empty() {
        return;
    }
    let right = outcomes[0]
        .program()
        .unwrap_or_else(|| panic!("{:?}", outcomes[0]));
    assert!(right.check.ok, "{right:?}");
    assert_eq!(right.dispatches, 2);
    assert!(right.median_ms > 0.0);
    let wrong = outcomes[1]
        .program()
        .unwrap_or_else(|| panic!("{:?}", outcomes[1]));
    assert!(!wrong.check.ok && wrong.check.mismatches == 1, "{wrong:?}");
}

#[test]
fn a_generated_kernel_runs_checked_and_its_traffic_is_counted() {
    let ops = [
        Op::Scale(1.5),
        Op::Add(-0.25),
        Op::Tanh,
        Op::Relu,
        Op::Scale(3.0),
    ];
    let n = 4097;
    let outcomes = run(vec![chain_program(&ops, n)]);
    if outcomes.is_empty() {
        return;
    }
    let row = outcomes[0]
        .program()
        .unwrap_or_else(|| panic!("{:?}", outcomes[0]));
    assert!(row.check.ok, "{row:?}");
    assert_eq!(row.counted, None, "the ladder times, it does not count");
    let Some(mut runner) = crate::support::runner("generated_counted") else {
        return;
    };
    let program = chain_program(&ops, n);
    let out = runner
        .start_program(&program, 0, 1, true)
        .and_then(dlsys_shaders::Job::wait)
        .unwrap();
    let model = (program.traffic.bytes_read, program.traffic.bytes_written);
    assert_eq!(
        out.counted,
        Some(model),
        "instrumented count vs the traffic model"
    );
    assert!(program.check(&out.words).ok);
}

#[test]
fn a_buffer_of_the_wrong_type_is_refused_with_both_types() {
    let mut program = dot4_program(8, None);
    program.buffers[2] = NamedBuffer::zeroed("c", ElementType::F32, 8);
    let outcomes = run(vec![program]);
    if outcomes.is_empty() {
        return;
    }
    let Outcome::Program(Err((id, why))) = &outcomes[0] else {
        panic!("{:?}", outcomes[0])
    };
    assert_eq!(id, "int8/dot4");
    let text = why.to_string();
    assert!(
        text.contains("`c`") && text.contains("f32") && text.contains("i32"),
        "{text}"
    );
}
