//! The `url` of a database-server section (`[postgres]`, `[mysql]`), checked when the manifest
//! loads (pure: no connection) by its engine's `UrlRules`: the scheme, a `connect_timeout` in
//! seconds (libpq's; ours for MySQL) read here, parameters sqlx does not understand left out,
//! defaults added (`application_name = mcp-manifest` for PostgreSQL). The password never appears
//! in a message or a `Debug` print.

use std::time::Duration;

/// How one engine's URLs are checked.
#[derive(Debug)]
pub(crate) struct UrlRules {
    /// The schemes accepted; messages name the first.
    pub schemes: &'static [&'static str],
    /// What a URL looks like, for messages.
    pub example: &'static str,
    /// Query parameters passed on to sqlx (anything else is left out rather than passed on:
    /// sqlx would log its value).
    pub known: &'static [&'static str],
    /// Prefixes of parameter names also passed on (PostgreSQL's `options[…]`).
    pub known_prefixes: &'static [&'static str],
    /// Parameters added when the URL does not set them.
    pub defaults: &'static [(&'static str, &'static str)],
    /// The `url` key's description in the JSON Schema.
    pub about: &'static str,
}

/// A checked connection URL.
#[derive(Clone)]
pub struct DbUrl {
    url: url::Url,
    /// `connect_timeout` (seconds; 0 or absent: the default).
    pub connect_timeout: Option<Duration>,
    /// The password (from the user info or a `password` parameter), percent-decoded.
    password: Option<String>,
}

impl DbUrl {
    /// Checks and normalizes `text` by `rules`; the error never holds the password.
    pub(crate) fn parse(text: &str, rules: &UrlRules) -> Result<DbUrl, String> {
        let example = rules.example;
        let mut url =
            url::Url::parse(text).map_err(|e| format!("not a URL ({e}); write {example}"))?;
        if !rules.schemes.contains(&url.scheme()) {
            return Err(format!(
                "the scheme is `{}`, not {}:// (write {example})",
                url.scheme(),
                rules.schemes[0]
            ));
        }
        // One scheme for sqlx (`postgresql:` is `postgres:`, `mariadb:` is `mysql:`).
        let _ = url.set_scheme(rules.schemes[0]);
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
                k if rules.known.contains(&k)
                    || rules.known_prefixes.iter().any(|p| k.starts_with(p)) =>
                {
                    kept.push((k.to_owned(), v.into_owned()));
                }
                _ => {}
            }
        }
        for (k, v) in rules.defaults {
            if !kept.iter().any(|(kk, _)| kk == k) {
                kept.push(((*k).to_owned(), (*v).to_owned()));
            }
        }
        if kept.is_empty() {
            url.set_query(None);
        } else {
            url.query_pairs_mut().clear().extend_pairs(&kept);
        }
        Ok(DbUrl {
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

impl std::fmt::Debug for DbUrl {
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
        if !pairs.is_empty() {
            shown.query_pairs_mut().clear().extend_pairs(&pairs);
        }
        f.debug_struct("DbUrl")
            .field("url", &shown.as_str())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::super::mysql::URL_RULES as MYSQL;
    use super::super::postgres::URL_RULES as PG;
    use super::*;

    #[test]
    fn urls_are_checked_without_showing_the_password() {
        let u = DbUrl::parse(
            "postgres://app:s%3Cc%3Eret@db.example.com:6543/crm?sslmode=disable&connect_timeout=3&channel_binding=require",
            &PG,
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
        let q = DbUrl::parse(
            "postgresql:///crm?host=/run/pg&password=hunter2&application_name=x",
            &PG,
        )
        .unwrap();
        assert_eq!(q.password(), Some("hunter2"));
        assert!(!format!("{q:?}").contains("hunter2"));
        assert_eq!(
            q.url().query(),
            Some("host=%2Frun%2Fpg&password=hunter2&application_name=x")
        );

        let e = DbUrl::parse("mysql://app:hunter2@db/crm", &PG).unwrap_err();
        assert!(e.contains("mysql") && !e.contains("hunter2"), "{e}");
        let e = DbUrl::parse("postgres://app:hunter2@db:99999/crm", &PG).unwrap_err();
        assert!(!e.contains("hunter2"), "{e}");
        let e =
            DbUrl::parse("postgres://app:hunter2@db/crm?connect_timeout=soon", &PG).unwrap_err();
        assert!(
            e.contains("connect_timeout") && !e.contains("hunter2"),
            "{e}"
        );
        assert!(DbUrl::parse("db.example.com:5432", &PG).is_err());
    }

    #[test]
    fn mysql_urls_keep_what_sqlx_reads() {
        let u = DbUrl::parse(
            "mysql://app:p%40ss@db:3306/shop?ssl-mode=required&connect_timeout=2&local_infile=1&x=y",
            &MYSQL,
        )
        .unwrap();
        assert_eq!(u.password(), Some("p@ss"));
        assert_eq!(u.connect_timeout, Some(Duration::from_secs(2)));
        // `local_infile` is not passed on: LOCAL INFILE is never enabled.
        assert_eq!(u.url().query(), Some("ssl-mode=required"));
        assert!(DbUrl::parse("mariadb://app@db/shop", &MYSQL).is_ok());
        let e = DbUrl::parse("postgres://app:hunter2@db/shop", &MYSQL).unwrap_err();
        assert!(e.contains("mysql://") && !e.contains("hunter2"), "{e}");
    }
}
