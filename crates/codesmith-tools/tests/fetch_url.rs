//! fetch_url end to end against a local HTTP server on 127.0.0.1.
//!
//! The server is itself loopback, which check 5 refuses; tests open exactly
//! 127.0.0.1/32 with `AddressPolicy::with_test_exemption` and point made-up
//! names at it with a scripted resolver. Nothing leaves the machine: every
//! other address in these tests is refused before a connection is made.
#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codesmith_policy::{AddressPolicy, Cidr, HostPattern, NetworkDecision, NetworkPolicy};
use codesmith_tools::fetch::resolve::StaticResolver;
use codesmith_tools::fetch::{FetchConfig, FetchUrl};
use codesmith_tools::{Tool, ToolContext, ToolOutcome, envelope_json};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    host: String,
}

struct Server {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

fn response(path: &str, port: u16) -> (u16, &'static str, String, Option<String>) {
    let text = |s: &str| s.to_string();
    if let Some(n) = path.strip_prefix("/chain/") {
        let n: usize = n.parse().unwrap_or(0);
        return if n == 0 {
            (200, "text/plain", text("end of chain"), None)
        } else {
            (
                302,
                "text/plain",
                String::new(),
                Some(format!("/chain/{}", n - 1)),
            )
        };
    }
    if let Some(loc) = path.strip_prefix("/to?") {
        let loc = loc.replace("PORT", &port.to_string());
        return (302, "text/plain", String::new(), Some(loc));
    }
    match path {
        "/ok" => (
            200,
            "text/plain; charset=utf-8",
            text("hello from the test server"),
            None,
        ),
        "/html" => (
            200,
            "text/html",
            text(
                "<html><head><script>evil()</script></head><body><h1>Docs</h1><p>Read <a href=\"https://x.test/a\">this</a>.</p></body></html>",
            ),
            None,
        ),
        "/missing" => (
            404,
            "application/json",
            text("{\"error\":\"no such item\"}"),
            None,
        ),
        "/boom" => (503, "text/plain", text("overloaded"), None),
        "/escapes" => (
            200,
            "text/plain",
            text("\x1b]0;title\x07\x1b[31mred\x1b[0m\n10%\r100%\n"),
            None,
        ),
        "/big" => (200, "text/plain", "0123456789".repeat(5000), None),
        "/see-other" => (303, "text/plain", String::new(), Some("/ok".into())),
        _ => (404, "text/plain", text("unknown path"), None),
    }
}

async fn serve() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let log = log.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tokio::time::timeout(Duration::from_secs(3), sock.read(&mut chunk)).await
                    {
                        Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                        _ => return,
                    }
                }
                let head = String::from_utf8_lossy(&buf).to_string();
                let mut lines = head.lines();
                let first: Vec<&str> = lines.next().unwrap_or("").split(' ').collect();
                let host = lines
                    .find_map(|l| {
                        l.split_once(':')
                            .filter(|(k, _)| k.eq_ignore_ascii_case("host"))
                            .map(|(_, v)| v.trim().to_string())
                    })
                    .unwrap_or_default();
                let (method, path) = (
                    first[0].to_string(),
                    first.get(1).unwrap_or(&"/").to_string(),
                );
                log.lock().unwrap().push(Seen {
                    method,
                    path: path.clone(),
                    host,
                });
                if path == "/slow" {
                    // Answers only after 2.5 s; notes when the client hangs up first.
                    let read =
                        tokio::time::timeout(Duration::from_millis(2500), sock.read(&mut chunk));
                    if let Ok(Ok(0) | Err(_)) = read.await {
                        log.lock().unwrap().push(Seen {
                            method: "HUNG UP".into(),
                            path: path.clone(),
                            host: String::new(),
                        });
                        return;
                    }
                }
                let (status, ctype, mut body, location) = response(&path, port);
                if path == "/echo" {
                    // Echoes the request head, as httpbin's /headers does.
                    body = head.clone();
                }
                let mut out = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n",
                    body.len()
                );
                if let Some(l) = location {
                    out.push_str(&format!("location: {l}\r\n"));
                }
                out.push_str("\r\n");
                out.push_str(&body);
                let _ = sock.write_all(out.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    Server { port, seen }
}

const LO: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
const LO2: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

fn test_addresses() -> AddressPolicy {
    AddressPolicy::new().with_test_exemption(Cidr::parse("127.0.0.1/32").unwrap())
}

fn resolver() -> StaticResolver {
    StaticResolver::new()
        .answer("pinned.test", &[LO])
        .answer("internal.test", &[IpAddr::V4(Ipv4Addr::new(10, 0, 0, 7))])
        .answer(
            "mixed.test",
            &[LO, IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254))],
        )
        .answer("empty.test", &[])
}

struct Harness {
    tool: FetchUrl,
    ctx: ToolContext,
    _home: tempfile::TempDir,
}

fn harness_with(
    policy: NetworkPolicy,
    addresses: AddressPolicy,
    res: Arc<StaticResolver>,
) -> Harness {
    let home = tempfile::tempdir().unwrap();
    let cfg = FetchConfig::new(policy, addresses).with_resolver(res);
    let ctx = ToolContext::new(home.path().to_path_buf(), home.path().join("csh"));
    Harness {
        tool: FetchUrl::new(cfg),
        ctx,
        _home: home,
    }
}

fn harness() -> Harness {
    harness_with(
        NetworkPolicy::default(),
        test_addresses(),
        Arc::new(resolver()),
    )
}

async fn call(h: &Harness, args: Value) -> (ToolOutcome, Value) {
    let out = tokio::time::timeout(Duration::from_secs(20), h.tool.call(&h.ctx, args))
        .await
        .unwrap();
    let env = envelope_json(&out);
    (out, env)
}

fn check_of(env: &Value) -> Option<u64> {
    env["error"]["details"]["check"].as_u64()
}

#[tokio::test]
async fn fetches_through_a_pinned_name_and_audits() {
    let s = serve().await;
    let h = harness();
    let (_, env) = call(
        &h,
        json!({"url": format!("http://pinned.test:{}/ok", s.port)}),
    )
    .await;
    assert_eq!(env["ok"], true, "{env}");
    assert_eq!(env["output"]["status"], 200);
    assert_eq!(env["output"]["success"], true);
    assert_eq!(env["output"]["body"], "hello from the test server");
    let seen = s.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].host, format!("pinned.test:{}", s.port));
    let audit = std::fs::read_to_string(h.ctx.home.join("audit.log")).unwrap();
    let line: Value = serde_json::from_str(audit.lines().next().unwrap()).unwrap();
    assert_eq!(line["host"], "pinned.test");
    assert_eq!(line["ip"], "127.0.0.1");
    assert_eq!(line["method"], "GET");
    assert_eq!(line["decision"], "ask");
}

#[tokio::test]
async fn credential_headers_are_sent_but_never_shown_back_or_logged() {
    use std::os::unix::fs::PermissionsExt;
    let s = serve().await;
    let h = harness();
    let (_, env) = call(
        &h,
        json!({"url": format!("http://pinned.test:{}/echo", s.port), "headers": {
            "Authorization": "Bearer SecretBearerValue123",
            "Cookie": "session=CookieSecretValue; theme=dark",
            "X-Api-Key": "ApiKeySecretValue",
            "Accept": "text/plain"
        }}),
    )
    .await;
    let body = env["output"]["body"].as_str().unwrap();
    // The request carried them (the echo names every header) ...
    let lower = body.to_ascii_lowercase();
    for line in [
        "authorization: [redacted]",
        "cookie: [redacted]",
        "x-api-key: [redacted]",
    ] {
        assert!(lower.contains(line), "{line}: {body}");
    }
    assert!(lower.contains("accept: text/plain"), "{body}");
    // ... but no value comes back into the transcript.
    for secret in [
        "SecretBearerValue123",
        "CookieSecretValue",
        "ApiKeySecretValue",
    ] {
        assert!(!body.contains(secret), "{secret} in {body}");
    }
    let audit_path = h.ctx.home.join("audit.log");
    let audit = std::fs::read_to_string(&audit_path).unwrap();
    assert!(!audit.contains("Secret"), "{audit}");
    // Under $CODESMITH_HOME: the directory 0700, the log 0600.
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&h.ctx.home), 0o700);
    assert_eq!(mode(&audit_path), 0o600);
}

#[tokio::test]
async fn a_redirect_to_another_origin_carries_only_portable_headers() {
    let (s1, s2) = (serve().await, serve().await);
    let h = harness();
    let headers = json!({
        "Authorization": "Bearer SecretBearerValue123",
        "X-Api-Key": "ApiKeySecretValue",
        "Api-Key": "OtherKeySecretValue",
        "X-Subscription-Token": "BraveKeySecretValue",
        "X-Custom": "anything",
        "Accept": "text/plain",
        "Accept-Language": "de"
    });
    // Another port of the same host, another host on the same port, and (as a control)
    // the same origin.
    let cases = [
        (format!("http://pinned.test:{}/echo", s2.port), false),
        (format!("http://127.0.0.1:{}/echo", s1.port), false),
        (format!("http://pinned.test:{}/echo", s1.port), true),
    ];
    for (target, same_origin) in cases {
        let url = format!("http://pinned.test:{}/to?{target}", s1.port);
        let (_, env) = call(&h, json!({"url": url, "headers": headers})).await;
        assert_eq!(env["ok"], true, "{target}: {env}");
        let body = env["output"]["body"].as_str().unwrap().to_ascii_lowercase();
        assert!(body.contains("accept: text/plain"), "{target}: {body}");
        assert!(body.contains("accept-language: de"), "{target}: {body}");
        assert!(body.contains("user-agent: codesmith/"), "{target}: {body}");
        for name in [
            "authorization:",
            "x-api-key:",
            "\napi-key:",
            "x-subscription-token:",
            "x-custom:",
        ] {
            assert_eq!(
                body.contains(name),
                same_origin,
                "{name} after a redirect to {target}: {body}"
            );
        }
        assert!(!body.contains("secretbearervalue123"), "{target}: {body}");
    }
    assert_eq!(s2.seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn html_is_reduced_and_errors_are_not_tool_failures() {
    let s = serve().await;
    let h = harness();
    let (_, env) = call(
        &h,
        json!({"url": format!("http://pinned.test:{}/html", s.port)}),
    )
    .await;
    assert_eq!(
        env["output"]["body"],
        "Docs\n\nRead this (https://x.test/a)."
    );
    let (_, env) = call(
        &h,
        json!({"url": format!("http://pinned.test:{}/missing", s.port)}),
    )
    .await;
    assert_eq!(env["ok"], true);
    assert_eq!(env["output"]["status"], 404);
    assert_eq!(env["output"]["success"], false);
    assert_eq!(env["output"]["body"], "{\"error\":\"no such item\"}");
    let (_, env) = call(
        &h,
        json!({"url": format!("http://pinned.test:{}/boom", s.port)}),
    )
    .await;
    assert_eq!(env["output"]["status"], 503);
    assert_eq!(env["output"]["success"], false);
}

#[tokio::test]
async fn fetched_text_has_no_terminal_escapes() {
    let s = serve().await;
    let h = harness();
    let (_, env) = call(
        &h,
        json!({"url": format!("http://pinned.test:{}/escapes", s.port)}),
    )
    .await;
    assert_eq!(env["output"]["body"], "red\n100%\n");
}

#[tokio::test]
async fn long_bodies_are_cut_with_a_note_and_spilled() {
    let s = serve().await;
    let h = harness();
    let (_, env) = call(
        &h,
        json!({"url": format!("http://pinned.test:{}/big", s.port), "max_bytes": 1000}),
    )
    .await;
    let body = env["output"]["body"].as_str().unwrap();
    assert!(body.starts_with(&"0123456789".repeat(100)));
    assert!(
        body.contains("[truncated: showing the first 1000 of 50000 bytes"),
        "{body}"
    );
    assert_eq!(env["meta"]["truncated"], true);
    let r = env["meta"]["spill_ref"].as_str().unwrap();
    let spilled = std::fs::read_to_string(h.ctx.home.join("tool_outputs").join(r)).unwrap();
    assert_eq!(spilled.len(), 50_000);
}

#[tokio::test]
async fn literal_loopback_is_refused_without_the_test_exemption() {
    let s = serve().await;
    let h = harness_with(
        NetworkPolicy::default(),
        AddressPolicy::new(),
        Arc::new(resolver()),
    );
    for url in [
        format!("http://127.0.0.1:{}/ok", s.port),
        format!("http://2130706433:{}/ok", s.port),
        format!("http://0x7f.1:{}/ok", s.port),
        format!("http://0177.0.0.1:{}/ok", s.port),
        format!("http://127.1:{}/ok", s.port),
        format!("http://[::ffff:127.0.0.1]:{}/ok", s.port),
        format!("http://[::1]:{}/ok", s.port),
    ] {
        let (_, env) = call(&h, json!({ "url": url })).await;
        assert_eq!(check_of(&env), Some(5), "{url}: {env}");
    }
    let (_, env) = call(
        &h,
        json!({"url": format!("http://localhost:{}/ok", s.port)}),
    )
    .await;
    assert_eq!(check_of(&env), Some(3));
    let (_, env) = call(
        &h,
        json!({"url": format!("http://pinned.test:{}/ok", s.port)}),
    )
    .await;
    assert_eq!(check_of(&env), Some(6), "{env}");
    assert!(
        s.seen.lock().unwrap().is_empty(),
        "nothing may reach the server"
    );
    assert!(
        !h.ctx.home.join("audit.log").exists(),
        "refused calls send nothing"
    );
}

#[tokio::test]
async fn dns_check_covers_every_address() {
    let s = serve().await;
    let h = harness();
    for (host, needle) in [
        ("internal.test", "10.0.0.7"),
        ("mixed.test", "169.254.169.254"),
        ("empty.test", "no addresses"),
        ("unknown.test", "could not resolve"),
    ] {
        let (_, env) = call(&h, json!({"url": format!("http://{host}:{}/ok", s.port)})).await;
        assert_eq!(check_of(&env), Some(6), "{host}: {env}");
        let msg = env["error"]["message"].as_str().unwrap();
        assert!(msg.contains(needle), "{msg}");
        assert!(msg.contains("check 6 (dns)"), "{msg}");
    }
    assert!(s.seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn pinned_connection_ignores_a_rebinding_second_answer() {
    let s = serve().await;
    // First answer is the (test-exempt) server; any later answer points at
    // 127.0.0.2, where nothing listens and which the address check refuses.
    let res = Arc::new(
        StaticResolver::new()
            .answer("rebind.test", &[LO])
            .answer("rebind.test", &[LO])
            .answer("rebind.test", &[LO2]),
    );
    let h = harness_with(NetworkPolicy::default(), test_addresses(), res.clone());
    let (_, env) = call(
        &h,
        json!({"url": format!("http://rebind.test:{}/ok", s.port)}),
    )
    .await;
    assert_eq!(env["output"]["status"], 200, "{env}");
    assert_eq!(
        res.calls("rebind.test"),
        1,
        "the connection must not resolve again"
    );
    // A redirect back to the same name is a new hop: it resolves again (the
    // first hop takes the second answer), gets the rebound answer and is
    // refused at check 6.
    let (_, env) = call(
        &h,
        json!({"url": format!("http://rebind.test:{}/to?http://rebind.test:PORT/ok", s.port)}),
    )
    .await;
    assert_eq!(check_of(&env), Some(6), "{env}");
    assert_eq!(env["error"]["details"]["hop"], 1);
    assert_eq!(s.seen.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn redirects_rerun_every_check() {
    let s = serve().await;
    let h = harness();
    let base = format!("http://pinned.test:{}", s.port);
    let (_, env) = call(&h, json!({"url": format!("{base}/chain/5")})).await;
    assert_eq!(env["output"]["body"], "end of chain", "{env}");
    assert_eq!(env["meta"]["redirects"], 5);
    let (_, env) = call(&h, json!({"url": format!("{base}/chain/6")})).await;
    assert_eq!(check_of(&env), Some(7), "{env}");
    let cases = [
        ("file:///etc/passwd", 1),
        ("http://localhost:PORT/ok", 3),
        ("http://169.254.169.254/latest/meta-data/", 5),
        ("http://[::ffff:10.0.0.1]/", 5),
        ("http://0x7f000002:PORT/ok", 5),
        ("http://internal.test:PORT/ok", 6),
    ];
    for (target, check) in cases {
        let (_, env) = call(&h, json!({"url": format!("{base}/to?{target}")})).await;
        assert_eq!(check_of(&env), Some(check), "{target}: {env}");
        assert_eq!(env["error"]["details"]["hop"], 1, "{target}");
    }
    let hosts: Vec<String> = s
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.host.clone())
        .collect();
    assert!(
        hosts.iter().all(|h| h.starts_with("pinned.test:")),
        "{hosts:?}"
    );
}

#[tokio::test]
async fn see_other_switches_to_get() {
    let s = serve().await;
    let h = harness();
    let (_, env) = call(
        &h,
        json!({"url": format!("http://pinned.test:{}/see-other", s.port), "method": "POST", "body": "x=1"}),
    )
    .await;
    assert_eq!(env["output"]["status"], 200, "{env}");
    let seen = s.seen.lock().unwrap().clone();
    assert_eq!(
        seen.iter()
            .map(|r| (r.method.as_str(), r.path.as_str()))
            .collect::<Vec<_>>(),
        [("POST", "/see-other"), ("GET", "/ok")]
    );
}

#[tokio::test]
async fn policy_deny_refuses_and_prompt_passes_at_execution() {
    let s = serve().await;
    let deny = NetworkPolicy::new(
        NetworkDecision::Allow,
        vec![],
        vec![HostPattern::parse(".test").unwrap()],
    );
    let h = harness_with(deny, test_addresses(), Arc::new(resolver()));
    let args = json!({"url": format!("http://pinned.test:{}/ok", s.port)});
    assert_eq!(
        h.tool.decision_for(&args),
        Some(("pinned.test".to_string(), NetworkDecision::Deny))
    );
    let (_, env) = call(&h, args).await;
    assert_eq!(check_of(&env), Some(2));
    assert!(
        env["error"]["message"]
            .as_str()
            .unwrap()
            .contains("blocked by network policy")
    );
    assert!(s.seen.lock().unwrap().is_empty());
    let h = harness();
    let args = json!({"url": format!("http://pinned.test:{}/ok", s.port)});
    assert_eq!(h.tool.decision_for(&args).unwrap().1, NetworkDecision::Ask);
    let (_, env) = call(&h, args).await;
    assert_eq!(env["ok"], true);
}

#[tokio::test]
async fn bad_arguments_are_typed_refusals() {
    let h = harness();
    for args in [
        json!({}),
        json!({"url": 5}),
        json!({"url": "https://example.com", "method": "TRACE"}),
        json!({"url": "https://example.com", "max_bytes": 0}),
        json!({"url": "https://example.com", "headers": {"Host": "internal"}}),
        json!({"url": "https://example.com", "headers": {"x": 1}}),
    ] {
        let (_, env) = call(&h, args.clone()).await;
        assert_eq!(env["error"]["code"], "INVALID_ARGUMENTS", "{args}");
    }
}

#[test]
fn network_section_builds_policy_addresses_and_warnings() {
    let section: codesmith_policy::NetworkConfig = toml::from_str(
        "default = \"alow\"\nallow = [\"docs.rs\", \"\"]\ndeny = [\".corp\"]\n\
         trusted_fakeip_cidrs = [\"198.18.0.0/15\", \"10.0.0.0/8\"]\n",
    )
    .unwrap();
    let (cfg, warnings) = FetchConfig::from_network_config(Some(&section));
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert_eq!(cfg.policy.decide("docs.rs"), NetworkDecision::Allow);
    assert_eq!(cfg.policy.decide("db.corp"), NetworkDecision::Deny);
    assert_eq!(cfg.policy.decide("other.org"), NetworkDecision::Ask);
    assert!(cfg.addresses.check("198.18.1.1".parse().unwrap()).is_ok());
    assert!(cfg.addresses.check("10.1.1.1".parse().unwrap()).is_err());
    let (missing, w) = FetchConfig::from_network_config(None);
    assert!(w.is_empty());
    assert_eq!(missing.policy.decide("docs.rs"), NetworkDecision::Ask);
}

/// A cancelled fetch is dropped where it waits: the connection closes at once and the
/// call answers `CANCELLED`.
#[tokio::test]
async fn a_cancelled_fetch_is_aborted() {
    let s = serve().await;
    let h = harness();
    let cancel = codesmith_tools::CancellationToken::new();
    let ctx = h.ctx.with_cancel(cancel.clone());
    let trigger = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let t0 = std::time::Instant::now();
    let url = format!("http://pinned.test:{}/slow", s.port);
    let out = codesmith_tools::call_tool(&h.tool, &ctx, json!({"url": url})).await;
    trigger.await.unwrap();
    assert!(
        t0.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t0.elapsed()
    );
    let refusal = out.unwrap_err();
    assert_eq!(refusal.code, codesmith_tools::ErrorCode::Cancelled);
    assert!(
        refusal
            .message
            .contains("fetch_url call was cancelled after 0."),
        "{}",
        refusal.message
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while !s.seen.lock().unwrap().iter().any(|x| x.method == "HUNG UP") {
        assert!(
            std::time::Instant::now() < deadline,
            "the connection stayed open"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
