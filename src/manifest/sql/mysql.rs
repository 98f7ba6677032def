//! `[mysql.NAME]`'s keys (the server keys: `url`, `max_connections`, `poll_interval`,
//! `accept_writes_outside_transaction`) and how the source is built (without connecting).

use std::sync::Arc;

use schemars::{JsonSchema, SchemaGenerator};
use serde::Deserialize;
use toml::Spanned;
use toml::de::DeValue;

use super::server::ServerKeys;
use super::{EngineKeys, Section};
use crate::manifest::Checker;
use crate::manifest::sql::url::UrlRules;

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
    ) -> Option<EngineKeys> {
        let server = ServerKeys::check(cx, "mysql", name, value, &URL_RULES)?;
        Some(EngineKeys::Mysql(Arc::new(MysqlKeys { server })))
    }
}

/// The checked keys.
#[derive(Debug)]
pub struct MysqlKeys {
    pub(crate) server: ServerKeys,
}
