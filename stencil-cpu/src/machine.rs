//! The machine's described capabilities, from which the schedule space is derived: cores,
//! cache sizes (sysfs), NUMA nodes and their cores (sysfs), and the vector width (run-time
//! feature detection).
//!
//! Everything is read at run time (no build-time system dependency); a file that is missing
//! or unreadable gives a conservative default (one node holding every core, 32 KiB / 1 MiB /
//! 8 MiB caches). A [`Machine`] is plain data, so tests build machines with several NUMA
//! nodes by hand.
//!
//! The cache sizes the system reports are not always the caches a process gets: a virtual
//! machine may report its host's last-level cache (an Intel Xeon VM reports 480 MiB) while
//! neighbours share the real one. So the reported sizes are kept as read, and every decision
//! reads the effective ones ([`Machine::l1`], [`Machine::l2`], [`Machine::llc`],
//! [`Machine::llc_share`]): measured sizes where a working-set sweep has measured them
//! ([`set_measured_caches`], or [`Machine::measured`] for a machine built by hand), the
//! reported ones otherwise.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use stencil_core::CacheSizes;

use crate::streaming::StreamWidth;

/// NUMA nodes and the cores (operating-system CPU numbers) each holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// Per node, its CPU numbers in ascending order; never empty, no node empty.
    nodes: Vec<Vec<usize>>,
}

impl Topology {
    /// A topology of the given nodes (each a list of CPU numbers); empty nodes are dropped,
    /// and no nodes at all means one node with CPU 0.
    pub fn new(nodes: Vec<Vec<usize>>) -> Topology {
        let mut nodes: Vec<Vec<usize>> = nodes
            .into_iter()
            .filter(|n| !n.is_empty())
            .map(|mut n| {
                n.sort_unstable();
                n.dedup();
                n
            })
            .collect();
        if nodes.is_empty() {
            nodes.push(vec![0]);
        }
        Topology { nodes }
    }

    /// The topology under `sysfs_node_dir` (normally `/sys/devices/system/node`), or `None`
    /// when it lists no node.
    pub fn from_sysfs(sysfs_node_dir: &Path) -> Option<Topology> {
        let mut nodes: Vec<(usize, Vec<usize>)> = std::fs::read_dir(sysfs_node_dir)
            .ok()?
            .filter_map(|entry| {
                let entry = entry.ok()?;
                let name = entry.file_name().into_string().ok()?;
                let id: usize = name.strip_prefix("node")?.parse().ok()?;
                let list = std::fs::read_to_string(entry.path().join("cpulist")).ok()?;
                Some((id, parse_cpu_list(&list)))
            })
            .collect();
        nodes.sort_unstable_by_key(|(id, _)| *id);
        let nodes: Vec<Vec<usize>> = nodes.into_iter().map(|(_, cpus)| cpus).collect();
        (nodes.iter().any(|n| !n.is_empty())).then(|| Topology::new(nodes))
    }

    /// Number of nodes.
    pub fn n_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// CPU numbers of node `node`.
    pub fn cpus(&self, node: usize) -> &[usize] {
        &self.nodes[node]
    }

    /// Number of CPUs over all nodes.
    pub fn n_cpus(&self) -> usize {
        self.nodes.iter().map(Vec::len).sum()
    }

    /// Where worker `w` of a pool of `workers` threads runs: `(node, cpu)`. Workers are dealt
    /// to nodes in proportion to their cores and in node order, so consecutive workers share
    /// a node and a static partition that gives each worker a contiguous range keeps each
    /// node's range contiguous too. Beyond the machine's CPUs, placements wrap around.
    pub fn placement(&self, worker: usize, workers: usize) -> (usize, usize) {
        let n_cpus = self.n_cpus();
        let workers = workers.max(1);
        // Worker `w` takes the CPU at the same relative position in the node-major CPU list.
        let slot = if workers <= n_cpus {
            worker * n_cpus / workers
        } else {
            worker % n_cpus
        };
        let mut rest = slot;
        for (node, cpus) in self.nodes.iter().enumerate() {
            if rest < cpus.len() {
                return (node, cpus[rest]);
            }
            rest -= cpus.len();
        }
        unreachable!("stencil-cpu: placement slot {slot} beyond {n_cpus} CPUs")
    }

    /// The CPUs of this topology that are in `allowed` (the CPUs a process may run on),
    /// node by node; the allowed CPUs that no node lists form one more node. Empty `allowed`
    /// (nothing known) leaves the topology as it is.
    pub fn restricted(&self, allowed: &[usize]) -> Topology {
        if allowed.is_empty() {
            return self.clone();
        }
        let mut nodes: Vec<Vec<usize>> = self
            .nodes
            .iter()
            .map(|cpus| {
                cpus.iter()
                    .copied()
                    .filter(|c| allowed.contains(c))
                    .collect()
            })
            .collect();
        let listed: Vec<usize> = nodes.iter().flatten().copied().collect();
        nodes.push(
            allowed
                .iter()
                .copied()
                .filter(|c| !listed.contains(c))
                .collect(),
        );
        Topology::new(nodes)
    }

    /// The `index`-th of `count` shares of the CPUs, for `count` processes that run on them
    /// at once (MPI ranks on one machine): contiguous runs of the node-major CPU list, as
    /// even as the count allows, so the shares of distinct processes are disjoint. Each share
    /// holds at least one CPU, so shares overlap only when the processes outnumber the CPUs.
    /// A `count` of 0 counts as 1; an `index` past the count wraps around.
    pub fn share(&self, index: usize, count: usize) -> Topology {
        let count = count.max(1);
        let index = index % count;
        let n_cpus = self.n_cpus();
        let lo = index * n_cpus / count;
        let hi = ((index + 1) * n_cpus / count).max(lo + 1);
        let mut slot = 0;
        let nodes = self
            .nodes
            .iter()
            .map(|cpus| {
                let kept = cpus
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| (lo..hi).contains(&(slot + i)))
                    .map(|(_, &c)| c)
                    .collect();
                slot += cpus.len();
                kept
            })
            .collect();
        Topology::new(nodes)
    }
}

/// Parses a sysfs CPU list such as `0-3,8,10-11`.
pub(crate) fn parse_cpu_list(list: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<usize>(), b.trim().parse::<usize>()) {
                    cpus.extend(a..=b);
                }
            }
            None => cpus.extend(part.trim().parse::<usize>().ok()),
        }
    }
    cpus
}

/// Parses a sysfs cache size such as `48K`, `32768K` or `32M` into bytes.
pub(crate) fn parse_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text, ""),
    };
    let value: usize = digits.parse().ok()?;
    let scale = match unit.trim() {
        "" => 1,
        "K" | "k" => 1 << 10,
        "M" | "m" => 1 << 20,
        "G" | "g" => 1 << 30,
        _ => return None,
    };
    value.checked_mul(scale)
}

/// What the schedule space is derived from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    /// Cores the process may run on.
    pub cores: usize,
    /// First-level data cache per core, bytes, as the system reports it (decisions read
    /// [`l1`](Self::l1)).
    pub l1_bytes: usize,
    /// Second-level cache per core, bytes, as the system reports it (decisions read
    /// [`l2`](Self::l2)).
    pub l2_bytes: usize,
    /// Last-level cache, bytes (shared), as the system reports it (decisions read
    /// [`llc`](Self::llc) and [`llc_share`](Self::llc_share)).
    pub llc_bytes: usize,
    /// Cache sizes measured on this machine, which replace the reported ones level by level
    /// (a level of 0: not measured). `None`, as [`detect`](Self::detect) and
    /// [`from_sysfs`](Self::from_sysfs) build it: the sizes measured for this process
    /// ([`set_measured_caches`]), if any.
    pub measured: Option<CacheSizes>,
    /// Widest streaming store, which is also the vector width.
    pub vector: StreamWidth,
    /// NUMA nodes and their cores.
    pub topology: Topology,
}

/// Processes on this machine that share its last-level cache with this one, this one
/// included ([`set_cache_sharers`]).
static CACHE_SHARERS: AtomicUsize = AtomicUsize::new(1);

/// The cache sizes measured for this process ([`set_measured_caches`]), one level each: 0
/// where none was measured.
static MEASURED_CACHES: [AtomicUsize; 3] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];

/// Declares the cache capacities measured on the running machine (a working-set sweep:
/// stencil-tune's probe, which the facade runs when it first tunes and caches with the
/// bandwidth): from now on the CPU backend sizes its blocks, its default temporal blocking,
/// its trial grids, its bandwidth measurement and its streaming-store choice by them instead
/// of the sizes the system reports, in every thread of the process, for every [`Machine`]
/// whose [`measured`](Machine::measured) is `None`. A level of 0 keeps the reported size (all
/// zeros undo the call). `CpuBackend`'s
/// [`use_measured_caches`](stencil_core::Backend::use_measured_caches) calls it.
pub fn set_measured_caches(caches: CacheSizes) {
    for (slot, bytes) in
        MEASURED_CACHES
            .iter()
            .zip([caches.l1_bytes, caches.l2_bytes, caches.llc_bytes])
    {
        slot.store(bytes, Ordering::Relaxed);
    }
}

/// Declares that `processes` processes on this machine (this one included) run stencils at
/// the same time and share its last-level cache, as MPI ranks on one node do: the CPU
/// backend then sizes its blocks, its default temporal blocking and its streaming-store
/// choice by this process's share ([`Machine::llc_share`]). 0 counts as 1. The distributed
/// domain of `stencil::mpi` sets it to the number of its ranks on this machine.
pub fn set_cache_sharers(processes: usize) {
    CACHE_SHARERS.store(processes.max(1), Ordering::Relaxed);
}

impl Machine {
    /// This process's share of the last-level cache: [`llc`](Self::llc) (the effective
    /// size) over the processes sharing it ([`set_cache_sharers`]; all of it by default).
    pub fn llc_share(&self) -> usize {
        self.llc() / CACHE_SHARERS.load(Ordering::Relaxed).max(1)
    }

    /// The effective first-level data cache per core, bytes: measured where measured (see
    /// [`caches`](Self::caches)), else [`l1_bytes`](Self::l1_bytes).
    pub fn l1(&self) -> usize {
        self.caches().l1_bytes
    }

    /// The effective second-level cache per core, bytes: measured where measured (see
    /// [`caches`](Self::caches)), else [`l2_bytes`](Self::l2_bytes).
    pub fn l2(&self) -> usize {
        self.caches().l2_bytes
    }

    /// The effective last-level cache, bytes, before its share among processes
    /// ([`llc_share`](Self::llc_share)): measured where measured (see
    /// [`caches`](Self::caches)), else [`llc_bytes`](Self::llc_bytes).
    pub fn llc(&self) -> usize {
        self.caches().llc_bytes
    }

    /// The caches as the system reports them (sysfs): [`l1_bytes`](Self::l1_bytes),
    /// [`l2_bytes`](Self::l2_bytes), [`llc_bytes`](Self::llc_bytes).
    pub fn reported_caches(&self) -> CacheSizes {
        CacheSizes {
            l1_bytes: self.l1_bytes,
            l2_bytes: self.l2_bytes,
            llc_bytes: self.llc_bytes,
        }
    }

    /// The effective caches, which every decision of the backend reads: level by level,
    /// [`measured`](Self::measured) where it is set and the level not 0, else the sizes
    /// measured for the process ([`set_measured_caches`]) where not 0, else the reported size.
    pub fn caches(&self) -> CacheSizes {
        let reported = [self.l1_bytes, self.l2_bytes, self.llc_bytes];
        let own = self.measured.map(|m| [m.l1_bytes, m.l2_bytes, m.llc_bytes]);
        let level = |i: usize| match own {
            Some(own) => match own[i] {
                0 => reported[i],
                bytes => bytes,
            },
            None => match MEASURED_CACHES[i].load(Ordering::Relaxed) {
                0 => reported[i],
                bytes => bytes,
            },
        };
        CacheSizes {
            l1_bytes: level(0),
            l2_bytes: level(1),
            llc_bytes: level(2),
        }
    }

    /// The running machine (read once, then cached).
    pub fn detect() -> &'static Machine {
        static MACHINE: std::sync::OnceLock<Machine> = std::sync::OnceLock::new();
        MACHINE.get_or_init(|| Machine::from_sysfs(Path::new("/sys/devices/system")))
    }

    /// The machine described under `sysfs_system` (normally `/sys/devices/system`), with the
    /// vector width of the running CPU and its available parallelism.
    pub fn from_sysfs(sysfs_system: &Path) -> Machine {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let cache_dir = sysfs_system.join("cpu/cpu0/cache");
        let mut l1_bytes = 32 << 10;
        let mut l2_bytes = 1 << 20;
        let mut llc_bytes = 8 << 20;
        let mut top_level = 0;
        for index in 0..8 {
            let dir = cache_dir.join(format!("index{index}"));
            let read = |file: &str| std::fs::read_to_string(dir.join(file)).ok();
            let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size"))
            else {
                continue;
            };
            let (Ok(level), Some(size)) = (level.trim().parse::<u32>(), parse_size(&size)) else {
                continue;
            };
            if kind.trim() == "Instruction" {
                continue;
            }
            match level {
                1 => l1_bytes = size,
                2 => l2_bytes = size,
                _ => {}
            }
            if level >= top_level && level >= 2 {
                top_level = level;
                llc_bytes = size;
            }
        }
        let topology = Topology::from_sysfs(&sysfs_system.join("node"))
            .unwrap_or_else(|| Topology::new(vec![(0..cores).collect()]));
        Machine {
            cores,
            l1_bytes,
            l2_bytes,
            llc_bytes,
            measured: None,
            vector: StreamWidth::detect(),
            topology,
        }
    }
}

/// This CPU's fingerprint: its model name (from `/proc/cpuinfo` where there is one) and the
/// number of hardware threads, such as `Intel(R) Xeon(R) ... x16`.
pub fn cpu_fingerprint() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| cpu_model_name(&text))
        .unwrap_or_else(|| format!("unknown {} cpu", std::env::consts::ARCH));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{model} x{cores}")
}

/// The `model name` (x86) or `Model`/`CPU part` (Arm) line of a `/proc/cpuinfo` text.
fn cpu_model_name(cpuinfo: &str) -> Option<String> {
    ["model name", "Model", "CPU part"]
        .iter()
        .find_map(|label| {
            cpuinfo.lines().find_map(|line| {
                let (name, value) = line.split_once(':')?;
                (name.trim() == *label && !value.trim().is_empty())
                    .then(|| value.split_whitespace().collect::<Vec<_>>().join(" "))
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_name_is_read_from_cpuinfo_text() {
        let text = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R)  Xeon(R) CPU @ 2.20GHz\nflags\t: fpu\n";
        assert_eq!(
            cpu_model_name(text).as_deref(),
            Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
        );
        let arm = "processor\t: 0\nCPU part\t: 0xd0c\n";
        assert_eq!(cpu_model_name(arm).as_deref(), Some("0xd0c"));
        assert_eq!(cpu_model_name("nothing here"), None);
        let fp = cpu_fingerprint();
        assert!(fp.contains(" x"), "{fp}");
    }

    #[test]
    fn cpu_lists_and_sizes_parse() {
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpu_list(""), Vec::<usize>::new());
        assert_eq!(parse_size("48K\n"), Some(48 << 10));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
    }

    #[test]
    fn a_fake_sysfs_is_read() {
        let root = std::env::temp_dir().join(format!("stencil-cpu-sysfs-{}", std::process::id()));
        for (index, level, kind, size) in [
            (0, "1", "Data", "48K"),
            (1, "1", "Instruction", "32K"),
            (2, "2", "Unified", "2048K"),
            (3, "3", "Unified", "96M"),
        ] {
            let dir = root.join(format!("cpu/cpu0/cache/index{index}"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("level"), level).unwrap();
            std::fs::write(dir.join("type"), kind).unwrap();
            std::fs::write(dir.join("size"), size).unwrap();
        }
        for (node, list) in [(1, "4-7"), (0, "0-3")] {
            let dir = root.join(format!("node/node{node}"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("cpulist"), list).unwrap();
        }
        let m = Machine::from_sysfs(&root);
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(
            (m.l1_bytes, m.l2_bytes, m.llc_bytes),
            (48 << 10, 2 << 20, 96 << 20)
        );
        assert_eq!(m.topology.n_nodes(), 2);
        assert_eq!(m.topology.cpus(0), &[0, 1, 2, 3]);
        assert_eq!(m.topology.cpus(1), &[4, 5, 6, 7]);
    }

    #[test]
    fn placement_keeps_consecutive_workers_on_one_node() {
        let t = Topology::new(vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        let nodes: Vec<usize> = (0..8).map(|w| t.placement(w, 8).0).collect();
        assert_eq!(nodes, [0, 0, 0, 0, 1, 1, 1, 1]);
        let cpus: Vec<usize> = (0..4).map(|w| t.placement(w, 4).1).collect();
        assert_eq!(cpus, [0, 2, 4, 6]);
        // Oversubscribed: wraps around.
        assert_eq!(t.placement(9, 12), (0, 1));
    }

    /// A VM's report: a 480 MiB last level (the host's), 2 MiB second level.
    fn cloud_vm(measured: Option<CacheSizes>) -> Machine {
        Machine {
            cores: 2,
            l1_bytes: 48 << 10,
            l2_bytes: 2 << 20,
            llc_bytes: 480 << 20,
            measured,
            vector: StreamWidth::None,
            topology: Topology::new(vec![vec![0, 1]]),
        }
    }

    #[test]
    fn measured_caches_replace_the_reported_ones_level_by_level() {
        let reported = CacheSizes {
            l1_bytes: 48 << 10,
            l2_bytes: 2 << 20,
            llc_bytes: 480 << 20,
        };
        let vm = cloud_vm(Some(CacheSizes {
            l1_bytes: 0,
            l2_bytes: 1 << 20,
            llc_bytes: 32 << 20,
        }));
        assert_eq!((vm.l1(), vm.l2(), vm.llc()), (48 << 10, 1 << 20, 32 << 20));
        assert_eq!(vm.llc_share(), 32 << 20);
        assert_eq!(vm.reported_caches(), reported);
        assert_eq!(
            vm.caches(),
            CacheSizes {
                l1_bytes: 48 << 10,
                l2_bytes: 1 << 20,
                llc_bytes: 32 << 20,
            }
        );
    }

    #[test]
    fn the_process_wide_measurement_reaches_the_detected_machine() {
        // Other tests of this binary may run meanwhile: cache sizes only steer speed, never
        // results, and the ones that check a decision build their own machines.
        let detected = Machine::detect();
        let reported = detected.reported_caches();
        assert_eq!(detected.caches(), reported, "nothing measured yet");
        let measured = CacheSizes {
            l1_bytes: 0,
            l2_bytes: reported.l2_bytes / 2,
            llc_bytes: 3 << 20,
        };
        set_measured_caches(measured);
        let seen = (Machine::detect().caches(), cloud_vm(None).caches());
        set_measured_caches(CacheSizes {
            l1_bytes: 0,
            l2_bytes: 0,
            llc_bytes: 0,
        });
        assert_eq!(
            seen.0,
            CacheSizes {
                l1_bytes: reported.l1_bytes,
                ..measured
            }
        );
        assert_eq!(
            seen.1.llc_bytes,
            3 << 20,
            "a machine without its own measurement"
        );
        assert_eq!(Machine::detect().reported_caches(), reported);
        assert_eq!(Machine::detect().caches(), reported, "all zeros undo it");
    }

    /// The CPUs of every share, node-major.
    fn shares(t: &Topology, count: usize) -> Vec<Vec<usize>> {
        (0..count)
            .map(|i| {
                let s = t.share(i, count);
                (0..s.n_nodes()).flat_map(|n| s.cpus(n).to_vec()).collect()
            })
            .collect()
    }

    #[test]
    fn processes_on_one_machine_get_disjoint_shares() {
        let two = Topology::new(vec![vec![0, 1]]);
        assert_eq!(shares(&two, 1), [vec![0, 1]]);
        assert_eq!(shares(&two, 2), [vec![0], vec![1]]);
        // More processes than CPUs: one CPU each, as evenly as they go.
        assert_eq!(shares(&two, 4), [vec![0], vec![0], vec![1], vec![1]]);
        let numa = Topology::new(vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        assert_eq!(
            shares(&numa, 4),
            [vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]
        );
        assert_eq!(shares(&numa, 3), [vec![0, 1], vec![2, 3, 4], vec![5, 6, 7]]);
        // A share keeps its nodes: the middle one spans both.
        let middle = numa.share(1, 3);
        assert_eq!((middle.cpus(0), middle.cpus(1)), (&[2, 3][..], &[4][..]));
        // Workers of a share are placed within it, never on another process's CPUs.
        let placed: Vec<usize> = (0..2).map(|w| numa.share(3, 4).placement(w, 2).1).collect();
        assert_eq!(placed, [6, 7]);
        assert_eq!(numa.share(5, 4), numa.share(1, 4));
        assert_eq!(numa.share(0, 0), numa);
    }

    #[test]
    fn a_topology_keeps_the_allowed_cpus() {
        let numa = Topology::new(vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        let bound = numa.restricted(&[2, 3, 6]);
        assert_eq!(
            (bound.n_nodes(), bound.cpus(0), bound.cpus(1)),
            (2, &[2, 3][..], &[6][..])
        );
        assert_eq!(numa.restricted(&[]), numa);
        // Allowed CPUs that no node lists (a topology read without sysfs) are kept.
        let guessed = Topology::new(vec![vec![0, 1]]);
        assert_eq!(guessed.restricted(&[4, 5]), Topology::new(vec![vec![4, 5]]));
        // Shares of what a process may use: two ranks bound to the same node split it.
        assert_eq!(
            shares(&numa.restricted(&[4, 5, 6, 7]), 2),
            [vec![4, 5], vec![6, 7]]
        );
    }

    #[test]
    fn the_running_machine_is_described() {
        let m = Machine::detect();
        assert!(m.cores >= 1 && m.l1_bytes > 0 && m.l2_bytes >= m.l1_bytes);
        assert!(m.topology.n_cpus() >= 1);
    }
}
