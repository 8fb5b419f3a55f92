//! The command-line face: the same cores as the app, headless.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use dlsys_core::exercise::{SelfCheck, self_check};
use dlsys_lessons::exercise_panel::{FIRST_SEED, next_seed};
use dlsys_shaders::Gpu;

#[derive(Debug, Parser)]
#[command(
    name = "dlsys-lab",
    version,
    about = "An interactive workbench for deep-learning-systems topics. \
             Without a subcommand it opens the app."
)]
pub struct Cli {
    /// Open this lesson (its id, e.g. `welcome`; a leading `#` is allowed).
    #[arg(long, value_name = "ID")]
    pub lesson: Option<String>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Clone, Copy, Debug, Subcommand)]
pub enum Command {
    /// Print the GPU adapter dlsys-lab would use and its optional features.
    GpuInfo {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Self-check every exercise: each checker must accept its reference
    /// answer and reject its listed wrong answers.
    Check {
        #[arg(long)]
        json: bool,
        /// How many seeded variants of each exercise to check.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
        seeds: u32,
    },
    /// List the lessons (their ids are the routes: `--lesson ID`, `#ID`).
    Lessons {
        #[arg(long)]
        json: bool,
    },
}

/// Runs a subcommand; an error is one line for stderr.
pub fn run(command: Command) -> Result<ExitCode, String> {
    match command {
        Command::GpuInfo { json } => gpu_info(json),
        Command::Check { json, seeds } => check(json, seeds),
        Command::Lessons { json } => lessons(json),
    }
}

fn to_json(value: &impl serde::Serialize) -> Result<String, String> {
    serde_json::to_string_pretty(value).map_err(|err| format!("could not write JSON: {err}"))
}

fn gpu_info(json: bool) -> Result<ExitCode, String> {
    match Gpu::request_blocking() {
        Ok(gpu) => {
            let info = gpu.info();
            if json {
                #[derive(serde::Serialize)]
                struct Report<'a> {
                    available: bool,
                    #[serde(flatten)]
                    info: &'a dlsys_shaders::GpuInfo,
                }
                println!(
                    "{}",
                    to_json(&Report {
                        available: true,
                        info: &info
                    })?
                );
            } else {
                println!("adapter:      {}", info.adapter);
                println!("backend:      {}", info.backend);
                println!("device type:  {}", info.device_type);
                println!("driver:       {} {}", info.driver, info.driver_info);
                println!(
                    "compute:      {}",
                    if info.compute {
                        "yes"
                    } else {
                        "no (lessons use the CPU path)"
                    }
                );
                println!("timestamp period: {} ns", info.timestamp_period_ns);
                println!(
                    "subgroup sizes:   {}–{}",
                    info.subgroup_min_size, info.subgroup_max_size
                );
                println!(
                    "limits: {} invocations/workgroup, {} B workgroup storage, {} B storage binding",
                    info.max_compute_invocations_per_workgroup,
                    info.max_compute_workgroup_storage_bytes,
                    info.max_storage_buffer_binding_bytes
                );
                println!("optional features:");
                for (name, enabled) in info.feature_flags() {
                    println!(
                        "  {name:<32} {}",
                        if enabled { "enabled" } else { "not offered" }
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            if json {
                println!(
                    "{}",
                    to_json(&serde_json::json!({
                        "available": false,
                        "reason": err.to_string(),
                        "path": "cpu",
                    }))?
                );
            } else {
                println!("no GPU: {err}");
                println!("GPU lessons run on the CPU path.");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Every exercise of every lesson over `seeds` seeded variants.
pub fn self_check_all(seeds: u32) -> Vec<(String, SelfCheck)> {
    let mut results = Vec::new();
    for lesson in dlsys_lessons::all() {
        for exercise in lesson.exercises() {
            let mut seed = FIRST_SEED;
            for _ in 0..seeds {
                results.push((lesson.id().to_owned(), self_check(exercise, seed)));
                seed = next_seed(seed);
            }
        }
    }
    results
}

fn check(json: bool, seeds: u32) -> Result<ExitCode, String> {
    let results = self_check_all(seeds);
    let failed = results.iter().filter(|(_, r)| !r.ok()).count();
    if json {
        #[derive(serde::Serialize)]
        struct Row<'a> {
            lesson: &'a str,
            #[serde(flatten)]
            result: &'a SelfCheck,
            ok: bool,
        }
        let rows: Vec<Row<'_>> = results
            .iter()
            .map(|(lesson, result)| Row {
                lesson,
                result,
                ok: result.ok(),
            })
            .collect();
        println!(
            "{}",
            to_json(&serde_json::json!({
                "checked": results.len(),
                "failed": failed,
                "results": rows,
            }))?
        );
    } else {
        for (lesson, result) in &results {
            let status = if result.ok() { "ok  " } else { "FAIL" };
            println!(
                "{status} {lesson}/{} seed {}",
                result.exercise_id, result.seed
            );
            for problem in &result.problems {
                println!("       {problem}");
            }
        }
        println!("{} checked, {failed} failed", results.len());
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn lessons(json: bool) -> Result<ExitCode, String> {
    let lang = dlsys_core::text::Lang::En;
    let all = dlsys_lessons::all();
    if json {
        let rows: Vec<_> = all
            .iter()
            .map(|l| {
                serde_json::json!({
                    "id": l.id(),
                    "title": l.title(lang),
                    "exercises": l.exercises().iter().map(|e| e.id).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!("{}", to_json(&rows)?);
    } else {
        for lesson in &all {
            println!(
                "{:<16} {} ({} exercises)",
                lesson.id(),
                lesson.title(lang),
                lesson.exercises().len()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
