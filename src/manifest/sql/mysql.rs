//! `[mysql.NAME]`'s keys (the server keys: `url`, `max_connections`, `poll_interval`,
//! `accept_writes_outside_transaction`) and how the source is built (without connecting).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use super::server::ServerKeys;
use super::{EngineKeys, Section};
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
    about: "Connection URL, e.g. \"${SHOP_URL}\" or \"mysql://user:password@host:3306/db\" (the database whose tables are listed); TLS through `ssl-mode`. The password is never printed.",
};

/// The section: no keys beyond the server keys.
pub(crate) static SECTION: Section = Section {
    name: "mysql",
    about: "MySQL (8 and later) or MariaDB (10.6 and later) databases, read by the engine only (every statement in a rolled-back `START TRANSACTION READ ONLY`).",
    keys_schema: |generator| ServerKeys::schema::<RawMysql>(generator, &URL_RULES),
    check: |cx, name, value| {
        let server = ServerKeys::check(cx, "mysql", name, value, &URL_RULES)?;
        Some(EngineKeys::Mysql(Arc::new(MysqlKeys { server })))
    },
};

/// `[mysql.NAME]` has no keys beyond the server keys.
#[derive(Debug, Deserialize, JsonSchema)]
struct RawMysql {}

/// The checked keys.
#[derive(Debug)]
pub struct MysqlKeys {
    pub(crate) server: ServerKeys,
}
