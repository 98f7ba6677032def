//! The `url` of a `[postgres.NAME]` source, checked when the manifest loads (pure: no
//! connection): a `postgres://` or `postgresql://` URL, its libpq `connect_timeout` read here,
//! parameters sqlx does not understand left out, `application_name` defaulting to
//! `mcp-manifest`. The password never appears in a message or a `Debug` print.

use std::time::Duration;

/// URL parameters sqlx understands; anything else (libpq's `channel_binding`,
/// `target_session_attrs`, …) is left out rather than passed on (sqlx would log its value).
const KNOWN_PARAMS: [&str; 16] = [
    "sslmode",
    "ssl-mode",
    "sslrootcert",
    "ssl-root-cert",
    "ssl-ca",
    "sslcert",
    "ssl-cert",
    "sslkey",
    "ssl-key",
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "application_name",
];

/// A checked connection URL.
#[derive(Clone)]
pub struct PgUrl {
    url: url::Url,
    /// libpq's `connect_timeout` (seconds; 0 or absent: the default).
    pub connect_timeout: Option<Duration>,
    /// The password (from the user info or a `password` parameter), percent-decoded.
    password: Option<String>,
}

impl PgUrl {
    /// Checks and normalizes `text`; the error never holds the password.
    pub fn parse(text: &str) -> Result<PgUrl, String> {
        let mut url = url::Url::parse(text).map_err(|e| {
            format!(
                "not a URL ({e}); write postgres://user:password@host:5432/database?sslmode=require"
            )
        })?;
        if !matches!(url.scheme(), "postgres" | "postgresql") {
            return Err(format!(
                "the scheme is `{}`, not postgres:// (write postgres://user:password@host:5432/database)",
                url.scheme()
            ));
        }
        let mut password = url
            .password()
            .map(|p| crate::uri::percent_decode(p).unwrap_or_else(|| p.to_owned()));
        let mut connect_timeout = None;
        let mut kept: Vec<(String, String)> = Vec::new();
        for (k, v) in url.query_pairs() {
            match &*k {
                "connect_timeout" => {
                    let secs: u64 = v.trim().parse().map_err(|_| {
                        format!("`connect_timeout` is a number of seconds, found `{v}`")
                    })?;
                    connect_timeout = (secs > 0).then(|| Duration::from_secs(secs));
                }
                "password" => {
                    password = Some(v.to_string());
                    kept.push((k.into_owned(), v.into_owned()));
                }
                k if KNOWN_PARAMS.contains(&k) || k == "options" || k.starts_with("options[") => {
                    kept.push((k.to_owned(), v.into_owned()));
                }
                _ => {}
            }
        }
        if !kept.iter().any(|(k, _)| k == "application_name") {
            kept.push(("application_name".into(), "mcp-manifest".into()));
        }
        url.query_pairs_mut().clear().extend_pairs(&kept);
        Ok(PgUrl {
            url,
            connect_timeout,
            password,
        })
    }

    /// The URL to connect with (it holds the password).
    pub fn url(&self) -> &url::Url {
        &self.url
    }

    pub fn password(&self) -> Option<&str> {
        self.password.as_deref().filter(|p| !p.is_empty())
    }

    /// `text` with the password replaced by `***`.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        if let Some(p) = self.password() {
            out = out.replace(p, "***");
            if let Some(raw) = self.url.password() {
                out = out.replace(raw, "***");
            }
        }
        out
    }
}

impl std::fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut shown = self.url.clone();
        if shown.password().is_some() {
            let _ = shown.set_password(Some("***"));
        }
        let pairs: Vec<(String, String)> = shown
            .query_pairs()
            .map(|(k, v)| {
                let v = if k == "password" {
                    "***".into()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        shown.query_pairs_mut().clear().extend_pairs(&pairs);
        f.debug_struct("PgUrl")
            .field("url", &shown.as_str())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_without_showing_the_password() {
        let u = PgUrl::parse(
            "postgres://app:s%3Cc%3Eret@db.example.com:6543/crm?sslmode=disable&connect_timeout=3&channel_binding=require",
        )
        .unwrap();
        assert_eq!(u.connect_timeout, Some(Duration::from_secs(3)));
        assert_eq!(u.password(), Some("s<c>ret"));
        assert_eq!(
            u.url().query(),
            Some("sslmode=disable&application_name=mcp-manifest")
        );
        let shown = format!("{u:?}");
        assert!(
            !shown.contains("s%3Cc%3Eret") && shown.contains("***"),
            "{shown}"
        );
        assert_eq!(u.scrub("no s<c>ret, no s%3Cc%3Eret"), "no ***, no ***");
        let q = PgUrl::parse("postgresql:///crm?host=/run/pg&password=hunter2&application_name=x")
            .unwrap();
        assert_eq!(q.password(), Some("hunter2"));
        assert!(!format!("{q:?}").contains("hunter2"));
        assert_eq!(
            q.url().query(),
            Some("host=%2Frun%2Fpg&password=hunter2&application_name=x")
        );

        let e = PgUrl::parse("mysql://app:hunter2@db/crm").unwrap_err();
        assert!(e.contains("mysql") && !e.contains("hunter2"), "{e}");
        let e = PgUrl::parse("postgres://app:hunter2@db:99999/crm").unwrap_err();
        assert!(!e.contains("hunter2"), "{e}");
        let e = PgUrl::parse("postgres://app:hunter2@db/crm?connect_timeout=soon").unwrap_err();
        assert!(
            e.contains("connect_timeout") && !e.contains("hunter2"),
            "{e}"
        );
        assert!(PgUrl::parse("db.example.com:5432").is_err());
    }
}
