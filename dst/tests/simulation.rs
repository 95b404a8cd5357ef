//! The simulator's own guarantees: a seed replays exactly, the sweep passes on the
//! current code, and every planted bug is caught.

use dst::{Bug, FaultWeights, SimConfig, run};

#[test]
fn the_same_seed_replays_the_same_trace() {
    for replicate in [true, false] {
        let a = run(SimConfig { seed: 11, replicate, ..SimConfig::default() });
        let b = run(SimConfig { seed: 11, replicate, ..SimConfig::default() });
        assert!(a.ok(), "{}", a.failure.unwrap_or_default());
        assert_eq!((a.trace_hash, a.events, a.sim_ms), (b.trace_hash, b.events, b.sim_ms));
        let c = run(SimConfig { seed: 12, replicate, ..SimConfig::default() });
        assert_ne!(a.trace_hash, c.trace_hash, "different seeds must explore different runs");
    }
}

#[test]
fn the_default_run_is_the_whole_system() {
    assert!(SimConfig::default().replicate, "`dst --seeds A..B` replicates unless --no-replicate");
}

#[test]
fn a_run_without_faults_passes_and_does_work() {
    for replicate in [true, false] {
        let outcome = run(SimConfig { seed: 1, replicate, faults: FaultWeights::none(), ..SimConfig::default() });
        assert!(outcome.ok(), "{}", outcome.failure.unwrap_or_default());
        assert!(outcome.events > 1_500, "every client op is at least one event");
    }
}

/// Seeds a planted bug must be caught within.
const SEEDS_TO_CATCH_A_BUG: u64 = 20;

#[test]
fn every_planted_bug_is_caught_within_a_few_seeds() {
    std::panic::set_hook(Box::new(|_| {}));
    for bug in Bug::ALL {
        let replicate = bug.needs_replication();
        let mut config = SimConfig { bug: Some(bug), replicate, ..SimConfig::default() };
        if bug.needs_graph_writes() {
            config.graph = true;
            config.faults = graph_faults();
        }
        if bug.needs_stream_writes() {
            config.streams = true;
            config.faults = graph_faults();
        }
        config.renames = bug.needs_renames();
        config.dumps = bug.needs_dumps();
        if bug == Bug::AbsenceIgnored {
            // Only a peer given up on misses removals whose records the others
            // collect: every seed gives up after the seeded horizon, under partitions
            // alone and with no periodic round to take another route. (Since a link
            // to a peer given up on drops, resending its batches, the default mix
            // needs the rule in about one seed in twenty.) The same runs pass without
            // it (`absence_faults_pass_without_the_bug`).
            config = absence_config(config);
        }
        if bug == Bug::ReservationIgnored {
            // A reused stamp needs a crash that loses writes that had already left,
            // and a clock behind them at the restart: crashes, clock steps, and a
            // flaky store (longer unstored windows). The same faults pass without it
            // (`reservation_faults_pass_without_the_bug`).
            config.faults = reservation_faults();
            config.store_error_percent = 30;
        }
        let caught = (0..SEEDS_TO_CATCH_A_BUG).find(|&seed| !run(SimConfig { seed, ..config.clone() }).ok());
        assert!(caught.is_some(), "planted bug {} survived {SEEDS_TO_CATCH_A_BUG} seeds", bug.name());
    }
    let _ = std::panic::take_hook();
}

/// Every node keeps FT.* indexes over the workload's hashes (`dst/src/sim/indexes.rs`);
/// at the end of a run each node's indexes equal the ones rebuilt from its data, and
/// the audit compared real documents (the planted `merged-delete-stays-indexed` bug
/// shows it can fail).
#[test]
fn every_nodes_indexes_equal_their_rebuilds_at_the_end_of_a_run() {
    for replicate in [true, false] {
        let outcome = run(SimConfig { seed: 3, replicate, ..SimConfig::default() });
        assert!(outcome.ok(), "{}", outcome.failure.unwrap_or_default());
        let audited: Vec<usize> = outcome
            .trace
            .iter()
            .filter_map(|line| line.split("indexes equal their rebuilds: ").nth(1))
            .filter_map(|rest| rest.split_whitespace().next()?.parse().ok())
            .collect();
        assert_eq!(audited.len(), 3, "every node's indexes are audited (replicate: {replicate})");
        assert!(audited.iter().sum::<usize>() > 0, "the audit compared no document (replicate: {replicate})");
    }
}

/// The TEXT index (`dst_text`): a planted bug that leaves a rewritten document's old
/// terms in the postings is caught by the index audit itself (its message names the
/// postings), on a single node and under replication faults, within a few seeds; and
/// the same runs pass without it (the sweeps).
#[test]
fn a_text_update_that_keeps_old_terms_is_caught_by_the_index_audit() {
    for replicate in [false, true] {
        let config = SimConfig { bug: Some(Bug::TextUpdateKeepsOldTerms), replicate, ..SimConfig::default() };
        let caught = (0..SEEDS_TO_CATCH_A_BUG).find_map(|seed| run(SimConfig { seed, ..config.clone() }).failure);
        let reason = caught.unwrap_or_else(|| panic!("the planted bug survived {SEEDS_TO_CATCH_A_BUG} seeds (replicate: {replicate})"));
        assert!(
            reason.contains("\"dst_text\": postings differ"),
            "caught, but not by the text postings audit (replicate: {replicate}): {reason}"
        );
    }
}

/// Graph runs: every replication fault but crashes, so that the graph is checked
/// exactly (a run with a restart checks it for safety only: see `dst/src/graph.rs`).
fn graph_faults() -> FaultWeights {
    FaultWeights::parse("crash=0").expect("fault weights")
}

/// Graph writes (CREATE, SET, DETACH DELETE, DELETE of an edge) on three replicating
/// nodes under partitions, pauses, clock faults and slow links: every node's graph is
/// the oracle's after convergence, with no dangling edge. DST_CI_GRAPH_SEEDS changes
/// the count (the default takes about a minute on two cores).
#[test]
fn graph_writes_under_replication_faults_converge_to_the_oracle() {
    let seeds: u64 = std::env::var("DST_CI_GRAPH_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(GRAPH_SEEDS);
    let mut exact = 0;
    for seed in 0..seeds {
        let config = SimConfig { seed, graph: true, faults: graph_faults(), ..SimConfig::default() };
        let outcome = run(config.clone());
        assert!(outcome.ok(), "{}\nreplay: {}", outcome.failure.unwrap_or_default(), config.replay_command());
        exact += outcome.trace.iter().any(|l| l.contains("graph against the oracle (exactly)")) as u32;
    }
    assert_eq!(exact as u64, seeds, "every run without a restart checks its graphs exactly");
}

/// With crashes the graph check is one of safety, and it still passes.
#[test]
fn graph_writes_with_restarts_stay_safe() {
    for seed in 0..GRAPH_SEEDS_WITH_CRASHES {
        let config = SimConfig { seed, graph: true, ..SimConfig::default() };
        let outcome = run(config.clone());
        assert!(outcome.ok(), "{}\nreplay: {}", outcome.failure.unwrap_or_default(), config.replay_command());
        assert!(outcome.trace.iter().any(|l| l.contains("graph against the oracle")), "seed {seed}: the graphs are checked");
    }
}

const GRAPH_SEEDS: u64 = 40;
const GRAPH_SEEDS_WITH_CRASHES: u64 = 10;

/// RENAME, RENAMENX and COPY between two string keys on three replicating nodes under
/// every fault, crashes included (`--renames`): the converged strings are what the
/// oracle computes, taking a rename as a DEL of the source and a SET of the destination
/// to the value and TTL the source had there. The runs do rename: at least one RENAME
/// a run on average succeeds (the planted `rename-drops-ttl` shows the check can fail).
#[test]
fn renames_under_replication_faults_converge_to_the_oracle() {
    let renamed = passing_runs_count(RENAME_SEEDS, |seed| SimConfig { seed, renames: true, ..SimConfig::default() }, " RENAME ");
    assert!(renamed >= RENAME_SEEDS, "{renamed} renames in {RENAME_SEEDS} runs");
}

/// Run `config(seed)` for every seed below `seeds`, each of which must pass, and count
/// the commands of the runs whose trace line names `command` and answers OK.
fn passing_runs_count(seeds: u64, config: impl Fn(u64) -> SimConfig, command: &str) -> u64 {
    let mut count = 0;
    for seed in 0..seeds {
        let config = config(seed);
        let outcome = run(SimConfig { trace: true, ..config.clone() });
        assert!(outcome.ok(), "{}\nreplay: {}", outcome.failure.unwrap_or_default(), config.replay_command());
        count += outcome.trace.iter().filter(|l| l.contains(command) && l.ends_with("Simple(b\"OK\")")).count() as u64;
    }
    count
}

const RENAME_SEEDS: u64 = 200;

/// Single-node runs with DUMP and RESTORE (`--dumps`): every DUMP's payload holds what
/// the model holds, every RESTORE answers as the model does and leaves what it says,
/// through crashes and recoveries. The runs do restore: at least twenty RESTOREs a run
/// on average succeed (the planted `restore-absttl-ignored` shows the check can fail;
/// the sweep found RESTORE REPLACE over a hash with a counter field putting restored
/// fields into the old ones' places, and a recovered node then ordering them
/// differently again). DST_CI_DUMP_SEEDS changes the count.
#[test]
fn dumps_and_restores_on_a_single_node_match_the_model() {
    let seeds: u64 = std::env::var("DST_CI_DUMP_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(DUMP_SEEDS);
    let restored = passing_runs_count(seeds, |seed| SimConfig { seed, replicate: false, dumps: true, ..SimConfig::default() }, " RESTORE ");
    assert!(restored >= 20 * seeds, "{restored} RESTOREs in {seeds} runs");
}

const DUMP_SEEDS: u64 = 1_000;

/// Replicated runs with DUMP and RESTORE (`--dumps`): a RESTORE ... REPLACE of a string
/// payload onto a string key, in any region, converges as the SET of its value the
/// oracle takes it for, through partitions and crashes. The runs do restore: at least
/// ten RESTOREs a run on average succeed (the planted `restore-absttl-ignored` fails
/// these runs too).
#[test]
fn restores_under_replication_faults_converge_to_the_oracle() {
    let restored = passing_runs_count(REPLICATED_DUMP_SEEDS, |seed| SimConfig { seed, dumps: true, ..SimConfig::default() }, " RESTORE ");
    assert!(restored >= 10 * REPLICATED_DUMP_SEEDS, "{restored} RESTOREs in {REPLICATED_DUMP_SEEDS} runs");
}

const REPLICATED_DUMP_SEEDS: u64 = 150;

/// Runs in which a peer is given up on and caught up only by the absence rule.
fn absence_config(config: SimConfig) -> SimConfig {
    let faults = FaultWeights::parse("partition=4").expect("fault weights");
    SimConfig { peer_horizon_ms: Some(dst::SEEDED_HORIZON_MS), periodic_anti_entropy: false, faults, ..config }
}

#[test]
fn absence_faults_pass_without_the_bug() {
    for seed in 0..SEEDS_TO_CATCH_A_BUG {
        let outcome = run(absence_config(SimConfig { seed, replicate: true, ..SimConfig::default() }));
        assert!(outcome.ok(), "seed {seed}: {}", outcome.failure.unwrap_or_default());
    }
}

fn reservation_faults() -> FaultWeights {
    FaultWeights::parse("crash=4,clock-jump=4").expect("fault weights")
}

/// The collection bugs above are caught under the default mix, which restarts a node
/// in nearly every run: the collection values are checked after restarts too.
#[test]
fn collection_values_are_checked_in_runs_with_a_restart() {
    let mut restarted = 0;
    for seed in 0..SEEDS_TO_CATCH_A_BUG {
        // The whole trace: a run's last lines need not reach back to its restarts.
        let outcome = run(SimConfig { seed, replicate: true, trace: true, ..SimConfig::default() });
        assert!(outcome.ok(), "seed {seed}: {}", outcome.failure.unwrap_or_default());
        assert!(
            outcome.trace.iter().any(|line| line.contains("collection keys against the oracle")),
            "seed {seed}: the collection values are checked"
        );
        restarted += outcome.trace.iter().any(|line| line.contains(" restart: recovered ")) as u32;
    }
    assert!(restarted > 0, "no run restarted a node");
}

#[test]
fn reservation_faults_pass_without_the_bug() {
    for seed in 0..SEEDS_TO_CATCH_A_BUG {
        let outcome =
            run(SimConfig { seed, replicate: true, faults: reservation_faults(), store_error_percent: 30, ..SimConfig::default() });
        assert!(outcome.ok(), "seed {seed}: {}", outcome.failure.unwrap_or_default());
    }
}

#[test]
fn a_replicated_run_replays_and_converges() {
    let a = run(SimConfig { seed: 5, replicate: true, ..SimConfig::default() });
    let b = run(SimConfig { seed: 5, replicate: true, ..SimConfig::default() });
    assert!(a.ok(), "{}", a.failure.unwrap_or_default());
    assert_eq!((a.trace_hash, a.events), (b.trace_hash, b.events));
    assert!(a.trace.iter().any(|line| line.contains("identical replicas")), "the replicas were compared");
}

/// Issue 21: a node restarted after a crash that lost a SET its peers held; its next
/// write (an EXPIRE) superseded that SET, and its INCR after that kept the TTL. The
/// oracle took the node's context as proof that it held the lost SET (and so the
/// removal of the value the SET had replaced), judged that the INCR made a new key,
/// and expected no TTL. Existence is now read from the engine where a context claims
/// such a write (`dst/src/oracle.rs`, module doc).
#[test]
fn seed_2004282_an_incr_after_a_restart_keeps_its_nodes_ttl() {
    let outcome = run(SimConfig { seed: 2_004_282, replicate: true, ..SimConfig::default() });
    assert!(outcome.ok(), "{}", outcome.failure.unwrap_or_default());
}

/// A replicated run of `seed` with the default faults and no periodic anti-entropy
/// passes (the seeds below each showed a bug once).
fn passes_without_periodic_anti_entropy(seed: u64) {
    let outcome = run(SimConfig { seed, replicate: true, periodic_anti_entropy: false, ..SimConfig::default() });
    assert!(outcome.ok(), "seed {seed}: {}", outcome.failure.unwrap_or_default());
}

/// Without periodic anti-entropy: n0 runs `EXPIRE {t}l1 564`, ships it to n1 only, and
/// is killed before storing it. The round n0 starts on reconnecting brings it back from
/// n1, but peers never forward each other's writes and n2's round with n0 had run
/// before n0 had it again: n2 kept the older TTL until a periodic round. A node now
/// ships again an own write a round brings back (`Shard::ship_own_writes_back`).
/// Fails without it (the same trace as before the fix: the replicas read out
/// differently); seed 300 is the same case with list elements.
#[test]
fn seed_998_a_write_a_crash_lost_reaches_the_third_node_without_a_periodic_round() {
    for seed in [998, 300] {
        passes_without_periodic_anti_entropy(seed);
    }
}

/// Without periodic anti-entropy: n1's `DEL h2` reached n0, its batch to n2 was in
/// flight when n1 crashed, and the crash lost it on n1. n0's next field write carried
/// the hash's context, the DEL's stamp in it, to n1 and n2: both then held the stamp
/// but still the field `f0` the DEL had removed. The restarted n1 took the stamp for the
/// write and shipped nothing after n0's round brought the removal back, so n2 kept `f0`
/// for ever. A restarted node now ships again a key whose round state holds an own
/// write newer than it replayed (`Shard::own_writes_lacked`). Fails without it.
#[test]
fn seed_1420_a_lost_delete_whose_stamp_came_back_first_reaches_the_third_node() {
    passes_without_periodic_anti_entropy(1420);
}

/// n0 deleted `b`, whose state held a counter slot of n2; n0 and n1, having given up on
/// the cut-off n2, collected tombstones sparing those with n2's counters, `b`'s among
/// them. n2's link then resent an old batch holding `b` as the DEL had seen it, and
/// the merge dropped the spared tombstone because what the shard had forgotten covered
/// it: the DEL, held nowhere any more, was taken for lost with n0's crash, and n0's
/// next write on `b` contradicted the oracle. A merge now keeps a tombstone the last
/// collection spared (`KvEngine::keeps_merged_tombstone`). Fails without it.
#[test]
fn seed_1228_a_spared_tombstone_outlives_a_resent_copy_of_what_it_removed() {
    passes_without_periodic_anti_entropy(1228);
}

/// Under the absence faults (`absence_config`): n2 added member `3` to `s1` and
/// shipped it to n0 only, removed it, and, cut off, gave up on both peers and collected
/// its tombstone; a crash then lost the removal's batch, still queued. Back, n2 caught
/// n1 up by a round (n1 held no `3`: nothing there changed), but its round with n0 was
/// held up by partitions, and n0's own round with n1 meanwhile passed n0's copy of `3`
/// on. When n2's round reached n0, the absence rule removed `3` there, and no round
/// told n1: it kept `3` for good. A node whose absence removals take away something a
/// reader saw now asks every link for a round (`shard::absence::AbsenceRemovals`).
/// Fails without it (the replicas read out differently after quiescence).
#[test]
fn seed_2228_a_stale_copy_passed_on_before_the_absence_rule_removed_it_is_removed_where_it_went() {
    let outcome = run(absence_config(SimConfig { seed: 2228, replicate: true, ..SimConfig::default() }));
    assert!(outcome.ok(), "seed 2228: {}", outcome.failure.unwrap_or_default());
}

/// n1 ran `EXPIRE {t}s1 799` and n0 then emptied the set (its removal took the TTL
/// write too) and, having given up on the cut-off n2, collected the key. n2's state,
/// its elements gone but n1's TTL write still in it, was kept for that TTL (a key
/// tombstone stays until its TTL is due). Back, n2 was caught up by n0's round, whose
/// records covered the TTL write, but the absence rule passed over states that do not
/// exist, so n2 kept the tombstone for 800 s while n0 and n1 held nothing: the
/// replicas differed after quiescence. Dead states lose what the records cover too
/// now. Shown once every connection catches up before its batches and drops those
/// queued before its round (which until then had carried n0's removal to n2).
#[test]
fn seed_2070_a_tombstone_kept_for_a_ttl_the_peer_removed_loses_it_by_the_absence_rule() {
    let outcome = run(SimConfig { seed: 2070, replicate: true, ..SimConfig::default() });
    assert!(outcome.ok(), "seed 2070: {}", outcome.failure.unwrap_or_default());
}

/// n0 was cut off and given up on; meanwhile n1 incremented a sorted set member, n2
/// deleted the key (absorbing those increments) and both collected the tombstone.
/// n1's batches to n0, held by the partition, reached n0 after the heal, after its
/// round with n2 had caught it up: the increments counted on n0 alone (member `a` read
/// 2 there and -3 elsewhere) and no round followed to remove them. A node now drops its
/// link to a peer it gives up on, so what was in flight on it is lost and the new
/// connection resends it before a round (`shell::peer_link::liveness::until_given_up`, mirrored by
/// the simulator), and a slot held only at an earlier increment no longer shields a
/// later one from the absence rule (`value::absence`). Fails without the link drop.
#[test]
fn seed_604_increments_a_delete_absorbed_stay_absorbed_on_a_node_given_up_on() {
    passes_without_periodic_anti_entropy(604);
}

/// n1's idle clock had carried its batches' promise (no own write at or below
/// `stable` still to come) past what it had stored; it crashed, its clock was set back
/// while it was down, and after the restart it wrote a list element below that
/// promise. Its peers had collected tombstones under the promise, so the element
/// looked removed to them and the absence rule removed it everywhere: an acknowledged
/// RPUSH lost. A batch's promise now stays at or below the reservation ceiling a
/// restarted process starts above (`reservation::stable_claim`). Fails without it.
#[test]
fn seed_1244_a_write_after_a_restart_with_the_clock_set_back_is_not_taken_for_a_removed_one() {
    passes_without_periodic_anti_entropy(1244);
}

/// A collection that leaves out a peer given up on spares the tombstones holding a
/// counter of that peer (`engine::kv::tombstone_gc`): the peer may hold a later sum of
/// the same counter slot, and without the removal's floor the increments the removal
/// had absorbed count again. Without the sparing this seed of the default mix fails
/// ("node 1 wrote `b` where the engine says the key existed and the writes its context
/// covers say it did not": its state still counted increments a DEL had absorbed).
/// Seeds 4574 and 4932 of `--no-periodic-anti-entropy` failed the same way before the
/// claim rule below changed their schedules; the unit tests in
/// `engine::kv::tombstone_gc::spared_counter_tests` show the case directly.
#[test]
fn seed_224_a_removals_counter_floor_stays_while_the_counters_node_is_given_up_on() {
    let outcome = run(SimConfig { seed: 224, replicate: true, ..SimConfig::default() });
    assert!(outcome.ok(), "{}", outcome.failure.unwrap_or_default());
}

/// n0 ran `INCRBY n1 -3`, shipped it to n1 only, and was killed before storing it; n2
/// then gave up on both peers, and n0's batches after its restart had moved n2's
/// `merged` past the lost increment (a round with n0 could not bring it back). n2
/// collected tombstones by that alone, so when the increment came from n1 after the
/// heal, n2 took it for one it had merged and removed, and every replica lost an
/// acknowledged write that had survived on n1. A peer given up on now counts only as
/// far as its last report claimed its writes (`Stability::stable_vector`). Fails
/// without it.
#[test]
fn seed_1788_a_write_a_restarted_peer_lost_is_not_taken_for_removed_by_a_node_that_gave_it_up() {
    passes_without_periodic_anti_entropy(1788);
}

/// A node was down when its idle peer sent its last stability report. The simulated
/// link delivered that frame to the dead node and dropped it, and nothing reset the
/// link when the node restarted, so the frame stayed unacknowledged and was never
/// resent. In the server the dialer cannot connect to a node that is down, and it sends
/// what is unacknowledged once it reconnects. The peer's report no longer changed (its
/// HLC was ahead of its wall clock), so it sent no other report. The restarted node
/// never counted that peer's report and kept a tombstone after quiescence. A restart now
/// resets the node's links (`Sim::repl_restart`). The fix changes the run from the
/// first restart on, so this seed guards the fix but no longer replays the old failure.
#[test]
fn seed_20031914_a_restarted_node_gets_the_report_its_idle_peer_sent_while_it_was_down() {
    let faults = FaultWeights::parse("crash=4,pause=1,partition=3,slow-link=1").expect("fault spec");
    let outcome = run(SimConfig { seed: 20_031_914, replicate: true, faults, ..SimConfig::default() });
    assert!(outcome.ok(), "{}", outcome.failure.unwrap_or_default());
}

/// The single-node CI sweep (`--no-replicate`): a fixed range of seeds (so a failure is
/// reproducible by its number), split over two threads for the 2-core CI machine.
#[test]
fn ci_sweep_of_10000_seeds_passes() {
    sweep("DST_CI_SEEDS", 10_000, false);
}

/// The replication sweep: 2,400 seeds of three replicating nodes under partitions, link
/// resets, pauses, clock faults and slow links (about a minute on two cores).
#[test]
fn ci_sweep_of_2400_replicated_seeds_passes() {
    sweep("DST_CI_REPL_SEEDS", 2_400, true);
}

fn sweep(variable: &str, default_seeds: u64, replicate: bool) {
    let seeds: u64 = std::env::var(variable).ok().and_then(|s| s.parse().ok()).unwrap_or(default_seeds);
    let started = std::time::Instant::now();
    let threads: Vec<_> = (0..2u64)
        .map(|t| {
            std::thread::spawn(move || {
                (0..seeds)
                    .filter(|s| s % 2 == t)
                    .filter_map(|seed| {
                        let config = SimConfig { seed, replicate, ..SimConfig::default() };
                        run(config.clone()).failure.map(|f| (config.replay_command(), f))
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let failures: Vec<(String, String)> = threads.into_iter().flat_map(|t| t.join().expect("sweep thread")).collect();
    println!(
        "dst ci sweep (replicate: {replicate}): seeds={seeds} failed={} seconds={:.1}",
        failures.len(),
        started.elapsed().as_secs_f64()
    );
    if let Some((replay, reason)) = failures.first() {
        panic!(
            "{} seeds failed; first: {reason}\nreplay: cargo run -p dst --release -- {}",
            failures.len(),
            replay.trim_start_matches("dst ")
        );
    }
}

#[test]
fn a_replay_command_names_every_setting_of_the_run() {
    let config = SimConfig {
        seed: 7,
        replicate: true,
        nodes: 5,
        ops: 300,
        faults: FaultWeights::parse("crash=4,partition=0").expect("fault weights"),
        store_error_percent: 30,
        bug: Some(Bug::LwwTieBreakInverted),
        ..SimConfig::default()
    };
    assert_eq!(
        config.replay_command(),
        "dst --seed 7 --nodes 5 --ops 300 --faults crash=4,partition=0 --store-error-percent 30 --inject-bug lww-tie-break-inverted"
    );
    assert_eq!(SimConfig { seed: 3, ..SimConfig::default() }.replay_command(), "dst --seed 3");
    assert_eq!(SimConfig { seed: 3, replicate: false, ..SimConfig::default() }.replay_command(), "dst --seed 3 --no-replicate");
    assert_eq!(
        SimConfig { seed: 3, periodic_anti_entropy: false, ..SimConfig::default() }.replay_command(),
        "dst --seed 3 --no-periodic-anti-entropy"
    );
    assert_eq!(SimConfig { seed: 3, renames: true, ..SimConfig::default() }.replay_command(), "dst --seed 3 --renames");
    assert_eq!(
        SimConfig { seed: 3, replicate: false, dumps: true, ..SimConfig::default() }.replay_command(),
        "dst --seed 3 --no-replicate --dumps"
    );
}

/// Fault-free seeds run without periodic anti-entropy (`--no-periodic-anti-entropy`).
const DELTAS_ALONE_SEEDS: u64 = 40;

/// Without periodic anti-entropy only the deltas, and the rounds a link must start (a
/// new connection, a gap in a peer's batches, no round completed with that peer since
/// this process started), bring the replicas together: at the end they must read out
/// alike and every tombstone must be collected. (Before each link asked for the rounds
/// it needs, no seed here collected anything: collection waited for the next period.)
/// Under faults this mode finds divergences that only a periodic round repairs, listed
/// in docs/testing.md ("Known"); until they are fixed it runs as a tool, not here.
#[test]
fn without_periodic_anti_entropy_fault_free_runs_converge_and_collect_every_tombstone() {
    for seed in 0..DELTAS_ALONE_SEEDS {
        let config = SimConfig { seed, periodic_anti_entropy: false, faults: FaultWeights::none(), ..SimConfig::default() };
        let outcome = run(config.clone());
        assert!(outcome.ok(), "{}\nreplay: cargo run -p dst --release -- {}", outcome.failure.unwrap_or_default(), config.replay_command());
    }
}

/// A sweep's replay line, run as printed, replays the failing run exactly (same trace
/// hash), whatever flags the sweep had.
#[test]
fn a_failing_seeds_printed_replay_reproduces_it() {
    let dst = env!("CARGO_BIN_EXE_dst");
    let sweep = std::process::Command::new(dst)
        .args(["--seeds", "0..2", "--jobs", "1", "--faults", "crash=3", "--store-error-percent", "20"])
        .args(["--ops", "600", "--inject-bug", "lww-tie-break-inverted"])
        .output()
        .expect("run the dst binary");
    let out = String::from_utf8_lossy(&sweep.stdout);
    let failures: Vec<(&str, &str)> =
        out.lines().filter(|l| l.contains(": FAIL ")).zip(out.lines().filter_map(|l| l.trim().strip_prefix("replay: "))).collect();
    assert!(!failures.is_empty(), "the planted bug must fail a seed:\n{out}");
    for (summary, replay) in failures {
        let args: Vec<&str> = replay.split_whitespace().skip(1).collect();
        let again = std::process::Command::new(dst).args(&args).output().expect("run the replay");
        let again = String::from_utf8_lossy(&again.stdout);
        let hash = |text: &str| text.split_whitespace().find(|w| w.starts_with("trace_hash=")).map(str::to_owned);
        let last = again.lines().last().unwrap_or_default();
        assert_eq!(hash(last), hash(summary), "`{replay}` replays {summary:?} as {last:?}");
    }
}

/// Seeds of the stream runs (each takes well under a second on two cores).
const STREAM_SEEDS: u64 = 12;

/// Stream writes (XADD with generated ids, XDEL of recent ids, XRANGE) on three
/// replicating nodes under partitions, pauses, clock faults and slow links: every
/// node's stream is the oracle's after convergence (every accepted entry but the
/// deleted ones, in id order, each id carrying its node); with crashes, safely so.
#[test]
fn stream_writes_under_replication_faults_converge_to_the_oracle() {
    let mut exact = 0;
    for seed in 0..STREAM_SEEDS {
        let config = SimConfig { seed, streams: true, faults: graph_faults(), ..SimConfig::default() };
        let outcome = run(config.clone());
        assert!(outcome.ok(), "{}\nreplay: {}", outcome.failure.unwrap_or_default(), config.replay_command());
        exact += outcome.trace.iter().any(|l| l.contains("stream against the oracle (exactly)")) as u32;
    }
    assert_eq!(exact as u64, STREAM_SEEDS, "every run without a restart checks its streams exactly");
    for seed in 0..STREAM_SEEDS / 2 {
        let config = SimConfig { seed, streams: true, ..SimConfig::default() };
        let outcome = run(config.clone());
        assert!(outcome.ok(), "{}\nreplay: {}", outcome.failure.unwrap_or_default(), config.replay_command());
        assert!(outcome.trace.iter().any(|l| l.contains("stream against the oracle")), "seed {seed}: the streams are checked");
    }
}
