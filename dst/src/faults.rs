//! Which faults a run injects, and how often. Each class has a weight (0 disables it);
//! `--faults crash=2,clock=0` changes them from the command line.

/// Relative weights of the fault classes; a fault is drawn every `fault_interval_ms`.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultWeights {
    /// A node crashes (memory lost) and restarts a little later.
    pub crash: u32,
    /// A node's process stops for a while (SIGSTOP-like); requests queue up.
    pub pause: u32,
    /// A node's clock jumps forwards or backwards by up to a few seconds.
    pub clock_jump: u32,
    /// A node's clock starts drifting (runs fast or slow).
    pub clock_drift: u32,
    /// A network partition isolates one region, or splits two regions, then heals.
    pub partition: u32,
    /// Link latency spikes (a slow path) for a while.
    pub slow_link: u32,
    /// Replication runs: one peer link's connection drops (frames in flight are lost;
    /// the sender resends what is unacknowledged and compares trees).
    pub link_reset: u32,
}

impl Default for FaultWeights {
    fn default() -> Self {
        FaultWeights { crash: 1, pause: 2, clock_jump: 2, clock_drift: 1, partition: 2, slow_link: 2, link_reset: 2 }
    }
}

impl FaultWeights {
    pub fn none() -> FaultWeights {
        FaultWeights { crash: 0, pause: 0, clock_jump: 0, clock_drift: 0, partition: 0, slow_link: 0, link_reset: 0 }
    }

    pub fn total(&self) -> u32 {
        self.crash + self.pause + self.clock_jump + self.clock_drift + self.partition + self.slow_link + self.link_reset
    }

    /// The `--faults` argument that gives these weights: `none`, or every class that
    /// differs from the default (empty when none does).
    pub fn spec(&self) -> String {
        if *self == FaultWeights::none() {
            return "none".to_owned();
        }
        let default = FaultWeights::default();
        let classes = [
            ("crash", self.crash, default.crash),
            ("pause", self.pause, default.pause),
            ("clock-jump", self.clock_jump, default.clock_jump),
            ("clock-drift", self.clock_drift, default.clock_drift),
            ("partition", self.partition, default.partition),
            ("slow-link", self.slow_link, default.slow_link),
            ("link-reset", self.link_reset, default.link_reset),
        ];
        classes.iter().filter(|(_, w, d)| w != d).map(|(name, w, _)| format!("{name}={w}")).collect::<Vec<_>>().join(",")
    }

    /// Parse `name=weight,...` on top of the defaults.
    pub fn parse(spec: &str) -> Result<FaultWeights, String> {
        let mut weights = FaultWeights::default();
        for part in spec.split(',').filter(|p| !p.is_empty()) {
            let (name, value) = part.split_once('=').ok_or_else(|| format!("expected name=weight, got {part:?}"))?;
            let value: u32 = value.parse().map_err(|_| format!("bad weight in {part:?}"))?;
            let slot = match name {
                "crash" => &mut weights.crash,
                "pause" => &mut weights.pause,
                "clock-jump" | "clock_jump" => &mut weights.clock_jump,
                "clock-drift" | "clock_drift" => &mut weights.clock_drift,
                "partition" => &mut weights.partition,
                "slow-link" | "slow_link" => &mut weights.slow_link,
                "link-reset" | "link_reset" => &mut weights.link_reset,
                other => {
                    return Err(format!(
                        "unknown fault class {other:?} (crash, pause, clock-jump, clock-drift, partition, slow-link, link-reset)"
                    ));
                }
            };
            *slot = value;
        }
        Ok(weights)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_parses_back_to_the_same_weights() {
        for spec in ["", "none", "crash=4,pause=1,clock-jump=2,clock-drift=1,partition=3,slow-link=1", "link-reset=0"] {
            let weights = if spec == "none" { FaultWeights::none() } else { FaultWeights::parse(spec).expect("a valid spec") };
            let again = weights.spec();
            let parsed = if again == "none" { FaultWeights::none() } else { FaultWeights::parse(&again).expect("its own spec") };
            assert_eq!(parsed, weights, "{spec:?} -> {again:?}");
        }
    }
}
