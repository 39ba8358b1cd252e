//! The cluster runbooks (`docs/clusters/*.md`): each names a profile that exists, and
//! every block fenced as `sh local-check` runs here from a directory where
//! `target/release` holds the built binaries (blocks marked `slurm` under the
//! single-node Slurm of `scripts/slurm-local.sh`; skipped with a message without root
//! or slurm-wlm).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const RUNBOOKS: &[&str] = &["cray-xc.md", "slingshot.md", "infiniband.md", "aws-efa.md"];
const LIMIT: Duration = Duration::from_secs(300);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// A block to run: its runbook, whether it needs Slurm, its text.
struct Block {
    runbook: String,
    slurm: bool,
    script: String,
}

/// The `sh local-check` blocks of a Markdown text.
fn local_blocks(runbook: &str, text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut current: Option<Block> = None;
    for line in text.lines() {
        match &mut current {
            None => {
                let info: Vec<&str> = line
                    .trim()
                    .strip_prefix("```")
                    .unwrap_or("")
                    .split_whitespace()
                    .collect();
                if info.len() >= 2 && info[0] == "sh" && info[1] == "local-check" {
                    current = Some(Block {
                        runbook: runbook.to_string(),
                        slurm: info.contains(&"slurm"),
                        script: String::new(),
                    });
                }
            }
            Some(b) if line.trim() == "```" => {
                blocks.push(std::mem::replace(
                    b,
                    Block {
                        runbook: String::new(),
                        slurm: false,
                        script: String::new(),
                    },
                ));
                current = None;
            }
            Some(b) => {
                b.script.push_str(line);
                b.script.push('\n');
            }
        }
    }
    blocks
}

fn read(runbook: &str) -> String {
    let path = repo().join("docs/clusters").join(runbook);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_block_parser_finds_only_marked_blocks() {
    let text = "```sh\nno\n```\n```sh local-check\na\nb\n```\n```sh local-check slurm\nc\n```\n";
    let b = local_blocks("x.md", text);
    assert_eq!(b.len(), 2);
    assert_eq!((b[0].script.as_str(), b[0].slurm), ("a\nb\n", false));
    assert_eq!((b[1].script.as_str(), b[1].slurm), ("c\n", true));
}

#[test]
fn every_runbook_exists_names_an_existing_profile_and_has_a_local_check() {
    for runbook in RUNBOOKS {
        let text = read(runbook);
        let profiles: Vec<&str> = text
            .split("profiles/")
            .skip(1)
            .filter_map(|rest| rest.split(".conf").next())
            .filter(|name| name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
            .collect();
        assert!(!profiles.is_empty(), "{runbook} names no profile");
        for p in profiles {
            let path = repo().join("profiles").join(format!("{p}.conf"));
            assert!(
                path.exists(),
                "{runbook} names {}, which does not exist",
                path.display()
            );
        }
        assert!(
            !local_blocks(runbook, &text).is_empty(),
            "{runbook} has no `sh local-check` block"
        );
        for needed in [
            "salloc -N 2",
            "--no-kill",
            "steadfast-hwtests",
            "steadfast-bench",
        ] {
            assert!(text.contains(needed), "{runbook} lacks {needed:?}");
        }
    }
}

/// A single-node Slurm for the test's duration.
struct Slurm(PathBuf);

impl Slurm {
    fn start(dir: &Path) -> Option<Slurm> {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let have = |b: &str| {
            Command::new("sh")
                .args(["-c", &format!("command -v {b}")])
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if !root || !have("srun") || !have("slurmd") || !have("salloc") {
            eprintln!("SKIPPED (slurm blocks): needs root and slurm-wlm");
            return None;
        }
        let script = repo().join("scripts/slurm-local.sh");
        let ok = Command::new(&script)
            .arg("start")
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "scripts/slurm-local.sh start failed");
        Some(Slurm(dir.to_path_buf()))
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        let _ = Command::new(repo().join("scripts/slurm-local.sh"))
            .arg("stop")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn the_local_check_blocks_of_the_runbooks_run_here() {
    let blocks: Vec<Block> = RUNBOOKS
        .iter()
        .flat_map(|r| local_blocks(r, &read(r)))
        .collect();
    for name in [
        "steadfast-run",
        "steadfast-hwtests",
        "steadfast-hwtests-check",
    ] {
        common::workspace_bin(name);
    }
    let work = std::env::temp_dir().join(format!("steadfast-runbooks-{}", std::process::id()));
    std::fs::create_dir_all(work.join("target")).unwrap();
    std::os::unix::fs::symlink(common::bin_dir(), work.join("target/release")).unwrap();
    std::os::unix::fs::symlink(repo().join("profiles"), work.join("profiles")).unwrap();
    let slurm = if blocks.iter().any(|b| b.slurm) {
        Slurm::start(&work.join("slurm"))
    } else {
        None
    };
    let mut failures = Vec::new();
    for b in &blocks {
        let mut cmd = Command::new("bash");
        cmd.args(["-euo", "pipefail", "-c", &b.script])
            .current_dir(&work);
        if b.slurm {
            match &slurm {
                Some(s) => {
                    cmd.env("SLURM_CONF", s.0.join("slurm.conf"));
                }
                None => continue,
            }
        }
        let out = common::run(cmd, LIMIT);
        if out.code != Some(0) {
            failures.push(format!(
                "{} block failed (exit {:?}):\n{}\nstdout:\n{}\nstderr:\n{}",
                b.runbook, out.code, b.script, out.stdout, out.stderr
            ));
        }
    }
    drop(slurm);
    let _ = std::fs::remove_dir_all(&work);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
