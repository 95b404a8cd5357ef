//! What a streams run's writes did (`streams.rs` holds the oracle): each XADD's and
//! XDEL's reply says what it did; at the end every node answers XRANGE through its real
//! shards, and each answer must be the oracle's stream.

use bytes::Bytes;
use meridian::protocol::Frame;

use super::Sim;
use crate::streams::STREAM_KEY;

fn is_stream_command(args: &[Bytes]) -> bool {
    args.first().is_some_and(|a| a.len() > 1 && a[0].eq_ignore_ascii_case(&b'x'))
        && args.get(1).is_some_and(|k| k.as_ref() == STREAM_KEY.as_bytes())
}

impl Sim {
    /// Record what a stream command did on `node`.
    pub(super) fn record_stream_write(&mut self, node: usize, args: &[Bytes], reply: &Frame) {
        if !self.cfg.streams || !is_stream_command(args) {
            return;
        }
        let id = self.nodes[node].id;
        self.stream_oracle.record(&mut self.stream_names, id, args, reply);
    }

    /// Every node's stream, read through XRANGE, against the oracle.
    pub(super) fn check_streams(&mut self) {
        let mut entries = 0;
        for node in 0..self.nodes.len() {
            let args = ["XRANGE", STREAM_KEY, "-", "+"].map(|a| Bytes::copy_from_slice(a.as_bytes())).to_vec();
            let (reply, _) = self.execute(node, args);
            match self.stream_oracle.check(&reply) {
                Ok(n) => entries = n,
                Err(reason) => {
                    self.fail(format!("n{node}: {reason}"));
                    return;
                }
            }
        }
        let how = if self.stream_oracle.tainted { "safety only: a node restarted" } else { "exactly" };
        self.log(format!("checked every node's stream against the oracle ({how}): {entries} entries"));
    }
}
