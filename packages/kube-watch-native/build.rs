//! Emits the linker settings a Node.js addon needs on every platform napi-rs supports, and
//! embeds the binary's provenance (target triple, git commit) for `buildInfo()`.

use std::env;
use std::path::Path;
use std::process::Command;

fn main() {
    napi_build::setup();
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("macos") {
        // A dylib records the path it was linked at as its install name; left alone, that is
        // the build machine's target/ path. Name it relative to whoever loads it instead.
        println!(
            "cargo::rustc-cdylib-link-arg=-Wl,-install_name,@rpath/libkube_watch_native.dylib"
        );
    }

    let target = env::var("TARGET").unwrap_or_default();
    println!("cargo::rustc-env=KWN_BUILD_TARGET={target}");
    println!("cargo::rustc-env=KWN_BUILD_COMMIT={}", commit());
    println!("cargo::rerun-if-env-changed=KWN_BUILD_COMMIT");
}

/// The commit being built: `$KWN_BUILD_COMMIT` when set (a build from an exported tree), else
/// git's HEAD, else "unknown" (sources without git history).
fn commit() -> String {
    if let Ok(commit) = env::var("KWN_BUILD_COMMIT") {
        return commit;
    }
    let Some(head) = git(&["rev-parse", "HEAD"]) else {
        return "unknown".to_owned();
    };
    // Build again when HEAD moves: HEAD itself (checkout), the branch it names (commit), and
    // packed-refs (a ref that was packed). Only files that exist, since a missing one would
    // make cargo rerun this script, and rebuild the crate, on every build.
    let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&["rev-parse", "--git-path", &branch]));
    }
    watched.push(git(&["rev-parse", "--git-path", "packed-refs"]));
    for path in watched.into_iter().flatten() {
        if Path::new(&path).exists() {
            println!("cargo::rerun-if-changed={path}");
        }
    }
    head
}

/// Runs git in the crate's directory; its trimmed stdout on success.
fn git(args: &[&str]) -> Option<String> {
    let dir = env::var("CARGO_MANIFEST_DIR").ok()?;
    let out = Command::new("git")
        .args(args)
        .current_dir(&dir)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    // `--git-path` answers relative to the directory git ran in.
    Some(if args.contains(&"--git-path") {
        Path::new(&dir).join(&text).to_string_lossy().into_owned()
    } else {
        text
    })
}
