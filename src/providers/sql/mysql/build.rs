//! How a `[mysql.NAME]` source is built from its checked keys.

use std::sync::{Arc, OnceLock};

use sqlx::mysql::MySqlConnectOptions;

use super::pool::My;
use super::{Mysql, describe_target};
use crate::manifest::Diagnostics;
use crate::manifest::sql::{DatabaseDef, MysqlKeys};
use crate::providers::sql::server::{self, Server};
use crate::providers::sql::{Built, SqlSource};

/// Without connecting: the URL must parse into sqlx's options.
pub(crate) async fn build(
    keys: &MysqlKeys,
    def: &DatabaseDef,
    diags: &mut Diagnostics,
) -> Option<Built> {
    let options: MySqlConnectOptions = server::options(def, &keys.server, diags)?;
    let target = describe_target(&options);
    let timeout = server::connect_timeout(&keys.server);
    let flavor = Arc::new(OnceLock::new());
    let driver = My::new(options, def.timeout, timeout, flavor.clone());
    let engine = Mysql {
        server: Server::new(def, &keys.server, target, driver),
        json_columns: std::sync::Mutex::new(None),
        flavor,
    };
    SqlSource::build(def, engine, diags).await
}
