//! The command line, run as a user runs it: the built binary, one test
//! binary with a module per subcommand family (one link, not ten).

mod attention;
mod basics;
mod collective;
mod compile;
mod gemm;
mod infer;
mod lang;
mod limits;
mod memory;
mod models;
mod parallel;
mod pipeline;
mod progress;
mod quant;
mod quiz;
mod support;
mod zh;
