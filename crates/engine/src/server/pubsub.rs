//! Pub/sub in the composition: the registry is `crate::pubsub`'s, the outboxes `crate::clients`';
//! here a message meets the output limits of the configuration and the log.

use super::Server;
use crate::client::Client;
use crate::clients::{ClientInfo, DeliveryLimits};
use crate::pubsub::Kind;
use bytes::Bytes;

impl Server {
    /// Queues `msg` for `to`. A client over its output limits is closed instead; the caller never
    /// waits.
    pub fn deliver(&self, to: &ClientInfo, msg: Bytes) {
        self.deliver_within(to, msg, &self.delivery_limits());
    }

    /// The output limits and the second deliveries are checked at, read once for a fan-out.
    pub(crate) fn delivery_limits(&self) -> DeliveryLimits {
        DeliveryLimits {
            normal: self.config.normal_obuf_limits(),
            pubsub: self.config.pubsub_obuf_limits(),
            now_s: self.clock.now_ms() / 1000,
            clients_memory: self.config.clients_memory_limit(),
        }
    }

    /// [`Server::deliver`] with the limits already read. Under `maxmemory-clients` the receiver's
    /// grown output counts at once, and the largest clients are closed if all are over it: a
    /// client that never reads (a tracking redirection's target, a subscriber) is evicted while
    /// others write to it, as Redis's `evictClients` does before the next command.
    fn deliver_within(&self, to: &ClientInfo, msg: Bytes, limits: &DeliveryLimits) {
        if to.deliver(msg, limits) {
            self.log_output_limit_close(to);
        } else if limits.clients_memory != 0 {
            self.client_memory(to);
        }
    }

    /// Logs that `to` is closed for its output limits (Redis's wording).
    pub(crate) fn log_output_limit_close(&self, to: &ClientInfo) {
        self.config.host().log(
            crate::host::LogLevel::Warning,
            &format!(
                "Client id={} addr={} scheduled to be closed ASAP for overcoming of output buffer limits.",
                to.id, to.addr
            ),
        );
    }

    /// PUBLISH / SPUBLISH: delivers `message` to the subscribers of `channel` (and, for plain
    /// channels, of the patterns matching it). Returns how many received it.
    pub fn publish(&self, shard: bool, channel: &[u8], message: &[u8]) -> usize {
        // Read once for all the receivers, and only when there are some.
        let mut limits = None;
        self.pubsub.publish(shard, channel, message, |to, msg| {
            let limits = limits.get_or_insert_with(|| self.delivery_limits());
            self.deliver_within(to, msg, limits);
        })
    }

    /// Subscribes `client` to `channels` of `kind`, confirming each through its outbox.
    pub fn subscribe(&self, client: &mut Client, kind: Kind, channels: &[Bytes]) {
        let info = client.info.clone();
        self.pubsub.subscribe(&mut client.subs, &info, kind, channels, |m| self.deliver(&info, m));
    }

    /// Unsubscribes `client` from `channels` of `kind` (all of them when empty), confirming each
    /// through its outbox when `notify`.
    pub fn unsubscribe(&self, client: &mut Client, kind: Kind, channels: &[Bytes], notify: bool) {
        let info = client.info.clone();
        let resp3 = client.proto == resp::Protocol::Resp3;
        self.pubsub.unsubscribe(&mut client.subs, &info, resp3, kind, channels, notify, |m| self.deliver(&info, m));
    }

    /// Leaves every subscription without a word to the client (RESET, a closed connection).
    pub fn unsubscribe_all(&self, client: &mut Client) {
        self.pubsub.unsubscribe_all(&mut client.subs, &client.info);
    }

    /// Removes a closing client from every channel, pattern and shard channel it listened to.
    pub fn forget_subscriptions(&self, client: &Client) {
        self.pubsub.forget(&client.subs, client.id);
    }
}
