//! What a connection reports of each command it runs: its counts for INFO
//! commandstats and errorstats (`shell/command_stats.rs`) and its line for MONITOR
//! clients (`shell/monitor.rs`). Part of [`super::Connection`]; never changes a reply.

use bytes::Bytes;

use super::Connection;
use crate::command::table;
use crate::protocol::Frame;
use crate::shell::command_stats::Outcome;

impl Connection {
    /// The pipeline's run of command `index` ended (the next command differs, or the
    /// pipeline ends): its time, less what was no command's, is that command's. One
    /// clock reading a run, not one a command.
    pub(super) fn close_time_run(&mut self, index: Option<usize>) {
        let stats = &self.access.state.command_stats;
        let now = stats.now();
        let ticks = now.saturating_sub(self.clock_read).saturating_sub(self.clock_excluded);
        // A container's time is its subcommand's, read around it.
        if let Some(index) = index.filter(|&i| !table::COMMANDS[i].is_container()) {
            stats.add_ticks(self.access.home, index, ticks);
        }
        self.clock_read = now;
        self.clock_excluded = 0;
    }

    /// Count a command that was dispatched (INFO commandstats, errorstats): `reply` is
    /// its answer, `None` while another shard runs it (a failure is counted when the
    /// answer comes back, in `flush_pending`).
    pub(super) fn count_call(
        &mut self,
        index: Option<usize>,
        reply: Option<&Frame>,
        rejected: bool,
        counted_as: Option<String>,
        ticks: u64,
    ) {
        let stats = &self.access.state.command_stats;
        if let Some(Frame::Error(message)) = reply {
            stats.add_error_reply(message);
        }
        let Some(index) = index else { return };
        // EXEC's own failure is its commands' (each counted as it ran), as in Redis.
        let failed = reply.is_some_and(Frame::is_error) && table::COMMANDS[index].id != table::CmdId::Exec;
        let outcome = if rejected { Outcome::Rejected } else { Outcome::Ran { failed } };
        match counted_as {
            Some(name) => stats.add_subcommand(name, outcome, ticks),
            None => {
                if !rejected {
                    self.tally.add(stats, self.access.home, index);
                }
                if outcome != (Outcome::Ran { failed: false }) {
                    stats.add_outcome(self.access.home, index, outcome);
                }
            }
        }
    }

    /// Show a command that ran to the MONITOR clients.
    pub(super) fn feed_monitors(&self, index: Option<usize>, args: &[Bytes]) {
        let state = self.state();
        let addr = self.info.addr.to_string();
        let bytes_max = state.pubsub.mailbox_bytes_max();
        state.monitors.feed(index.map(|i| &table::COMMANDS[i]), args, crate::shell::monitor::Source::Client(&addr), bytes_max);
    }

    /// A command refused before it ran (BUSY, OOM, a refused MULTI queueing): counted
    /// under its error and as its command's rejected call.
    pub(super) fn count_rejected(&self, index: Option<usize>, refusal: &Frame) {
        let stats = &self.access.state.command_stats;
        if let Frame::Error(message) = refusal {
            stats.add_error_reply(message);
        }
        if let Some(index) = index {
            stats.add_outcome(self.access.home, index, Outcome::Rejected);
        }
    }
}
