//! Asynchronous SGD against a parameter server: no worker waits for
//! another. Each worker pulls the server's current weights, computes a
//! gradient on its next batch, and pushes it; the server steps on every
//! gradient the moment it lands. By then other workers' gradients may have
//! moved the weights on: the gradient is *stale* by that many versions.
//!
//! The order is the virtual clock's, so the run is the same everywhere:
//! a pull or push of the whole gradient takes α + S/β and the server
//! receives one push and sends one pull at a time (they queue); a worker
//! computes for its counted FLOPs ÷ its rate. Events at the same time go
//! in worker order. The gradients are computed for real, one at a time, as
//! their events come up.

use serde::Serialize;

use super::CollectiveError;
use super::exec::Element;
use super::train::{DpSettings, batches, gradient, unflatten};
use crate::autograd::{Real, Tensor};
use crate::nn::{Dataset, Mlp, Optimizer};

/// One gradient applied by the server.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AsyncUpdate {
    pub worker: usize,
    /// The worker's loss on its batch, at the weights it pulled.
    pub loss: f64,
    /// Server updates between the worker's pull and this one.
    pub staleness: u64,
    /// When the server applied it, on the virtual clock.
    pub applied_s: f64,
}

/// A finished asynchronous run.
#[derive(Clone, Debug, PartialEq)]
pub struct AsyncRun<T> {
    pub updates: Vec<AsyncUpdate>,
    /// The server's weights at the end (weight, bias per layer).
    pub weights: Vec<Tensor<T>>,
    /// Bytes through the server per update: the push in and the pull out.
    pub bytes_per_update: u64,
}

impl<T> AsyncRun<T> {
    pub fn mean_staleness(&self) -> f64 {
        let n = self.updates.len().max(1) as f64;
        self.updates.iter().map(|u| u.staleness as f64).sum::<f64>() / n
    }

    pub fn max_staleness(&self) -> u64 {
        self.updates.iter().map(|u| u.staleness).max().unwrap_or(0)
    }
}

/// A worker between events.
struct Worker<T> {
    weights: Mlp<T>,
    version: u64,
    /// When its gradient is computed and it can push.
    ready_s: f64,
}

/// Trains asynchronously for `settings.steps` server updates (each on a
/// batch of `settings.shard` examples); `settings.algorithm` is not used
/// (the gradients go to the server whole).
pub fn train_async<T: Real + Element>(
    settings: &DpSettings,
    data: &Dataset,
) -> Result<AsyncRun<T>, CollectiveError> {
    settings.check(data)?;
    let sizes = settings.sizes(data);
    let n = settings.workers;
    let mut server = Mlp::<T>::new(&sizes, settings.activation, settings.seed).map_err(|e| {
        CollectiveError::Model {
            reason: e.to_string(),
        }
    })?;
    let mut optimizer = Optimizer::new(settings.optimizer, settings.lr, 0.0);
    let bytes = (server.parameter_count() * std::mem::size_of::<T>()) as u64;
    let message = settings.link.message_time(bytes as f64);
    let compute = settings.compute_times(&sizes)?;
    let batches = batches(data.len(), settings.shard, settings.steps, settings.seed);
    // The first pulls leave the server one after another.
    let mut send_free = 0.0f64;
    let mut recv_free = 0.0f64;
    let mut workers: Vec<Worker<T>> = (0..n)
        .map(|w| {
            send_free += message;
            Worker {
                weights: server.clone(),
                version: 0,
                ready_s: send_free + compute[w],
            }
        })
        .collect();
    let mut version = 0u64;
    let mut updates = Vec::with_capacity(settings.steps);
    for batch in &batches {
        // The next push: the worker ready first (the lowest index on a tie).
        let mut w = 0;
        for (i, worker) in workers.iter().enumerate() {
            if worker.ready_s < workers[w].ready_s {
                w = i;
            }
        }
        let start = workers[w].ready_s.max(recv_free);
        let applied_s = start + message;
        recv_free = applied_s;
        let (loss, flat) = gradient(&workers[w].weights, data, batch);
        let grads = unflatten(&server, &flat);
        optimizer.step(&mut server.params_mut(), &grads);
        updates.push(AsyncUpdate {
            worker: w,
            loss,
            staleness: version - workers[w].version,
            applied_s,
        });
        version += 1;
        if !loss.is_finite() {
            break;
        }
        // The worker pulls the new weights and computes again.
        let pull_start = applied_s.max(send_free);
        send_free = pull_start + message;
        let worker = &mut workers[w];
        worker.weights = server.clone();
        worker.version = version;
        worker.ready_s = send_free + compute[w];
    }
    Ok(AsyncRun {
        updates,
        weights: server.params().into_iter().cloned().collect(),
        bytes_per_update: 2 * bytes,
    })
}
