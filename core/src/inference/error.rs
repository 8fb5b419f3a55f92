//! Why a serving estimate or simulation cannot be made; the words are in
//! `assets/errors.ron`.

use crate::memory::MemoryError;

crate::catalog_error! {
    /// Settings the inference cores refuse.
    pub enum InferError {
        Model { reason: MemoryError } = "infer.model",
        UnknownDevice { name: String, choices: String } = "infer.unknown_device",
        Bandwidth { value: f64 } = "infer.bandwidth",
        Peak { value: f64 } = "infer.peak",
        DeviceMemory { value: f64 } = "infer.device_memory",
        WeightBytes { value: f64 } = "infer.weight_bytes",
        Prompt { value: u64, max: u64 } = "infer.prompt",
        Context { value: u64, max: u64 } = "infer.context",
        Batch { value: u64, max: u64 } = "infer.batch",
        PromptLengths { lo: u64, hi: u64, reserve: u64 } = "infer.prompt_lengths",
        OutputLengths { lo: u64, hi: u64, reserve: u64 } = "infer.output_lengths",
        Longest { longest: u64, reserve: u64 } = "infer.longest",
        BlockTokens { value: u32 } = "infer.block_tokens",
        Memory { tokens: u64, reserve: u64, max: u64 } = "infer.memory",
        BlockMemory { usable: u64, reserve: u64 } = "infer.block_memory",
        Stream { requests: u32, max: u32 } = "infer.stream",
        Proposals { k: u32, max: u32 } = "infer.proposals",
        Rounds { rounds: u32, min: u32, max: u32 } = "infer.rounds",
        Pair { vocab: u64, alpha: f64 } = "infer.pair",
        Rate { value: f64 } = "infer.rate",
        MaxBatch { value: u32, max: u32 } = "infer.max_batch",
        MaxWait { value: f64 } = "infer.max_wait",
        ChunkTokens { value: u32, min: u32, max: u64 } = "infer.chunk_tokens",
        KvMemory { tokens: u64, longest: u64 } = "infer.kv_memory",
        Rates { count: u32, max: u32 } = "infer.rates",
        PastContext { tokens: usize, context: usize } = "infer.past_context",
        UnknownToken { id: usize, vocab: usize } = "infer.unknown_token",
        EmptyPrompt = "infer.empty_prompt",
        LongPrompt { chars: usize, max: usize } = "infer.long_prompt",
        Character { character: String } = "infer.character",
        Continuation { prompt: usize, tokens: usize, context: usize } = "infer.continuation",
        Temperature { value: f64, max: f64 } = "infer.temperature",
        TopP { value: f64 } = "infer.top_p",
        DraftCost { value: f64 } = "infer.draft_cost",
        SpecTokens { tokens: usize, least: usize } = "infer.spec_tokens",
        ShapeWidth { value: usize, max: usize } = "infer.shape_width",
        ShapeTokens { prompt: usize, steps: usize, max: usize } = "infer.shape_tokens",
        RoofSizes { gemm: usize, mb: usize } = "infer.roof_sizes",
    }
}
