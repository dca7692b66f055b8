//! Typed errors of the logical-flow compiler.

/// Errors found while compiling one logical flow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LflowError {
    /// The position is reported by `position()` (callers print it once).
    #[error("lexical error: {msg}")]
    Lex { pos: usize, msg: String },
    #[error("{}", labelled("syntax error", msg))]
    Syntax { pos: usize, msg: String },
    #[error("{0}")]
    Semantic(String),
    #[error("expression expands to more than {limit} flows")]
    TooManyFlows { limit: usize },
    #[error("logical table {table} does not fit the table layout")]
    TableOutOfRange { table: u32 },
    /// The SB row itself is unusable (a value out of range, an unknown pipeline).
    #[error("invalid row: {0}")]
    BadRow(String),
    /// The compiler failed internally on this flow (a bug); the other flows are unaffected.
    #[error("internal error: {0}")]
    Internal(String),
    /// An error in the actions (as opposed to the match) of a logical flow.
    #[error("{0}")]
    InActions(Box<LflowError>),
}

/// `label: msg`, unless the message already says what it is (23.03.1's own wording,
/// "Syntax error at `x' expecting …", is kept as is).
fn labelled(label: &str, msg: &str) -> String {
    if msg.to_lowercase().starts_with(label) {
        msg.to_string()
    } else {
        format!("{label}: {msg}")
    }
}

impl LflowError {
    /// Byte offset in the source text, when known.
    pub fn position(&self) -> Option<usize> {
        match self {
            Self::Lex { pos, .. } | Self::Syntax { pos, .. } => Some(*pos),
            Self::InActions(e) => e.position(),
            _ => None,
        }
    }
}

pub type Result<T> = std::result::Result<T, LflowError>;

/// Marks an error as coming from the actions text.
pub(crate) fn in_actions(e: LflowError) -> LflowError {
    match e {
        LflowError::InActions(_) => e,
        other => LflowError::InActions(Box::new(other)),
    }
}

pub(crate) fn semantic<T>(msg: impl Into<String>) -> Result<T> {
    Err(LflowError::Semantic(msg.into()))
}
