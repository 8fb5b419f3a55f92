//! WGSL sources: the files under `shaders/wgsl/`, filled in for a workgroup
//! size, a reduction op, the device's workgroup memory, and whether loads and
//! stores are counted (the instrumented build).

use dlsys_core::kernels::{self, Block, GemmKind, Kernel, ReduceOp, Tile, WG};

use crate::SourceError;

const COMMON: &str = include_str!("../wgsl/common.wgsl");

macro_rules! kernel_files {
    ($($name:literal),* $(,)?) => {
        /// The kernel files, by the name plans use (`file:entry`), with their
        /// text: the one list.
        const KERNEL_FILES: &[(&str, &str)] = &[
            $(($name, include_str!(concat!("../wgsl/", $name, ".wgsl")))),*
        ];
    };
}

kernel_files![
    "copy",
    "softmax_naive",
    "softmax_three_pass",
    "softmax_workgroup",
    "softmax_online",
    "softmax_subgroup",
    "softmax_subgroup_rows",
    "reduce",
    "reduce_subgroup",
    "gemm",
    "gemm_subgroup",
    "fma",
    "fusion",
    "layernorm",
    "access",
];

/// The names of the kernel files.
pub fn files() -> impl Iterator<Item = &'static str> {
    KERNEL_FILES.iter().map(|(name, _)| *name)
}

/// The text of a kernel file named in [`files`].
pub fn file(name: &str) -> Option<&'static str> {
    KERNEL_FILES
        .iter()
        .find(|(file, _)| *file == name)
        .map(|(_, text)| *text)
}

/// Everything that changes the text of a shader.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Variant {
    pub file: &'static str,
    pub op: Option<ReduceOp>,
    pub instrumented: bool,
    /// f32 values the fused softmax keeps in workgroup memory.
    pub cache_floats: u32,
    /// The GEMM's tile edge and register block (defaults for other kernels).
    pub tile: Tile,
    pub block: Block,
}

impl Variant {
    /// The variant of `file` that `kernel` runs (reductions fill in their op).
    pub fn of(kernel: Kernel, file: &'static str, instrumented: bool, cache_floats: u32) -> Self {
        let op = match kernel {
            Kernel::Reduce(_, op) => Some(op),
            _ => None,
        };
        let (tile, block) = match kernel {
            Kernel::Gemm(GemmKind::Tiled(tile)) => (tile, kernels::BLOCK),
            Kernel::Gemm(GemmKind::Register(block) | GemmKind::Vec4(block)) => {
                (kernels::TILE, block)
            }
            _ => (kernels::TILE, kernels::BLOCK),
        };
        Self {
            file,
            op,
            instrumented,
            cache_floats,
            tile,
            block,
        }
    }
}

/// An f32 constant as a WGSL literal that parses back to the same bits
/// (Rust's shortest round-trip form, with a decimal point).
fn wgsl_f32(v: f32) -> String {
    let text = format!("{v:?}");
    if text.contains(['.', 'e']) {
        text
    } else {
        format!("{text}.0")
    }
}

/// The complete WGSL for a variant (without any `enable` directive).
pub fn build(variant: &Variant) -> Result<String, SourceError> {
    let body = file(variant.file).ok_or_else(|| SourceError::NoFile {
        file: variant.file.to_owned(),
    })?;
    let mut text = format!("{COMMON}\n{body}");
    let (count_load, count_store, count16_load, count16_store) = if variant.instrumented {
        (
            "atomicAdd(&counters[0], 4u);",
            "atomicAdd(&counters[1], 4u);",
            "atomicAdd(&counters[0], 16u);",
            "atomicAdd(&counters[1], 16u);",
        )
    } else {
        ("", "", "", "")
    };
    let op = variant.op.unwrap_or(ReduceOp::Sum);
    let (combine, identity, subgroup) = match op {
        ReduceOp::Sum => ("return a + b;", "0.0", "return subgroupAdd(v);"),
        ReduceOp::Max => (
            // NaN-propagating, like the reference: max() alone may drop a NaN.
            "return max_nan(a, b);",
            "params.neg_inf",
            "if (subgroupAny(is_nan(v))) { return nan(); }\n    return subgroupMax(v);",
        ),
    };
    let mut unrolled = String::new();
    let mut s = WG / 2;
    while s > 0 {
        unrolled.push_str(&format!(
            "    if (lid < {s}u) {{ sdata[lid] = combine(sdata[lid], sdata[lid + {s}u]); }}\n    workgroupBarrier();\n"
        ));
        s /= 2;
    }
    // The GEMM's sizes first: their text holds other tokens.
    for (token, value) in crate::unroll::gemm_tokens(variant.tile, variant.block) {
        text = text.replace(token, &value);
    }
    for (token, value) in [
        ("{{WG}}", WG.to_string()),
        ("{{WG_DIV4}}", (WG / 4).to_string()),
        ("{{CACHE}}", variant.cache_floats.max(1).to_string()),
        ("{{COUNT_LOAD}}", count_load.to_owned()),
        ("{{COUNT_STORE}}", count_store.to_owned()),
        ("{{COUNT_LOAD16}}", count16_load.to_owned()),
        ("{{COUNT_STORE16}}", count16_store.to_owned()),
        ("{{COMBINE}}", combine.to_owned()),
        ("{{IDENTITY}}", identity.to_owned()),
        ("{{SUBGROUP_COMBINE}}", subgroup.to_owned()),
        ("{{UNROLLED_STEPS}}", unrolled),
        ("{{GELU_SCALE}}", wgsl_f32(kernels::GELU_SCALE)),
        ("{{GELU_BIAS}}", wgsl_f32(kernels::GELU_BIAS)),
        ("{{LN_EPS}}", wgsl_f32(kernels::LAYERNORM_EPS)),
        ("{{FMA_MUL}}", wgsl_f32(kernels::FMA_MUL)),
        ("{{FMA_ADD}}", wgsl_f32(kernels::FMA_ADD)),
    ] {
        text = text.replace(token, &value);
    }
    if let Some(start) = text.find("{{") {
        let token: String = text[start..].chars().take(30).collect();
        return Err(SourceError::Unfilled {
            file: variant.file.to_owned(),
            token,
        });
    }
    Ok(text)
}

/// A shader checked by naga, with the bindings each entry point uses.
pub struct Checked {
    pub module: naga::Module,
    /// (entry point, bindings of group 0 it uses).
    pub bindings: Vec<(String, Vec<u32>)>,
}

/// Parses and validates WGSL with naga; errors carry the line and column.
pub fn check(source: &str) -> Result<Checked, SourceError> {
    let invalid = |diagnostic: String| SourceError::Invalid { diagnostic };
    let module =
        naga::front::wgsl::parse_str(source).map_err(|err| invalid(err.emit_to_string(source)))?;
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .subgroup_stages(naga::valid::ShaderStages::all())
    .subgroup_operations(naga::valid::SubgroupOperationSet::all())
    .validate(&module)
    .map_err(|err| invalid(err.emit_to_string(source)))?;
    let bindings = module
        .entry_points
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let used = info.get_entry_point(index);
            let mut bindings: Vec<u32> = module
                .global_variables
                .iter()
                .filter(|(handle, _)| !used[*handle].is_empty())
                .filter_map(|(_, var)| var.binding.as_ref().map(|b| b.binding))
                .collect();
            bindings.sort_unstable();
            (entry.name.clone(), bindings)
        })
        .collect();
    Ok(Checked { module, bindings })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsys_core::kernels::{Kernel, Problem, plan};

    #[test]
    fn every_kernel_builds_and_validates_in_both_builds() {
        for kernel in Kernel::all() {
            // A GEMM's inner dimension, aligned so the vec4 entry is planned too.
            let problem = match kernel {
                Kernel::Gemm(_) => Problem::gemm(4, 1024, 64),
                _ => kernel.problem_for(Problem::new(4, 1024)),
            };
            let (steps, _) = plan(
                kernel,
                problem,
                dlsys_core::kernels::DeviceLimits {
                    cache_floats: 2048,
                    ..dlsys_core::kernels::DeviceLimits::TYPICAL
                },
            )
            .unwrap_or_else(|e| panic!("{}: {e}", kernel.id()));
            for step in steps {
                let (file, entry) = step.entry.split_once(':').unwrap_or_default();
                for instrumented in [false, true] {
                    let variant = Variant::of(kernel, file, instrumented, 2048);
                    let source = build(&variant).unwrap_or_else(|e| panic!("{e}"));
                    let checked = check(&source).unwrap_or_else(|e| panic!("{file}:\n{e}"));
                    let used = checked.bindings.iter().find(|(name, _)| name == entry);
                    let used = used.unwrap_or_else(|| panic!("{file} has no entry point {entry}"));
                    // The instrumented build uses the counters (binding 4); the plain one never does.
                    assert_eq!(
                        used.1.contains(&4),
                        instrumented,
                        "{file}:{entry} {:?}",
                        used.1
                    );
                }
            }
        }
    }

    #[test]
    fn every_plan_names_a_kernel_file() {
        for kernel in Kernel::all() {
            let device = dlsys_core::kernels::DeviceLimits {
                cache_floats: 2048,
                ..dlsys_core::kernels::DeviceLimits::TYPICAL
            };
            for cols in [1024, 1023] {
                let problem = match kernel {
                    Kernel::Gemm(_) => Problem::gemm(4, cols, 4),
                    _ => kernel.problem_for(Problem::new(4, cols)),
                };
                let (steps, _) = plan(kernel, problem, device)
                    .unwrap_or_else(|e| panic!("{}: {e}", kernel.id()));
                for step in steps {
                    let name = step.entry.split_once(':').map_or("", |(f, _)| f);
                    assert!(file(name).is_some(), "{}", step.entry);
                }
            }
        }
    }

    #[test]
    fn a_broken_shader_is_reported_with_its_line() {
        let err = check("@compute @workgroup_size(1)\nfn main() {\n    let x: f32 = 1u;\n}\n");
        assert!(err.is_err_and(|e| e.to_string().contains(":3:")));
    }
}
