//! How a `[postgres.NAME]` source is built from its checked keys.

use std::collections::HashMap;

use sqlx::postgres::PgConnectOptions;

use super::pool::Pg;
use super::{Postgres, describe_target};
use crate::manifest::Diagnostics;
use crate::manifest::sql::{DatabaseDef, PostgresKeys};
use crate::providers::sql::server::{self, Server};
use crate::providers::sql::{Built, SqlSource};

/// Without connecting: the URL must parse into sqlx's options.
pub(crate) async fn build(
    keys: &PostgresKeys,
    def: &DatabaseDef,
    diags: &mut Diagnostics,
) -> Option<Built> {
    let options: PgConnectOptions = server::options(def, &keys.server, diags)?;
    let target = describe_target(&options);
    let driver = Pg::new(options, def.timeout, server::connect_timeout(&keys.server));
    let engine = Postgres {
        server: Server::new(def, &keys.server, target, driver),
        schemas: keys.schemas.clone(),
        plans: std::sync::Mutex::new(HashMap::new()),
    };
    SqlSource::build(def, engine, diags).await
}
