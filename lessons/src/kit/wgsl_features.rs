//! Which WGSL language extensions the browser's WebGPU offers
//! (`navigator.gpu.wgslLanguageFeatures`). Natively naga translates the
//! WGSL for the driver and accepts every extension it knows, so there is
//! nothing to ask.

/// Whether this browser offers the WGSL language extension `name`: `None`
/// natively and in a browser without WebGPU; `Some(false)` where WebGPU
/// exists but does not list it (or lists nothing, as browsers did before
/// the attribute).
pub fn offered(name: &str) -> Option<bool> {
    #[cfg(target_arch = "wasm32")]
    {
        use wasm_bindgen::JsCast as _;
        let get = |target: &wasm_bindgen::JsValue, key: &str| {
            js_sys::Reflect::get(target, &key.into())
                .ok()
                .filter(|v| !v.is_undefined() && !v.is_null())
        };
        let navigator = get(&js_sys::global(), "navigator")?;
        let gpu = get(&navigator, "gpu")?;
        let Some(features) = get(&gpu, "wgslLanguageFeatures") else {
            return Some(false);
        };
        let has = get(&features, "has")?.dyn_into::<js_sys::Function>().ok()?;
        Some(
            has.call1(&features, &name.into())
                .ok()?
                .as_bool()
                .unwrap_or(false),
        )
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = name;
        None
    }
}
