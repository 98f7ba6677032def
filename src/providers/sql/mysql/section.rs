//! `[mysql.NAME]`'s keys (the server keys: `url`, `max_connections`, `poll_interval`,
//! `accept_writes_outside_transaction`) and how the source is built (without connecting).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

use schemars::{JsonSchema, SchemaGenerator};
use serde::Deserialize;
use sqlx::ConnectOptions as _;
use sqlx::mysql::MySqlConnectOptions;
use toml::Spanned;
use toml::de::DeValue;

use super::pool::{My, Pool};
use super::{Mysql, describe_target};
use crate::manifest::{Checker, Diagnostics};
use crate::providers::sql::SqlSource;
use crate::providers::sql::section::{Built, DatabaseDef, EngineDef, Section};
use crate::providers::sql::server::{CONNECT_TIMEOUT, ServerKeys};
use crate::providers::sql::url::UrlRules;

/// `mysql://user:password@host:3306/db?ssl-mode=required`: the parameters sqlx's MySQL driver
/// understands are passed on; anything else (`local_infile` among them) is left out.
pub(crate) const URL_RULES: UrlRules = UrlRules {
    schemes: &["mysql", "mariadb"],
    example: "mysql://user:password@host:3306/database",
    known: &[
        "ssl-mode",
        "sslmode",
        "ssl-ca",
        "sslca",
        "ssl-cert",
        "sslcert",
        "ssl-key",
        "sslkey",
        "socket",
        "charset",
        "collation",
    ],
    known_prefixes: &[],
    defaults: &[],
};

/// The section.
pub(crate) static SECTION: MysqlSection = MysqlSection;

pub(crate) struct MysqlSection;

/// `[mysql.NAME]` has no keys beyond the server keys.
#[derive(Debug, Deserialize, JsonSchema)]
struct RawMysql {}

impl Section for MysqlSection {
    fn name(&self) -> &'static str {
        "mysql"
    }

    fn about(&self) -> &'static str {
        "MySQL (8 and later) or MariaDB (10.6 and later) databases, read by the engine only (every statement in a rolled-back `START TRANSACTION READ ONLY`)."
    }

    fn keys_schema(&self, generator: &mut SchemaGenerator) -> schemars::Schema {
        let own = RawMysql::json_schema(generator);
        ServerKeys::schema(
            generator,
            own,
            "Connection URL, e.g. \"${SHOP_URL}\" or \"mysql://user:password@host:3306/db\" (the database whose tables are listed); TLS through `ssl-mode`. The password is never printed.",
        )
    }

    fn check(
        &self,
        cx: &mut Checker<'_>,
        name: &str,
        value: &Spanned<DeValue<'_>>,
    ) -> Option<Arc<dyn EngineDef>> {
        let server = ServerKeys::check(cx, "mysql", name, value, &URL_RULES)?;
        Some(Arc::new(MysqlDef { server }))
    }
}

/// The checked keys.
#[derive(Debug)]
struct MysqlDef {
    server: ServerKeys,
}

impl EngineDef for MysqlDef {
    /// Without connecting: the URL must parse into sqlx's options.
    fn build<'a>(
        &'a self,
        def: &'a DatabaseDef,
        diags: &'a mut Diagnostics,
    ) -> Pin<Box<dyn Future<Output = Option<Built>> + Send + 'a>> {
        Box::pin(async move {
            let entry = def.entry();
            let server = &self.server;
            let options = match MySqlConnectOptions::from_url(server.url.url()) {
                Ok(o) => o,
                Err(e) => {
                    let why = server.url.scrub(&e.to_string());
                    diags.push(server.url_loc, format!("{entry} `url`: {why}"));
                    return None;
                }
            };
            let target = describe_target(&options);
            let flavor = Arc::new(OnceLock::new());
            let driver = My::new(
                options,
                def.timeout,
                server.url.connect_timeout.unwrap_or(CONNECT_TIMEOUT),
                flavor.clone(),
            );
            let engine = Mysql {
                entry,
                row_limit: def.row_limit.max(1),
                max_size: usize::try_from(def.max_size).unwrap_or(usize::MAX),
                poll_interval: server.poll_interval,
                url_loc: server.url_loc,
                target,
                url: server.url.clone(),
                timeout: def.timeout,
                pool: Pool::new(driver, server.max_connections),
                accept_risks: server.accept_risks,
                risks_seen: std::sync::Mutex::new(None),
                json_columns: std::sync::Mutex::new(None),
                flavor,
                down_reported: AtomicBool::new(false),
            };
            SqlSource::build(def, engine, diags).await
        })
    }
}
