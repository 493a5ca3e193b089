//! Parsing of the lines a UCI GUI sends. Parsing never fails: a line that is not a command
//! this engine knows, or that is malformed, becomes [`Command::Invalid`] with the reason, so
//! the engine can say so in an `info string` and carry on.

/// The limits of a `go` command; every field is optional.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GoParams {
    /// `nodes N`: simulations.
    pub nodes: Option<u64>,
    /// `movetime MS`.
    pub movetime: Option<u64>,
    /// `wtime MS` (negative values, which some GUIs send when flagging, read as 0).
    pub wtime: Option<u64>,
    /// `btime MS`.
    pub btime: Option<u64>,
    /// `winc MS`.
    pub winc: Option<u64>,
    /// `binc MS`.
    pub binc: Option<u64>,
    /// `movestogo N`.
    pub movestogo: Option<u64>,
    /// `depth D`: read as a node budget (a tree search has no fixed depth).
    pub depth: Option<u64>,
    /// `infinite`: search until `stop`.
    pub infinite: bool,
}

/// One line from the GUI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `uci`.
    Uci,
    /// `isready`.
    IsReady,
    /// `ucinewgame`.
    NewGame,
    /// `setoption name N [value V]` (the name may contain spaces).
    SetOption {
        /// The option's name as sent.
        name: String,
        /// The value, empty for a button.
        value: String,
    },
    /// `position startpos|fen F [moves M...]`.
    Position {
        /// The FEN, `None` for the standard start position.
        fen: Option<String>,
        /// The moves after it, in UCI notation (checked when applied).
        moves: Vec<String>,
    },
    /// `go ...`.
    Go(GoParams),
    /// `stop`.
    Stop,
    /// `ponderhit`: this engine does not ponder, so it is acknowledged and ignored.
    PonderHit,
    /// `quit`.
    Quit,
    /// An empty line.
    Empty,
    /// Anything else, with what is wrong with it.
    Invalid(String),
}

/// Parses one line.
pub fn parse(line: &str) -> Command {
    let mut words = line.split_whitespace();
    let Some(first) = words.next() else {
        return Command::Empty;
    };
    let rest: Vec<&str> = words.collect();
    match first {
        "uci" => Command::Uci,
        "isready" => Command::IsReady,
        "ucinewgame" => Command::NewGame,
        "stop" => Command::Stop,
        "ponderhit" => Command::PonderHit,
        "quit" => Command::Quit,
        "setoption" => parse_setoption(&rest),
        "position" => parse_position(&rest),
        "go" => parse_go(&rest),
        other => Command::Invalid(format!("unknown command {:?}", truncate(other))),
    }
}

/// At most 40 characters of `text`, for messages about garbage input.
fn truncate(text: &str) -> String {
    text.chars().take(40).collect()
}

fn parse_setoption(words: &[&str]) -> Command {
    if words.first() != Some(&"name") {
        return Command::Invalid("setoption: expected `setoption name N [value V]`".into());
    }
    let words = &words[1..];
    let split = words.iter().position(|&w| w == "value");
    let (name, value) = match split {
        Some(i) => (&words[..i], &words[i + 1..]),
        None => (words, &[][..]),
    };
    if name.is_empty() {
        return Command::Invalid("setoption: no option name".into());
    }
    Command::SetOption {
        name: name.join(" "),
        value: value.join(" "),
    }
}

fn parse_position(words: &[&str]) -> Command {
    let moves_at = words.iter().position(|&w| w == "moves");
    let (setup, moves) = match moves_at {
        Some(i) => (&words[..i], &words[i + 1..]),
        None => (words, &[][..]),
    };
    let fen = match setup.split_first() {
        Some((&"startpos", [])) => None,
        Some((&"fen", fen)) if !fen.is_empty() => Some(fen.join(" ")),
        _ => {
            return Command::Invalid(
                "position: expected `position startpos|fen F [moves M...]`".into(),
            );
        }
    };
    Command::Position {
        fen,
        moves: moves.iter().map(|m| m.to_string()).collect(),
    }
}

fn parse_go(words: &[&str]) -> Command {
    let mut go = GoParams::default();
    let mut i = 0;
    while i < words.len() {
        let key = words[i];
        let slot = match key {
            "infinite" => {
                go.infinite = true;
                i += 1;
                continue;
            }
            // Pondering is not supported: `go ponder` searches like a normal `go`.
            "ponder" => {
                i += 1;
                continue;
            }
            "nodes" => &mut go.nodes,
            "movetime" => &mut go.movetime,
            "wtime" => &mut go.wtime,
            "btime" => &mut go.btime,
            "winc" => &mut go.winc,
            "binc" => &mut go.binc,
            "movestogo" => &mut go.movestogo,
            "depth" => &mut go.depth,
            "mate" => &mut go.depth,
            "searchmoves" => {
                return Command::Invalid("go: searchmoves is not supported".into());
            }
            other => return Command::Invalid(format!("go: unknown limit {:?}", truncate(other))),
        };
        let Some(number) = words.get(i + 1).and_then(|w| parse_count(w)) else {
            return Command::Invalid(format!("go: {key} needs a whole number"));
        };
        *slot = Some(number);
        i += 2;
    }
    Command::Go(go)
}

/// A whole number of a `go` limit: negative reads as 0 and too large as `u64::MAX`.
fn parse_count(word: &str) -> Option<u64> {
    let digits = word.strip_prefix(['-', '+']).unwrap_or(word);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if word.starts_with('-') {
        return Some(0);
    }
    Some(digits.parse::<u64>().unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_with_and_without_moves() {
        assert_eq!(
            parse("position startpos moves e2e4 e7e5"),
            Command::Position {
                fen: None,
                moves: vec!["e2e4".into(), "e7e5".into()]
            }
        );
        let fen = "8/8/8/8/8/8/8/K1k5 w - - 0 1";
        assert_eq!(
            parse(&format!("position   fen {fen}")),
            Command::Position {
                fen: Some(fen.into()),
                moves: vec![]
            }
        );
        assert!(matches!(parse("position"), Command::Invalid(_)));
        assert!(matches!(parse("position fen"), Command::Invalid(_)));
        assert!(matches!(
            parse("position startpos e2e4"),
            Command::Invalid(_)
        ));
    }

    #[test]
    fn go_limits_saturate_and_reject_garbage() {
        let Command::Go(go) = parse("go wtime -150 btime 99999999999999999999999 winc 10 binc 0")
        else {
            panic!("a go command")
        };
        assert_eq!(go.wtime, Some(0));
        assert_eq!(go.btime, Some(u64::MAX));
        assert_eq!((go.winc, go.binc), (Some(10), Some(0)));
        assert_eq!(
            parse("go infinite"),
            Command::Go(GoParams {
                infinite: true,
                ..GoParams::default()
            })
        );
        assert_eq!(parse("go"), Command::Go(GoParams::default()));
        assert!(matches!(parse("go nodes"), Command::Invalid(_)));
        assert!(matches!(parse("go nodes 12x"), Command::Invalid(_)));
        assert!(matches!(parse("go sideways 3"), Command::Invalid(_)));
    }

    #[test]
    fn option_names_and_values_may_hold_spaces() {
        assert_eq!(
            parse("setoption name Search Mode value puct"),
            Command::SetOption {
                name: "Search Mode".into(),
                value: "puct".into()
            }
        );
        assert_eq!(
            parse("setoption name Clear Hash"),
            Command::SetOption {
                name: "Clear Hash".into(),
                value: String::new()
            }
        );
        assert!(matches!(parse("setoption value 3"), Command::Invalid(_)));
        assert!(matches!(
            parse("setoption name value 3"),
            Command::Invalid(_)
        ));
    }

    #[test]
    fn other_lines() {
        assert_eq!(parse("  uci "), Command::Uci);
        assert_eq!(parse(""), Command::Empty);
        assert_eq!(parse("isready"), Command::IsReady);
        let Command::Invalid(msg) = parse(&"x".repeat(10_000)) else {
            panic!("garbage is invalid")
        };
        assert!(msg.len() < 80, "{msg}");
    }
}
