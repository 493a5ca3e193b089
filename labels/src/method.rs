//! How a teacher gets its action values, as a label file's header names it.

/// How an engine's values of a position's legal moves are obtained (`cfzero_teacher::analysis`
/// does either).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// One search with `MultiPV` = the number of legal moves.
    MultiPv,
    /// One `go searchmoves` per legal move.
    SearchMoves,
}

impl std::str::FromStr for Method {
    type Err = String;

    fn from_str(s: &str) -> Result<Method, String> {
        match s {
            "multipv" | "multi_pv" => Ok(Method::MultiPv),
            "searchmoves" | "search_moves" => Ok(Method::SearchMoves),
            _ => Err(format!(
                "`{s}` is no way to get action values: write multipv or searchmoves"
            )),
        }
    }
}
