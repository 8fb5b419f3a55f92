//! The learner-kernel track: WGSL kernels the learner writes, with their
//! harness and checker. This file is the catalog; [`cases`] holds the
//! hostile inputs and the judging (no wgpu), [`validate`] naga's checks,
//! [`checker`] the device side and [`race`] the race against the ladder.
//!
//! Each exercise fixes the bindings and the dispatch (stated in its template
//! under `shaders/wgsl/exercises/`); the learner writes the kernel. A check
//! goes: validate with naga (diagnostics carry their line), compile on the
//! device inside an error scope (a validation error never reaches wgpu's
//! panicking handler), then run on adversarial inputs against the CPU
//! reference in `dlsys-core`, reporting the first mismatching index with
//! expected vs got. Work is submitted without blocking and polled; a kernel
//! that does not finish within the time budget is abandoned with its device
//! ([`KernelChecker::recover`] makes a fresh one), so an endless loop cannot freeze
//! the app.

mod cases;
mod checker;
mod guard;
mod race;
mod validate;
mod verdict;

pub use cases::{KernelCase, runaway_kernel};
pub use checker::{CheckJob, KernelChecker};
pub use guard::{GUARD_LIMIT, guard_loops};
#[cfg(not(target_arch = "wasm32"))]
pub use race::race_blocking;
pub use race::{KernelRace, Lap, RaceError};
pub use validate::{parse_and_validate, validate};
pub use verdict::{Diagnostic, KernelVerdict, Mismatch};

/// How the harness lays out data and dispatches work for an exercise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One workgroup of 256 sums all of x into y[0].
    Sum,
    /// One workgroup of 256 per row; y[row] = max of the row.
    RowMax,
    /// One workgroup of 256 per row; y = softmax of each row.
    RowSoftmax,
    /// ceil(n / 256) workgroups; y = max(x + bias[col], 0).
    BiasRelu,
    /// 16 × 16 tiles; y (cols × rows) = xᵀ.
    Transpose,
    /// 16 × 16 tiles of C; x holds A (rows × n) then B (n × cols), y = A·B.
    Gemm,
    /// One workgroup of 256 per row; y = LayerNorm of each row (ε = 1e-5).
    LayerNorm,
    /// ⌈N / 64⌉ workgroups of 64, one query row each; x holds Q, K, V
    /// (N × d each), y = O, the first `params.n` keys real.
    Attention,
}

/// The line of a template or reference file that stands for the
/// declarations the harness binds ([`Layout::declarations`]).
pub const DECLARATIONS_MARKER: &str = "// @harness-declarations";

impl Layout {
    pub fn workgroup_size(self) -> [u32; 3] {
        match self {
            Self::Transpose | Self::Gemm => [16, 16, 1],
            Self::Attention => [64, 1, 1],
            _ => [256, 1, 1],
        }
    }

    /// The uniform and storage bindings the checker binds for this layout
    /// (slots as in `checker.rs`), written once here for every template and
    /// reference of the layout.
    pub fn declarations(self) -> String {
        let mut text = [
            "struct Params { rows: u32, cols: u32, n: u32, neg_inf: f32 }",
            "@group(0) @binding(0) var<uniform> params: Params;",
            "@group(0) @binding(1) var<storage, read> x: array<f32>;",
            "@group(0) @binding(2) var<storage, read_write> y: array<f32>;",
        ]
        .join("\n");
        if self == Self::BiasRelu {
            text.push_str("\n@group(0) @binding(3) var<storage, read> bias: array<f32>;");
        }
        text
    }
}

/// A known-wrong kernel — the reference with a classic mistake edited in —
/// and what the checker's message must mention.
#[derive(Clone, Copy, Debug)]
pub struct Wrong {
    pub name: &'static str,
    /// `(from, to)`: every `from` in the reference becomes `to`.
    pub edits: &'static [(&'static str, &'static str)],
    pub expect: &'static str,
}

/// One kernel to write.
#[derive(Clone, Copy, Debug)]
pub struct KernelExercise {
    /// Its id; its title is `kernel_exercise.<id>` in `assets/names.ron`.
    pub id: &'static str,
    pub layout: Layout,
    /// The template file as stored: [`KernelExercise::template`] fills in
    /// the harness's declarations.
    pub template_file: &'static str,
    pub reference_file: &'static str,
    pub wrong: &'static [Wrong],
}

macro_rules! wgsl {
    ($name:literal) => {
        include_str!(concat!("../../wgsl/exercises/", $name))
    };
}

/// The exercises, in order.
pub const EXERCISES: [KernelExercise; 9] = [
    KernelExercise {
        id: "sum_reduction",
        layout: Layout::Sum,
        template_file: wgsl!("sum_reduction.wgsl"),
        reference_file: wgsl!("sum_reduction.reference.wgsl"),
        wrong: &[Wrong {
            name: "no grid-stride loop",
            edits: &[(
                "    var total = 0.0;\n    for (var i = tid; i < params.n; i += 256u) {\n        total += x[i];\n    }\n    partial[tid] = total;",
                "    partial[tid] = select(0.0, x[tid], tid < params.n);",
            )],
            expect: "more values than the workgroup has invocations",
        }],
    },
    KernelExercise {
        id: "row_max",
        layout: Layout::RowMax,
        template_file: wgsl!("row_max.wgsl"),
        reference_file: wgsl!("row_max.reference.wgsl"),
        wrong: &[Wrong {
            name: "max starts at 0",
            edits: &[("var m = params.neg_inf;", "var m = 0.0;")],
            expect: "start the max at −inf",
        }],
    },
    KernelExercise {
        id: "safe_softmax",
        layout: Layout::RowSoftmax,
        template_file: wgsl!("safe_softmax.wgsl"),
        reference_file: wgsl!("safe_softmax.reference.wgsl"),
        wrong: &[Wrong {
            name: "no max subtracted",
            edits: &[(" - row_max)", ")")],
            expect: "subtract the row max",
        }],
    },
    KernelExercise {
        id: "online_softmax",
        layout: Layout::RowSoftmax,
        template_file: wgsl!("online_softmax.wgsl"),
        reference_file: wgsl!("online_softmax.reference.wgsl"),
        wrong: &[Wrong {
            name: "merge without rescaling",
            edits: &[(
                "part_s[tid] = merged_sum(ma, part_s[tid], mb, part_s[tid + stride], mm);",
                "part_s[tid] = part_s[tid] + part_s[tid + stride];",
            )],
            expect: "do not sum to 1",
        }],
    },
    KernelExercise {
        id: "bias_relu",
        layout: Layout::BiasRelu,
        template_file: wgsl!("bias_relu.wgsl"),
        reference_file: wgsl!("bias_relu.reference.wgsl"),
        wrong: &[Wrong {
            name: "bias[i] instead of bias[i % cols]",
            edits: &[("bias[i % params.cols]", "bias[i]")],
            expect: "bias",
        }],
    },
    KernelExercise {
        id: "transpose",
        layout: Layout::Transpose,
        template_file: wgsl!("transpose.wgsl"),
        reference_file: wgsl!("transpose.reference.wgsl"),
        wrong: &[Wrong {
            name: "copied, not transposed",
            edits: &[
                (
                    "if (out_r < params.cols && out_c < params.rows) {",
                    "if (r < params.rows && c < params.cols) {",
                ),
                (
                    "y[out_r * params.rows + out_c] = tile[lid.x][lid.y];",
                    "y[r * params.cols + c] = tile[lid.y][lid.x];",
                ),
            ],
            expect: "is the input's element",
        }],
    },
    KernelExercise {
        id: "tiled_gemm",
        layout: Layout::Gemm,
        template_file: wgsl!("tiled_gemm.wgsl"),
        reference_file: wgsl!("tiled_gemm.reference.wgsl"),
        wrong: &[Wrong {
            name: "tile read before every invocation has loaded it (no barrier)",
            edits: &[(
                "        tile_b[lid.y][lid.x] = b;\n        workgroupBarrier();",
                "        tile_b[lid.y][lid.x] = b;",
            )],
            expect: "workgroupBarrier",
        }],
    },
    KernelExercise {
        id: "layernorm",
        layout: Layout::LayerNorm,
        template_file: wgsl!("layernorm.wgsl"),
        reference_file: wgsl!("layernorm.reference.wgsl"),
        wrong: &[Wrong {
            name: "variance as E[x²] − E[x]², unshifted",
            edits: &[("let shift = x[base];", "let shift = 0.0;")],
            expect: "cancel",
        }],
    },
    KernelExercise {
        id: "flash_attention",
        layout: Layout::Attention,
        template_file: wgsl!("flash_attention.wgsl"),
        reference_file: wgsl!("flash_attention.reference.wgsl"),
        wrong: &[Wrong {
            name: "merge without rescaling O",
            edits: &[(
                "            for (var c = 0u; c < d; c++) {\n                acc[c] = acc[c] * r;\n            }\n",
                "",
            )],
            expect: "exp(m_old − m_new)",
        }],
    },
];

impl KernelExercise {
    /// The template the learner starts from, with the harness's declarations.
    /// The template in `lang`: its comments in that language only (the
    /// header's English block, then its block after `// 中文：`; in the
    /// code, lines marked `//en` or `//zh`), with the harness's declarations.
    pub fn template(&self, lang: dlsys_core::text::Lang) -> String {
        self.fill(&in_language(self.template_file, lang))
    }

    /// The reference kernel, with the harness's declarations.
    pub fn reference(&self) -> String {
        self.fill(self.reference_file)
    }

    fn fill(&self, file: &str) -> String {
        file.replacen(DECLARATIONS_MARKER, &self.layout.declarations(), 1)
    }

    /// The source of a known-wrong kernel: the reference with its edits.
    pub fn wrong_source(&self, wrong: &Wrong) -> String {
        wrong
            .edits
            .iter()
            .fold(self.reference(), |source, (from, to)| {
                source.replace(from, to)
            })
    }
}

/// A template's text with the comments of `lang` only (see
/// [`KernelExercise::template`]).
fn in_language(file: &str, lang: dlsys_core::text::Lang) -> String {
    use dlsys_core::text::Lang;
    const CHINESE_BLOCK: &str = "// 中文：";
    let mut out = Vec::new();
    // The header: English until the Chinese block, Chinese until the declarations.
    let mut header = Some(Lang::En);
    for line in file.lines() {
        let trimmed = line.trim_start();
        if trimmed == DECLARATIONS_MARKER {
            header = None;
        } else if header.is_some() && trimmed == CHINESE_BLOCK {
            header = Some(Lang::Zh);
            // The English block's empty comment line before it goes too.
            if lang == Lang::Zh {
                continue;
            }
            if out.last().is_some_and(|l: &String| l.trim() == "//") {
                out.pop();
            }
            continue;
        }
        if let Some(block) = header
            && trimmed.starts_with("//")
        {
            if block == lang {
                out.push(line.to_owned());
            }
            continue;
        }
        let indent = &line[..line.len() - trimmed.len()];
        match (trimmed.strip_prefix("//en"), trimmed.strip_prefix("//zh")) {
            (Some(rest), _) if lang == Lang::En => out.push(format!("{indent}//{rest}")),
            (_, Some(rest)) if lang == Lang::Zh => out.push(format!("{indent}//{rest}")),
            (Some(_), _) | (_, Some(_)) => {}
            _ => out.push(line.to_owned()),
        }
    }
    let mut text = out.join("\n");
    text.push('\n');
    text
}

/// The exercise called `id`.
pub fn exercise(id: &str) -> Option<&'static KernelExercise> {
    EXERCISES.iter().find(|e| e.id == id)
}

impl dlsys_core::names::Named for KernelExercise {
    fn name_key(&self) -> String {
        format!("kernel_exercise.{}", self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_states_where_the_declarations_go_once() {
        for ex in &EXERCISES {
            for file in [ex.template_file, ex.reference_file] {
                assert_eq!(file.matches(DECLARATIONS_MARKER).count(), 1, "{}", ex.id);
            }
            let templates = dlsys_core::text::Lang::ALL.map(|lang| ex.template(lang));
            for source in templates.into_iter().chain([ex.reference()]) {
                assert!(!source.contains(DECLARATIONS_MARKER), "{}", ex.id);
                assert!(source.contains("var<uniform> params: Params;"), "{}", ex.id);
            }
        }
    }

    /// The checker's words — every case's name, the race's problem — in
    /// Chinese carry no English prose (they come from `assets/names.ron`).
    #[test]
    fn every_case_is_named_in_both_languages() {
        use dlsys_core::text::Lang;
        let cjk = |s: &str| s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
        for ex in &EXERCISES {
            for case in ex.cases().into_iter().chain([ex.bench_case()]) {
                let (en, zh) = (case.name.say(Lang::En), case.name.say(Lang::Zh));
                assert!(!en.contains('{') && !zh.contains('{'), "{}: {en}", ex.id);
                let prose = zh
                    .split(|c: char| !c.is_ascii_alphabetic())
                    .any(|w| w.len() >= 4 && w != "logits");
                assert!(!prose || cjk(&zh), "{}: `{zh}`", ex.id);
            }
        }
    }

    /// Each learner reads the template's comments in their language only.
    #[test]
    fn a_template_speaks_one_language() {
        use dlsys_core::text::Lang;
        // Chinese characters and full-width punctuation.
        let cjk = |s: &str| {
            s.chars().any(|c| {
                ('\u{4e00}'..='\u{9fff}').contains(&c) || ('\u{3000}'..='\u{303f}').contains(&c)
            })
        };
        for ex in &EXERCISES {
            let (en, zh) = (ex.template(Lang::En), ex.template(Lang::Zh));
            assert!(!cjk(&en), "{}: Chinese in the English template", ex.id);
            for line in zh.lines().filter(|l| l.trim_start().starts_with("// TODO")) {
                assert!(cjk(line), "{}: `{line}` in the Chinese template", ex.id);
            }
            assert!(zh.contains("TODO") && en.contains("TODO"), "{}", ex.id);
            // The code itself is the same in both.
            let code = |t: &str| -> Vec<String> {
                t.lines()
                    .filter(|l| !l.trim_start().starts_with("//"))
                    .map(str::to_owned)
                    .collect()
            };
            assert_eq!(code(&en), code(&zh), "{}", ex.id);
        }
    }

    #[test]
    fn every_wrong_kernel_really_edits_its_reference() {
        for ex in &EXERCISES {
            for wrong in ex.wrong {
                for (from, to) in wrong.edits {
                    assert!(
                        ex.reference().contains(from) && from != to,
                        "{} / {}: `{from}` is not in the reference",
                        ex.id,
                        wrong.name
                    );
                }
                assert!(!ex.wrong_source(wrong).contains(wrong.edits[0].0));
            }
        }
    }
}
