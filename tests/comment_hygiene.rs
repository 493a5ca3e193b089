//! Code comments say why in the present tense: none names the work session or the issue that
//! wrote it (an issue by its number, a session by its ordinal or number), which a reader of
//! the code cannot look up and which goes stale; measurements and their history live in
//! BENCHMARKS.md and docs/history/.

mod common;

use std::path::{Path, PathBuf};

use common::repo_root;

/// Ordinals that, before the word session, name a work session.
const ORDINALS: [&str; 20] = [
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
    "twentieth",
];

/// Every `.rs` file under `dir` but build output.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// Whether `text` names an issue by number or a session by its ordinal or number.
fn names_issue_or_session(text: &str) -> bool {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    words.windows(2).any(|w| {
        let number = w[1].chars().all(|c| c.is_ascii_digit());
        ((w[0] == "issue" || w[0] == "issues" || w[0] == "session") && number)
            || (w[1] == "session" && ORDINALS.contains(&w[0]))
    })
}

#[test]
fn the_check_finds_what_it_looks_for() {
    assert!(names_issue_or_session("(issue 16, class 2)"));
    assert!(names_issue_or_session("until the twelfth session, steeper"));
    assert!(names_issue_or_session("measured in session 14"));
    assert!(!names_issue_or_session(
        "the trainer's session holds the lease"
    ));
    assert!(!names_issue_or_session(
        "a fifth of the loop's instructions"
    ));
    assert!(!names_issue_or_session("an issue with 3 causes"));
}

#[test]
fn no_comment_names_an_issue_or_a_session() {
    let mut files = Vec::new();
    rust_files(&repo_root(), &mut files);
    assert!(files.len() > 100, "the workspace's sources are found");
    let mut found = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            let Some(at) = line.find("//") else {
                continue;
            };
            if names_issue_or_session(&line[at..]) {
                found.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "comments that name an issue or a session:\n{}",
        found.join("\n")
    );
}
