//! A kernel given as data instead of as a `Kernel` variant: WGSL text (a
//! file's, or generated at run time), its typed, named buffers, its
//! dispatches (several, with named intermediate buffers between them) and
//! its own traffic model. The runner binds each buffer to the WGSL variable
//! of the same name, checks the element types against the WGSL's
//! declarations, times it like every other kernel, and checks the output —
//! integers bit for bit, floats within a stated tolerance.

use std::sync::Arc;

use dlsys_core::kernels::{Family, Traffic, compare_with_floor};
use serde::Serialize;
use wgpu::util::DeviceExt as _;

use super::bind::Recorder;
use super::{KernelRunner, Prepared, RunOutput, RunSpec, job};
use crate::plumbing::{Scopes, TimerKind};
use crate::{Job, KernelError, source};

/// What a buffer's elements are, as the WGSL declares them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ElementType {
    F32,
    I32,
    U32,
    /// Four 8-bit integers in each `u32` word (WGSL has no 8-bit type).
    Packed8,
}

impl ElementType {
    fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::I32 => "i32",
            Self::U32 => "u32",
            Self::Packed8 => "u32 (4 × 8-bit)",
        }
    }
}

/// A buffer's contents, typed.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    F32(Vec<f32>),
    I32(Vec<i32>),
    U32(Vec<u32>),
    /// Signed 8-bit values, packed four to a word, lowest byte first (as
    /// WGSL's `pack4xI8` and `dot4I8Packed` read them).
    Packed8(Vec<i8>),
}

impl Values {
    pub fn element_type(&self) -> ElementType {
        match self {
            Self::F32(_) => ElementType::F32,
            Self::I32(_) => ElementType::I32,
            Self::U32(_) => ElementType::U32,
            Self::Packed8(_) => ElementType::Packed8,
        }
    }

    /// The 32-bit words the GPU sees.
    pub fn words(&self) -> Vec<u32> {
        match self {
            Self::F32(v) => v.iter().map(|x| x.to_bits()).collect(),
            Self::I32(v) => v.iter().map(|x| *x as u32).collect(),
            Self::U32(v) => v.clone(),
            Self::Packed8(v) => v
                .chunks(4)
                .map(|c| {
                    c.iter()
                        .enumerate()
                        .fold(0u32, |w, (i, b)| w | (u32::from(*b as u8) << (8 * i)))
                })
                .collect(),
        }
    }
}

/// How a buffer starts.
#[derive(Clone, Debug, PartialEq)]
pub enum Init {
    Values(Values),
    /// `words` zeroed words of this type: an output or an intermediate.
    Zeroed {
        ty: ElementType,
        words: u64,
    },
}

/// One named buffer of a program.
#[derive(Clone, Debug, PartialEq)]
pub struct NamedBuffer {
    /// The WGSL variable it is bound to.
    pub name: String,
    pub init: Init,
}

impl NamedBuffer {
    pub fn input(name: &str, values: Values) -> Self {
        Self {
            name: name.to_owned(),
            init: Init::Values(values),
        }
    }

    pub fn zeroed(name: &str, ty: ElementType, words: u64) -> Self {
        Self {
            name: name.to_owned(),
            init: Init::Zeroed { ty, words },
        }
    }

    fn ty(&self) -> ElementType {
        match &self.init {
            Init::Values(v) => v.element_type(),
            Init::Zeroed { ty, .. } => *ty,
        }
    }

    fn words(&self) -> u64 {
        match &self.init {
            Init::Values(v) => v.words().len() as u64,
            Init::Zeroed { words, .. } => *words,
        }
    }
}

/// One dispatch: an entry point of the program's WGSL, its grid, and the
/// eight words of its `params` uniform (if the WGSL declares one).
#[derive(Clone, Debug, PartialEq)]
pub struct Dispatch {
    pub entry: String,
    pub workgroups: [u32; 3],
    pub params: [u32; 8],
}

/// What the output must be.
#[derive(Clone, Debug, PartialEq)]
pub enum Expected {
    /// Bit for bit (integer outputs).
    Exact(Values),
    /// Each value within `tolerance` of `want`, relative to max(|want|, `floor`);
    /// NaN and ±inf where `want` has them.
    Close {
        want: Vec<f32>,
        tolerance: f64,
        floor: f64,
    },
    /// Each value within its own absolute bound of `want`; NaN and ±inf
    /// where `want` has them.
    Within { want: Vec<f32>, bound: Vec<f32> },
}

/// A program's WGSL with its counting tokens filled: `{{COUNTERS}}` (the
/// `counters` buffer at `binding`), `{{COUNT_LOAD}}` and `{{COUNT_STORE}}`
/// (4 bytes each) — empty in the plain build, atomic counts in the
/// instrumented one, so both builds come from one text.
pub fn with_counters(text: &str, binding: u32, instrumented: bool) -> String {
    let (counters, load, store) = if instrumented {
        (
            format!(
                "@group(0) @binding({binding}) var<storage, read_write> counters: array<atomic<u32>, 2>;"
            ),
            "atomicAdd(&counters[0], 4u);",
            "atomicAdd(&counters[1], 4u);",
        )
    } else {
        (String::new(), "", "")
    };
    text.replace("{{COUNTERS}}", &counters)
        .replace("{{COUNT_LOAD}}", load)
        .replace("{{COUNT_STORE}}", store)
}

/// A kernel given as data (see the module's docs).
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// Shown in results (`fused/bias_gelu`, `int8/dot4`).
    pub id: String,
    /// The family it is drawn with on the plots.
    pub family: Family,
    /// The WGSL; `counted` is the instrumented build of the same program
    /// (atomics on a `counters` buffer), when it has one.
    pub source: String,
    pub counted: Option<String>,
    pub buffers: Vec<NamedBuffer>,
    pub dispatches: Vec<Dispatch>,
    /// The buffer read back and checked.
    pub output: String,
    pub expected: Expected,
    /// Its traffic model: bytes read and written over all dispatches.
    pub traffic: Traffic,
    /// Arithmetic operations (0: none), for the roofline.
    pub ops: f64,
}

/// How a program's output compares with what it must be.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Checked {
    pub ok: bool,
    /// Values that differ (exact) or fall outside the tolerance.
    pub mismatches: u64,
    /// The largest relative error; for [`Expected::Within`], the largest
    /// error as a share of its own bound (1 = at the bound).
    pub max_rel_error: f64,
}

impl Checked {
    /// An output of the wrong length: every missing or extra value counts.
    fn wrong_length(want: usize, got: usize) -> Self {
        Self {
            ok: false,
            mismatches: (want as u64).abs_diff(got as u64),
            max_rel_error: f64::INFINITY,
        }
    }
}

/// A program's run: time, traffic and its check.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProgramRow {
    pub id: String,
    #[serde(skip)]
    pub family: Family,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub bytes: u64,
    pub dispatches: u32,
    pub gb_per_s: f64,
    /// Bytes the instrumented build loaded and stored, when it ran.
    pub counted: Option<(u64, u64)>,
    pub ops: f64,
    pub check: Checked,
    #[serde(serialize_with = "crate::report::timer_label")]
    pub timer: TimerKind,
}

impl ProgramRow {
    /// (ops per byte, Gop/s), `None` without arithmetic.
    pub fn roofline_point(&self) -> Option<(f64, f64)> {
        (self.ops > 0.0 && self.bytes > 0).then(|| {
            (
                self.ops / self.bytes as f64,
                self.ops / (self.median_ms * 1e6),
            )
        })
    }

    /// Summarises a run of `program`.
    pub fn of(program: &Program, out: &RunOutput) -> Self {
        let (min, max) = out.spread_ns();
        Self {
            id: program.id.clone(),
            family: program.family,
            median_ms: out.median_ns() / 1e6,
            min_ms: min / 1e6,
            max_ms: max / 1e6,
            bytes: program.traffic.bytes(),
            dispatches: program.dispatches.len() as u32,
            gb_per_s: program.traffic.bytes() as f64 / out.median_ns(),
            counted: out.counted,
            ops: program.ops,
            check: program.check(&out.words),
            timer: out.timer,
        }
    }
}

impl Program {
    /// The output against [`Program::expected`].
    pub fn check(&self, words: &[u32]) -> Checked {
        match &self.expected {
            Expected::Exact(want) => {
                let want = want.words();
                let mismatches = (want.len() as u64).abs_diff(words.len() as u64)
                    + want.iter().zip(words).filter(|(a, b)| a != b).count() as u64;
                Checked {
                    ok: mismatches == 0,
                    mismatches,
                    max_rel_error: if mismatches == 0 { 0.0 } else { f64::INFINITY },
                }
            }
            Expected::Close {
                want,
                tolerance,
                floor,
            } => {
                let got: Vec<f32> = words.iter().map(|w| f32::from_bits(*w)).collect();
                if got.len() != want.len() {
                    return Checked::wrong_length(want.len(), got.len());
                }
                let c = compare_with_floor(&got, want, *floor);
                let outside = got
                    .iter()
                    .zip(want)
                    .filter(|(g, w)| {
                        let (g, w) = (f64::from(**g), f64::from(**w));
                        if !(g.is_finite() && w.is_finite()) {
                            return !(g == w || (g.is_nan() && w.is_nan()));
                        }
                        (g - w).abs() > tolerance * w.abs().max(*floor)
                    })
                    .count() as u64;
                Checked {
                    ok: outside == 0 && c.special_mismatches == 0,
                    mismatches: outside,
                    max_rel_error: c.max_rel_error,
                }
            }
            Expected::Within { want, bound } => {
                let got: Vec<f32> = words.iter().map(|w| f32::from_bits(*w)).collect();
                if got.len() != want.len() {
                    return Checked::wrong_length(want.len(), got.len());
                }
                let (mut outside, mut worst) = (0u64, 0.0f64);
                for ((g, w), b) in got.iter().zip(want).zip(bound) {
                    let (g, w, b) = (f64::from(*g), f64::from(*w), f64::from(*b));
                    let ok = if w.is_finite() && g.is_finite() {
                        let err = (g - w).abs();
                        // The error as a share of its bound (1 = at the bound).
                        worst = worst.max(if b > 0.0 {
                            err / b
                        } else if err > 0.0 {
                            f64::INFINITY
                        } else {
                            0.0
                        });
                        err <= b
                    } else {
                        let same = g == w || (g.is_nan() && w.is_nan());
                        if !same {
                            worst = f64::INFINITY;
                        }
                        same
                    };
                    if !ok {
                        outside += 1;
                    }
                }
                Checked {
                    ok: outside == 0,
                    mismatches: outside,
                    max_rel_error: worst,
                }
            }
        }
    }

    fn output_words(&self) -> Option<u64> {
        self.buffers
            .iter()
            .find(|b| b.name == self.output)
            .map(NamedBuffer::words)
    }
}

/// The element type a WGSL global of `module` holds, if it is an array of
/// scalars (or of vectors of them) in storage.
fn declared_type(module: &naga::Module, name: &str) -> Option<(ElementType, bool)> {
    use naga::{ScalarKind, TypeInner};
    let (_, var) = module
        .global_variables
        .iter()
        .find(|(_, v)| v.name.as_deref() == Some(name))?;
    let mut inner = &module.types[var.ty].inner;
    if let TypeInner::Array { base, .. } = inner {
        inner = &module.types[*base].inner;
    }
    let scalar = match inner {
        TypeInner::Scalar(s) | TypeInner::Vector { scalar: s, .. } => *s,
        TypeInner::Atomic(s) => *s,
        _ => return None,
    };
    let ty = match scalar.kind {
        ScalarKind::Float => ElementType::F32,
        ScalarKind::Sint => ElementType::I32,
        ScalarKind::Uint => ElementType::U32,
        _ => return None,
    };
    let uniform = matches!(var.space, naga::AddressSpace::Uniform);
    Some((ty, uniform))
}

/// Whether a buffer of `ty` may be bound where the WGSL declares `declared`.
fn fits(ty: ElementType, declared: ElementType) -> bool {
    ty == declared || (ty == ElementType::Packed8 && declared == ElementType::U32)
}

impl KernelRunner {
    /// Starts `program`: its WGSL validated by naga, each buffer bound to
    /// the variable of its name (its type held to the declaration), then
    /// timed with `warmup` and `trials` like every other kernel; with
    /// `instrumented`, its counted build runs once first.
    pub fn start_program(
        &mut self,
        program: &Program,
        warmup: u32,
        trials: u32,
        instrumented: bool,
    ) -> Result<Job, KernelError> {
        if !self.gpu.supports_compute() {
            return Err(KernelError::NoCompute {
                adapter: self.gpu.adapter_info.name.clone(),
            });
        }
        let out_words = program
            .output_words()
            .ok_or_else(|| KernelError::NoBuffer {
                program: program.id.clone(),
                name: program.output.clone(),
            })?;
        for buffer in &program.buffers {
            self.check_size(buffer.words())?;
        }
        let plain = self.prepare_program(program, &program.source)?;
        let counted = match (&program.counted, instrumented) {
            (Some(text), true) => Some(self.prepare_program(program, text)?),
            _ => None,
        };
        let device = self.gpu.device.clone();
        let buffers: Vec<(String, wgpu::Buffer)> = program
            .buffers
            .iter()
            .map(|b| {
                let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
                let buffer = match &b.init {
                    Init::Values(values) => {
                        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                            label: Some(&b.name),
                            contents: bytemuck::cast_slice(&values.words()),
                            usage,
                        })
                    }
                    Init::Zeroed { words, .. } => device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some(&b.name),
                        size: words.max(&1) * 4,
                        usage,
                        mapped_at_creation: false,
                    }),
                };
                (b.name.clone(), buffer)
            })
            .collect();
        let counters = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("counters"),
            size: 8,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let params: Vec<wgpu::Buffer> = program
            .dispatches
            .iter()
            .map(|d| {
                device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("params"),
                    contents: bytemuck::cast_slice(&d.params),
                    usage: wgpu::BufferUsages::UNIFORM,
                })
            })
            .collect();
        let bind = |prepared: &[Arc<Prepared>]| -> Result<Vec<wgpu::BindGroup>, KernelError> {
            program
                .dispatches
                .iter()
                .zip(prepared)
                .zip(&params)
                .map(|((d, p), params)| {
                    let entries = p
                        .names
                        .iter()
                        .map(|(binding, name)| {
                            let buffer = match name.as_str() {
                                "params" => params,
                                "counters" => &counters,
                                _ => buffers
                                    .iter()
                                    .find(|(n, _)| n == name)
                                    .map(|(_, b)| b)
                                    .ok_or_else(|| KernelError::NoBuffer {
                                        program: program.id.clone(),
                                        name: name.clone(),
                                    })?,
                            };
                            Ok(wgpu::BindGroupEntry {
                                binding: *binding,
                                resource: buffer.as_entire_binding(),
                            })
                        })
                        .collect::<Result<Vec<_>, KernelError>>()?;
                    Ok(device.create_bind_group(&wgpu::BindGroupDescriptor {
                        label: Some(&d.entry),
                        layout: &p.pipeline.get_bind_group_layout(0),
                        entries: &entries,
                    }))
                })
                .collect()
        };
        let groups = bind(&plain)?;
        let counted = match counted {
            Some(pipelines) => {
                let groups = bind(&pipelines)?;
                Some((pipelines, groups))
            }
            None => None,
        };
        let timer = self.timer();
        let spec = RunSpec {
            kernel: dlsys_core::kernels::Kernel::Copy,
            problem: dlsys_core::kernels::Problem::new(1, out_words as u32),
            warmup,
            trials: trials.clamp(1, super::MAX_TRIALS),
            instrumented: counted.is_some(),
        };
        let workgroups = program.dispatches.iter().map(|d| d.workgroups).collect();
        let recorder = Recorder::new(&device, groups, workgroups, spec.trials, timer);
        let output = buffers
            .iter()
            .find(|(n, _)| *n == program.output)
            .map(|(_, b)| b.clone())
            .ok_or_else(|| KernelError::NoBuffer {
                program: program.id.clone(),
                name: program.output.clone(),
            })?;
        Job::submit(job::Submission {
            gpu: &self.gpu,
            output: &output,
            out_bytes: out_words * 4,
            counters: &counters,
            spec,
            steps: Vec::new(),
            traffic: program.traffic,
            recorder,
            plain,
            counted,
            timer,
        })
    }

    /// Pipelines for every dispatch of `program` built from `text`, inside
    /// error scopes, with each binding named and its type checked.
    fn prepare_program(
        &mut self,
        program: &Program,
        text: &str,
    ) -> Result<Vec<Arc<Prepared>>, KernelError> {
        let checked = source::check(text)?;
        let device = self.gpu.device.clone();
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(&program.id),
            source: wgpu::ShaderSource::Wgsl(text.into()),
        });
        program
            .dispatches
            .iter()
            .map(|d| {
                let bindings = checked
                    .bindings
                    .iter()
                    .find(|(name, _)| *name == d.entry)
                    .map(|(_, b)| b.clone())
                    .ok_or_else(|| KernelError::NoEntryPoint {
                        file: program.id.clone(),
                        entry: d.entry.clone(),
                    })?;
                let mut names = Vec::new();
                for binding in &bindings {
                    let (_, var) = checked
                        .module
                        .global_variables
                        .iter()
                        .find(|(_, v)| v.binding.as_ref().is_some_and(|b| b.binding == *binding))
                        .ok_or_else(|| KernelError::UnknownBinding {
                            entry: d.entry.clone(),
                            binding: *binding,
                        })?;
                    let name = var.name.clone().unwrap_or_default();
                    if let Some(buffer) = program.buffers.iter().find(|b| b.name == name)
                        && let Some((declared, _)) = declared_type(&checked.module, &name)
                        && !fits(buffer.ty(), declared)
                    {
                        return Err(KernelError::BufferType {
                            name,
                            given: buffer.ty().name().to_owned(),
                            declared: declared.name().to_owned(),
                        });
                    }
                    names.push((*binding, name));
                }
                let scopes = Scopes::push(&device);
                let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(&d.entry),
                    layout: None,
                    module: &module,
                    entry_point: Some(&d.entry),
                    compilation_options: Default::default(),
                    cache: None,
                });
                let created = scopes.pop();
                if let Some(Some(error)) = created.get() {
                    return Err(KernelError::Rejected {
                        entry: d.entry.clone(),
                        error,
                    });
                }
                Ok(Arc::new(Prepared {
                    pipeline,
                    bindings,
                    names,
                    created,
                }))
            })
            .collect()
    }
}
