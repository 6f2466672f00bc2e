//! Waiting on many futures in workflow code, deterministically: polled in order, woken only
//! by the SDK (Temporal's Rust SDK rejects combinators that wake themselves).

use std::task::Poll;

use futures::future::LocalBoxFuture;

/// Polls every future in order and yields the first (in order) that is ready, with its
/// position. Only the SDK wakes the workflow: no combinator here wakes anything itself
/// (`FuturesUnordered` does, which Temporal's Rust SDK rejects as nondeterministic).
pub(super) async fn first_ready<K, T>(running: &mut [(K, LocalBoxFuture<'_, T>)]) -> (usize, T) {
    std::future::poll_fn(|cx| {
        for (i, (_, f)) in running.iter_mut().enumerate() {
            if let Poll::Ready(v) = f.as_mut().poll(cx) {
                return Poll::Ready((i, v));
            }
        }
        Poll::Pending
    })
    .await
}

/// Every future's output, in order; each is polled in order until it ends.
pub(super) async fn join_in_order<T>(futures: Vec<LocalBoxFuture<'_, T>>) -> Vec<T> {
    let mut slots: Vec<(Option<LocalBoxFuture<'_, T>>, Option<T>)> =
        futures.into_iter().map(|f| (Some(f), None)).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, out) in slots.iter_mut() {
            if let Some(fut) = f {
                match fut.as_mut().poll(cx) {
                    Poll::Ready(v) => {
                        *out = Some(v);
                        *f = None;
                    }
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    slots.into_iter().filter_map(|(_, out)| out).collect()
}
