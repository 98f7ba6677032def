//! How a `[postgres.NAME]` source is built from its checked keys.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;

use sqlx::ConnectOptions as _;
use sqlx::postgres::PgConnectOptions;

use super::pool::{Pg, Pool};
use super::{Postgres, describe_target};
use crate::manifest::Diagnostics;
use crate::manifest::sql::{DatabaseDef, PostgresKeys};
use crate::providers::sql::SqlSource;
use crate::providers::sql::server::CONNECT_TIMEOUT;
use crate::providers::sql::{Built, EngineDef};

impl EngineDef for PostgresKeys {
    /// Without connecting: the URL must parse into sqlx's options.
    fn build<'a>(
        &'a self,
        def: &'a DatabaseDef,
        diags: &'a mut Diagnostics,
    ) -> Pin<Box<dyn Future<Output = Option<Built>> + Send + 'a>> {
        Box::pin(async move {
            let entry = def.entry();
            let server = &self.server;
            let options = match PgConnectOptions::from_url(server.url.url()) {
                Ok(o) => o,
                Err(e) => {
                    let why = server.url.scrub(&e.to_string());
                    diags.push(server.url_loc, format!("{entry} `url`: {why}"));
                    return None;
                }
            };
            let target = describe_target(&options);
            let driver = Pg::new(
                options,
                def.timeout,
                server.url.connect_timeout.unwrap_or(CONNECT_TIMEOUT),
            );
            let pool = Pool::new(driver, server.max_connections);
            let engine = Postgres {
                entry,
                schemas: self.schemas.clone(),
                row_limit: def.row_limit.max(1),
                max_size: usize::try_from(def.max_size).unwrap_or(usize::MAX),
                poll_interval: server.poll_interval,
                url_loc: server.url_loc,
                target,
                url: server.url.clone(),
                timeout: def.timeout,
                pool,
                plans: std::sync::Mutex::new(HashMap::new()),
                accept_risks: server.accept_risks,
                risks_seen: std::sync::Mutex::new(None),
                down_reported: AtomicBool::new(false),
            };
            SqlSource::build(def, engine, diags).await
        })
    }
}
