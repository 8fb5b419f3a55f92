//! Why a format, a rounding mode or an fp32 pattern was refused; the words
//! are in `assets/errors.ron`.

crate::catalog_error! {
    /// A format or rounding mode that does not exist, or an fp32 pattern
    /// that does not read.
    #[derive(serde::Serialize, serde::Deserialize)]
    pub enum FormatError {
        UnknownFormat { name: String, choices: String } = "format.unknown",
        ExponentWidth { name: String, bits: u32 } = "format.exponent_width",
        MantissaWidth { name: String, bits: u32 } = "format.mantissa_width",
        UnknownRounding { name: String } = "format.unknown_rounding",
        EmptyPattern = "format.empty_pattern",
        NotF32Pattern { text: String } = "format.not_f32_pattern",
        NotUtf8 = "format.not_utf8",
    }
}
