//! The top layer: joins the command families to the runtime that runs them.
//!
//! The runtime (`server`, `command`, `lua`...) knows commands only through the table it is given;
//! the families (`cmd`) build that table. This module is the one place that names both.

use crate::clock::Clock;
use crate::config::Config;
use crate::server::Server;
use std::sync::Arc;

impl Server {
    /// A server running every command family ([`crate::cmd::table`]), from a configuration and a
    /// clock.
    pub fn new(config: Config, clock: Arc<dyn Clock>) -> Server {
        let srv = Server::with_commands(config, clock, crate::cmd::table());
        // The ACL check reads categories and key specs from the families' metadata, and the ACL log
        // records clients as CLIENT LIST shows them.
        srv.acl.install(crate::cmd::acl::meta(crate::cmd::table()), |info, now| {
            let mut s = String::new();
            crate::cmd::client::client_line(&mut s, info, now, None);
            s
        });
        srv
    }
}
