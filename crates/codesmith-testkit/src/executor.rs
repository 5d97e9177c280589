//! Whether async work leaves its executor free: CPU-heavy work belongs on the blocking
//! pool, where the tasks beside it keep running.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Runs `work` to its end while a task spawned beside it ticks every millisecond; returns
/// `work`'s output and how many times the ticking task ran before `work` ended. Called on
/// a one-thread runtime (`#[tokio::test]`), work that holds the thread (CPU-heavy code
/// run inline) gets 0 ticks, work that waits on the blocking pool gets some. The ticking
/// task stops when `work` ends, and after 3 s at most.
///
/// # Panics
/// When the ticking task panics (it does not).
pub async fn ticks_beside<T>(work: impl Future<Output = T>) -> (T, usize) {
    let running = Arc::new(AtomicBool::new(true));
    let ticks = Arc::new(AtomicUsize::new(0));
    let ticker = tokio::spawn({
        let (running, ticks) = (Arc::clone(&running), Arc::clone(&ticks));
        async move {
            let deadline = Instant::now() + Duration::from_secs(3);
            while running.load(Ordering::SeqCst) && Instant::now() < deadline {
                ticks.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    });
    let out = work.await;
    running.store(false, Ordering::SeqCst);
    ticker.await.expect("the ticking task does not panic");
    (out, ticks.load(Ordering::SeqCst))
}
