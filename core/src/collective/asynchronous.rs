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
//! in worker order.
//!
//! Since no time depends on a value, the clock is played first: which
//! worker pushes the k-th update and which version of the weights it had
//! pulled. The gradients are then computed for real in waves — every
//! worker whose pulled version exists at once, each on its own thread
//! natively — and applied in the clock's order: the same bits as one
//! gradient at a time on one thread.

use serde::Serialize;

use super::CollectiveError;
use super::exec::Element;
use super::train::{DpSettings, batches, gradients};
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

/// The k-th update as the clock has it: who pushed it, the version of the
/// weights it was computed on, when the server applied it.
struct Planned {
    worker: usize,
    version: u64,
    applied_s: f64,
}

/// Plays the virtual clock for `steps` updates: each worker pulls, computes
/// for `compute[w]`, pushes (the first ready pushes next; the lowest index
/// on a tie), and pulls again once the server has applied it.
fn plan(steps: usize, compute: &[f64], message: f64) -> Vec<Planned> {
    // The first pulls leave the server one after another.
    let mut send_free = 0.0f64;
    let mut recv_free = 0.0f64;
    let mut ready: Vec<(f64, u64)> = compute
        .iter()
        .map(|c| {
            send_free += message;
            (send_free + c, 0)
        })
        .collect();
    (0..steps as u64)
        .map(|k| {
            let mut w = 0;
            for (i, r) in ready.iter().enumerate() {
                if r.0 < ready[w].0 {
                    w = i;
                }
            }
            let applied_s = ready[w].0.max(recv_free) + message;
            recv_free = applied_s;
            let version = ready[w].1;
            // The worker pulls the new weights and computes again.
            let pull_start = applied_s.max(send_free);
            send_free = pull_start + message;
            ready[w] = (send_free + compute[w], k + 1);
            Planned {
                worker: w,
                version,
                applied_s,
            }
        })
        .collect()
}

/// Trains asynchronously for `settings.steps` server updates (each on a
/// batch of `settings.shard` examples); `settings.algorithm` is not used
/// (the gradients go to the server whole). `threads`: each wave's
/// gradients on their own threads.
pub fn train_async<T: Real + Element>(
    settings: &DpSettings,
    data: &Dataset,
    threads: bool,
) -> Result<AsyncRun<T>, CollectiveError> {
    settings.check(data)?;
    let sizes = settings.sizes(data);
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
    let planned = plan(batches.len(), &compute, message);
    // Each version's weights, kept while an update still needs them.
    let mut needed = vec![0usize; planned.len() + 1];
    for p in &planned {
        needed[p.version as usize] += 1;
    }
    let mut versions: Vec<Option<Mlp<T>>> = vec![None; planned.len() + 1];
    versions[0] = Some(server.clone());
    // Each worker's updates in order, and how far its gradients are done.
    let mut queue: Vec<std::collections::VecDeque<usize>> =
        vec![Default::default(); settings.workers];
    for (k, p) in planned.iter().enumerate() {
        queue[p.worker].push_back(k);
    }
    let mut done: Vec<Option<(f64, Vec<T>)>> = vec![None; planned.len()];
    let mut updates = Vec::with_capacity(planned.len());
    for (k, p) in planned.iter().enumerate() {
        if done[k].is_none() {
            // A wave: every worker's next gradient whose weights exist now.
            let wave: Vec<usize> = queue
                .iter_mut()
                .filter_map(|q| {
                    let next = *q.front()?;
                    (planned[next].version <= k as u64)
                        .then(|| q.pop_front())
                        .flatten()
                })
                .collect();
            let jobs: Vec<(&Mlp<T>, &[usize])> = wave
                .iter()
                .filter_map(|&j| {
                    Some((
                        versions[planned[j].version as usize].as_ref()?,
                        batches[j].as_slice(),
                    ))
                })
                .collect();
            if jobs.len() != wave.len() {
                return Err(CollectiveError::WorkerFailed);
            }
            for (j, result) in wave.iter().zip(gradients(&jobs, data, threads)?) {
                done[*j] = Some(result);
            }
        }
        let Some((loss, flat)) = done[k].take() else {
            return Err(CollectiveError::WorkerFailed);
        };
        let grads = server.unflatten(&flat);
        optimizer.step(&mut server.params_mut(), &grads);
        updates.push(AsyncUpdate {
            worker: p.worker,
            loss,
            staleness: k as u64 - p.version,
            applied_s: p.applied_s,
        });
        let version = p.version as usize;
        needed[version] -= 1;
        if needed[version] == 0 {
            versions[version] = None;
        }
        if needed[k + 1] > 0 {
            versions[k + 1] = Some(server.clone());
        }
        if !loss.is_finite() {
            break;
        }
    }
    Ok(AsyncRun {
        updates,
        weights: server.params().into_iter().cloned().collect(),
        bytes_per_update: 2 * bytes,
    })
}
