//! [`TokenFile`]: a bearer token read from a file and re-read as it rotates.
//!
//! Projected service-account tokens are rewritten by the kubelet well before they expire, and a
//! kubeconfig `tokenFile` may be refreshed by another tool. Like client-go's cached file token
//! source, the file is read again once the cached copy is a minute old (or at once after
//! [`TokenFile::invalidate`], i.e. after a 401). If a re-read fails while an older token is at hand,
//! the older token is used and the failure logged: a transient read error must not break a
//! controller whose token is still valid.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::AuthError;
use crate::config::secret::Secret;

/// How long a token read from a file is used before the file is read again.
pub const REREAD_INTERVAL: Duration = Duration::from_secs(60);

/// A bearer token kept in a file; clones share the cache.
#[derive(Debug, Clone)]
pub struct TokenFile {
    path: PathBuf,
    cached: Arc<Mutex<Option<CachedToken>>>,
}

#[derive(Debug, Clone)]
struct CachedToken {
    token: Secret<String>,
    read_at: Instant,
}

impl TokenFile {
    /// A token source for `path`; nothing is read until the first [`TokenFile::token`].
    pub fn new(path: impl Into<PathBuf>) -> Self {
        TokenFile {
            path: path.into(),
            cached: Arc::new(Mutex::new(None)),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The current token: the cached one if read less than [`REREAD_INTERVAL`] ago, else the
    /// file's content with surrounding whitespace removed.
    pub async fn token(&self) -> Result<Secret<String>, AuthError> {
        let previous = self.cached.lock().clone();
        if let Some(cached) = &previous {
            if cached.read_at.elapsed() < REREAD_INTERVAL {
                return Ok(cached.token.clone());
            }
        }
        match self.read().await {
            Ok(token) => {
                *self.cached.lock() = Some(CachedToken {
                    token: token.clone(),
                    read_at: Instant::now(),
                });
                Ok(token)
            }
            Err(err) => match previous {
                Some(cached) => {
                    tracing::warn!(error = %err, "keeping the previous token");
                    Ok(cached.token)
                }
                None => Err(err),
            },
        }
    }

    /// Forgets the cached token so the next call reads the file (call after a 401).
    pub fn invalidate(&self) {
        *self.cached.lock() = None;
    }

    async fn read(&self) -> Result<Secret<String>, AuthError> {
        let text = tokio::fs::read_to_string(&self.path)
            .await
            .map_err(|source| AuthError::TokenFile {
                path: self.path.clone(),
                source,
            })?;
        let token = text.trim();
        if token.is_empty() {
            return Err(AuthError::EmptyTokenFile {
                path: self.path.clone(),
            });
        }
        Ok(Secret::new(token.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn rereads_after_the_interval_or_invalidation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "one\n").unwrap();
        let source = TokenFile::new(&path);
        assert_eq!(source.token().await.unwrap().expose(), "one");

        std::fs::write(&path, "two").unwrap();
        assert_eq!(
            source.token().await.unwrap().expose(),
            "one",
            "still cached"
        );
        tokio::time::advance(REREAD_INTERVAL).await;
        assert_eq!(source.token().await.unwrap().expose(), "two");

        std::fs::write(&path, "three").unwrap();
        source.invalidate();
        assert_eq!(source.token().await.unwrap().expose(), "three");
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_reread_keeps_the_previous_token() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "one").unwrap();
        let source = TokenFile::new(&path);
        source.token().await.unwrap();
        std::fs::remove_file(&path).unwrap();
        tokio::time::advance(REREAD_INTERVAL).await;
        assert_eq!(source.token().await.unwrap().expose(), "one");
    }

    #[tokio::test]
    async fn missing_and_empty_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let missing = TokenFile::new(dir.path().join("missing"));
        let err = missing.token().await.unwrap_err().to_string();
        assert!(err.contains("missing"), "{err}");
        let empty_path = dir.path().join("empty");
        std::fs::write(&empty_path, " \n").unwrap();
        let err = TokenFile::new(&empty_path).token().await.unwrap_err();
        assert!(matches!(err, AuthError::EmptyTokenFile { .. }));
    }
}
