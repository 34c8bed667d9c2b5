//! `folio-layout`: checks the import rule written in ARCHITECTURE.md ("The import rule") on
//! the workspace's sources, from the repository root:
//!
//! ```text
//! cargo run -q -p folio-layout -- check          # violations as `path:line: message`
//! cargo run -q -p folio-layout -- check --list   # and every folder's edges
//! ```
//!
//! Exits 1 when there is a violation (unresolved paths are warnings), 2 on a usage or
//! reading error.

mod doc;
mod files;
mod modules;
mod resolve;
mod rules;
mod workspace;

use std::path::PathBuf;
use std::process::ExitCode;

use files::Files;
use rules::{Finding, Report};

const USAGE: &str = "usage: folio-layout check [--list] [--root DIR]";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut command = None;
    let mut list = false;
    let mut root = PathBuf::from(".");
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--list" => list = true,
            "--root" => match args.next() {
                Some(dir) => root = PathBuf::from(dir),
                None => return usage(),
            },
            "check" if command.is_none() => command = Some(arg),
            _ => return usage(),
        }
    }
    if command.is_none() {
        return usage();
    }
    let files = match load(&root) {
        Ok(files) => files,
        Err(e) => {
            eprintln!("folio-layout: reading {}: {e}", root.display());
            return ExitCode::from(2);
        }
    };
    let members = workspace::members(files.get("Cargo.toml").unwrap_or_default());
    let report = rules::check(&files, &workspace::packages(&files, &members));
    if list {
        print_edges(&report);
    }
    for finding in report.errors.iter().chain(&report.warnings) {
        print(finding);
    }
    println!(
        "folio-layout: {} violation{}, {} warning{}",
        report.errors.len(),
        plural(report.errors.len()),
        report.warnings.len(),
        plural(report.warnings.len())
    );
    if report.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn usage() -> ExitCode {
    eprintln!("{USAGE}");
    ExitCode::from(2)
}

/// The root manifest, ARCHITECTURE.md, each member's manifest and `src/` tree.
fn load(root: &std::path::Path) -> std::io::Result<Files> {
    let mut files = Files::default();
    files.read(root, "Cargo.toml")?;
    files.read(root, rules::DOC)?;
    for dir in workspace::members(files.get("Cargo.toml").unwrap_or_default()) {
        files.read(root, &files::join(&dir, "Cargo.toml"))?;
        files.read_rust_tree(root, &files::join(&dir, "src"))?;
    }
    Ok(files)
}

fn print(finding: &Finding) {
    println!(
        "{}:{}: {}",
        finding.place.file, finding.place.line, finding.message
    );
}

/// Every folder's edges: `a -> b`, how many imports, the first.
fn print_edges(report: &Report) {
    for (folder, edges) in &report.edges {
        println!("{folder}");
        for ((a, b), imports) in edges {
            let first = &imports[0];
            println!(
                "  {a} -> {b}  ({} import{}; {}:{} `{}`)",
                imports.len(),
                plural(imports.len()),
                first.from.file,
                first.from.line,
                first.text
            );
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
