//! The token store: one JSON file per user, readable by that user only
//! (mode 0600 in a 0700 folder), holding tokens keyed by server and issuer
//! and dynamic registrations keyed by issuer (AUTH-C-05/10/25).
//!
//! Every change is a locked read-modify-write with an atomic replace, so
//! two Switchboard processes never lose each other's logins. A corrupt file
//! is moved aside (never silently overwritten) the next time a login is
//! saved.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use fs4::fs_std::FileExt;
use serde::{Deserialize, Serialize};

use super::error::OAuthError;
use super::registration::Registration;
use super::secret::Secret;
use super::token::{TokenSet, now_secs};

const FILE_NAME: &str = "oauth.json";
const FORMAT: u32 = 1;

/// Where logins are kept. Cheap to clone; every call reads the file anew.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenStore {
    path: PathBuf,
}

/// One server's login, as `switchboard auth status` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredLogin {
    /// The server (its canonical URL).
    pub server: String,
    /// The authorization server that issued the tokens.
    pub issuer: String,
    /// The client id the tokens were issued to.
    pub client_id: String,
    /// When the access token expires (seconds since the epoch), if known.
    pub expires_at: Option<u64>,
    /// Whether a refresh token is held.
    pub has_refresh_token: bool,
    /// The scopes the token carries (granted, else requested).
    pub scopes: Vec<String>,
}

#[derive(Default, Serialize, Deserialize)]
struct StoreFile {
    #[serde(default)]
    version: u32,
    /// Canonical server URL → its logins.
    #[serde(default)]
    servers: BTreeMap<String, ServerEntry>,
    /// Issuer → the dynamic registration made there.
    #[serde(default)]
    registrations: BTreeMap<String, Registration>,
}

#[derive(Default, Serialize, Deserialize)]
struct ServerEntry {
    /// The issuer of the login in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    current: Option<String>,
    /// Issuer → tokens from it.
    #[serde(default)]
    tokens: BTreeMap<String, TokenSet>,
}

/// The key a login at identity provider `name` (`switchboard auth login
/// --idp NAME`) is kept under, in place of a server URL.
pub fn idp_login_key(name: &str) -> String {
    format!("idp:{name}")
}

/// The key the login of a gateway's principal `principal` at the server
/// whose canonical URL is `server` (`switchboard auth login ALIAS
/// --principal NAME`) is kept under: the server's key with the principal
/// as a fragment, which no canonical server URL has.
pub fn principal_login_key(server: &str, principal: &str) -> String {
    format!("{server}#principal={principal}")
}

impl TokenStore {
    /// The ID token of the login at identity provider `name`, if one is
    /// held.
    ///
    /// # Errors
    /// [`OAuthError::Store`] when the file cannot be read or is corrupt.
    pub fn id_token(&self, name: &str) -> Result<Option<Secret>, OAuthError> {
        Ok(self.tokens(&idp_login_key(name))?.and_then(|t| t.id_token))
    }

    /// A store in the file at `path` (created on first save).
    pub fn at(path: impl Into<PathBuf>) -> TokenStore {
        TokenStore { path: path.into() }
    }

    /// The per-user store: `$XDG_STATE_HOME/switchboard/oauth.json`, else
    /// `~/.local/state/switchboard/oauth.json`.
    ///
    /// # Errors
    /// [`OAuthError::Config`] when neither `XDG_STATE_HOME` nor `HOME` is set.
    pub fn default_location() -> Result<TokenStore, OAuthError> {
        location_from(std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME"))
            .map(TokenStore::at)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The tokens in use for `server`.
    ///
    /// # Errors
    /// [`OAuthError::Store`] when the file cannot be read or is corrupt.
    pub fn tokens(&self, server: &str) -> Result<Option<TokenSet>, OAuthError> {
        let file = self.read()?;
        Ok(file.servers.get(server).and_then(|entry| {
            let issuer = entry.current.as_ref()?;
            entry.tokens.get(issuer).cloned()
        }))
    }

    /// Saves `tokens` for `server` and makes their issuer the one in use.
    ///
    /// # Errors
    /// [`OAuthError::Store`] when the file cannot be written.
    pub fn save_tokens(&self, server: &str, tokens: &TokenSet) -> Result<(), OAuthError> {
        self.modify(|file| {
            let entry = file.servers.entry(server.to_owned()).or_default();
            entry.current = Some(tokens.issuer.clone());
            entry.tokens.insert(tokens.issuer.clone(), tokens.clone());
        })
    }

    /// Forgets the tokens `server` holds from `issuer`.
    ///
    /// # Errors
    /// [`OAuthError::Store`] when the file cannot be written.
    pub fn remove_tokens(&self, server: &str, issuer: &str) -> Result<bool, OAuthError> {
        let mut removed = false;
        self.modify(|file| {
            if let Some(entry) = file.servers.get_mut(server) {
                removed = entry.tokens.remove(issuer).is_some();
                if entry.current.as_deref() == Some(issuer) {
                    entry.current = None;
                }
                if entry.tokens.is_empty() {
                    file.servers.remove(server);
                }
            }
        })?;
        Ok(removed)
    }

    /// Forgets every token of `server` (logout).
    ///
    /// # Errors
    /// [`OAuthError::Store`] when the file cannot be written.
    pub fn remove_server(&self, server: &str) -> Result<bool, OAuthError> {
        if !self.path.exists() {
            return Ok(false);
        }
        let mut removed = false;
        self.modify(|file| removed = file.servers.remove(server).is_some())?;
        Ok(removed)
    }

    /// The dynamic registration made at `issuer`.
    ///
    /// # Errors
    /// [`OAuthError::Store`] when the file cannot be read or is corrupt.
    pub fn registration(&self, issuer: &str) -> Result<Option<Registration>, OAuthError> {
        Ok(self.read()?.registrations.get(issuer).cloned())
    }

    /// Saves the dynamic registration made at `issuer`.
    ///
    /// # Errors
    /// [`OAuthError::Store`] when the file cannot be written.
    pub fn save_registration(
        &self,
        issuer: &str,
        registration: &Registration,
    ) -> Result<(), OAuthError> {
        self.modify(|file| {
            file.registrations
                .insert(issuer.to_owned(), registration.clone());
        })
    }

    /// Forgets the registration at `issuer` (e.g. after `invalid_client`).
    ///
    /// # Errors
    /// [`OAuthError::Store`] when the file cannot be written.
    pub fn remove_registration(&self, issuer: &str) -> Result<bool, OAuthError> {
        if !self.path.exists() {
            return Ok(false);
        }
        let mut removed = false;
        self.modify(|file| removed = file.registrations.remove(issuer).is_some())?;
        Ok(removed)
    }

    /// Every server with a login in use, for `switchboard auth status`.
    ///
    /// # Errors
    /// [`OAuthError::Store`] when the file cannot be read or is corrupt.
    pub fn logins(&self) -> Result<Vec<StoredLogin>, OAuthError> {
        let file = self.read()?;
        Ok(file
            .servers
            .iter()
            .filter_map(|(server, entry)| {
                let issuer = entry.current.as_ref()?;
                let t = entry.tokens.get(issuer)?;
                Some(StoredLogin {
                    server: server.clone(),
                    issuer: issuer.clone(),
                    client_id: t.client_id.clone(),
                    expires_at: t.expires_at,
                    has_refresh_token: t.refresh_token.is_some(),
                    scopes: t.scopes(),
                })
            })
            .collect())
    }

    fn store_error(&self, cause: impl std::fmt::Display) -> OAuthError {
        OAuthError::Store {
            path: self.path.clone(),
            cause: cause.to_string(),
        }
    }

    fn read(&self) -> Result<StoreFile, OAuthError> {
        let bytes = match fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(StoreFile::default()),
            Err(e) => return Err(self.store_error(e)),
        };
        self.tighten_permissions();
        serde_json::from_slice(&bytes).map_err(|e| {
            self.store_error(format!(
                "the file is not a valid token store ({e}); remove it to start over"
            ))
        })
    }

    /// A file someone loosened is made private again before it is trusted.
    fn tighten_permissions(&self) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            if let Ok(meta) = fs::metadata(&self.path) {
                if meta.permissions().mode() & 0o077 != 0 {
                    tracing::warn!(path = %self.path.display(), "the token store was readable by others; making it private");
                    let _ = fs::set_permissions(&self.path, fs::Permissions::from_mode(0o600));
                }
            }
        }
    }

    fn modify(&self, change: impl FnOnce(&mut StoreFile)) -> Result<(), OAuthError> {
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
            _ => PathBuf::from("."),
        };
        create_private_dir(&dir)
            .map_err(|e| self.store_error(format!("cannot create {}: {e}", dir.display())))?;
        let lock = self.lock_file(&dir)?;
        let mut file = match self.read() {
            Ok(f) => f,
            Err(e) if self.path.exists() => {
                let aside = self
                    .path
                    .with_extension(format!("json.corrupt-{}", now_secs()));
                tracing::warn!(error = %e, moved_to = %aside.display(), "moving a corrupt token store aside");
                fs::rename(&self.path, &aside).map_err(|e| self.store_error(e))?;
                StoreFile::default()
            }
            Err(e) => return Err(e),
        };
        file.version = FORMAT;
        change(&mut file);
        let bytes = serde_json::to_vec_pretty(&file).map_err(|e| self.store_error(e))?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".oauth-")
            .tempfile_in(&dir)
            .map_err(|e| self.store_error(e))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o600))
                .map_err(|e| self.store_error(e))?;
        }
        tmp.write_all(&bytes).map_err(|e| self.store_error(e))?;
        tmp.as_file().sync_all().map_err(|e| self.store_error(e))?;
        tmp.persist(&self.path)
            .map_err(|e| self.store_error(e.error))?;
        drop(lock);
        Ok(())
    }

    fn lock_file(&self, dir: &Path) -> Result<LockGuard, OAuthError> {
        let name = self
            .path
            .file_name()
            .map(|n| format!("{}.lock", n.to_string_lossy()))
            .unwrap_or_else(|| "oauth.lock".into());
        let mut options = OpenOptions::new();
        options.create(true).truncate(false).write(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
        }
        let file = options
            .open(dir.join(name))
            .map_err(|e| self.store_error(format!("cannot open the lock file: {e}")))?;
        FileExt::lock_exclusive(&file)
            .map_err(|e| self.store_error(format!("cannot lock: {e}")))?;
        Ok(LockGuard { file })
    }
}

struct LockGuard {
    file: File,
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = FileExt::unlock(&self.file);
    }
}

/// `$XDG_STATE_HOME/switchboard/oauth.json` when that is an absolute path
/// (the XDG rule), else `$HOME/.local/state/switchboard/oauth.json`.
fn location_from(
    xdg_state_home: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Result<PathBuf, OAuthError> {
    let state = match xdg_state_home.filter(|v| Path::new(v).is_absolute()) {
        Some(dir) => PathBuf::from(dir),
        None => {
            let home = home.filter(|v| !v.is_empty()).ok_or_else(|| {
                OAuthError::Config(
                    "neither XDG_STATE_HOME nor HOME is set; cannot place the token store".into(),
                )
            })?;
            PathBuf::from(home).join(".local").join("state")
        }
    };
    Ok(state.join("switchboard").join(FILE_NAME))
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;
    use crate::token::TokenEndpointAuthMethod;

    fn tokens(issuer: &str, access: &str) -> TokenSet {
        TokenSet {
            access_token: Secret::new(access),
            refresh_token: Some(Secret::new("r")),
            expires_at: Some(now_secs() + 100),
            granted_scope: Some("a b".into()),
            requested_scope: vec!["a".into()],
            issuer: issuer.into(),
            client_id: "cid".into(),
            resource: "https://rs/mcp".into(),
            obtained_at: now_secs(),
            dpop_key: None,
            id_token: None,
        }
    }

    #[test]
    fn round_trip_keyed_by_server_and_issuer() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::at(dir.path().join("state/switchboard/oauth.json"));
        assert_eq!(store.tokens("https://rs/mcp").unwrap(), None);
        store
            .save_tokens("https://rs/mcp", &tokens("https://as1", "t1"))
            .unwrap();
        store
            .save_tokens("https://other/mcp", &tokens("https://as1", "t9"))
            .unwrap();
        store
            .save_tokens("https://rs/mcp", &tokens("https://as2", "t2"))
            .unwrap();
        // The latest issuer is the one in use.
        assert_eq!(
            store
                .tokens("https://rs/mcp")
                .unwrap()
                .unwrap()
                .access_token
                .expose(),
            "t2"
        );
        assert!(
            store
                .remove_tokens("https://rs/mcp", "https://as2")
                .unwrap()
        );
        assert_eq!(store.tokens("https://rs/mcp").unwrap(), None);
        let logins = store.logins().unwrap();
        assert_eq!(logins.len(), 1);
        assert_eq!(logins[0].server, "https://other/mcp");
        assert_eq!(logins[0].scopes, ["a", "b"]);
        assert!(store.remove_server("https://other/mcp").unwrap());
        assert!(!store.remove_server("https://other/mcp").unwrap());
        let reg = Registration {
            client_id: "c".into(),
            client_secret: Some(Secret::new("s")),
            method: TokenEndpointAuthMethod::ClientSecretBasic,
            redirect_uris: vec!["http://127.0.0.1/callback".into()],
            client_secret_expires_at: None,
        };
        store.save_registration("https://as1", &reg).unwrap();
        assert_eq!(store.registration("https://as1").unwrap(), Some(reg));
        assert_eq!(store.registration("https://as2").unwrap(), None);
        assert!(store.remove_registration("https://as1").unwrap());
    }

    // AUTH-C-25: private file in a private folder.
    #[cfg(unix)]
    #[test]
    fn file_and_folder_are_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fresh/switchboard/oauth.json");
        let store = TokenStore::at(&path);
        store.save_tokens("s", &tokens("i", "t")).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        // A loosened file is tightened when read.
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        store.tokens("s").unwrap();
        assert_eq!(mode(&path), 0o600);
        // And stays private across rewrites.
        store.save_tokens("s", &tokens("i", "t2")).unwrap();
        assert_eq!(mode(&path), 0o600);
    }

    #[test]
    fn corrupt_file_is_an_error_then_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("oauth.json");
        fs::write(&path, b"{not json").unwrap();
        let store = TokenStore::at(&path);
        let err = store.tokens("s").unwrap_err();
        assert!(err.to_string().contains("not a valid token store"), "{err}");
        store.save_tokens("s", &tokens("i", "t")).unwrap();
        assert_eq!(
            store.tokens("s").unwrap().unwrap().access_token.expose(),
            "t"
        );
        let aside: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains("corrupt"))
            .collect();
        assert_eq!(aside.len(), 1);
        assert_eq!(fs::read(aside[0].path()).unwrap(), b"{not json");
    }

    #[test]
    fn concurrent_writers_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::at(dir.path().join("oauth.json"));
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let store = store.clone();
                std::thread::spawn(move || {
                    store
                        .save_tokens(&format!("s{i}"), &tokens("i", "t"))
                        .unwrap();
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(store.logins().unwrap().len(), 8);
    }

    #[test]
    fn default_location_follows_xdg() {
        let path =
            |x: Option<&str>, h: Option<&str>| location_from(x.map(Into::into), h.map(Into::into));
        assert_eq!(
            path(Some("/x/state"), Some("/home/u")).unwrap(),
            Path::new("/x/state/switchboard/oauth.json")
        );
        // A relative or empty XDG_STATE_HOME is ignored, as the spec says.
        for xdg in [None, Some(""), Some("rel/state")] {
            assert_eq!(
                path(xdg, Some("/home/u")).unwrap(),
                Path::new("/home/u/.local/state/switchboard/oauth.json")
            );
        }
        assert!(matches!(path(None, None), Err(OAuthError::Config(_))));
    }
}
