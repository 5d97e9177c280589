//! OAuth 2.1 for streamable-HTTP MCP servers, as the MCP authorization specification
//! describes, through rmcp's implementation on the `oauth2` crate:
//!
//! - discovery: the protected-resource metadata of the server's URL, then the
//!   authorization server's metadata;
//! - dynamic client registration (as "CodeSmith", with the loopback redirect URI);
//! - the authorization code grant with PKCE (S256), the redirect received on a loopback
//!   listener (`codesmith mcp login NAME` prints the URL and waits);
//! - refresh: an expired access token is refreshed with the refresh token before a
//!   request.
//!
//! Every OAuth request (discovery, registration, the code exchange, refresh) goes through
//! [`OAuthHttp`], CodeSmith's client, not rmcp's own: a request to the configured
//! server's origin is held to the rule for the URL the user wrote
//! ([`http::check_endpoint`]); one to another origin (an authorization server or an
//! endpoint the server's metadata names) to the stricter rule of
//! [`http::check_named_endpoint`]: the `[network]` deny list, and public addresses only
//! (or the configured server's own kind: loopback, private network), never link-local or
//! cloud-metadata addresses. The token and registration endpoints are checked as soon as
//! the metadata is discovered, before the user is sent to authorize. The authorization
//! URL is shown with every control character visible.
//!
//! Tokens are stored in the user's CodeSmith home, `$CODESMITH_HOME/mcp-auth/NAME.json`
//! (directory 0700, file 0600), never in the project, together with the server URL they
//! were issued for and the issuer and token endpoint they were obtained from: a stored
//! token is used only for that exact URL, so a server entry pointed at another host
//! never receives it, and a refresh token goes only to the token endpoint it came from
//! (when the metadata names another issuer or token endpoint, nothing is sent and a new
//! login is required). The access token travels only in the
//! `Authorization` header of requests to that URL (the HTTP client is pinned to its
//! checked address and follows no redirect).

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use codesmith_policy::NetworkPolicy;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession, CredentialStore,
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRequest,
    StoredCredentials,
};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long `codesmith mcp login` waits for the browser's redirect.
pub const LOGIN_WAIT: Duration = Duration::from_secs(300);

/// The token file of server `name` under `home`.
pub fn token_path(home: &Path, name: &str) -> PathBuf {
    home.join("mcp-auth").join(format!("{name}.json"))
}

/// Longest one OAuth request may take, from sending it to the end of its answer (one
/// deadline, not a limit per chunk), unless [`OAuthHttp::with_deadline`] sets another.
pub const OAUTH_TIMEOUT: Duration = Duration::from_secs(30);

/// An OAuth request (discovery, registration, the code exchange, a refresh) got no
/// complete answer within its deadline; `limit` is the deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthDeadline {
    /// The deadline the request had, connection and answer included.
    pub limit: Duration,
}

impl std::fmt::Display for OAuthDeadline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = self.limit.as_secs_f64();
        write!(
            f,
            "the authorization server sent no complete answer within {}s (the deadline of one \
             OAuth request); check that it is reachable and try again",
            if self.limit.subsec_millis() == 0 {
                format!("{}", self.limit.as_secs())
            } else {
                format!("{secs:.1}")
            }
        )
    }
}

impl std::error::Error for OAuthDeadline {}

/// Largest OAuth answer read, in bytes (1 MiB).
pub const MAX_OAUTH_ANSWER: usize = 1024 * 1024;

/// The HTTP client of every OAuth request for one configured server (see the module
/// documentation for the rules). Each request is checked, then sent on a connection
/// pinned to the checked address, through no proxy, following no redirect (a redirect
/// answer is handed back as it is), within one deadline ([`OAUTH_TIMEOUT`] unless
/// [`OAuthHttp::with_deadline`] sets another; past it the request fails with
/// [`OAuthDeadline`]); an answer larger than [`MAX_OAUTH_ANSWER`] fails the request.
#[derive(Debug, Clone)]
pub struct OAuthHttp {
    server: super::http::Endpoint,
    allow_plain_http: bool,
    network: NetworkPolicy,
    deadline: Duration,
    /// Why the last request failed, until [`OAuthHttp::explain`] takes it (rmcp keeps
    /// only a summary such as "Request failed"); shared by the clones.
    failure: std::sync::Arc<std::sync::Mutex<Option<String>>>,
}

impl OAuthHttp {
    /// The client for the server configured at `url` (checked as the user's URL).
    ///
    /// Errors: the URL is refused (see [`http::check_endpoint`]).
    ///
    /// [`http::check_endpoint`]: super::http::check_endpoint
    pub async fn new(
        url: &str,
        allow_plain_http: bool,
        network: &NetworkPolicy,
    ) -> Result<OAuthHttp, String> {
        let server = super::http::check_endpoint(
            url,
            allow_plain_http,
            network,
            &crate::fetch::resolve::SystemResolver,
        )
        .await?;
        Ok(OAuthHttp::for_endpoint(server, allow_plain_http, network))
    }

    /// The client for the server at `server`, already checked as the user's URL.
    pub fn for_endpoint(
        server: super::http::Endpoint,
        allow_plain_http: bool,
        network: &NetworkPolicy,
    ) -> OAuthHttp {
        OAuthHttp {
            server,
            allow_plain_http,
            network: network.clone(),
            deadline: OAUTH_TIMEOUT,
            failure: std::sync::Arc::default(),
        }
    }

    /// `summary` (rmcp's word for a failed OAuth step) with why the last request failed
    /// ([`OAuthDeadline`], a refused endpoint, an oversized answer …), when one did and
    /// `summary` does not say it already.
    pub fn explain(&self, summary: String) -> String {
        let failure = self
            .failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        match failure {
            Some(why) if !summary.contains(&why) => format!("{summary}: {why}"),
            _ => summary,
        }
    }

    /// The same client with `deadline` for each request instead of [`OAUTH_TIMEOUT`].
    pub fn with_deadline(mut self, deadline: Duration) -> OAuthHttp {
        self.deadline = deadline;
        self
    }

    /// Checks `raw` under the rule for its origin and returns where to connect.
    ///
    /// Errors: a sentence naming the endpoint and why it is refused.
    pub async fn check(&self, raw: &str) -> Result<super::http::Endpoint, String> {
        let resolver = crate::fetch::resolve::SystemResolver;
        let same =
            url::Url::parse(raw).is_ok_and(|u| super::http::same_origin(&u, &self.server.url));
        if same {
            super::http::check_endpoint(raw, self.allow_plain_http, &self.network, &resolver)
                .await
                .map_err(|e| {
                    format!(
                        "the endpoint {} is refused: {e}",
                        codesmith_policy::visible_controls(raw)
                    )
                })
        } else {
            super::http::check_named_endpoint(raw, &self.server, &self.network, &resolver).await
        }
    }

    async fn send(
        &self,
        request: http::Request<Vec<u8>>,
    ) -> Result<http::Response<Vec<u8>>, OAuthHttpClientError> {
        let sent = self.send_once(request).await;
        if let Err(e) = &sent {
            *self
                .failure
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(with_causes(e.as_ref()));
        }
        sent
    }

    async fn send_once(
        &self,
        request: http::Request<Vec<u8>>,
    ) -> Result<http::Response<Vec<u8>>, OAuthHttpClientError> {
        let endpoint = self.check(&request.uri().to_string()).await?;
        let client = super::http::client_for(&endpoint, self.deadline)?;
        let request = reqwest::Request::try_from(request)?;
        // One deadline for the whole request, answer included: a server trickling its
        // answer a byte at a time does not hold the login open.
        let limit = self.deadline;
        tokio::time::timeout(limit, async move {
            let mut response = client.execute(request).await?;
            let mut out = http::Response::new(Vec::new());
            *out.status_mut() = response.status();
            *out.version_mut() = response.version();
            *out.headers_mut() = std::mem::take(response.headers_mut());
            let body = out.body_mut();
            while let Some(chunk) = response.chunk().await? {
                if body.len() + chunk.len() > MAX_OAUTH_ANSWER {
                    return Err(
                        format!("the answer is larger than {MAX_OAUTH_ANSWER} bytes").into(),
                    );
                }
                body.extend_from_slice(&chunk);
            }
            Ok::<_, OAuthHttpClientError>(out)
        })
        .await
        .map_err(|_| OAuthHttpClientError::from(OAuthDeadline { limit }))?
    }

    /// Checks the endpoints CodeSmith will send to that `metadata` names (token and
    /// registration endpoints), so a refused one stops the login before the user is
    /// sent to authorize.
    ///
    /// Errors: the first refused endpoint, named, with the metadata field.
    async fn check_metadata(
        &self,
        metadata: &rmcp::transport::auth::AuthorizationMetadata,
    ) -> Result<(), String> {
        let named = [
            ("token_endpoint", Some(metadata.token_endpoint.as_str())),
            (
                "registration_endpoint",
                metadata.registration_endpoint.as_deref(),
            ),
        ];
        for (field, raw) in named {
            if let Some(raw) = raw {
                self.check(raw)
                    .await
                    .map_err(|e| format!("the authorization server's {field}: {e}"))?;
            }
        }
        Ok(())
    }
}

impl OAuthHttpClient for OAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move { self.send(request.request).await })
    }
}

/// `e` with the chain of its causes (`outer: cause: cause`), so a refusal by
/// [`OAuthHttp`] is named, not only rmcp's summary of it.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

/// An authorization manager for `url` whose every request goes through `http`.
async fn manager(url: &str, http: &OAuthHttp) -> Result<AuthorizationManager, String> {
    crate::fetch::install_crypto_provider();
    AuthorizationManager::new_with_oauth_http_client(url, std::sync::Arc::new(http.clone()))
        .await
        .map_err(|e| http.explain(format!("the OAuth set-up failed: {}", with_causes(&e))))
}

#[derive(Serialize, Deserialize)]
struct TokenFile {
    /// The server URL the tokens were issued for.
    url: String,
    /// The authorization server that issued them (its metadata's `issuer`), as
    /// discovered at the login.
    #[serde(default)]
    auth_issuer: Option<String>,
    /// The token endpoint they were obtained from at the login: the only endpoint the
    /// refresh token is ever sent to. A file without one (written before CodeSmith
    /// recorded it) is not used.
    #[serde(default)]
    token_endpoint: Option<String>,
    credentials: StoredCredentials,
}

/// The authorization server tokens were obtained from: its issuer (`None` when its
/// metadata names none) and its token endpoint, both as its metadata named them at the
/// login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenBinding {
    /// The metadata's `issuer`.
    pub issuer: Option<String>,
    /// The metadata's `token_endpoint`.
    pub token_endpoint: String,
}

impl TokenBinding {
    fn of(metadata: &rmcp::transport::auth::AuthorizationMetadata) -> TokenBinding {
        TokenBinding {
            issuer: metadata.issuer.clone(),
            token_endpoint: metadata.token_endpoint.clone(),
        }
    }

    /// Why tokens bound to `self` must not be sent as `now` describes, if they must
    /// not (`None`: the same authorization server and token endpoint).
    fn mismatch(&self, now: &TokenBinding) -> Option<String> {
        let shown = |v: Option<&str>| match v {
            Some(v) => codesmith_policy::visible_controls(v).into_owned(),
            None => "none".to_string(),
        };
        if self.token_endpoint != now.token_endpoint {
            return Some(format!(
                "the authorization server's token endpoint is now {}, not {} where the \
                 tokens were obtained",
                shown(Some(&now.token_endpoint)),
                shown(Some(&self.token_endpoint))
            ));
        }
        if self.issuer != now.issuer {
            return Some(format!(
                "the authorization server's issuer is now {}, not {} that issued the tokens",
                shown(now.issuer.as_deref()),
                shown(self.issuer.as_deref())
            ));
        }
        None
    }
}

/// Tokens of one server in its file, bound to the server's URL and to the
/// authorization server ([`TokenBinding`]) they were obtained from.
#[derive(Debug, Clone)]
pub struct FileCredentialStore {
    path: PathBuf,
    url: String,
    binding: Option<TokenBinding>,
}

impl FileCredentialStore {
    /// The store of server `name` (reached at `url`) under `home`; tokens saved through
    /// it are bound to `binding`.
    pub fn new(home: &Path, name: &str, url: &str, binding: Option<TokenBinding>) -> Self {
        FileCredentialStore {
            path: token_path(home, name),
            url: url.to_string(),
            binding,
        }
    }

    /// Whether tokens for this server's URL are stored.
    pub fn has_tokens(&self) -> bool {
        self.read().is_some_and(|c| c.token_response.is_some())
    }

    /// The stored file, when it was written for this server's URL.
    fn read_file(&self) -> Option<TokenFile> {
        let text = std::fs::read_to_string(&self.path).ok()?;
        let file: TokenFile = serde_json::from_str(&text).ok()?;
        // Tokens issued for another URL are never used for this one.
        (file.url == self.url).then_some(file)
    }

    fn read(&self) -> Option<StoredCredentials> {
        self.read_file().map(|f| f.credentials)
    }

    fn write(&self, credentials: StoredCredentials) -> std::io::Result<()> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        let text = serde_json::to_vec_pretty(&TokenFile {
            url: self.url.clone(),
            auth_issuer: self.binding.as_ref().and_then(|b| b.issuer.clone()),
            token_endpoint: self.binding.as_ref().map(|b| b.token_endpoint.clone()),
            credentials,
        })
        .map_err(std::io::Error::other)?;
        // Written beside and renamed over: never a half-written token file.
        let tmp = self.path.with_extension("json.tmp");
        {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            std::io::Write::write_all(&mut f, &text)?;
            f.sync_all()?;
        }
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
        std::fs::rename(&tmp, &self.path)
    }
}

#[async_trait]
impl CredentialStore for FileCredentialStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self.read())
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.write(credentials)
            .map_err(|e| AuthError::CredentialStoreError(format!("{}: {e}", self.path.display())))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(AuthError::CredentialStoreError(e.to_string())),
        }
    }
}

/// The authorization manager for `url` with the tokens stored for it, when there are
/// any (`None`: the server was never logged in to); its requests (refresh) go through
/// `http`.
///
/// The authorization server's metadata is discovered again and must name the issuer
/// and token endpoint the tokens were obtained from ([`TokenBinding`]): a refresh token
/// is never sent to an endpoint it did not come from. When they differ (or the file
/// predates the binding) nothing is sent and a new login is required.
///
/// Errors: discovery failed, the authorization server changed, or an endpoint its
/// metadata names is now refused (the message says which, and to run
/// `codesmith mcp login NAME`).
pub async fn stored_manager(
    home: &Path,
    name: &str,
    url: &str,
    http: &OAuthHttp,
) -> Result<Option<AuthorizationManager>, String> {
    let Some(file) = FileCredentialStore::new(home, name, url, None)
        .read_file()
        .filter(|f| f.credentials.token_response.is_some())
    else {
        return Ok(None);
    };
    let relogin = format!("run `codesmith mcp login {name}` to log in again");
    let mut manager = manager(url, http).await?;
    let resolution = manager.resolve_metadata().await.map_err(|e| {
        format!(
            "discovering its authorization server failed ({}); its stored OAuth tokens \
             were not used",
            http.explain(with_causes(&e))
        )
    })?;
    let now = TokenBinding::of(&resolution.metadata);
    let Some(token_endpoint) = file.token_endpoint else {
        return Err(format!(
            "its stored OAuth tokens do not record the token endpoint they were obtained \
             from, so they are not sent anywhere; {relogin}"
        ));
    };
    let stored = TokenBinding {
        issuer: file.auth_issuer,
        token_endpoint,
    };
    if let Some(why) = stored.mismatch(&now) {
        return Err(format!(
            "its stored OAuth tokens were not sent: {why}; {relogin}"
        ));
    }
    http.check_metadata(&resolution.metadata)
        .await
        .map_err(|e| format!("its stored OAuth tokens were not sent: {e}; {relogin}"))?;
    manager.set_metadata(resolution.metadata);
    manager.set_credential_store(FileCredentialStore::new(home, name, url, Some(stored)));
    match manager.initialize_from_store().await {
        Ok(true) => Ok(Some(manager)),
        Ok(false) => Ok(None),
        Err(e) => Err(format!(
            "its stored OAuth tokens could not be used ({}); run `codesmith mcp login {name}`",
            http.explain(with_causes(&e))
        )),
    }
}

/// `codesmith mcp login NAME`: discovers the server's authorization server, registers
/// CodeSmith, hands `show` the authorization URL (to print or open), waits (at most
/// `wait`) for the redirect on a loopback port, exchanges the code (with the PKCE
/// verifier) and stores the tokens.
///
/// Every request goes through [`OAuthHttp`] for `url` (with the server's
/// `allow_plain_http` and the `[network]` policy).
///
/// Errors: the server's URL or an endpoint its metadata names is refused (named, with
/// why), discovery, registration, the wait or the exchange failed; the message says
/// which.
pub async fn login(
    home: &Path,
    name: &str,
    url: &str,
    allow_plain_http: bool,
    network: &NetworkPolicy,
    wait: Duration,
    show: &mut (dyn FnMut(&str) + Send),
) -> Result<PathBuf, String> {
    let http = OAuthHttp::new(url, allow_plain_http, network).await?;
    login_with(home, name, url, &http, wait, show).await
}

/// [`login`] with every request through `http` (made for `url`, see [`OAuthHttp::new`];
/// its deadline bounds each request).
///
/// Errors: as [`login`].
pub async fn login_with(
    home: &Path,
    name: &str,
    url: &str,
    http: &OAuthHttp,
    wait: Duration,
    show: &mut (dyn FnMut(&str) + Send),
) -> Result<PathBuf, String> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| format!("no loopback port for the redirect: {e}"))?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("no loopback port for the redirect: {e}"))?
        .port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let mut manager = manager(url, http).await?;
    let resolution = manager.resolve_metadata().await.map_err(|e| {
        format!(
            "discovering the authorization server failed: {}",
            http.explain(with_causes(&e))
        )
    })?;
    http.check_metadata(&resolution.metadata).await?;
    // The tokens are bound to this authorization server and token endpoint.
    let binding = TokenBinding::of(&resolution.metadata);
    manager.set_credential_store(FileCredentialStore::new(home, name, url, Some(binding)));
    manager.set_metadata(resolution.metadata);
    let request = AuthorizationRequest::new(redirect.clone()).with_client_name("CodeSmith");
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| {
            format!(
                "registering CodeSmith with the authorization server failed: {}",
                http.explain(with_causes(&e))
            )
        })?;
    show(&codesmith_policy::visible_controls(
        session.get_authorization_url(),
    ));
    let target = tokio::time::timeout(wait, accept_redirect(&listener))
        .await
        .map_err(|_| format!("no redirect arrived within {}s", wait.as_secs()))??;
    session
        .handle_callback_url(&format!("http://127.0.0.1:{port}{target}"))
        .await
        .map_err(|e| {
            format!(
                "exchanging the authorization code failed: {}",
                http.explain(with_causes(&e))
            )
        })?;
    Ok(token_path(home, name))
}

/// Accepts connections until one asks for `/callback?…`; answers it with a short page
/// and returns its request target.
async fn accept_redirect(listener: &tokio::net::TcpListener) -> Result<String, String> {
    loop {
        let (mut stream, _) = listener
            .accept()
            .await
            .map_err(|e| format!("the redirect listener failed: {e}"))?;
        let mut buf = vec![0u8; 8192];
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .unwrap_or(Ok(0))
            .unwrap_or(0);
        let head = String::from_utf8_lossy(&buf[..n]).into_owned();
        let target = head
            .lines()
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or("")
            .to_string();
        let ok = target.starts_with("/callback?");
        let body = if ok {
            "CodeSmith received the authorization; you can close this window."
        } else {
            "Not found."
        };
        let status = if ok { "200 OK" } else { "404 Not Found" };
        let reply = format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(reply.as_bytes()).await;
        if ok {
            return Ok(target);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::time::Instant;

    /// A loopback authorization server (and the resource it protects) whose token
    /// endpoint reads the request and never answers; returns its base URL.
    async fn silent_token_endpoint() -> String {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let me = base.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let base = me.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    let mut read = 0;
                    let head_end = loop {
                        let Ok(n) = stream.read(&mut buf[read..]).await else {
                            return;
                        };
                        if n == 0 {
                            return;
                        }
                        read += n;
                        if let Some(i) = buf[..read].windows(4).position(|w| w == b"\r\n\r\n") {
                            break i;
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                    let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
                    let body = if path.starts_with("/.well-known/oauth-protected-resource") {
                        serde_json::json!({"resource": format!("{base}/mcp"),
                            "authorization_servers": [base]})
                    } else if path.starts_with("/.well-known/oauth-authorization-server") {
                        serde_json::json!({"issuer": base,
                            "authorization_endpoint": format!("{base}/authorize"),
                            "token_endpoint": format!("{base}/token"),
                            "registration_endpoint": format!("{base}/register"),
                            "response_types_supported": ["code"],
                            "code_challenge_methods_supported": ["S256"]})
                    } else if path == "/register" {
                        serde_json::json!({"client_id": "cid-1", "redirect_uris": []})
                    } else if path == "/token" {
                        // Never answers: holds the connection until the client leaves.
                        let _ = stream.read(&mut buf).await;
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        return;
                    } else {
                        let _ = stream
                            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                            .await;
                        return;
                    };
                    let body = body.to_string();
                    let status = if path == "/register" {
                        "201 Created"
                    } else {
                        "200 OK"
                    };
                    let reply = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: \
                         {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(reply.as_bytes()).await;
                });
            }
        });
        base
    }

    const DEADLINE: Duration = Duration::from_millis(500);

    #[tokio::test]
    async fn a_refresh_the_token_endpoint_never_answers_fails_at_the_deadline() {
        let base = silent_token_endpoint().await;
        let url = format!("{base}/mcp");
        let home = tempfile::tempdir().unwrap();
        let binding = TokenBinding {
            issuer: Some(base.clone()),
            token_endpoint: format!("{base}/token"),
        };
        // An access token that expired long ago, and its refresh token.
        let credentials: StoredCredentials = serde_json::from_value(serde_json::json!({
            "client_id": "cid-1",
            "token_response": {"access_token": "at-1", "token_type": "bearer",
                "expires_in": 60, "refresh_token": "rt-1"},
            "token_received_at": 1_000_000,
        }))
        .unwrap();
        FileCredentialStore::new(home.path(), "web", &url, Some(binding))
            .write(credentials)
            .unwrap();
        let http = OAuthHttp::new(&url, true, &NetworkPolicy::default())
            .await
            .unwrap()
            .with_deadline(DEADLINE);
        let manager = stored_manager(home.path(), "web", &url, &http)
            .await
            .unwrap()
            .expect("the stored tokens are used");
        let started = Instant::now();
        let e = manager.get_access_token().await.unwrap_err();
        let took = started.elapsed();
        // What a session says when the refresh fails (see the client's connect).
        let text = http.explain(with_causes(&e));
        assert!(
            text.contains("refresh failed") && text.contains("no complete answer within 0.5s"),
            "{text}"
        );
        assert!(took >= DEADLINE && took < DEADLINE * 4, "{took:?}");
    }

    #[tokio::test]
    async fn a_login_whose_code_exchange_gets_no_answer_fails_at_the_deadline() {
        let base = silent_token_endpoint().await;
        let url = format!("{base}/mcp");
        let home = tempfile::tempdir().unwrap();
        let http = OAuthHttp::new(&url, true, &NetworkPolicy::default())
            .await
            .unwrap()
            .with_deadline(DEADLINE);
        // The "browser": follows the authorization URL's redirect back at once, with a
        // code and the state.
        let mut show = |auth: &str| {
            let auth = url::Url::parse(auth).unwrap();
            let query: BTreeMap<String, String> = auth.query_pairs().into_owned().collect();
            let redirect = url::Url::parse(&query["redirect_uri"]).unwrap();
            let target = format!("{}?code=c-1&state={}", redirect.path(), query["state"]);
            let addr = format!(
                "{}:{}",
                redirect.host_str().unwrap(),
                redirect.port().unwrap()
            );
            tokio::spawn(async move {
                let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
                let request = format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n");
                s.write_all(request.as_bytes()).await.unwrap();
                let mut sink = Vec::new();
                let _ = s.read_to_end(&mut sink).await;
            });
        };
        let started = Instant::now();
        let e = login_with(
            home.path(),
            "web",
            &url,
            &http,
            Duration::from_secs(10),
            &mut show,
        )
        .await
        .unwrap_err();
        let took = started.elapsed();
        assert!(
            e.contains("exchanging the authorization code failed")
                && e.contains("no complete answer within 0.5s"),
            "{e}"
        );
        // Discovery and registration answered at once; the exchange waited its deadline.
        assert!(took >= DEADLINE && took < DEADLINE * 4, "{took:?}");
        assert!(!token_path(home.path(), "web").exists());
    }
}
