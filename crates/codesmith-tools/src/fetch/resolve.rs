//! Name resolution for fetch_url, injectable so tests can script answers
//! (including a rebinding resolver that answers differently the second time).

use std::fmt;
use std::io;
use std::net::IpAddr;

use async_trait::async_trait;

/// Resolves a host name to addresses. Called once per hop; the fetch then
/// connects only to the pinned address, never resolving again.
#[async_trait]
pub trait Resolver: Send + Sync + fmt::Debug {
    /// All addresses for `host` (`port` is a hint for system resolvers).
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<IpAddr>>;
}

/// The operating system's resolver (`getaddrinfo` through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

#[async_trait]
impl Resolver for SystemResolver {
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<IpAddr>> {
        let addrs = tokio::net::lookup_host((host, port)).await?;
        let mut out: Vec<IpAddr> = Vec::new();
        for a in addrs {
            if !out.contains(&a.ip()) {
                out.push(a.ip());
            }
        }
        Ok(out)
    }
}

#[cfg(any(test, feature = "test-util"))]
pub use scripted::StaticResolver;

/// A resolver with scripted answers, compiled only into test builds (`cfg(test)` or the
/// `test-util` feature): production resolves through [`SystemResolver`].
#[cfg(any(test, feature = "test-util"))]
mod scripted {
    use std::collections::{HashMap, VecDeque};
    use std::io;
    use std::net::IpAddr;
    use std::sync::Mutex;

    use async_trait::async_trait;

    use super::Resolver;

    /// Scripted answers: each host has a queue of answers; a lookup takes the
    /// front answer, and the last one repeats. Unknown hosts fail with
    /// `NotFound`. Counts lookups per host.
    #[derive(Debug, Default)]
    pub struct StaticResolver {
        answers: Mutex<HashMap<String, VecDeque<Vec<IpAddr>>>>,
        calls: Mutex<HashMap<String, usize>>,
    }

    impl StaticResolver {
        /// An empty resolver.
        pub fn new() -> Self {
            StaticResolver::default()
        }

        /// Queues one answer for `host` (lowercase).
        pub fn answer(self, host: &str, ips: &[IpAddr]) -> Self {
            if let Ok(mut map) = self.answers.lock() {
                map.entry(host.to_ascii_lowercase())
                    .or_default()
                    .push_back(ips.to_vec());
            }
            self
        }

        /// How many times `host` was looked up.
        pub fn calls(&self, host: &str) -> usize {
            self.calls
                .lock()
                .map(|m| m.get(&host.to_ascii_lowercase()).copied().unwrap_or(0))
                .unwrap_or(0)
        }
    }

    #[async_trait]
    impl Resolver for StaticResolver {
        async fn resolve(&self, host: &str, _port: u16) -> io::Result<Vec<IpAddr>> {
            let host = host.to_ascii_lowercase();
            if let Ok(mut calls) = self.calls.lock() {
                *calls.entry(host.clone()).or_default() += 1;
            }
            let mut map = self
                .answers
                .lock()
                .map_err(|_| io::Error::other("resolver poisoned"))?;
            let queue = map
                .get_mut(&host)
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such host"))?;
            let answer = if queue.len() > 1 {
                queue.pop_front().unwrap_or_default()
            } else {
                queue.front().cloned().unwrap_or_default()
            };
            Ok(answer)
        }
    }
}
