// The pulsar crate's release, as Cargo resolved it, for hello's library_version: read from Cargo.lock,
// which the build resolves before it compiles anything.
use std::{env, fs, path::Path};


fn main() {
    let lock = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap()).join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = fs::read_to_string(&lock).unwrap_or_default();
    let mut version = String::from("unknown");
    let mut in_pulsar = false;
    for line in text.lines() {
        let line = line.trim();
        if line == "[[package]]" {
            in_pulsar = false;
        } else if line == "name = \"pulsar\"" {
            in_pulsar = true;
        } else if in_pulsar && line.starts_with("version = ") {
            version = line.trim_start_matches("version = ").trim_matches('"').to_string();
            break;
        }
    }
    println!("cargo:rustc-env=PULSAR_CRATE_VERSION={version}");
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let said = std::process::Command::new(rustc).arg("--version").output();
    let text = said.map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string()).unwrap_or_default();
    println!("cargo:rustc-env=RUSTC_VERSION_TEXT={text}");
}
