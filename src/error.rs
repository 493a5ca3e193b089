//! User-facing errors: bad input from a user exits with code 2, anything else with 1.

use std::fmt;

/// An error caused by the user's input (config, FEN, move list, file): printed as one
/// line, exit code 2.
#[derive(Debug)]
pub struct UserError(pub String);

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UserError {}

/// Returns early with a [`UserError`] built like `format!`.
#[macro_export]
macro_rules! user_bail {
    ($($arg:tt)*) => {
        return Err(anyhow::Error::new($crate::error::UserError(format!($($arg)*))))
    };
}

/// Wraps any displayable error as a [`UserError`].
pub fn user_error(msg: impl fmt::Display) -> anyhow::Error {
    anyhow::Error::new(UserError(msg.to_string()))
}

/// Whether `err` is the user's to fix: a [`UserError`], or a store error that is (wrong
/// credentials, no such bucket, a bad location).
pub fn is_user_error(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<UserError>().is_some()
            || e.downcast_ref::<cfzero_store::StoreError>()
                .is_some_and(cfzero_store::StoreError::is_user_error)
    })
}

/// Exit code for an error: 2 for the user's input, 1 otherwise.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    if is_user_error(err) { 2 } else { 1 }
}
