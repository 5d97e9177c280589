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
//! Tokens are stored in the user's CodeSmith home, `$CODESMITH_HOME/mcp-auth/NAME.json`
//! (directory 0700, file 0600), never in the project, together with the server URL they
//! were issued for: a stored token is used only for that exact URL, so a server entry
//! pointed at another host never receives it. The access token travels only in the
//! `Authorization` header of requests to that URL (the HTTP client is pinned to its
//! checked address and follows no redirect).

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession, CredentialStore,
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

#[derive(Serialize, Deserialize)]
struct TokenFile {
    /// The server URL the tokens were issued for.
    url: String,
    credentials: StoredCredentials,
}

/// Tokens of one server in its file, bound to the server's URL.
#[derive(Debug, Clone)]
pub struct FileCredentialStore {
    path: PathBuf,
    url: String,
}

impl FileCredentialStore {
    /// The store of server `name` (reached at `url`) under `home`.
    pub fn new(home: &Path, name: &str, url: &str) -> Self {
        FileCredentialStore {
            path: token_path(home, name),
            url: url.to_string(),
        }
    }

    /// Whether tokens for this server's URL are stored.
    pub fn has_tokens(&self) -> bool {
        self.read().is_some_and(|c| c.token_response.is_some())
    }

    fn read(&self) -> Option<StoredCredentials> {
        let text = std::fs::read_to_string(&self.path).ok()?;
        let file: TokenFile = serde_json::from_str(&text).ok()?;
        // Tokens issued for another URL are never used for this one.
        (file.url == self.url).then_some(file.credentials)
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
/// any (`None`: the server was never logged in to).
///
/// Errors: discovery failed (the message says what).
pub async fn stored_manager(
    home: &Path,
    name: &str,
    url: &str,
) -> Result<Option<AuthorizationManager>, String> {
    let store = FileCredentialStore::new(home, name, url);
    if !store.has_tokens() {
        return Ok(None);
    }
    crate::fetch::install_crypto_provider();
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| format!("its OAuth set-up failed: {e}"))?;
    manager.set_credential_store(store);
    match manager.initialize_from_store().await {
        Ok(true) => Ok(Some(manager)),
        Ok(false) => Ok(None),
        Err(e) => Err(format!(
            "its stored OAuth tokens could not be used ({e}); run `codesmith mcp login {name}`"
        )),
    }
}

/// `codesmith mcp login NAME`: discovers the server's authorization server, registers
/// CodeSmith, hands `show` the authorization URL (to print or open), waits (at most
/// `wait`) for the redirect on a loopback port, exchanges the code (with the PKCE
/// verifier) and stores the tokens.
///
/// Errors: discovery, registration, the wait or the exchange failed; the message says
/// which.
pub async fn login(
    home: &Path,
    name: &str,
    url: &str,
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
    crate::fetch::install_crypto_provider();
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| format!("the OAuth set-up failed: {e}"))?;
    let store = FileCredentialStore::new(home, name, url);
    manager.set_credential_store(store);
    let resolution = manager
        .resolve_metadata()
        .await
        .map_err(|e| format!("discovering the authorization server failed: {e}"))?;
    manager.set_metadata(resolution.metadata);
    let request = AuthorizationRequest::new(redirect.clone()).with_client_name("CodeSmith");
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| {
            format!("registering CodeSmith with the authorization server failed: {e}")
        })?;
    show(session.get_authorization_url());
    let target = tokio::time::timeout(wait, accept_redirect(&listener))
        .await
        .map_err(|_| format!("no redirect arrived within {}s", wait.as_secs()))??;
    session
        .handle_callback_url(&format!("http://127.0.0.1:{port}{target}"))
        .await
        .map_err(|e| format!("exchanging the authorization code failed: {e}"))?;
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
