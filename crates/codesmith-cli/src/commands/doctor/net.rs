//! Endpoint reachability, one stage at a time so the finding names what failed:
//! DNS lookup, then TCP connect, then (for `https`) the TLS handshake and one HTTP
//! exchange. Each stage is bounded by [`STAGE_TIMEOUT`].

use std::time::Duration;

use super::report::{Finding, Status};

/// Bound on each stage.
pub(crate) const STAGE_TIMEOUT: Duration = Duration::from_secs(3);

const ID: &str = "network.endpoint";

/// Probes `base_url` (the provider's endpoint) and reports the first failing stage.
pub(crate) async fn probe(provider: &str, base_url: &str) -> Finding {
    let url = match url::Url::parse(base_url) {
        Ok(u) => u,
        Err(e) => {
            return Finding::new(ID, Status::Error, format!("{provider} base URL {base_url:?} does not parse: {e}"))
                .hint("fix base_url (e.g. https://api.openai.com/v1) in config.toml or the *_BASE_URL variable");
        }
    };
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return Finding::new(
            ID,
            Status::Error,
            format!("{provider} base URL {base_url:?} has no host"),
        )
        .hint("use a full URL such as https://api.openai.com/v1");
    };
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let addrs = match tokio::time::timeout(
        STAGE_TIMEOUT,
        tokio::net::lookup_host((host.as_str(), port)),
    )
    .await
    {
        Ok(Ok(a)) => a.collect::<Vec<_>>(),
        Ok(Err(e)) => {
            return Finding::new(ID, Status::Error, format!("DNS: cannot resolve {host}: {e}")).hint(
                "check the host name in base_url, then your DNS (try `getent hosts HOST`); behind a proxy, set HTTPS_PROXY",
            );
        }
        Err(_) => {
            return Finding::new(ID, Status::Error, format!("DNS: looking up {host} took over {} s", STAGE_TIMEOUT.as_secs()))
                .hint("your resolver is slow or unreachable: check /etc/resolv.conf or the network connection");
        }
    };
    if addrs.is_empty() {
        return Finding::new(ID, Status::Error, format!("DNS: {host} has no addresses"))
            .hint("check the host name in base_url");
    }
    if let Err(why) = connect_any(&addrs).await {
        return Finding::new(
            ID,
            Status::Error,
            format!("TCP: DNS ok, but connecting to {host}:{port} failed: {why}"),
        )
        .hint("the server is down or a firewall blocks the port; behind a proxy, set HTTPS_PROXY");
    }
    if url.scheme() != "https" {
        return Finding::new(
            ID,
            Status::Ok,
            format!("{provider} endpoint {host}:{port}: DNS and TCP ok (plain HTTP, no TLS)"),
        );
    }
    match https_exchange(base_url).await {
        Ok(status) => Finding::new(
            ID,
            Status::Ok,
            format!("{provider} endpoint {host}:{port}: DNS, TCP and TLS ok (HTTP {status})"),
        ),
        Err(why) => Finding::new(ID, Status::Error, format!("TLS: DNS and TCP ok, but the HTTPS exchange with {host} failed: {why}"))
            .hint("a TLS-intercepting proxy, a wrong port or a skewed clock: check the system time and CA certificates, or HTTPS_PROXY"),
    }
}

/// Connects to the first address that answers within the stage bound.
async fn connect_any(addrs: &[std::net::SocketAddr]) -> Result<(), String> {
    let attempt = async {
        let mut last = String::from("no address answered");
        for addr in addrs {
            match tokio::net::TcpStream::connect(addr).await {
                Ok(_) => return Ok(()),
                Err(e) => last = format!("{addr}: {e}"),
            }
        }
        Err(last)
    };
    match tokio::time::timeout(STAGE_TIMEOUT, attempt).await {
        Ok(r) => r,
        Err(_) => Err(format!("no answer within {} s", STAGE_TIMEOUT.as_secs())),
    }
}

/// One GET over HTTPS; any HTTP status (even 401 or 404) proves TLS works.
async fn https_exchange(url: &str) -> Result<u16, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .connect_timeout(STAGE_TIMEOUT)
        .timeout(STAGE_TIMEOUT)
        .build()
        .map_err(|e| e.to_string())?;
    match client.get(url).send().await {
        Ok(r) => Ok(r.status().as_u16()),
        Err(e) => {
            let mut chain = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                chain.push_str(": ");
                chain.push_str(&s.to_string());
                source = s.source();
            }
            Err(chain)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_listening_http_server_is_reachable() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", l.local_addr().unwrap());
        let f = probe("openai", &url).await;
        assert_eq!(f.status, Status::Ok, "{f:?}");
        assert!(f.summary.contains("DNS and TCP ok"));
    }

    #[tokio::test]
    async fn a_closed_port_is_a_tcp_failure() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        let f = probe("openai", &format!("http://{addr}/v1")).await;
        assert_eq!(f.status, Status::Error);
        assert!(f.summary.starts_with("TCP: DNS ok"), "{f:?}");
        assert!(f.hint.is_some());
    }

    #[tokio::test]
    async fn an_unresolvable_host_is_a_dns_failure() {
        let f = probe("openai", "https://codesmith-doctor-test.invalid/v1").await;
        assert_eq!(f.status, Status::Error);
        assert!(f.summary.starts_with("DNS:"), "{f:?}");
    }

    #[tokio::test]
    async fn a_garbage_url_is_reported() {
        let f = probe("openai", "not a url").await;
        assert_eq!(f.status, Status::Error);
        assert!(f.hint.unwrap().contains("base_url"));
    }
}
