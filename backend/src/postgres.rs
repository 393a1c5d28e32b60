//! Where Postgres comes from: `DATABASE_URL` if set, otherwise a throwaway embedded cluster
//! started from the local PostgreSQL binaries and removed when this value is dropped.

use embedded_pg::EmbeddedPostgres;

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Embedded(#[from] embedded_pg::Error),
    #[error("could not start the embedded cluster: {0}")]
    Join(String),
}

/// A Postgres server the bench may create databases on.
#[derive(Debug)]
pub enum PostgresSource {
    /// A server the user runs (compose, a local install); left as it was found, minus our databases.
    External { url: String },
    /// A cluster of our own, gone when this is dropped.
    Embedded(EmbeddedPostgres),
}

impl PostgresSource {
    /// `DATABASE_URL` when set and non-empty, else a new embedded cluster.
    pub async fn from_env() -> Result<Self, SourceError> {
        match std::env::var("DATABASE_URL") {
            Ok(url) if !url.trim().is_empty() => Ok(Self::External { url }),
            _ => Self::embedded().await,
        }
    }

    /// What [`Self::from_env`] will use, said before it starts anything: `DATABASE_URL` (its
    /// address, without user or password) or an embedded cluster of the run's own.
    pub fn planned() -> String {
        match std::env::var("DATABASE_URL") {
            Ok(url) if !url.trim().is_empty() => format!("DATABASE_URL {}", without_userinfo(url.trim())),
            _ => "an embedded cluster of the run's own (removed at exit)".into(),
        }
    }

    /// Always a new embedded cluster.
    pub async fn embedded() -> Result<Self, SourceError> {
        let pg = tokio::task::spawn_blocking(EmbeddedPostgres::start).await.map_err(|e| SourceError::Join(e.to_string()))??;
        Ok(Self::Embedded(pg))
    }

    /// URL of the server's administrative database.
    pub fn admin_url(&self) -> String {
        match self {
            Self::External { url } => url.clone(),
            Self::Embedded(pg) => pg.url("postgres"),
        }
    }

    /// A description for logs that never includes a password.
    pub fn describe(&self) -> String {
        match self {
            Self::External { url } => format!("DATABASE_URL ({})", redact(url)),
            Self::Embedded(pg) => format!("embedded cluster in {}", pg.data_dir().display()),
        }
    }

    /// Stops an embedded cluster and removes its files (also done on drop).
    pub fn shutdown(self) -> Result<(), SourceError> {
        match self {
            Self::External { .. } => Ok(()),
            Self::Embedded(pg) => Ok(pg.stop()?),
        }
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
/// `url` with any `user:password@` removed.
fn without_userinfo(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else { return url.to_owned() };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}{}", &url[..scheme_end + 3], &rest[at + 1..]),
        None => url.to_owned(),
    }
}

pub fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else { return url.to_owned() };
    let rest = &url[scheme_end + 3..];
    let Some(at) = rest.find('@') else { return url.to_owned() };
    let creds = &rest[..at];
    match creds.find(':') {
        Some(colon) => format!("{}{}:***{}", &url[..scheme_end + 3], &creds[..colon], &rest[at..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn redact_hides_passwords_only() {
        assert_eq!(super::redact("postgres://bench:s3cret@localhost:5433/bench"), "postgres://bench:***@localhost:5433/bench");
        assert_eq!(super::redact("postgres://bench@localhost/bench"), "postgres://bench@localhost/bench");
        assert_eq!(super::redact("not a url"), "not a url");
        assert_eq!(super::without_userinfo("postgres://bench:s3cret@localhost:5433/bench"), "postgres://localhost:5433/bench");
        assert_eq!(super::without_userinfo("postgres://localhost/bench?user=a@b"), "postgres://localhost/bench?user=a@b");
    }
}
