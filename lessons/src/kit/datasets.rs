//! The data sets lessons train on, by name. Loading and splitting by name
//! live in `dlsys_core::nn::data` (the CLI uses them too); what is left here
//! is the web build's download of MNIST, which is not compiled in there.

use dlsys_core::nn::{DataError, Dataset, data};

pub use dlsys_core::nn::data::{NAMES, SYNTHETIC_POINTS, TEST_FRACTION, needs_fetch};

/// Where a data set fetched on demand stands (web build).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fetch {
    NotStarted,
    Pending,
    Ready,
    Failed(String),
}

#[cfg(target_arch = "wasm32")]
thread_local! {
    static FETCHED_MNIST: std::cell::RefCell<(Fetch, Option<Vec<u8>>)> =
        const { std::cell::RefCell::new((Fetch::NotStarted, None)) };
}

/// Starts (once) or reports the download of MNIST next to the page
/// (`assets/data/mnist10k.dlds`). Native builds have it compiled in.
pub fn fetch_mnist() -> Fetch {
    #[cfg(target_arch = "wasm32")]
    {
        let state = FETCHED_MNIST.with(|cell| cell.borrow().0.clone());
        if state == Fetch::NotStarted {
            FETCHED_MNIST.with(|cell| cell.borrow_mut().0 = Fetch::Pending);
            wasm_bindgen_futures::spawn_local(async {
                let result = download("assets/data/mnist10k.dlds").await;
                FETCHED_MNIST.with(|cell| {
                    *cell.borrow_mut() = match result {
                        Ok(bytes) => (Fetch::Ready, Some(bytes)),
                        Err(err) => (Fetch::Failed(err), None),
                    };
                });
            });
            return Fetch::Pending;
        }
        state
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        Fetch::Ready
    }
}

/// The bytes at `url`, next to the page (web build).
#[cfg(target_arch = "wasm32")]
pub(crate) async fn download(url: &str) -> Result<Vec<u8>, String> {
    use wasm_bindgen::JsCast as _;
    use wasm_bindgen_futures::JsFuture;
    let window = web_sys::window().ok_or("no window")?;
    let response = JsFuture::from(window.fetch_with_str(url))
        .await
        .map_err(|e| format!("fetching {url}: {e:?}"))?;
    let response: web_sys::Response = response
        .dyn_into()
        .map_err(|_| "not a response".to_owned())?;
    if !response.ok() {
        return Err(format!("fetching {url}: HTTP {}", response.status()));
    }
    let buffer = JsFuture::from(response.array_buffer().map_err(|e| format!("{e:?}"))?)
        .await
        .map_err(|e| format!("reading {url}: {e:?}"))?;
    Ok(js_sys::Uint8Array::new(&buffer).to_vec())
}

/// Loads a data set by name; `seed` seeds the synthetic ones. On the web,
/// MNIST comes from [`fetch_mnist`]'s download.
pub fn load(name: &str, seed: u64) -> Result<Dataset, DataError> {
    #[cfg(target_arch = "wasm32")]
    if needs_fetch(name) {
        return fetched_mnist();
    }
    data::load(name, seed)
}

#[cfg(target_arch = "wasm32")]
fn fetched_mnist() -> Result<Dataset, DataError> {
    FETCHED_MNIST.with(|cell| match &*cell.borrow() {
        (_, Some(bytes)) => Dataset::from_dlds("mnist", bytes),
        (Fetch::Failed(err), _) => Err(DataError::Download {
            detail: err.clone(),
        }),
        _ => Err(DataError::StillDownloading),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_name_loads() {
        for name in super::NAMES {
            let data = super::load(name, 1).unwrap_or_else(|e| panic!("{e}"));
            assert!(!data.is_empty());
        }
        assert!(super::load("cifar", 1).is_err());
    }
}
