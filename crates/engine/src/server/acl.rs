//! ACL in the composition: a client's command checked against its user's rules (the client keeps
//! a copy of them), and denials logged with the client's line.

use super::Server;
use crate::acl::{Context, Denied, Reason, User};
use crate::client::Client;
use crate::ctx::Command;
use bytes::Bytes;
use std::sync::Arc;

impl Server {
    /// Records a denial in the ACL log and the INFO counters. `object` defaults by reason as in
    /// Redis: the command's full name, the key or channel argument, AUTH's command name.
    pub fn acl_denied(
        &self,
        client: &Client,
        reason: Reason,
        context: Context,
        object: Bytes,
        username: Option<Bytes>,
    ) {
        let username = username
            .or_else(|| client.user.as_ref().map(|u| u.name.clone()))
            .unwrap_or_else(|| Bytes::from_static(b"default"));
        let max = self.config.get_i64("acllog-max-len").max(0) as usize;
        self.acl.log(reason, context, object, username, &client.info, self.clock.now_ms(), self.clock.unix_ms(), max);
    }

    /// Checks `cmd` with `args` against the client's user, logging a denial in `context`. The
    /// fast path: no user (the server's own clients) or an unrestricted one is one load.
    #[inline]
    pub fn acl_check(&self, client: &Client, cmd: &Command, args: &[Bytes], context: Context) -> Result<(), Denied> {
        match &client.user {
            Some(u) if !u.unrestricted() => self.acl_check_slow(client, u, cmd, args, context),
            _ => Ok(()),
        }
    }

    #[cold]
    fn acl_check_slow(
        &self,
        client: &Client,
        user: &Arc<User>,
        cmd: &Command,
        args: &[Bytes],
        context: Context,
    ) -> Result<(), Denied> {
        user.with_rules(&client.acl_rules, |rules| self.acl.check_rules(rules, cmd, args)).inspect_err(|d| {
            let (reason, object) = match *d {
                Denied::Cmd => (Reason::Command, Bytes::from_static(cmd.name.as_bytes())),
                Denied::Key(i) => (Reason::Key, args[i].clone()),
                Denied::Channel(i) => (Reason::Channel, args[i].clone()),
            };
            self.acl_denied(client, reason, context, object, None);
        })
    }
}
