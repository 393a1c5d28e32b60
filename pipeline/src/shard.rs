//! One shard of a plan, for running it on many machines with the scheduler they already have:
//! `--shard I/N` (1-based, as nextest and Playwright write it), or the variables the engines set —
//! a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX` (0-based, with `--shard-count N`), a Slurm
//! array's `SLURM_ARRAY_TASK_ID` with `SLURM_ARRAY_TASK_MIN`, `SLURM_ARRAY_TASK_COUNT` and
//! `SLURM_ARRAY_TASK_STEP`. Each shard writes its own experiment folder; `aggregate --merge`
//! puts them back together and refuses unless every planned session is there exactly once.
//!
//! The split: the plan's units — a (model, module, task, rep) pair of sessions, both arms
//! together so pairing and ABBA order survive; a warm plan's (model, module, rep), its
//! conversations together — are ordered by the sha256 of a fixed salt and their key (a stable
//! hash, the same on every machine and every run: a seeded shuffle), then dealt out in turn, so
//! shards differ by at most one unit and hard tasks do not gather on one shard.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Where the shard's identity came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShardSource {
    Flag,
    Kubernetes,
    Slurm,
}

/// Shard `index` of `count` (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
    pub source: ShardSource,
}

/// The salt of the shuffle: changing it moves every unit, so it is fixed.
const SALT: &str = "mcp-pattern-bench shard v1";

/// `--shard`'s value, checked as the command line is read (a malformed one is a usage error,
/// exit 2, like any other bad flag).
pub fn flag_value(text: &str) -> Result<String, String> {
    Shard::parse(text).map(|_| text.to_owned())
}

impl Shard {
    /// `I/N`, 1 ≤ I ≤ N.
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad = || format!("--shard {text:?}: write it I/N, the shard I (from 1) of N, e.g. 2/3");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count): (u32, u32) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if count == 0 || index == 0 || index > count {
            return Err(bad());
        }
        Ok(Self { index, count, source: ShardSource::Flag })
    }

    /// The shard a run is: the flag's, else the engines' variables (read through `var`), else none.
    /// With `shard_count`, the engine's task id is the 0-based shard index (Kubernetes' always is;
    /// a Slurm array's then is too, so resubmitting some of its ids runs exactly those shards);
    /// without it, a Slurm array's shard is its task's place among the array's contiguous ids.
    pub fn resolve(flag: Option<&str>, shard_count: Option<u32>, var: &dyn Fn(&str) -> Option<String>) -> Result<Option<Self>, String> {
        if let Some(text) = flag {
            return Self::parse(text).map(Some);
        }
        let num = |name: &str| -> Result<Option<u64>, String> {
            match var(name) {
                None => Ok(None),
                Some(v) => v.trim().parse().map(Some).map_err(|_| format!("{name}={v:?} is not a number")),
            }
        };
        if let Some(i) = num("JOB_COMPLETION_INDEX")? {
            let count = shard_count.ok_or("JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job) but --shard-count is not: give the Job's `completions`")?;
            let index = u32::try_from(i + 1).map_err(|_| "JOB_COMPLETION_INDEX is too large".to_string())?;
            if index > count {
                return Err(format!("JOB_COMPLETION_INDEX={i} is not below --shard-count {count}"));
            }
            return Ok(Some(Self { index, count, source: ShardSource::Kubernetes }));
        }
        if let (Some(id), Some(count)) = (num("SLURM_ARRAY_TASK_ID")?, shard_count) {
            let index = u32::try_from(id + 1).map_err(|_| "SLURM_ARRAY_TASK_ID is too large".to_string())?;
            if index > count {
                return Err(format!(
                    "SLURM_ARRAY_TASK_ID={id} is not below --shard-count {count}: with --shard-count the array's ids are the shards' 0-based indices (--array=0-{})",
                    count - 1
                ));
            }
            return Ok(Some(Self { index, count, source: ShardSource::Slurm }));
        }
        if let Some(id) = num("SLURM_ARRAY_TASK_ID")? {
            let (Some(min), Some(count)) = (num("SLURM_ARRAY_TASK_MIN")?, num("SLURM_ARRAY_TASK_COUNT")?) else {
                return Err("SLURM_ARRAY_TASK_ID is set without SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT".into());
            };
            let step = num("SLURM_ARRAY_TASK_STEP")?.unwrap_or(1).max(1);
            let offset = id.checked_sub(min).ok_or(format!("SLURM_ARRAY_TASK_ID={id} is below SLURM_ARRAY_TASK_MIN={min}"))?;
            let index = offset / step + 1;
            if offset % step != 0 || index > count {
                return Err(format!(
                    "SLURM_ARRAY_TASK_ID={id} is not one of {count} ids from {min} in steps of {step}: the array's ids are sparse, so which shard this is cannot be told; give --shard-count N (the ids are then the 0-based shard indices of N, as in --array=0-(N-1)) or --shard I/N"
                ));
            }
            let count = u32::try_from(count).map_err(|_| "SLURM_ARRAY_TASK_COUNT is too large".to_string())?;
            return Ok(Some(Self { index: index as u32, count, source: ShardSource::Slurm }));
        }
        if shard_count.is_some() {
            return Err(
                "--shard-count is given but neither JOB_COMPLETION_INDEX nor SLURM_ARRAY_TASK_ID is set: --shard-count is for an engine that gives the shard's 0-based index; elsewhere give --shard I/N".into()
            );
        }
        Ok(None)
    }

    /// The units of `keys` (each unit's key, in plan order) that fall to this shard, as indices
    /// into `keys`, in plan order.
    pub fn select(&self, keys: &[String]) -> Vec<usize> {
        let mut order: Vec<(String, &String)> = keys.iter().map(|k| (hex::encode(Sha256::digest(format!("{SALT}\u{0}{k}").as_bytes())), k)).collect();
        order.sort();
        order.dedup_by(|a, b| a.1 == b.1);
        let mine: std::collections::BTreeSet<&String> =
            order.iter().enumerate().filter(|(j, _)| *j as u32 % self.count + 1 == self.index).map(|(_, (_, k))| *k).collect();
        keys.iter().enumerate().filter(|(_, k)| mine.contains(k)).map(|(i, _)| i).collect()
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_is_one_based() {
        assert_eq!(Shard::parse("2/3"), Ok(Shard { index: 2, count: 3, source: ShardSource::Flag }));
        for bad in ["0/3", "4/3", "3", "a/b", "1/0"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_engines_variables_name_the_shard() {
        let env = |pairs: &'static [(&'static str, &'static str)]| move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string());
        let k8s = env(&[("JOB_COMPLETION_INDEX", "0")]);
        assert_eq!(Shard::resolve(None, Some(3), &k8s), Ok(Some(Shard { index: 1, count: 3, source: ShardSource::Kubernetes })));
        assert!(Shard::resolve(None, None, &k8s).unwrap_err().contains("--shard-count"));
        // A flag beats the environment.
        assert_eq!(Shard::resolve(Some("3/3"), Some(3), &k8s).unwrap().unwrap().source, ShardSource::Flag);
        let slurm = env(&[("SLURM_ARRAY_TASK_ID", "14"), ("SLURM_ARRAY_TASK_MIN", "10"), ("SLURM_ARRAY_TASK_COUNT", "3"), ("SLURM_ARRAY_TASK_STEP", "2")]);
        assert_eq!(Shard::resolve(None, None, &slurm), Ok(Some(Shard { index: 3, count: 3, source: ShardSource::Slurm })));
        let sparse = env(&[("SLURM_ARRAY_TASK_ID", "7"), ("SLURM_ARRAY_TASK_MIN", "1"), ("SLURM_ARRAY_TASK_COUNT", "3")]);
        assert!(Shard::resolve(None, None, &sparse).unwrap_err().contains("sparse"));
        // With the count, a Slurm task id is the 0-based shard index: a resubmission of sparse ids
        // runs exactly those shards of the original N.
        assert_eq!(Shard::resolve(None, Some(12), &sparse), Ok(Some(Shard { index: 8, count: 12, source: ShardSource::Slurm })));
        assert!(Shard::resolve(None, Some(7), &sparse).unwrap_err().contains("not below --shard-count 7"));
        assert_eq!(Shard::resolve(None, None, &env(&[])), Ok(None));
        assert!(Shard::resolve(None, Some(2), &env(&[])).is_err());
    }

    #[test]
    fn shards_partition_the_units_evenly_and_keep_a_unit_whole() {
        let keys: Vec<String> = (0..50).flat_map(|t| [format!("task{t}"), format!("task{t}")]).collect();
        let mut seen = vec![0u32; keys.len()];
        let mut sizes = Vec::new();
        for index in 1..=3 {
            let picked = Shard { index, count: 3, source: ShardSource::Flag }.select(&keys);
            sizes.push(picked.len());
            for i in picked {
                seen[i] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n == 1), "every session in exactly one shard");
        // Both sessions of a unit (the same key) in one shard: sizes are even, 17 + 17 + 16 units.
        assert_eq!(sizes, vec![34, 34, 32]);
        // Stable: the same split every time.
        let again = Shard { index: 2, count: 3, source: ShardSource::Flag }.select(&keys);
        assert_eq!(again, Shard { index: 2, count: 3, source: ShardSource::Flag }.select(&keys));
    }
}
